"""The file backend's storage seen from a test (a volume's or a
snapshot's file under the stack's state path, read and written
directly), and the volume steps several test modules share."""
import os

from cinder_lite.db import api as db_api
from cinder_lite.db import volumes as db_volumes


def volume_file(stack, vid, kind='volume'):
    """The file of volume (or ``kind='snapshot'``: snapshot) ``vid``."""
    return os.path.join(stack.state_path, 'volumes', 'file',
                        '%s-%s' % (kind, vid))


def write(stack, vid, offset, data):
    with open(volume_file(stack, vid), 'r+b') as f:
        f.seek(offset)
        f.write(data)


def read(stack, vid, offset, length, kind='volume'):
    with open(volume_file(stack, vid, kind), 'rb') as f:
        f.seek(offset)
        return f.read(length)


def data_extents(path):
    """(start, end) of the data of ``path`` as the filesystem has it."""
    found = []
    with open(path, 'rb') as f:
        fd, end, pos = f.fileno(), os.fstat(f.fileno()).st_size, 0
        while pos < end:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:         # ENXIO: only a hole after pos
                break
            pos = os.lseek(fd, start, os.SEEK_HOLE)
            found.append((start, pos))
    return found


def create_available(api, **volume):
    """POST /volumes with ``volume``, then wait until it is available."""
    resp = api.post('/volumes', json={'volume': volume})
    assert resp.status_code == 202, resp.text
    return api.wait_volume(resp.json()['volume']['id'], 'available')


def interrupt_and_reconcile(stack, vid):
    """Leave the volume ``creating``, as a volume service that stopped
    before it made the volume leaves it, and let the service roll the
    create forward (it reads the volume back from the database)."""
    with db_api.writer() as session:
        # (the operator's event: no other leads back to creating)
        db_volumes.transition(session, vid, 'reset_status', 'creating')
    manager, = stack.volume_service('file').endpoints
    return manager.reconcile_now(max_age=0)
