"""Backups of RBD volumes through the embedded stack's backup service
(POSIX store): an available image is read through a read-only key of
the backup's own, an image in use through a temporary RBD snapshot, a
user's snapshot at that snapshot; each restore is compared byte for
byte with what the image held, and nothing is left: no export, no key,
no temporary snapshot."""
import json
import os
import subprocess

from tests.harness import backups as bk
from tests.harness import dataplane as dp
from tests.rbd.test_rbd import _driver
from tests.harness.snapshots import wait_snapshot
from tests.rbd.test_rbd import api  # noqa: F401 (a fixture)

MiB = 1024 ** 2
MARKS = ((0, os.urandom(MiB)), (300 * MiB + 5, b'middle'),
         (1024 * MiB - 4, b'last'))


def _snapshots(ceph, name):
    rbd = _rbd(ceph)
    with rbd[0].Image(rbd[1], name, read_only=True) as image:
        return [s['name'] for s in image.list_snaps()]


def _rbd(ceph):
    from cinder_lite.volume.drivers import rbd as rbd_driver
    rados = rbd_driver.rados_module()
    client = rados.Rados(rados_id='admin', conffile=ceph.conf,
                         conf={'keyring': ceph.admin_keyring})
    client.connect(timeout=20)
    _rbd.clients.append(client)
    return rbd_driver.rbd_module(), client.open_ioctx(ceph.pool)


_rbd.clients = []


def _users(ceph):
    done = subprocess.run(
        ['ceph', '--conf', ceph.conf, '--keyring', ceph.admin_keyring,
         'auth', 'ls', '--format', 'json'], capture_output=True, text=True,
        timeout=60, check=True)
    return [e['entity'] for e in json.loads(done.stdout)['auth_dump']]


def _read_all(host, vid, marks):
    att, dev = host.attach_device(vid)
    try:
        return [dev.read(offset, len(data)) for offset, data in marks]
    finally:
        host.detach(att['id'], dev)


def test_backups_of_an_rbd_volume_available_in_use_and_of_a_snapshot(
        rbd_stack, ceph, api):  # noqa: F811
    api.put('/os-quota-sets/%s' % api.project, json={'quota_set': {
        'volumes': -1, 'gigabytes': -1, 'backups': -1,
        'backup_gigabytes': -1}})
    # a shared volume (no exclusive lock: each host writes; a
    # single-writer volume in use is in test_rbd_snapshot_in_use.py)
    vol = api.create_volume(size=1, volume_type='shared')
    writer = dp.attacher(rbd_stack, 'a')
    att, dev = writer.attach_device(vol['id'])
    for offset, data in MARKS:
        dev.write(offset, data)
    dev.flush()
    # in use: through a temporary snapshot; the writer goes on after
    backups = [bk.backup(api, vol['id'], force=True)]
    assert _snapshots(ceph, 'volume-%s' % vol['id']) == []
    dev.write(300 * MiB + 5, b'MIDDLE')
    dev.flush()
    writer.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')
    # available: the image itself
    backups.append(bk.backup(api, vol['id'], incremental=True))
    # a user's snapshot
    resp = api.post('/snapshots', json={'snapshot': {'volume_id': vol['id']}})
    assert resp.status_code == 202, resp.text
    snap = resp.json()['snapshot']
    wait_snapshot(api, snap['id'])
    backups.append(bk.backup(api, vol['id'], snapshot_id=snap['id']))
    assert api.get('/snapshots/%s' % snap['id']).json()['snapshot'][
        'status'] == 'available'

    reader = dp.attacher(rbd_stack, 'b')
    first = bk.restored(api, backups[0]['id'])
    assert _read_all(reader, first['id'], MARKS) == [d for _, d in MARKS]
    later = [(o, b'MIDDLE' if d == b'middle' else d) for o, d in MARKS]
    for b in backups[1:]:
        restored = bk.restored(api, b['id'])
        assert _read_all(reader, restored['id'], later) == [
            d for _, d in later]
    # a single-writer image (exclusive lock, object map), available: its
    # user's snapshot is read through the snapshot's object map
    plain = api.create_volume(size=1)
    att, dev = writer.attach_device(plain['id'])
    dev.write(7 * MiB, b'plain')
    dev.flush()
    writer.detach(att['id'], dev)
    api.wait_volume(plain['id'], 'available')
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': plain['id']}})
    assert resp.status_code == 202, resp.text
    wait_snapshot(api, resp.json()['snapshot']['id'])
    backups.append(bk.backup(api, plain['id'],
                             snapshot_id=resp.json()['snapshot']['id']))
    restored = bk.restored(api, backups[-1]['id'])
    assert _read_all(reader, restored['id'], [(7 * MiB, b'plain')]) == [
        b'plain']
    # nothing left of the backups' reads
    assert _driver(rbd_stack).list_exports() == []
    users = _users(ceph)
    assert [u for u in users for b in backups if b['id'] in u] == []
    for client in _rbd.clients:
        client.shutdown()
