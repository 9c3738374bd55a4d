"""``bench/profile.py``: each py-spy sample goes to the innermost frame
of a part of the stack, a helper's frames (the standard library,
oslo.utils, oslo.serialization, futurist) to whoever called the helper,
and the caller of a framework is the innermost frame of our own code."""
import os
import subprocess
import sys
import time

import pytest

from bench import profile


def frame(function, path, line=1):
    return '%s (%s:%d)' % (function, path, line)


BOOT = [frame('Thread._bootstrap', 'threading.py', 1002),
        frame('Thread.run', 'threading.py', 982)]
SERVE = BOOT + [frame('HTTPConnection.communicate', 'cheroot/server.py'),
                frame('wsgify.__call__', 'webob/dec.py')]
HANDLER = SERVE + [frame('create', 'cinder_lite/api/v3/attachments.py'),
                   frame('reserve', 'cinder_lite/volume/attachment_api.py')]


def raw(*samples):
    return ['%s %d\n' % (';'.join(frames), n) for frames, n in samples]


def test_a_sample_goes_to_the_innermost_part():
    got = profile.classify(raw(
        # our code's call into SQLAlchemy, down to PyMySQL's socket read
        (HANDLER + [frame('read_under', 'cinder_lite/db/attachments.py'),
                    frame('Connection.execute',
                          'sqlalchemy/engine/base.py'),
                    frame('Connection._read_packet',
                          'pymysql/connections.py'),
                    frame('SocketIO.readinto', 'socket.py')], 5),
        # json under our code is ours; under oslo.messaging the bus's
        (HANDLER + [frame('json_response', 'cinder_lite/api/wsgi.py'),
                    frame('dumps', 'oslo_serialization/jsonutils.py'),
                    frame('JSONEncoder.encode', 'json/encoder.py')], 3),
        (BOOT + [frame('ReplyWaiter.poll',
                       'oslo_messaging/_drivers/amqpdriver.py'),
                 frame('loads', 'oslo_serialization/jsonutils.py'),
                 frame('JSONDecoder.raw_decode', 'json/decoder.py')], 7),
        # the server's own work with nothing of ours below it
        (SERVE + [frame('BufferedReader.read', '_pyio.py')], 2),
        # our stand-in for PyMySQL's parsing is the driver's work
        (HANDLER + [frame('column', 'cinder_lite/db/mysql_columns.py')], 4),
        # futurist's pool under taskflow's engine is taskflow's
        (BOOT + [frame('SerialActionEngine.run',
                       'taskflow/engines/action_engine/engine.py'),
                 frame('SynchronousExecutor.submit',
                       'futurist/_futures.py')], 6),
        (HANDLER + [frame('Logger.info', 'logging/__init__.py')], 1),
        (HANDLER + [frame('Draft4Validator.validate',
                          'jsonschema/validators.py')], 1),
        (BOOT + [frame('Condition.wait', 'threading.py', 320)], 9),
    ))
    assert got.parts == {'sql': 9, 'ours': 3, 'rpc': 7, 'http': 2,
                         'taskflow': 6, 'logging': 1, 'jsonschema': 1,
                         'other': 9}
    assert got.callers['sql', 'db.attachments.read_under'] == 5
    assert got.callers['sql', 'volume.attachment_api.reserve'] == 4
    assert got.callers['rpc', None] == 7
    assert got.callers['ours', 'api.wsgi.json_response'] == 3
    shares = profile.shares(got.parts)
    assert set(shares) == set(profile.PARTS)
    assert sum(shares.values()) == pytest.approx(1.0)


def test_lines_that_are_not_samples_are_skipped():
    got = profile.classify(['\n', 'no count here\n',
                            '%s 2\n' % ';'.join(SERVE)])
    assert got.parts == {'http': 2}
    assert profile.shares(profile.Samples().parts)['http'] == 0.0
    assert not profile.Samples()


@pytest.mark.skipif(profile.py_spy() is None,
                    reason='py-spy is not installed (the bench extra)')
def test_the_recorder_samples_a_real_process():
    busy = subprocess.Popen([sys.executable, '-c', (
        'import json, time\n'
        'end = time.time() + 30\n'
        'while time.time() < end:\n'
        '    json.loads(json.dumps(list(range(200))))\n')])
    try:
        time.sleep(0.3)
        recorder = profile.Recorder(busy.pid).start()
        time.sleep(1.5)
        got = recorder.stop()
    finally:
        busy.kill()
        busy.wait()
    # (a script's own frames are of no part we know: "other")
    assert got.parts['other'] > 50, (got.parts, recorder.output)
    assert not os.path.exists(recorder.path)
