"""The short directory NBD pause sockets of a long state directory go
to (cinder_lite/volume/targets/nbd.py): one export's end must not
remove it from under another export that is starting."""
import os
import shutil
import tempfile
import uuid

from cinder_lite.volume.targets import nbd


def _target(state_dir):
    # (only the paths are exercised: no nbdkit, no keys)
    target = nbd.NbdTarget.__new__(nbd.NbdTarget)
    target.state_dir = state_dir
    return target


def test_ending_one_export_keeps_the_short_directory_of_another():
    base = tempfile.mkdtemp()
    state_dir = os.path.join(base, 'x' * 120, 'nbd')
    os.makedirs(state_dir)
    target = _target(state_dir)
    starting, ending = str(uuid.uuid4()), str(uuid.uuid4())
    short = None
    try:
        # the starting export's socket path (its directory made), then
        # the other export's files forgotten before its nbdkit binds
        pause = target._pause_path(starting)
        short = os.path.dirname(pause)
        assert short != state_dir
        assert len(pause.encode()) <= nbd.SOCKET_PATH_MAX
        target._forget_files(ending)
        assert os.path.isdir(short)
        # and the starting one's path is still usable
        assert target._pause_path(starting) == pause
    finally:
        shutil.rmtree(base, ignore_errors=True)
        if short:
            shutil.rmtree(short, ignore_errors=True)
