"""A backend whose filesystem fills up (issue 48): node ma's volumes on a
size-limited tmpfs of the test's own (FS_MIB), thin like every file
backend (sparse files), with a source volume holding DATA_MIB of data and
a snapshot of it, so that one more copy does not fit.

* a snapshot, a clone and a volume from the snapshot each run out of
  space half-way through their copy: the snapshot or volume ends
  ``error``, the owner's user message names the cause ("No space left on
  device"), no partial copy is left, and the space the copy took is
  given back;
* an extend within what the thin backend may provision succeeds (the
  file grows sparse); one past it is refused (400, naming the backend's
  capacity) and the volume keeps its size and status;
* with the filesystem full to the last block (the test writes into the
  source's file, as a guest would), a create is refused by the
  scheduler: the volume ``error`` with a message naming the capacity
  filter that refused every backend; once space is freed,
  a create and a copy work again;
* afterwards ``cinder-lite-manage quota check`` finds the usage equal to
  the volumes.

Needs root (mount); skipped with the reason otherwise (failed under
CINDER_LITE_REQUIRE_SERVICES=1).
"""
import contextlib
import errno
import os
import shutil
import subprocess
import tempfile

from tests.harness import cluster as cluster_mod
from tests.harness import stack
from tests.harness import util

CLUSTER_KINDS = ['postgresql']
MiB = 1024 ** 2
FS_MIB = 160
DATA_MIB = 60
CONVERGE = 60
CLUSTER_OPTIONS = {
    'extra_default': {'reconcile_after': 3, 'reconcile_interval': 1,
                      'volume_rpc_timeout': 5},
}
NO_SPACE = os.strerror(errno.ENOSPC)


@contextlib.contextmanager
def _small_filesystem():
    """A tmpfs of FS_MIB for node ma's volumes."""
    util.need('mount', 'umount')
    if os.geteuid() != 0:
        util.skip_or_fail('mounting a tmpfs needs root')
    where = tempfile.mkdtemp(prefix='cinder-lite-full-')
    try:
        done = subprocess.run(
            ['mount', '-t', 'tmpfs', '-o', 'size=%dm,mode=0700' % FS_MIB,
             'cinder-lite-full', where], capture_output=True, text=True)
        if done.returncode != 0:
            util.skip_or_fail('cannot mount a tmpfs here: %s'
                              % done.stderr.strip())
        try:
            yield {'node_options': {'ma': {'volumes_dir': os.path.join(
                where, 'volumes')}}}
        finally:
            subprocess.run(['umount', where], check=True)
    finally:
        shutil.rmtree(where, ignore_errors=True)


CLUSTER_CONTEXT = _small_filesystem


def _root(cluster):
    with open(cluster.node_conf('ma')) as f:
        for line in f:
            if line.startswith('volumes_dir = '):
                return line.split(' = ', 1)[1].strip()
    raise AssertionError('no volumes_dir for ma')


def _used(cluster):
    st = os.statvfs(_root(cluster))
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def _files(cluster):
    return sorted(os.listdir(_root(cluster)))


def _show(api, kind, oid):
    resp = api.get('/%s/%s' % (kind, oid))
    if resp.status_code == 404:
        return None
    assert resp.status_code == 200, resp.text
    return resp.json()[kind[:-1]]


def _ends(api, kind, oid, status):
    def done():
        obj = _show(api, kind, oid)
        return obj is not None and obj['status'] in (status, 'available',
                                                     'error') and obj
    obj = util.wait_for(done, CONVERGE, interval=0.2,
                        what='%s %s %s' % (kind, oid, status))
    assert obj['status'] == status, (obj, _messages(api, oid))
    return obj


def _made(api, vid):
    """The volume once ``available`` or ``error``."""
    def done():
        vol = _show(api, 'volumes', vid)
        return vol['status'] in ('available', 'error') and vol
    return util.wait_for(done, CONVERGE, interval=0.2,
                         what='volume %s made' % vid)


def _messages(api, oid):
    resp = api.get('/messages?resource_uuid=%s' % oid)
    assert resp.status_code == 200, resp.text
    return [m['user_message'] for m in resp.json()['messages']]


def _delete(api, kind, oid):
    resp = api.delete('/%s/%s' % (kind, oid))
    assert resp.status_code == 202, resp.text
    util.wait_for(lambda: _show(api, kind, oid) is None, CONVERGE,
                  interval=0.2, what='%s %s deleted' % (kind, oid))


def _write(path, offset, length, seed):
    with open(path, 'r+b') as f:
        f.seek(offset)
        for n in range(0, length, MiB):
            f.write(util.pattern(MiB, b'%s-%d' % (seed, n)))
        os.fsync(f.fileno())


def _snapshot(api, volume_id):
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': volume_id, 'name': 'full'}})
    assert resp.status_code == 202, resp.text
    return resp.json()['snapshot']['id']


def _volume(api, size=1, **body):
    resp = api.post('/volumes', json={'volume': dict(size=size, **body)})
    assert resp.status_code == 202, resp.text
    return resp.json()['volume']['id']


def _no_space_message(api, oid):
    messages = _messages(api, oid)
    assert any(NO_SPACE in m for m in messages), messages


def test_copies_that_do_not_fit_fail_and_give_the_space_back(cluster):
    api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    vtype = api.create_type('full-ma', {'volume_backend_name': 'ma'})
    src = api.create_volume(size=1, volume_type=vtype['name'])
    path = os.path.join(_root(cluster), 'volume-%s' % src['id'])
    _write(path, 0, DATA_MIB * MiB, b'source')
    sid = _snapshot(api, src['id'])
    _ends(api, 'snapshots', sid, 'available')
    # the source and its snapshot hold 2 x DATA_MIB: one more copy does
    # not fit in FS_MIB
    before, files = _used(cluster), _files(cluster)
    assert FS_MIB * MiB - before < DATA_MIB * MiB, before

    # a snapshot
    bad = _snapshot(api, src['id'])
    _ends(api, 'snapshots', bad, 'error')
    _no_space_message(api, bad)
    assert _files(cluster) == files
    assert _used(cluster) <= before + MiB
    _delete(api, 'snapshots', bad)

    # a clone and a volume from the snapshot
    for body in ({'source_volid': src['id']}, {'snapshot_id': sid}):
        vid = _volume(api, volume_type=vtype['name'], **body)
        _ends(api, 'volumes', vid, 'error')
        _no_space_message(api, vid)
        assert _files(cluster) == files, body
        assert _used(cluster) <= before + MiB, body
        _delete(api, 'volumes', vid)
    assert _show(api, 'volumes', src['id'])['status'] == 'available'

    # an extend the thin backend may provision grows the file sparse; one
    # past what it may provision is refused, naming the capacity
    resp = api.post('/volumes/%s/action' % src['id'],
                    json={'os-extend': {'new_size': 2}})
    assert resp.status_code == 202, resp.text
    util.wait_for(lambda: _show(api, 'volumes', src['id'])['size'] == 2,
                  CONVERGE, interval=0.2, what='extended to 2 GiB')
    _ends(api, 'volumes', src['id'], 'available')
    assert os.stat(path).st_size == 2 * 1024 * MiB
    assert _used(cluster) <= before + MiB
    resp = api.post('/volumes/%s/action' % src['id'],
                    json={'os-extend': {'new_size': 1000}})
    assert resp.status_code == 400, resp.text
    assert 'capacity' in resp.json()['badRequest']['message'], resp.text
    vol = _ends(api, 'volumes', src['id'], 'available')
    assert vol['size'] == 2

    # the filesystem full to its last block, written as a guest would
    with open(path, 'r+b') as f:
        f.seek(DATA_MIB * MiB)
        block = util.pattern(MiB, b'fill')
        try:
            while True:
                f.write(block)
                f.flush()
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    st = os.statvfs(_root(cluster))
    assert st.f_bavail * st.f_frsize < MiB
    # a create the scheduler sees no room for (once the backend reported
    # its free space): error, with a message
    vid = None

    def refused():
        nonlocal vid
        if vid is not None:
            _delete(api, 'volumes', vid)
        vid = _volume(api, volume_type=vtype['name'])
        return _made(api, vid)['status'] == 'error'
    util.wait_for(refused, CONVERGE, interval=0.5,
                  what='a create refused for want of space')
    messages = _messages(api, vid)
    assert any('CapacityFilter: not enough free capacity for 1 GiB '
               '(node-ma@ma)' in m for m in messages), messages
    assert not os.path.exists(os.path.join(_root(cluster),
                                           'volume-%s' % vid))
    _delete(api, 'volumes', vid)

    # space given back (the guest discards what it wrote): a create and a
    # copy work again
    with open(path, 'r+b') as f:
        f.truncate(DATA_MIB * MiB)
        f.truncate(2 * 1024 * MiB)
    _delete(api, 'snapshots', sid)
    util.wait_for(lambda: _used(cluster) <= DATA_MIB * MiB + MiB, CONVERGE,
                  what='the space back')

    def works():
        vid = _volume(api, size=2, source_volid=src['id'],
                      volume_type=vtype['name'])
        ok = _made(api, vid)['status'] == 'available'
        _delete(api, 'volumes', vid)
        return ok
    util.wait_for(works, CONVERGE, interval=0.5,
                  what='a clone works again')
    _delete(api, 'volumes', src['id'])
    assert _files(cluster) == []
    check = cluster.manage('quota', 'check', check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert 'equals what the volumes say' in check.stdout
