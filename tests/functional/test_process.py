"""cinder-lite-all as a real process: it serves, reloads on SIGHUP and
stops cleanly on SIGTERM, however the signals arrive."""
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import requests
from oslo_config import cfg

from cinder_lite import service as service_mod
from tests.harness import forkrun
from tests.harness import stack as stack_mod
from tests.harness import util


def test_signals_reload_and_stop(tmp_path):
    proc, port, log = stack_mod.start_all(tmp_path)
    try:
        # a burst of signals, reloads and stops mixed
        for _ in range(10):
            os.kill(proc.pid, signal.SIGHUP)
            os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    text = (tmp_path / 'all.log').read_text()
    assert 'SIGHUP: reloading' in text
    assert 'stopping' in text
    # the in-process bus is not a broker: no warnings about one
    assert 'No hostname was supplied' not in text
    assert 'Heartbeat support requested' not in text


def test_a_restart_on_existing_state_logs_no_error(tmp_path):
    """The second start of cinder-lite-all on the state of the first (a
    volume made, a clean stop) logs no ERROR line and no traceback, and
    the services' own lines name no request."""
    for run in (1, 2):
        proc, port, log = stack_mod.start_all(tmp_path)
        try:
            api = stack_mod.Client('http://127.0.0.1:%d' % port)
            api.create_volume(name='run-%d' % run)
            # the volume service's start-up report has reached the
            # scheduler once a volume was placed after it
            names = [v['name'] for v in api.get('/volumes').json()[
                'volumes']]
        finally:
            proc.terminate()
            assert proc.wait(timeout=30) == 0
            log.close()
        text = (tmp_path / 'all.log').read_text()
        assert ' ERROR ' not in text and 'Traceback' not in text, text
        for line in text.splitlines():
            if 'API listening' in line or 'signal 15: stopping' in line:
                assert ' [-] ' in line, line
    assert sorted(names) == ['run-1', 'run-2']


def test_a_port_in_use_is_one_line_and_port_chooses_another(tmp_path):
    """A port another process holds: one line naming the options to
    change, exit 1, before any service started or any state was made.
    ``--port`` overrides the config file's port."""
    holder = socket.socket()
    holder.bind(('127.0.0.1', 0))
    holder.listen()
    taken = holder.getsockname()[1]
    conf = tmp_path / 'cinder-lite.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\nosapi_volume_listen_port'
                    ' = %d\n' % (tmp_path / 'state', taken))
    try:
        for script in ('all', 'api'):
            # (forked from tests/harness/forkrun.py's server; the start
            # with --port below is a real interpreter)
            run = forkrun.run('cinder_lite.cmd.%s' % script,
                              ['--config-file', str(conf)], timeout=60,
                              cwd=str(tmp_path))
            assert run.returncode == 1
            out = (run.stdout + run.stderr).strip()
            assert len(out.splitlines()) == 1, out
            assert 'Cannot listen on 127.0.0.1:%d: Address already in use' \
                % taken in out
            assert '--port' in out and 'osapi_volume_listen_port' in out
            assert not (tmp_path / 'state').exists()
    finally:
        holder.close()
    port = util.free_port()
    proc = subprocess.Popen(
        [sys.executable, '-m', 'cinder_lite.cmd.all', '--config-file',
         str(conf), '--port', str(port)], cwd=str(tmp_path),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        util.wait_for(lambda: stack_mod.api_answers(port), timeout=30,
                      what='the API on --port %d' % port)
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_api_workers_speak_to_systemd_through_the_parent(tmp_path):
    """With workers, systemd hears READY=1 once (from the parent, after
    every worker is ready) and STOPPING=1 at the end; SIGHUP to the parent
    reaches the workers and leaves every process running."""
    port = util.free_port()
    conf = tmp_path / 'cinder-lite.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\nosapi_volume_listen_port'
                    ' = %d\nosapi_volume_workers = 2\ntransport_url = '
                    'kombu+inproc:////\n' % (tmp_path / 'state', port))
    synced = forkrun.run('cinder_lite.cmd.manage',
                         ['--config-file', str(conf), 'db', 'sync'])
    assert synced.returncode == 0, synced.stderr
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / 'notify'))
    notify.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    notify.settimeout(30)
    log = open(tmp_path / 'api.log', 'w')
    proc = subprocess.Popen(
        [sys.executable, '-m', 'cinder_lite.cmd.api', '--config-file',
         str(conf)], stdout=log, stderr=subprocess.STDOUT,
        env=dict(os.environ, NOTIFY_SOCKET=str(tmp_path / 'notify')))

    def receive():
        message, ancdata, _, _ = notify.recvmsg(
            4096, socket.CMSG_SPACE(12))
        (_, _, creds), = ancdata
        sender = int.from_bytes(creds[:4], 'little')
        return message.decode(), sender

    try:
        assert receive() == ('READY=1', proc.pid)
        workers = [int(p) for p in os.listdir('/proc') if p.isdigit()
                   and _parent(int(p)) == proc.pid]
        assert len(workers) == 2
        assert requests.get('http://127.0.0.1:%d/' % port,
                            timeout=5).status_code == 300
        os.kill(proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + 15
        while (tmp_path / 'api.log').read_text().count(
                'SIGHUP: reloading') < 2:
            assert time.monotonic() < deadline, 'workers did not reload'
            time.sleep(0.1)
        assert proc.poll() is None and all(_parent(w) == proc.pid
                                           for w in workers)
        proc.send_signal(signal.SIGTERM)
        assert receive() == ('STOPPING=1', proc.pid)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        notify.close()
        log.close()


def _parent(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return int(f.read().rsplit(')', 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_a_clean_stop_is_down_at_once(stack):
    """Issue 15: after a graceful stop the volume service shows down
    right away, and an attach answers the immediate 503 of a down
    backend, recording nothing (it used to wait for the call to time
    out and leave an error_attaching attachment)."""
    api = stack.client()
    vol = api.create_volume()
    svc = stack.volume_service('file')
    svc.stop()
    svc.wait()
    states = {s['host']: s['state']
              for s in api.get('/os-services').json()['services']}
    assert states['testnode@file'] == 'down'
    started = time.monotonic()
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4()),
        'connector': {'host': 'h1', 'ip': '127.0.0.9'}}})
    assert resp.status_code == 503, resp.text
    assert time.monotonic() - started < 2
    assert api.get('/attachments').json()['attachments'] == []


def test_help_explains(tmp_path):
    """Issue 15, item 7: --help says what the embedded mode is, where
    its state lives, the port and how to add backends; the manage
    command's options have descriptions."""
    # (forked from tests/harness/forkrun.py's server, which imported
    # cinder_lite once; the scheduler as a real interpreter, its only start
    # in the functional tier)
    out = forkrun.run('cinder_lite.cmd.all', ['--help']).stdout
    for words in ('embedded mode', 'state_path', '127.0.0.1:8776',
                  'enabled_backends'):
        assert words in ' '.join(out.split()), words
    out = forkrun.run('cinder_lite.cmd.manage',
                      ['attachment', 'events', '--help']).stdout
    text = ' '.join(out.split())
    for words in ('the N newest events', 'only events at or after TIME',
                  'oldest first'):
        assert words in text, words
    # issue 25, item 11: every service says what it is and what it reads
    for script, words in (('api', 'Serves the Block Storage v3 REST API'),
                          ('scheduler', 'Places new volumes on backends'),
                          ('volume', "Serves this node's volume backends"),
                          ('status', 'Checks to run before starting')):
        module = 'cinder_lite.cmd.%s' % script
        if script == 'scheduler':
            out = subprocess.run([sys.executable, '-m', module, '--help'],
                                 capture_output=True, text=True,
                                 timeout=60).stdout
        else:
            out = forkrun.run(module, ['--help']).stdout
        assert words in ' '.join(out.split()), (script, out)
        assert 'conf' in out
        # (no section titled ':' as oslo.upgradecheck's own main makes)
        assert ':' not in [line.strip() for line in out.splitlines()]


def test_a_connect_that_times_out_names_what_it_left(tmp_path):
    """A volume service that heartbeats but does not answer (hung): the
    connect times out after volume_rpc_timeout with a 503 that names the
    attachment left error_attaching and says to delete it."""
    stack = stack_mod.Stack(tmp_path / 'state',
                            extra={'volume_rpc_timeout': 2}).start()
    try:
        _connect_times_out(stack)
    finally:
        stack.stop()


def _connect_times_out(stack):
    api = stack.client()
    vol = api.create_volume()
    svc = stack.volume_service('file')
    for server in svc._servers:
        server.stop()
        server.wait()
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4()),
        'connector': {'host': 'h1', 'ip': '127.0.0.9'}}})
    assert resp.status_code == 503, resp.text
    (left,) = api.get('/attachments').json()['attachments']
    message = resp.json()['serviceUnavailable']['message']
    assert 'no answer to connect' in message
    assert 'attachment %s is left error_attaching: delete it' % left['id'] \
        in message
    assert left['status'] == 'error_attaching'
    assert api.delete('/attachments/%s' % left['id']).status_code == 200


def test_rpc_servers_run_on_the_standard_thread_pool(stack):
    """cinder_lite.common.rpc swaps oslo.messaging's executor (futurist's
    pool, whose idle workers sit out a second before they notice a stop)
    for the standard library's through a private attribute: this notices
    when oslo.messaging stops reading it."""
    from concurrent import futures
    servers = [server for svc in stack.services
               for server in getattr(svc, '_servers', [])]
    assert servers
    for server in servers:
        assert type(server._work_executor) is futures.ThreadPoolExecutor


def test_a_failed_first_heartbeat_does_not_end_the_service(stack):
    """The first heartbeat runs once the service is registered and
    serving; when it fails (the database went away in that moment, as
    test_db_outage once caught under load) the service carries on and the
    heartbeat loop beats again."""
    reports = []

    def report(svc):
        reports.append(svc.host)
        if len(reports) == 1:
            raise RuntimeError('the database went away')
        return None

    svc = service_mod.RPCService(
        cfg.CONF, 'cinder-flaky', 'cinder-flaky', 'testnode@flaky', [],
        'nova', backend='flaky', report=report)
    svc.start()
    try:
        util.wait_for(lambda: len(reports) >= 2, timeout=10,
                      what='a heartbeat after the failed first one')
        services = stack.client().get('/os-services').json()['services']
        (row,) = [s for s in services if s['host'] == 'testnode@flaky']
        assert row['state'] == 'up'
    finally:
        svc.stop()
        svc.wait()


class _Ping:
    target = None

    def ping(self, ctxt):
        return 'pong'


def test_a_service_is_up_only_once_it_consumes_its_queue(stack):
    """A scheduler picks services that are up, or whose capabilities it
    was sent, and casts to them: a service seen before its RPC server
    consumed would have the cast go nowhere (a volume left ``creating``,
    as CI once caught).  The first capability report finds the server
    answering, and the row is not up before it."""
    import oslo_messaging as messaging

    from cinder_lite.common import context
    from cinder_lite.common import rpc
    from cinder_lite.db import api as db_api
    from cinder_lite.db import services as db_services

    endpoint = _Ping()
    endpoint.target = messaging.Target(version='1.0')
    host = 'testnode@%s' % uuid.uuid4().hex[:8]
    seen = {}

    def up_now():
        with db_api.reader() as session:
            row = db_services.get_by_host(session, host, 'cinder-early')
            return db_services.is_up(row.heartbeat_at,
                                     cfg.CONF.service_down_time)

    def registered(svc):
        seen['up when registered'] = up_now()

    def report(svc):
        if 'answer' not in seen:
            client = rpc.get_client('cinder-early', '1.0', server=host,
                                    timeout=5)
            try:
                seen['answer'] = client.call(context.get_admin_context(),
                                             'ping')
            except messaging.MessagingTimeout:
                seen['answer'] = None
        return {'volume_backend_name': 'early'}

    svc = service_mod.RPCService(
        cfg.CONF, 'cinder-early', 'cinder-early', host, [endpoint], 'nova',
        backend='early', report=report, on_registered=registered)
    svc.start()
    try:
        assert seen == {'up when registered': False, 'answer': 'pong'}
        assert up_now()
    finally:
        svc.stop()
        svc.wait()
