"""Differential backups of RBD volumes with the Ceph backup driver,
against the run's Ceph cluster: each backup an RBD snapshot of the
volume's backup image ``volume-<id>.backup.base`` in the backup pool,
the first a full copy, each next one written from librbd's diff of the
volume between the backup snapshots the volume service made of it.

The volumes' bytes are written and read as client.admin (the subject is
the backup, not the hosts' path); the backup service connects with the
caps doc/source/rbd.rst gives it (tests/harness/ceph.py, ``backup_caps``), and
reads a volume with a key of the backup's own that may only read it.
Every restore is compared byte for byte with what the volume held: the
ranges the restored image holds data in are read, and every other byte
must be one that reads as zeros."""
import base64
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from cinder_lite.backup.drivers import ceph_rbd
from tests.conftest import rbd_backend
from tests.harness import backups as bk
from tests.harness import stack as stack_mod

KiB = 1024
MiB = 1024 * KiB
# a backup pool and user of these tests' own: test_backup_ceph_driver,
# which may run at the same time on the run's cluster, counts the objects
# of the default backup pool
DIFF_POOL = 'backups-diff'
DIFF_USER = 'cinder-lite-backup-diff'
GiB = 1024 * MiB
CEPH_DRIVER = 'cinder.backup.drivers.ceph.CephBackupDriver'


class Admin:
    """librbd as client.admin on the volume pool and the backup pool."""

    def __init__(self, ceph):
        from cinder_lite.volume.drivers import rbd as rbd_driver
        self.rbd = rbd_driver.rbd_module()
        rados = rbd_driver.rados_module()
        self.cluster = rados.Rados(rados_id='admin', conffile=ceph.conf,
                                   conf={'keyring': ceph.admin_keyring})
        self.cluster.connect(timeout=20)
        self.volumes = self.cluster.open_ioctx(ceph.pool)
        self.backups = self.cluster.open_ioctx(DIFF_POOL)

    def close(self):
        self.volumes.close()
        self.backups.close()
        self.cluster.shutdown()

    def image(self, name, pool=None, snapshot=None):
        return self.rbd.Image(pool or self.volumes, name, snapshot=snapshot,
                              read_only=snapshot is not None)

    def snaps(self, name, pool=None):
        try:
            with self.image(name, pool) as image:
                return [s['name'] for s in sorted(image.list_snaps(),
                                                  key=lambda s: s['id'])]
        except self.rbd.ImageNotFound:
            return None

    def write(self, vid, model, offset, data):
        with self.image('volume-%s' % vid) as image:
            image.write(data, offset)
            image.flush()
        model.append((offset, data))

    def zero(self, vid, model, offset, length):
        with self.image('volume-%s' % vid) as image:
            image.discard(offset, length)
            image.flush()
        model.append((offset, bytes(length)))


def expected(model, offset, length):
    out = bytearray(length)
    for start, data in model:
        a, b = max(start, offset), min(start + len(data), offset + length)
        if a < b:
            out[a - offset:b - offset] = data[a - start:b - start]
    return bytes(out)


def extents(image, from_snapshot=None):
    found = []
    image.diff_iterate(0, image.size(), from_snapshot,
                       lambda o, n, e: found.append((o, n, e)))
    return found


def assert_holds(image, model):
    """``image`` reads as ``model`` (writes over zeros) byte for byte,
    and holds no data beyond an object around what was written."""
    held = [(o, n) for o, n, e in extents(image) if e]
    for offset, n in held:
        for at in range(offset, offset + n, 4 * MiB):
            k = min(4 * MiB, offset + n - at)
            assert image.read(at, k) == expected(model, at, k), at
    # what is not held reads as zeros: it must be zeros in the model
    covered = ceph_rbd._merge((o, o + n) for o, n in held)
    for offset, data in model:
        for a, b in ceph_rbd._subtract([(offset, offset + len(data))],
                                       covered):
            assert not any(expected(model, a, b - a)), (a, b)
    # holes stay holes
    written = ceph_rbd._merge((o, o + len(d)) for o, d in model)
    assert sum(n for _, n in held) <= sum(
        b - a for a, b in written) + 2 * len(written) * 4 * MiB


def exported(api, backup_id):
    """The backup's fields as export_record gives them."""
    record = api.get('/backups/%s/export_record' % backup_id).json()[
        'backup-record']
    return json.loads(base64.b64decode(record['backup_url']))


def meta_of(api, backup_id):
    return json.loads(exported(api, backup_id)['service_metadata'])


@pytest.fixture
def admin(ceph):
    ceph.make_backup_user(DIFF_POOL, DIFF_USER)     # (and the backup pool)
    a = Admin(ceph)
    yield a
    a.close()


@pytest.fixture
def diff_stack(ceph, tmp_path):
    conf_path, _ = ceph.make_backup_user(DIFF_POOL, DIFF_USER)
    s = stack_mod.Stack(tmp_path / 'st', backends={
        'rbd': rbd_backend(ceph), 'file': {}}, extra={
        'backup_driver': CEPH_DRIVER, 'backup_ceph_conf': conf_path,
        'backup_ceph_user': DIFF_USER,
        'backup_ceph_pool': DIFF_POOL}).start()
    try:
        api = s.client()
        api.put('/os-quota-sets/%s' % api.project, json={'quota_set': {
            'volumes': -1, 'gigabytes': -1, 'backups': -1,
            'backup_gigabytes': -1}})
        api.create_type('on-rbd', {'volume_backend_name': 'rbd'})
        api.create_type('on-file', {'volume_backend_name': 'file'})
        # many writers, no exclusive lock (a writer holding an image's
        # lock is asked to make its snapshots, and a host's key may not)
        api.create_type('shared-rbd', {'volume_backend_name': 'rbd',
                                       'multiattach': '<is> True'})
        yield s, api
    finally:
        driver = s.volume_service('rbd').endpoints[0].driver
        left = driver.list_exports()
        s.stop()
        assert left == [], 'exports left behind: %s' % left


def restored_into(api, backup_id, volume_type, size=None):
    """A new volume of ``volume_type`` with the backup restored into
    it."""
    size = size or bk.show(api, backup_id)['size']
    target = api.create_volume(size=size, volume_type=volume_type)
    return bk.restored(api, backup_id, volume_id=target['id'])


def restored_image(api, admin, backup_id):
    vol = restored_into(api, backup_id, 'on-rbd')
    return vol, admin.image('volume-%s' % vol['id'])


def test_full_then_incrementals_write_what_changed_and_restore(
        diff_stack, admin):
    s, api = diff_stack
    vol = api.create_volume(size=4, volume_type='on-rbd')
    vid = vol['id']
    source = 'volume-%s' % vid
    base = ceph_rbd.image_name(vid)
    model = []
    # a large sparse volume: 12 MiB of data in 4 GiB
    admin.write(vid, model, 0, os.urandom(4 * MiB))
    admin.write(vid, model, GiB + 5, os.urandom(4 * MiB))
    admin.write(vid, model, 4 * GiB - 4 * MiB, os.urandom(4 * MiB))
    points = []

    full = bk.backup(api, vid)
    meta = meta_of(api, full['id'])
    assert meta['layout'] == 'rbd' and meta['image'] == base
    assert meta['snapshot'].startswith('backup.%s.snap.' % full['id'])
    assert meta['source_snapshot'] == meta['snapshot']
    assert meta['base_snapshot'] is None
    # the full copy read what the volume holds, not its 4 GiB
    assert 12 * MiB <= meta['written_bytes'] <= 20 * MiB
    assert admin.snaps(source) == [meta['snapshot']]
    assert admin.snaps(base, admin.backups) == [meta['snapshot']]
    points.append((full, list(model), meta))

    # one 64 KiB block rewritten: about one block read and written
    admin.write(vid, model, GiB + 2 * MiB, os.urandom(64 * KiB))
    incr = bk.backup(api, vid, incremental=True)
    assert incr['is_incremental'] and incr['container'] == \
        DIFF_POOL
    meta = meta_of(api, incr['id'])
    assert meta['base_snapshot'] == points[0][2]['snapshot']
    assert 64 * KiB <= meta['written_bytes'] <= 4 * MiB
    with admin.image(base, admin.backups, meta['snapshot']) as image:
        changed = extents(image, points[0][2]['snapshot'])
    assert 64 * KiB <= sum(n for _, n, _ in changed) <= 4 * MiB
    # the volume keeps the snapshot of its newest backup only
    assert admin.snaps(source) == [meta['snapshot']]
    points.append((incr, list(model), meta))

    # data in a hole, and a range zeroed (a hole again in the backup)
    admin.write(vid, model, 2 * GiB, os.urandom(MiB))
    admin.zero(vid, model, 0, 4 * MiB)
    third = bk.backup(api, vid, incremental=True)
    meta = meta_of(api, third['id'])
    assert meta['written_bytes'] <= 5 * MiB + 64 * KiB
    points.append((third, list(model), meta))
    assert admin.snaps(base, admin.backups) == [
        p[2]['snapshot'] for p in points]

    # every point restored byte for byte (each backup's snapshot alone),
    # to an RBD volume and to one of the file backend
    for backup, at, _ in points:
        new, image = restored_image(api, admin, backup['id'])
        with image:
            assert_holds(image, at)
    onfile = restored_into(api, points[1][0]['id'], 'on-file')
    path = os.path.join(s.state_path, 'volumes', 'file',
                        'volume-%s' % onfile['id'])
    with open(path, 'rb') as f:
        for offset, data in points[1][1]:
            f.seek(offset)
            assert f.read(len(data)) == expected(points[1][1], offset,
                                                 len(data))
    # holes stay holes on the file backend too
    assert os.stat(path).st_blocks * 512 <= 24 * MiB

    # delete order: a backup others are incremental to is refused
    resp = api.delete('/backups/%s' % full['id'])
    assert resp.status_code == 400, resp.text
    for backup, _, meta in reversed(points):
        assert api.delete('/backups/%s' % backup['id']).status_code == 202
        bk.wait_gone(api, backup['id'])
        snaps = admin.snaps(base, admin.backups)
        assert snaps is None or meta['snapshot'] not in snaps
    # the image goes with its last backup
    assert admin.snaps(base, admin.backups) is None


def test_mixed_chains_and_a_volume_in_use(diff_stack, admin, ceph):
    s, api = diff_stack
    vol = api.create_volume(size=1, volume_type='shared-rbd')
    vid = vol['id']
    model = []
    admin.write(vid, model, 3 * MiB, os.urandom(2 * MiB))
    # a backup to another container is chunked (RADOS objects)
    container = 'chunked-%s' % uuid.uuid4().hex[:8]
    chunked = bk.backup(api, vid, container=container)
    assert meta_of(api, chunked['id'])['layout'] == 'chunked'
    # incremental to it, in the default container: a full snapshot
    admin.write(vid, model, 600 * MiB, b'second')
    second = bk.backup(api, vid, incremental=True)
    assert exported(api, second['id'])['parent_id'] == chunked['id']
    meta = meta_of(api, second['id'])
    assert meta['layout'] == 'rbd' and meta['base_snapshot'] is None
    # and a chunked one incremental to the snapshot: a full chunked one
    admin.write(vid, model, 700 * MiB, b'third')
    third = bk.backup(api, vid, incremental=True, container=container)
    assert exported(api, third['id'])['parent_id'] == second['id']
    assert meta_of(api, third['id'])['layout'] == 'chunked'
    for backup, at in ((second, model[:2]), (third, model)):
        new, image = restored_image(api, admin, backup['id'])
        with image:
            assert_holds(image, at)

    # a volume in use: the backup snapshot is the point in time (no
    # temporary snapshot), and the writer goes on
    from tests.harness import dataplane as dp
    host = dp.attacher(s, 'a')
    att, dev = host.attach_device(vid)
    try:
        dev.write(800 * MiB, b'before')
        dev.flush()
        model.append((800 * MiB, b'before'))
        in_use = bk.backup(api, vid, force=True, incremental=True)
        meta = meta_of(api, in_use['id'])
        assert meta['layout'] == 'rbd'
        assert meta['base_snapshot'] == meta_of(api, second['id'])[
            'snapshot']
        dev.write(900 * MiB, b'after')
        dev.flush()
    finally:
        host.detach(att['id'], dev)
    assert [n for n in admin.snaps('volume-%s' % vid)
            if not n.startswith('backup.')] == []
    new, image = restored_image(api, admin, in_use['id'])
    with image:
        assert_holds(image, model)
    for backup in (in_use, third, second, chunked):
        assert api.delete('/backups/%s' % backup['id']).status_code == 202
        bk.wait_gone(api, backup['id'])
    assert admin.snaps(ceph_rbd.image_name(vid), admin.backups) is None


KILLED = r'''
import json, sys, time
from oslo_config import cfg
from cinder_lite import conf as cl_conf
from cinder_lite.backup.drivers import ceph as ceph_driver
from cinder_lite.connector import devices
args = json.loads(sys.argv[1])
conf = cfg.ConfigOpts()
cl_conf.register_opts(conf)
conf([], project='killed', default_config_files=[])
for k, v in args['conf'].items():
    conf.set_override(k, v)
driver = ceph_driver.CephBackupDriver(conf)
device = devices.connect(args['info'])

def progress(done, objects):
    if done >= args['after']:
        print('written', flush=True)
        time.sleep(600)

driver.backup(args['record'], device, None, progress)
'''


def _device_info(ceph, admin, vid, snapshot):
    """connection_info of the volume at ``snapshot`` as client.admin."""
    from cinder_lite.volume.drivers import rbd as rbd_driver  # noqa: F401
    key = None
    with open(ceph.admin_keyring) as f:
        for line in f:
            if line.strip().startswith('key'):
                key = line.split('=', 1)[1].strip()
    mons = json.loads(admin.cluster.mon_command(json.dumps(
        {'prefix': 'mon dump', 'format': 'json'}), b'')[1])['mons']
    hosts, ports = [], []
    for mon in mons:
        for addr in mon['public_addrs']['addrvec']:
            if addr['type'] == 'v1':
                host, _, port = addr['addr'].rpartition(':')
                hosts.append(host)
                ports.append(port)
    return {'driver_volume_type': 'rbd',
            'name': '%s/volume-%s' % (ceph.pool, vid), 'hosts': hosts,
            'ports': ports, 'auth_username': 'admin',
            'keyring': '[client.admin]\n\tkey = %s\n' % key,
            'snapshot_name': snapshot, 'access_mode': 'ro'}


def test_a_backup_killed_half_way_breaks_no_later_one(ceph, admin,
                                                      tmp_path):
    """SIGKILL of a backup service in the middle of an incremental: it
    leaves a half-written head and no snapshot; the next backup copies
    what the dead one wrote back too, and every backup made restores."""
    from cinder_lite.backup.drivers import ceph as ceph_driver
    from cinder_lite.connector import devices
    from tests.rbd.test_backup_ceph_driver import make_conf
    conf_path, _ = ceph.make_backup_user(DIFF_POOL, DIFF_USER)
    driver = ceph_driver.CephBackupDriver(make_conf(
        conf_path, backup_ceph_user=DIFF_USER, backup_ceph_pool=DIFF_POOL))
    vid = str(uuid.uuid4())
    rbd = admin.rbd
    rbd.RBD().create(admin.volumes, 'volume-%s' % vid, GiB, old_format=False,
                     features=rbd.RBD_FEATURE_LAYERING)
    model = []

    def record(number):
        return {'id': '%s-%d' % (vid[:8], number), 'volume_id': vid,
                'size': 1, 'container': None, 'service_metadata': None,
                'created_at': None}

    def snapshot(rec):
        name = ceph_rbd.snapshot_name(rec)
        with admin.image('volume-%s' % vid) as image:
            image.create_snap(name)
        return name

    def run(rec):
        device = devices.connect(_device_info(ceph, admin, vid,
                                              snapshot(rec)))
        try:
            return driver.backup(rec, device)
        finally:
            device.close()

    try:
        admin.write(vid, model, 0, os.urandom(8 * MiB))
        first = record(1)
        first['service_metadata'] = run(first)['service_metadata']
        at_first = list(model)
        # 64 MiB changed, the backup killed after 16 MiB of it
        admin.write(vid, model, 100 * MiB, os.urandom(64 * MiB))
        killed = record(2)
        args = {'conf': {k: getattr(driver.conf, k) for k in (
            'backup_ceph_conf', 'backup_ceph_user', 'backup_ceph_pool')},
            'info': _device_info(ceph, admin, vid, snapshot(killed)),
            'record': killed, 'after': 16 * MiB}
        proc = subprocess.Popen(
            [sys.executable, '-c', KILLED, json.dumps(args)],
            stdout=subprocess.PIPE, cwd=os.path.dirname(os.path.dirname(
                os.path.dirname(os.path.abspath(__file__)))))
        try:
            assert proc.stdout.readline() == b'written\n'
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        base = ceph_rbd.image_name(vid)
        # no snapshot of it, a head marked half-written
        assert admin.snaps(base, admin.backups) == [
            first['service_metadata']['snapshot']]
        with admin.image(base, admin.backups) as image:
            assert image.metadata_get(ceph_rbd.WRITING) == killed['id']
        # the source changes again where the dead one had written and
        # back: the next backup must not keep the dead one's bytes
        admin.zero(vid, model, 100 * MiB, 64 * MiB)
        admin.write(vid, model, 300 * MiB, b'third')
        third = record(3)
        # (the librbd clients of the killed process time out first)
        time.sleep(1)
        third['service_metadata'] = run(third)['service_metadata']
        assert third['service_metadata']['base_snapshot'] == \
            first['service_metadata']['snapshot']
        with admin.image(base, admin.backups) as image:
            with pytest.raises(KeyError):
                image.metadata_get(ceph_rbd.WRITING)
        for rec, at in ((first, at_first), (third, model)):
            target = 'restore-%s' % rec['id']
            rbd.RBD().create(admin.volumes, target, GiB, old_format=False,
                             features=rbd.RBD_FEATURE_LAYERING)
            device = devices.connect(dict(
                _device_info(ceph, admin, vid, None),
                name='%s/%s' % (ceph.pool, target), access_mode='rw',
                snapshot_name=None))
            try:
                driver.restore([rec], device)
            finally:
                device.close()
            with admin.image(target) as image:
                assert_holds(image, at)
            rbd.RBD().remove(admin.volumes, target)
        # the killed one's delete removes nothing of the others
        driver.delete(killed)
        driver.delete(third)
        assert admin.snaps(base, admin.backups) == [
            first['service_metadata']['snapshot']]
        driver.delete(first)
        assert admin.snaps(base, admin.backups) is None
    finally:
        driver.close()
        with admin.image('volume-%s' % vid) as image:
            for snap in list(image.list_snaps()):
                image.remove_snap(snap['name'])
        rbd.RBD().remove(admin.volumes, 'volume-%s' % vid)


def test_reconciliation_removes_the_snapshot_of_a_backup_cut_short(
        diff_stack, admin):
    """A backup its service left ``creating``: reconciliation makes it
    ``error`` and has the volume service remove the backup snapshot it
    had made of the volume; the next backup is whole again, and
    right."""
    from cinder_lite.db import api as db_api
    from cinder_lite.db import backups as db_backups
    from cinder_lite.db import volumes as db_volumes
    s, api = diff_stack
    vol = api.create_volume(size=1, volume_type='shared-rbd')
    vid = vol['id']
    model = []
    admin.write(vid, model, 5 * MiB, os.urandom(3 * MiB))
    full = bk.backup(api, vid)
    admin.write(vid, model, 500 * MiB, os.urandom(MiB))
    cut = bk.backup(api, vid, incremental=True)
    cut_snap = meta_of(api, cut['id'])['source_snapshot']
    assert admin.snaps('volume-%s' % vid) == [cut_snap]
    # as if its service had stopped before the copy ended
    with db_api.writer() as session:
        db_backups.update(session, cut['id'], {'status': 'creating'})
        db_volumes.update(session, vid, {'status': 'backing-up'})
    manager, = s.backup_services[0].endpoints
    assert manager.reconcile_now(max_age=0) == [
        'backup %s: creating -> error (interrupted: the backup service '
        'testnode stopped while it made the backup)' % cut['id']]
    assert admin.snaps('volume-%s' % vid) == []
    assert api.get('/volumes/%s' % vid).json()['volume']['status'] == \
        'available'
    admin.write(vid, model, 600 * MiB, b'after')
    after = bk.backup(api, vid, incremental=True)
    meta = meta_of(api, after['id'])
    assert meta['base_snapshot'] is None
    assert admin.snaps('volume-%s' % vid) == [meta['source_snapshot']]
    new, image = restored_image(api, admin, after['id'])
    with image:
        assert_holds(image, model)
    for backup in (cut, after, full):
        assert api.delete('/backups/%s' % backup['id']).status_code == 202
        bk.wait_gone(api, backup['id'])
    assert admin.snaps(ceph_rbd.image_name(vid), admin.backups) is None


def test_a_volume_in_use_whose_host_holds_the_lock(diff_stack, admin,
                                                   ceph):
    """A plain RBD volume (exclusive lock, object map) attached to a host
    that writes it: the host holds the image's exclusive lock, and librbd
    would ask it to make the backup snapshot, which its key may not.  The
    backup of the volume in use is taken through a temporary snapshot the
    volume service makes with the lock handed over (a full backup: there
    is no backup snapshot of this point to diff from next time), the
    writer goes on, and the restore holds what was written before; the
    next incremental one, detached again, holds what came after."""
    from tests.harness import dataplane as dp
    s, api = diff_stack
    vol = api.create_volume(size=1, volume_type='on-rbd')
    vid = vol['id']
    model = []
    admin.write(vid, model, 1 * MiB, os.urandom(MiB))
    first = bk.backup(api, vid)
    host = dp.attacher(s, 'a')
    att, dev = host.attach_device(vid)
    try:
        dev.write(300 * MiB, b'before')
        dev.flush()
        model.append((300 * MiB, b'before'))
        in_use = bk.backup(api, vid, force=True, incremental=True)
        assert in_use['status'] == 'available', in_use
        dev.write(400 * MiB, b'after')
        dev.flush()
    finally:
        host.detach(att['id'], dev)
    # only backup snapshots are left on the volume
    assert [n for n in admin.snaps('volume-%s' % vid)
            if not n.startswith('backup.')] == []
    new, image = restored_image(api, admin, in_use['id'])
    with image:
        assert_holds(image, model)
    # detached again: the next incremental backup holds the later write
    model.append((400 * MiB, b'after'))
    later = bk.backup(api, vid, incremental=True)
    assert exported(api, later['id'])['parent_id'] == in_use['id']
    new, image = restored_image(api, admin, later['id'])
    with image:
        assert_holds(image, model)
    for backup in (later, in_use, first):
        assert api.delete('/backups/%s' % backup['id']).status_code == 202
        bk.wait_gone(api, backup['id'])
