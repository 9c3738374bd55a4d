"""The harness's forked services (tests/harness/forkrun.py ``spawn``, which
the integration clusters start their services with): they serve, log to
their file, and report how they ended as ``subprocess.Popen`` would."""
import os
import signal
import subprocess

import pytest

from tests.harness import forkrun
from tests.harness import stack as stack_mod
from tests.harness import util


def _start_all(tmp_path):
    port = util.free_port()
    conf = tmp_path / 'c.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\nosapi_volume_listen_port'
                    ' = %d\n' % (tmp_path / 'state', port))
    with open(tmp_path / 'all.log', 'ab') as log:
        child = forkrun.spawn('cinder_lite.cmd.all',
                              ['--config-file', str(conf)], str(tmp_path),
                              dict(os.environ), log)
    util.wait_for(lambda: child.poll() is not None or stack_mod.api_answers(port),
                  timeout=30, what='the forked API')
    assert child.poll() is None, (tmp_path / 'all.log').read_text()
    return child


def test_sigterm_stops_a_forked_service_with_exit_code_0(tmp_path):
    child = _start_all(tmp_path)
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0.1)
    child.terminate()
    assert child.wait(timeout=30) == 0
    # its own process: another pid than ours, its log in its file
    assert child.pid != os.getpid()
    assert 'stopping' in (tmp_path / 'all.log').read_text()


def test_a_killed_service_reports_the_signal(tmp_path):
    child = _start_all(tmp_path)
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    # reported once, and kept
    assert child.poll() == -signal.SIGKILL


def test_a_command_that_fails_reports_its_code(tmp_path):
    with open(tmp_path / 'out.log', 'ab') as log:
        child = forkrun.spawn('cinder_lite.cmd.manage', ['no-such-command'],
                              str(tmp_path), dict(os.environ), log)
    assert child.wait(timeout=60) == 2
    assert 'invalid choice' in (tmp_path / 'out.log').read_text()
