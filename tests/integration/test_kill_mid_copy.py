"""A volume service killed with SIGKILL in the middle of each operation
that copies data on its backend, then started again (issue 48): the
operation converges (finished or reverted) without an operator, and
nothing is left behind -- no file but those of live volumes and
snapshots, no temporary copy, no conversion file, no export record or
nbdkit process -- and the recorded quota usage is what the volumes are
(``cinder-lite-manage quota check``).

One deployment (MariaDB, RabbitMQ, node ma's file backend on the
machine's disk, where a copy is a sparse copy, not a reflink) serves
every case; a source volume holds DATA bytes written by the test, so a
copy lasts long enough to be cut:

* ``snapshot``      -- killed while the snapshot's temporary copy is
  being written: the copy is made again, the snapshot ``available``
  with the volume's bytes;
* ``clone``, ``from_snapshot`` -- killed while the new volume's copy is
  being written: the create is rolled forward, ``available``, bytes
  equal to the source's;
* ``extend``        -- the service stopped (SIGSTOP) when the extend is
  accepted and then killed, so the request is in flight when it dies
  (the file driver's extend itself is one ftruncate): ``available``,
  at the old size with a user message or at the new one, the file as
  long as the recorded size;
* ``from_image``    -- killed while a qcow2 image is being downloaded
  from Glance (the image server stopped with SIGSTOP meanwhile, so the
  download is surely under way): the volume ``error`` with a user
  message, its storage and the downloaded file removed;
* ``upload``        -- killed while the volume is copied into a qcow2
  file for Glance: the volume ``available`` again with a user message,
  the converted file removed.

The image cases need the real Glance (tools/openstack-venv, as
tests/functional/test_image_volumes.py); they skip with the reason
without it (fail under CINDER_LITE_REQUIRE_SERVICES=1).  Migrations and
backups killed mid-copy are tested in test_migration.py and
test_backups.py.
"""
import contextlib
import glob
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading

import pytest

from tests.harness import cluster as cluster_mod
from tests.harness import stack
from tests.harness import util

CLUSTER_KINDS = ['mysql']
MiB = 1024 ** 2
GiB = 1024 ** 3
# the source's data: about a second of copy on a slow disk, a tenth on a
# fast one; the kill lands within milliseconds of the copy's start
DATA = 192 * MiB
IMAGE_DATA = 96 * MiB
NBD = {'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1'}
_PORT = int(util.free_range(40).partition('-')[0])
CLUSTER_OPTIONS = {
    'extra_default': {'reconcile_after': 3, 'reconcile_interval': 1,
                      'volume_rpc_timeout': 5},
    'node_options': {
        'ma': dict(NBD, target_port_range='%d-%d' % (_PORT, _PORT + 19)),
        'noma': dict(NBD, target_port_range='%d-%d' % (
            _PORT + 20, _PORT + 39))},
}
SERVICE = 'node-ma@ma'
# how long a converging operation may take once the service is back: the
# restart, reconcile_after and a copy made again, on a loaded machine
CONVERGE = 120
# tries at cutting a copy before the test gives up (a kill that lands
# after the copy ended tests nothing and is tried again)
TRIES = 3
TRANSITIONAL = {'creating', 'deleting', 'extending', 'downloading',
                'uploading', 'reverting', 'managing', 'unmanaging',
                'restoring', 'backing-up', 'attaching', 'detaching'}
_glance = {}


@contextlib.contextmanager
def _maybe_glance():
    """A Glance of the module's own, started alongside the cluster (which
    finds it through glance_api_servers) when the OpenStack virtualenv
    is there; the image cases wait for it (``_glance_server``)."""
    from tests.harness import glance as glance_mod
    where = tempfile.mkdtemp(prefix='cinder-lite-kill-glance-')
    server = glance_mod.Glance(where, port=util.free_port())

    def start():
        try:
            server.start()
            _glance['server'] = server
        except cluster_mod.ServiceUnavailable as e:
            _glance['reason'] = 'Glance: %s' % e
        except Exception as e:
            _glance['reason'] = 'Glance did not start: %s' % e
    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    _glance['thread'] = thread
    try:
        yield {'extra_default': {'glance_api_servers': server.url}}
    finally:
        thread.join()
        _glance.clear()
        server.stop()
        shutil.rmtree(where, ignore_errors=True)


CLUSTER_CONTEXT = _maybe_glance


# -- the backend as the test sees it ------------------------------------------
def _dir(cluster):
    return os.path.join(cluster.workdir, 'state', 'volumes', 'ma')


def _path(cluster, kind, oid):
    return os.path.join(_dir(cluster), '%s-%s' % (kind, oid))


def _conversion_files(cluster):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(
        cluster.workdir, 'state', 'conversion', '*')))


def _export_records(cluster):
    found = []
    for node in ('ma', 'noma'):
        state = os.path.join(cluster.workdir, 'state', 'targets', node,
                             'nbd')
        if os.path.isdir(state):
            found += [n for n in os.listdir(state) if n.endswith('.json')]
    return found


def _digest(path, length=DATA):
    """sha256 of the first ``length`` bytes, the file's size and whether
    anything past them holds data."""
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        remaining = length
        while remaining:
            chunk = f.read(min(remaining, 16 * MiB))
            if not chunk:
                break
            h.update(chunk)
            remaining -= len(chunk)
        fd = f.fileno()
        size = os.fstat(fd).st_size
        try:
            beyond = os.lseek(fd, length, os.SEEK_DATA) < size
        except OSError:
            beyond = False
    return h.hexdigest(), size, beyond


def _fill(path, length, seed):
    with open(path, 'r+b') as f:
        for offset in range(0, length, 16 * MiB):
            f.write(util.pattern(16 * MiB, b'%s-%d' % (seed, offset)))
        os.fsync(f.fileno())


# -- the service --------------------------------------------------------------
def _kill(cluster):
    cluster.kill('ma')


def _restart(cluster):
    cluster.processes['ma'].expected_dead = False
    del cluster.processes['ma']
    cluster.ensure_running('ma', 'cinder-volume', SERVICE)


def _kill_when(cluster, predicate, what, interval=0.002, timeout=60):
    util.wait_for(predicate, timeout, interval=interval, what=what)
    _kill(cluster)


# -- the API ------------------------------------------------------------------
def _show(api, kind, oid):
    resp = api.get('/%s/%s' % (kind, oid))
    if resp.status_code == 404:
        return None
    assert resp.status_code == 200, resp.text
    return resp.json()[kind[:-1]]


def _settled(api, kind, oid):
    """The volume or snapshot once out of every transitional status."""
    def done():
        obj = _show(api, kind, oid)
        assert obj is not None, '%s %s vanished' % (kind, oid)
        return obj['status'] not in TRANSITIONAL and obj
    return util.wait_for(done, CONVERGE, interval=0.2,
                         what='%s %s settled' % (kind, oid))


def _messages(api, oid):
    resp = api.get('/messages?resource_uuid=%s' % oid)
    assert resp.status_code == 200, resp.text
    return [m['user_message'] for m in resp.json()['messages']]


def _delete(api, kind, oid):
    resp = api.delete('/%s/%s' % (kind, oid))
    assert resp.status_code == 202, resp.text
    util.wait_for(lambda: _show(api, kind, oid) is None, CONVERGE,
                  interval=0.2, what='%s %s deleted' % (kind, oid))


@pytest.fixture(scope='module')
def source(cluster):
    """A 1 GiB volume on ma whose first DATA bytes are written."""
    api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    vtype = api.create_type('kill-ma', {'volume_backend_name': 'ma'})
    vol = api.create_volume(size=1, volume_type=vtype['name'])
    path = _path(cluster, 'volume', vol['id'])
    _fill(path, DATA, b'source')
    return {'volume': vol, 'type': vtype['name'], 'digest': _digest(path)}


def _cut_copy(cluster, start, kind):
    """``start()`` a copy that makes ma's file of ``kind`` for the id it
    returns, and kill the service while the temporary copy
    (``<file>.creating``) is being written; tried again once the
    service is back when the kill landed after the copy.  Returns the
    id whose copy was cut."""
    for attempt in range(TRIES):
        oid = start()
        done = _path(cluster, kind, oid)
        tmp = done + '.creating'
        _kill_when(cluster, lambda: os.path.exists(tmp) or
                   os.path.exists(done), 'the copy of %s begun' % oid)
        cut = os.path.exists(tmp) and not os.path.exists(done)
        _restart(cluster)
        if cut:
            return oid
        print('try %d: the kill came after the copy of %s' % (attempt, oid))
    pytest.fail('%d kills all came after the copy ended: the copy is '
                'too fast here to be cut (raise DATA)' % TRIES)


def _snapshot(api, volume_id):
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': volume_id, 'name': 'cut'}})
    assert resp.status_code == 202, resp.text
    return resp.json()['snapshot']['id']


def _volume(api, **body):
    resp = api.post('/volumes', json={'volume': dict(size=1, **body)})
    assert resp.status_code == 202, resp.text
    return resp.json()['volume']['id']


# -- the cases ----------------------------------------------------------------
def case_snapshot(cluster, api, source):
    sid = _cut_copy(cluster, lambda: _snapshot(api, source['volume']['id']),
                    'snapshot')
    snap = _settled(api, 'snapshots', sid)
    assert snap['status'] == 'available', (snap, _messages(api, sid))
    assert _digest(_path(cluster, 'snapshot', sid)) == source['digest']
    _delete(api, 'snapshots', sid)


def case_clone(cluster, api, source):
    vid = _cut_copy(
        cluster, lambda: _volume(api, source_volid=source['volume']['id']),
        'volume')
    vol = _settled(api, 'volumes', vid)
    assert vol['status'] == 'available', (vol, _messages(api, vid))
    assert _digest(_path(cluster, 'volume', vid)) == source['digest']
    _delete(api, 'volumes', vid)


def case_from_snapshot(cluster, api, source):
    sid = _snapshot(api, source['volume']['id'])
    util.wait_for(lambda: _show(api, 'snapshots', sid)['status'] ==
                  'available', CONVERGE, interval=0.2,
                  what='snapshot %s available' % sid)
    vid = _cut_copy(cluster, lambda: _volume(api, snapshot_id=sid),
                    'volume')
    vol = _settled(api, 'volumes', vid)
    assert vol['status'] == 'available', (vol, _messages(api, vid))
    assert _digest(_path(cluster, 'volume', vid)) == source['digest']
    _delete(api, 'volumes', vid)
    _delete(api, 'snapshots', sid)


def case_extend(cluster, api, source):
    vid = api.create_volume(size=1, volume_type=source['type'])['id']
    cluster.processes['ma'].signal(signal.SIGSTOP)
    try:
        resp = api.post('/volumes/%s/action' % vid,
                        json={'os-extend': {'new_size': 2}})
        assert resp.status_code == 202, resp.text
        assert _show(api, 'volumes', vid)['status'] == 'extending'
    finally:
        _kill(cluster)
    _restart(cluster)
    vol = _settled(api, 'volumes', vid)
    assert vol['status'] == 'available', (vol, _messages(api, vid))
    assert vol['size'] in (1, 2), vol
    assert os.stat(_path(cluster, 'volume', vid)).st_size == \
        vol['size'] * GiB
    if vol['size'] == 1:
        assert any('extend' in m for m in _messages(api, vid)), \
            _messages(api, vid)
    _delete(api, 'volumes', vid)


def _glance_server():
    _glance['thread'].join()
    server = _glance.get('server')
    if server is None:
        util.skip_or_fail(_glance.get('reason', 'no Glance'))
    util.need('qemu-img')
    return server


def case_from_image(cluster, api, source):
    server = _glance_server()
    with tempfile.TemporaryDirectory() as where:
        raw, qcow2 = (os.path.join(where, n) for n in ('i.raw', 'i.qcow2'))
        with open(raw, 'wb') as f:
            f.truncate(GiB)
        _fill(raw, IMAGE_DATA, b'image')
        subprocess.run(['qemu-img', 'convert', '-f', 'raw', '-O', 'qcow2',
                        raw, qcow2], check=True)
        image = server.make_image('cut', qcow2, 'qcow2')
    vid = _volume(api, imageRef=image['id'], volume_type=source['type'])
    pids = server.worker_pids()
    # the download under way, then the image server frozen in it
    util.wait_for(lambda: _show(api, 'volumes', vid)['status'] ==
                  'downloading' and _conversion_files(cluster), CONVERGE,
                  interval=0.002, what='volume %s downloading' % vid)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        _kill(cluster)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    assert _show(api, 'volumes', vid)['status'] == 'downloading'
    _restart(cluster)
    vol = _settled(api, 'volumes', vid)
    assert vol['status'] == 'error', vol
    assert any('interrupted' in m for m in _messages(api, vid)), \
        _messages(api, vid)
    assert not os.path.exists(_path(cluster, 'volume', vid))
    _delete(api, 'volumes', vid)
    server.call('DELETE', '/images/%s' % image['id'], 204)


def case_upload(cluster, api, source):
    _glance_server()
    vid = api.create_volume(size=1, volume_type=source['type'])['id']
    _fill(_path(cluster, 'volume', vid), DATA, b'upload')
    resp = api.post('/volumes/%s/action' % vid, json={
        'os-volume_upload_image': {'image_name': 'cut',
                                   'disk_format': 'qcow2'}})
    assert resp.status_code == 202, resp.text
    _kill_when(cluster, lambda: _conversion_files(cluster),
               'the conversion of %s begun' % vid)
    assert _show(api, 'volumes', vid)['status'] == 'uploading'
    _restart(cluster)
    vol = _settled(api, 'volumes', vid)
    assert vol['status'] == 'available', vol
    assert any('interrupted' in m for m in _messages(api, vid)), \
        _messages(api, vid)
    _delete(api, 'volumes', vid)


CASES = {name[len('case_'):]: fn for name, fn in globals().items()
         if name.startswith('case_')}


def _nothing_left(cluster, api, source):
    """Only the files of live volumes and snapshots on ma, no temporary
    or conversion file, no export, quota usage as the volumes say."""
    def files_match():
        volumes = api.get('/volumes/detail?all_tenants=1').json()['volumes']
        snaps = api.get('/snapshots/detail?all_tenants=1').json()[
            'snapshots']
        want = {'volume-%s' % v['id'] for v in volumes
                if (v.get('os-vol-host-attr:host') or '').startswith(
                    SERVICE)}
        want |= {'snapshot-%s' % s['id'] for s in snaps}
        have = set(os.listdir(_dir(cluster)))
        return (have == want and not _conversion_files(cluster)) or None
    try:
        util.wait_for(files_match, CONVERGE, interval=0.2,
                      what='only live files on ma')
    except AssertionError:
        raise AssertionError('files on ma: %s, conversion: %s' % (
            sorted(os.listdir(_dir(cluster))), _conversion_files(cluster)))
    assert _export_records(cluster) == []
    assert util.processes('nbdkit', cluster.workdir) == []
    check = cluster.manage('quota', 'check', check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert 'equals what the volumes say' in check.stdout
    # the source is untouched
    assert _digest(_path(cluster, 'volume', source['volume']['id'])) == \
        source['digest']


@pytest.mark.parametrize('case', sorted(CASES))
def test_killed_mid_operation_converges(cluster, api, source, case):
    CASES[case](cluster, api, source)
    _nothing_left(cluster, api, source)
    cluster.check_alive()
