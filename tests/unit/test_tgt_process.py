"""Whether a tgtd is running, as the iSCSI target reads it from /proc: a
killed daemon's zombie is not running (and is reaped), whichever target
object started it."""
import os
import signal
import subprocess
import time

from cinder_lite.volume.targets import iscsi


def _until_zombie(pid):
    # the child is a zombie until someone waits for it
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open('/proc/%d/stat' % pid) as f:
            if f.read().rpartition(') ')[2][:1] == 'Z':
                return
        time.sleep(0.01)
    raise AssertionError('pid %d did not become a zombie' % pid)


def test_a_running_process_is_named_and_a_zombie_is_not_running():
    proc = subprocess.Popen(['sleep', '60'])
    try:
        assert iscsi._comm(proc.pid) == 'sleep'
        os.kill(proc.pid, signal.SIGKILL)
        _until_zombie(proc.pid)
        assert iscsi._comm(proc.pid) is None
        # and it was reaped: nothing is left under its pid
        assert not os.path.exists('/proc/%d' % proc.pid)
    finally:
        proc.kill()
        proc.wait()


def test_no_such_process():
    proc = subprocess.Popen(['true'])
    proc.wait()
    assert iscsi._comm(proc.pid) is None


def test_a_started_daemon_reaped_through_its_popen_keeps_its_exit_code():
    """A zombie of a process the target started is reaped through its
    Popen (not behind its back, which would leave the Popen believing it
    exited 0)."""
    proc = subprocess.Popen(['sh', '-c', 'exit 3'])
    iscsi._started[proc.pid] = proc
    _until_zombie(proc.pid)
    assert iscsi._comm(proc.pid) is None
    assert proc.returncode == 3
    assert proc.wait() == 3
    assert not os.path.exists('/proc/%d' % proc.pid)
