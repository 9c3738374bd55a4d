"""The RBD backend against the run's Ceph cluster (tests/harness/ceph.py),
through the API and the compute side's librbd device: a volume's life
(create, extend, snapshots, copy-on-write clones, delete whatever was made
from it), a cephx user per attachment that reaches its own image only and
that the OSDs hold to read-only, and cut-offs (detach, fence) that remove
the key and blocklist its clients before they are reported.  Takeover
on RBD is in tests/dataplane/test_takeover.py and test_drain.py, the fence
agent in test_fence_agent.py."""
import json
import subprocess
import threading
import time

import pytest

from cinder_lite.common import credentials
from cinder_lite.connector import devices
from cinder_lite.volume.drivers import rbd as rbd_driver
from tests.dataplane.test_fencing import REGION
from tests.dataplane.test_fencing import _fence
from tests.dataplane.test_fencing import _status
from tests.dataplane.test_fencing import _writes_in_flight
from tests.harness import dataplane as dp

GiB = 1024 ** 3


def _driver(s):
    return s.volume_service('rbd').endpoints[0].driver


def _image(ceph, name):
    """``rbd info`` of an image as admin (None when there is none)."""
    done = subprocess.run(
        ['rbd', '--conf', ceph.conf, '--keyring', ceph.admin_keyring,
         'info', '--format', 'json', '%s/%s' % (ceph.pool, name)],
        capture_output=True, text=True, timeout=60)
    return json.loads(done.stdout) if done.returncode == 0 else None


def _key_exists(ceph, user):
    done = subprocess.run(
        ['ceph', '--conf', ceph.conf, '--keyring', ceph.admin_keyring,
         'auth', 'get', 'client.%s' % user], capture_output=True, timeout=60)
    return done.returncode == 0


def _as_attachment(info, read_only=None):
    """A librados client and an image opened with an attachment's key, as
    a host that ignores its mode would open it."""
    rados = rbd_driver.rados_module()
    rbd = rbd_driver.rbd_module()
    cluster = rados.Rados(
        rados_id=info['auth_username'], conffile=None,
        conf={'mon_host': ','.join('[v1:%s:%s]' % hp for hp in zip(
            info['hosts'], info['ports'])),
              'key': credentials.cephx_key_of(info['keyring']),
              'keyring': '', 'client_mount_timeout': '5'})
    cluster.connect(timeout=5)
    return cluster, rbd


@pytest.fixture
def api(rbd_stack):
    api = rbd_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    return api


def test_a_volume_life_on_rbd(rbd_stack, ceph, api):
    plain = api.create_volume(size=1)
    shared = api.create_volume(size=1, volume_type='shared')
    info = _image(ceph, 'volume-%s' % plain['id'])
    assert info['size'] == GiB
    assert {'layering', 'exclusive-lock', 'object-map'} <= set(
        info['features'])
    # many writers: no exclusive lock, as Cinder makes multiattach images
    assert _image(ceph, 'volume-%s' % shared['id'])['features'] == [
        'layering']

    host = dp.attacher(rbd_stack, 'a')
    att, dev = host.attach_device(plain['id'])
    assert att['connection_info']['driver_volume_type'] == 'rbd'
    dev.write(0, b'before the snapshot')
    dev.flush()
    host.detach(att['id'], dev)
    api.wait_volume(plain['id'], 'available')

    resp = api.post('/volumes/%s/action' % plain['id'],
                    json={'os-extend': {'new_size': 2}})
    assert resp.status_code == 202, resp.text
    api.wait_volume(plain['id'], 'available')
    assert _image(ceph, 'volume-%s' % plain['id'])['size'] == 2 * GiB

    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': plain['id'], 'name': 'snap'}})
    assert resp.status_code == 202, resp.text
    snap = resp.json()['snapshot']
    _wait(lambda: api.get('/snapshots/%s' % snap['id']).json()[
        'snapshot']['status'] == 'available')
    # a copy-on-write clone of the snapshot, bigger than it
    from_snap = api.create_volume(size=3, snapshot_id=snap['id'])
    child = _image(ceph, 'volume-%s' % from_snap['id'])
    assert child['parent']['image'] == 'volume-%s' % plain['id']
    assert child['parent']['snapshot'] == 'snapshot-%s' % snap['id']
    assert child['size'] == 3 * GiB
    clone = api.create_volume(size=2, source_volid=plain['id'])
    assert _image(ceph, 'volume-%s' % clone['id'])['parent'][
        'image'] == 'volume-%s' % plain['id']
    for vid in (from_snap['id'], clone['id']):
        att, dev = host.attach_device(vid)
        assert dev.read(0, 19) == b'before the snapshot'
        host.detach(att['id'], dev)
        api.wait_volume(vid, 'available')

    # the snapshot goes: its clone is flattened first and keeps its data
    assert api.delete('/snapshots/%s' % snap['id']).status_code == 202
    _wait(lambda: api.get('/snapshots/%s' % snap['id']).status_code == 404)
    assert 'parent' not in _image(ceph, 'volume-%s' % from_snap['id'])
    # the source goes: so does the clone's dependency on it
    assert api.delete('/volumes/%s' % plain['id']).status_code == 202
    api.wait_deleted(plain['id'])
    assert _image(ceph, 'volume-%s' % plain['id']) is None
    assert 'parent' not in _image(ceph, 'volume-%s' % clone['id'])
    att, dev = host.attach_device(clone['id'])
    assert dev.read(0, 19) == b'before the snapshot'
    host.detach(att['id'], dev)
    for vid in (from_snap['id'], clone['id'], shared['id']):
        api.wait_volume(vid, 'available')
        assert api.delete('/volumes/%s' % vid).status_code == 202
        api.wait_deleted(vid)
        assert _image(ceph, 'volume-%s' % vid) is None

    pools = api.get('/scheduler-stats/get_pools?detail=true').json()[
        'pools']
    (pool,) = pools
    assert pool['capabilities']['storage_protocol'] == 'ceph'
    assert 0 < pool['capabilities']['free_capacity_gb'] <= \
        pool['capabilities']['total_capacity_gb']


def _wait(predicate, timeout=60):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.1)


def test_each_attachment_has_a_key_that_reaches_its_volume_only(
        rbd_stack, ceph, api):
    vol = api.create_volume(volume_type='shared')
    other = api.create_volume(volume_type='shared')
    ha, hb = dp.attacher(rbd_stack, 'a'), dp.attacher(rbd_stack, 'b')
    a_att, a_dev = ha.attach_device(vol['id'])
    b_att, b_dev = hb.attach_device(vol['id'], mode='ro')
    a_info, b_info = a_att['connection_info'], b_att['connection_info']
    assert a_info['auth_username'] != b_info['auth_username']
    assert a_info['name'] == '%s/volume-%s' % (ceph.pool, vol['id'])
    assert (a_info['access_mode'], b_info['access_mode']) == ('rw', 'ro')
    assert b_dev.read_only

    a_dev.write(0, b'written by a')
    a_dev.flush()
    assert b_dev.read(0, 12) == b'written by a'

    # the read-only key, used by a host that ignores its mode: the OSDs
    # refuse every write, to the data and to the header
    cluster, rbd = _as_attachment(b_info)
    try:
        ioctx = cluster.open_ioctx(ceph.pool)
        image = rbd.Image(ioctx, 'volume-%s' % vol['id'], read_only=True)
        image_id = image.id()
        image.close()
        rados = rbd_driver.rados_module()
        with pytest.raises(rados.PermissionError):
            ioctx.write('rbd_data.%s.0000000000000000' % image_id, b'x')
        with pytest.raises(rados.PermissionError):
            ioctx.write('rbd_header.%s' % image_id, b'x')
        with pytest.raises(rbd.PermissionError):
            rbd.Image(ioctx, 'volume-%s' % vol['id'])     # read-write
        # neither key opens another volume, nor lists the pool
        with pytest.raises(rbd.PermissionError):
            rbd.Image(ioctx, 'volume-%s' % other['id'], read_only=True)
        with pytest.raises(rbd.PermissionError):
            rbd.RBD().list(ioctx)
        ioctx.close()
    finally:
        cluster.shutdown()
    cluster, rbd = _as_attachment(a_info)
    try:
        ioctx = cluster.open_ioctx(ceph.pool)
        with pytest.raises(rbd.PermissionError):
            rbd.Image(ioctx, 'volume-%s' % other['id'])
        ioctx.close()
    finally:
        cluster.shutdown()
    assert a_dev.read(0, 12) == b'written by a'

    # a reader of the attachment sees no key
    reader = rbd_stack.client(user='someone', roles='reader')
    shown = reader.get('/attachments/%s' % a_att['id'])
    if shown.status_code == 200:
        assert shown.json()['attachment']['connection_info'][
            'keyring'] == credentials.MASK

    # detach: the key is gone and the client it opened is cut
    users = [a_info['auth_username'], b_info['auth_username']]
    assert all(_key_exists(ceph, u) for u in users)
    ha.transport.delete(a_att['id'])       # host a never closes its device
    assert not _key_exists(ceph, users[0])
    with pytest.raises(rbd.ConnectionShutdown):
        a_dev.write(0, b'after the detach')
        a_dev.flush()
    a_dev.close()
    with pytest.raises(Exception):
        devices.connect(a_info)
    hb.detach(b_att['id'], b_dev)
    assert not _key_exists(ceph, users[1])
    for vid in (vol['id'], other['id']):
        api.wait_volume(vid, 'available')
    assert _driver(rbd_stack).list_exports() == []


def test_a_fence_holds_once_it_answers_and_unfence_lets_the_host_back(
        rbd_stack, ceph, api):
    vol = api.create_volume(volume_type='shared')
    vid = vol['id']
    ha, hb = dp.attacher(rbd_stack, 'a'), dp.attacher(rbd_stack, 'b')
    a_att, a_dev = ha.attach_device(vid)
    b_att, b_dev = hb.attach_device(vid)
    assert _status(api, 'host-a', vid)['reachable'] is True
    rbd = rbd_driver.rbd_module()

    # host a writes as fast as it can while it is fenced
    stop = threading.Event()
    writes, thread = _writes_in_flight(a_dev, stop)
    while len(writes) < 5:
        time.sleep(0.001)
    fenced = _fence(api, 'host-a', volume_id=vid, reason='node a lost')
    answered = time.monotonic()
    (entry,) = fenced['volumes']
    assert entry['attachments'] == [a_att['id']]
    assert entry['drained_ms'] is not None
    b_dev.write(0, b'b' * REGION)
    b_dev.flush()
    thread.join(30)
    stop.set()
    assert not thread.is_alive()
    # nothing a wrote was acknowledged after the fence answered, and b's
    # bytes are what the volume holds
    assert not [w for w in writes if w[2] and w[1] > answered]
    assert writes[-1][2] is False
    assert b_dev.read(0, REGION) == b'b' * REGION
    with pytest.raises(rbd.ConnectionShutdown):
        a_dev.write(0, b'late')
    a_dev.close()
    status = _status(api, 'host-a', vid)
    assert (status['fenced'], status['reachable'], status['exports'],
            status['sessions']) == (True, False, [], 0)
    assert _status(api, 'host-b', vid)['reachable'] is True
    assert not _key_exists(ceph, a_att['connection_info']['auth_username'])

    out = _fence(api, 'host-a', 'os-unfence', volume_id=vid)
    assert out['volumes'][0]['attachments'] == [a_att['id']]
    assert _status(api, 'host-a', vid)['reachable'] is True
    a_dev = ha.open(api.get('/attachments/%s' % a_att['id']).json()[
        'attachment'])
    assert a_dev.read(0, 1) == b'b'
    a_dev.write(0, b'a is back')
    a_dev.flush()
    assert b_dev.read(0, 9) == b'a is back'
    ha.detach(a_att['id'], a_dev)
    hb.detach(b_att['id'], b_dev)
    api.wait_volume(vid, 'available')


def test_an_in_use_volume_grows_under_its_writers(rbd_stack, ceph, api):
    vol = api.create_volume(size=1, volume_type='shared')
    ha, hb = dp.attacher(rbd_stack, 'a'), dp.attacher(rbd_stack, 'b')
    a_att, a_dev = ha.attach_device(vol['id'])
    b_att, b_dev = hb.attach_device(vol['id'])
    api.wait_volume(vol['id'], 'in-use')
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-extend': {'new_size': 2}})
    assert resp.status_code == 202, resp.text
    _wait(lambda: api.get('/volumes/%s' % vol['id']).json()['volume'][
        'size'] == 2)
    api.wait_volume(vol['id'], 'in-use')
    assert _image(ceph, 'volume-%s' % vol['id'])['size'] == 2 * GiB
    # the open clients see the new size (librbd rereads the header it
    # watches when told it changed): a write past the old end lands and
    # the other host reads it
    for dev in (a_dev, b_dev):
        _wait(lambda: dev.refresh() == 2 * GiB, timeout=10)
    a_dev.write(GiB + 4096, b'past the old end')
    a_dev.flush()
    assert b_dev.read(GiB + 4096, 16) == b'past the old end'
    ha.detach(a_att['id'], a_dev)
    hb.detach(b_att['id'], b_dev)
    api.wait_volume(vol['id'], 'available')


def test_a_revert_rolls_the_image_back_to_its_latest_snapshot(
        rbd_stack, ceph, api):
    """write, snapshot, overwrite, revert (``rbd snap rollback``): the
    image reads the snapshot's bytes again, the snapshot stays."""
    vol = api.create_volume(size=1)
    host = dp.attacher(rbd_stack, 'a')
    first = bytes(range(256)) * 64
    att, dev = host.attach_device(vol['id'])
    dev.write(0, first)
    dev.write(700 * 1024 * 1024, b'far in the snapshot')
    dev.flush()
    host.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id']}})
    assert resp.status_code == 202, resp.text
    snap = resp.json()['snapshot']
    _wait(lambda: api.get('/snapshots/%s' % snap['id']).json()[
        'snapshot']['status'] == 'available')
    att, dev = host.attach_device(vol['id'])
    dev.write(0, b'\xff' * len(first))
    dev.write(700 * 1024 * 1024, b'overwritten after it')
    dev.write(900 * 1024 * 1024, b'only after the snapshot')
    dev.flush()
    host.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')

    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'revert': {'snapshot_id': snap['id']}})
    assert resp.status_code == 202, resp.text
    api.wait_volume(vol['id'], 'available')
    assert api.get('/snapshots/%s' % snap['id']).json()['snapshot'][
        'status'] == 'available'
    att, dev = host.attach_device(vol['id'])
    assert dev.read(0, len(first)) == first
    assert dev.read(700 * 1024 * 1024, 19) == b'far in the snapshot'
    assert dev.read(900 * 1024 * 1024, 23) == bytes(23)
    host.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')
    assert _image(ceph, 'volume-%s' % vol['id'])['size'] == GiB
