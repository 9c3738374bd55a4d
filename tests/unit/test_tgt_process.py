"""Whether a tgtd is running, as the iSCSI target reads it from /proc: a
killed daemon's zombie is not running (and is reaped), whichever target
object started it."""
import os
import signal
import subprocess
import time

from cinder_lite.volume.targets import iscsi


def test_a_running_process_is_named_and_a_zombie_is_not_running():
    proc = subprocess.Popen(['sleep', '60'])
    try:
        assert iscsi._comm(proc.pid) == 'sleep'
        os.kill(proc.pid, signal.SIGKILL)
        # the child is a zombie until someone waits for it
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open('/proc/%d/stat' % proc.pid) as f:
                if f.read().rpartition(') ')[2][:1] == 'Z':
                    break
            time.sleep(0.01)
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
