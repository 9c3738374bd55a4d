"""Backups with every service a process of its own, over RabbitMQ, on
MariaDB and on PostgreSQL: the backup services (``node-bk1``, and
``node-bk2`` for the tests that want two) read and write volumes of node
``ma`` through NBD exports (nbdkit, TLS), as hosts do, into one POSIX
store they share.  Node ``ma``'s volumes live on an XFS with reflinks
(mounted from a loop device for the module), so that the temporary
snapshot of a volume in use is one instant of it.

* a full and then an incremental backup of a volume, each restored into
  a new volume holding byte for byte what the volume held at that point;
* a multiattach volume written by two hosts through their attachments
  all along a forced backup: the backup holds exactly one instant of
  both writers (each one's writes up to some point, none after), every
  write acknowledged before the request and none issued after the volume
  was given back; no temporary snapshot and no export are left;
* the backup service killed (SIGKILL) mid-backup and started again: the
  backup ends in error saying why, the volume is in use again, the
  export and the temporary snapshot are gone, and the delete of the
  backup removes what it had written; killed mid-restore: the volume
  ends error_restoring, the backup is available again;
* two backup services: the backups spread over both, each restores and
  deletes what the other made, and with one stopped the other serves.

After each test no volume, backup or snapshot is in a transitional
status, no NBD export runs but those of the attachments a test still
holds, and the recorded quota usage is exact (``cinder-lite-manage quota
check``, and the usage the API shows is what the test made).
"""
import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from tests.harness import backups as bk
from tests.harness import cluster as cluster_mod
from tests.harness import util
from tests.harness.volumes import data_extents

CLUSTER_KINDS = ['mysql', 'postgresql']
MiB = 1024 ** 2
GiB = 1024 ** 3
BLOCK = 4096
# backup objects of 32 MiB: a volume with data is stored in several, so
# that a backup cut short has written some of them
OBJECT_BYTES = 32 * MiB
NBD = {'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1',
       'target_port_range': util.free_range(40)}
BACKUPS = {'backup': 'node-bk1', 'backup2': 'node-bk2'}
CLUSTER_OPTIONS = {
    'extra_default': {
        # a backup service that died is settled 3 s after its last word
        'reconcile_after': 3, 'reconcile_interval': 1,
        # restores into new volumes land on node ma too (NBD)
        'default_volume_type': 'nbd-ma',
        'backup_file_size': OBJECT_BYTES,
    },
    'node_options': {'ma': NBD},
    'process_sections': {name: {'DEFAULT': {'host': host}}
                         for name, host in BACKUPS.items()},
}
# statuses nothing may be left in once a test is done
TRANSITIONAL = {'creating', 'deleting', 'backing-up', 'restoring-backup',
                'restoring', 'attaching', 'detaching', 'reserved',
                'extending', 'downloading', 'uploading', 'retyping',
                'maintenance'}
HOSTS = {'a': '127.0.0.2', 'b': '127.0.0.3'}
XFS_BYTES = 4 * GiB


@contextlib.contextmanager
def reflink_volumes():
    """An XFS with reflinks for node ma's volumes (root, mkfs.xfs, a loop
    device), yielding the cluster options that put them there."""
    util.need('nbdkit', 'mkfs.xfs', 'mount', 'umount')
    if os.geteuid() != 0:
        util.skip_or_fail('mounting a loop device needs root')
    where = tempfile.mkdtemp(prefix='cinder-lite-backups-xfs-')
    try:
        image, mnt = os.path.join(where, 'xfs.img'), os.path.join(where,
                                                                  'mnt')
        with open(image, 'wb') as f:
            f.truncate(XFS_BYTES)
        subprocess.run(['mkfs.xfs', '-q', '-m', 'reflink=1', image],
                       check=True)
        os.mkdir(mnt)
        done = subprocess.run(['mount', '-o', 'loop', image, mnt],
                              capture_output=True, text=True)
        if done.returncode != 0:
            util.skip_or_fail('cannot mount a loop device here: %s'
                              % done.stderr.strip())
        try:
            yield {'node_options': {'ma': dict(NBD, volumes_dir=os.path.join(
                mnt, 'volumes'))}}
        finally:
            subprocess.run(['umount', mnt], check=True)
    finally:
        shutil.rmtree(where, ignore_errors=True)


CLUSTER_CONTEXT = reflink_volumes


# -- the deployment's storage, seen from the test ----------------------------
def volumes_dir(cluster):
    with open(cluster.node_conf('ma')) as f:
        return re.search(r'^volumes_dir = (.*)$', f.read(), re.M).group(1)


def volume_path(cluster, vid, kind='volume'):
    return os.path.join(volumes_dir(cluster), '%s-%s' % (kind, vid))


def store(cluster):
    return os.path.join(cluster.workdir, 'state', 'backup')


def nbd_records(cluster):
    """The export records of node ma's NBD target (by export id)."""
    state = os.path.join(cluster.workdir, 'state', 'targets', 'ma', 'nbd')
    return sorted(name[:-5] for name in os.listdir(state)
                  if name.endswith('.json'))


def nbdkits(cluster, needle=None):
    return util.processes('nbdkit', needle or cluster.workdir)


def stored_files(cluster, backup_id):
    """The files of the store that belong to ``backup_id`` (its objects,
    its sha256 and metadata files, and temporary files of objects being
    written)."""
    found = []
    for root, _dirs, files in os.walk(store(cluster)):
        found += [os.path.join(root, name) for name in files
                  if backup_id in name]
    return sorted(found)


def identical(a, b):
    """Files ``a`` and ``b`` are the same size and hold the same bytes
    (read where either has data: the rest are holes in both)."""
    assert os.path.getsize(a) == os.path.getsize(b), (a, b)
    with open(a, 'rb') as fa, open(b, 'rb') as fb:
        for start, end in sorted(data_extents(a) + data_extents(b)):
            fa.seek(start)
            fb.seek(start)
            while start < end:
                n = min(8 * MiB, end - start)
                x, y = fa.read(n), fb.read(n)
                if x != y:
                    return False
                start += n
    return True


def write_file(path, offset, data):
    with open(path, 'r+b') as f:
        f.seek(offset)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def keep_copy(cluster, vid, name):
    """A reflink of volume ``vid``'s file as it is now (what the test
    compares restores with), next to the volumes."""
    refs = os.path.join(os.path.dirname(volumes_dir(cluster)), 'refs')
    os.makedirs(refs, exist_ok=True)
    path = os.path.join(refs, name)
    subprocess.run(['cp', '--reflink=always', volume_path(cluster, vid),
                    path], check=True)
    return path


# -- the API ------------------------------------------------------------------
def attacher(cluster, name):
    transport = client.RestTransport(cluster.url + '/v3',
                                     cluster_mod.PROJECT)
    return client.AttachClient(transport, host_connector.get_connector(
        host='host-' + name, ip=HOSTS[name],
        initiator='iqn.2026-11.org.example:host-%s' % name))


def volume(api, vid):
    return api.get('/volumes/%s' % vid).json()['volume']


def progress(api, bid):
    return api.get('/backups/%s/progress' % bid).json()['progress']


def usage(api):
    quota = api.get('/os-quota-sets/%s?usage=True' % cluster_mod.PROJECT
                    ).json()['quota_set']
    return {key: quota[key]['in_use'] for key in
            ('volumes', 'gigabytes', 'backups', 'backup_gigabytes',
             'snapshots')}


@pytest.fixture(scope='module')
def types(cluster):
    from tests.harness import stack
    admin = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    made = {'plain': admin.create_type('nbd-ma', {
        'volume_backend_name': 'ma'}), 'shared': admin.create_type(
        'nbd-ma-shared', {'volume_backend_name': 'ma',
                          'multiattach': '<is> True'})}
    admin.session.close()
    return made


@pytest.fixture
def backups(cluster, api, types):
    """node-bk1 up; afterwards, what the test leaves behind is checked
    (the test deletes what it made and holds no attachment)."""
    cluster.ensure_running('backup', 'cinder-backup', 'node-bk1')
    yield cluster
    cluster.check_alive()
    left_behind(cluster, api)


def left_behind(cluster, api):
    """Nothing transitional, no export, no temporary snapshot, and quota
    usage exact and what the listed resources are."""
    vols = api.get('/volumes/detail?all_tenants=1').json()['volumes']
    made = api.get('/backups/detail?all_tenants=1').json()['backups']
    snaps = api.get('/snapshots/detail?all_tenants=1').json()['snapshots']
    stuck = [(kind, r['id'], r['status']) for kind, rows in (
        ('volume', vols), ('backup', made), ('snapshot', snaps))
        for r in rows if r['status'] in TRANSITIONAL]
    assert stuck == []
    atts = api.get('/attachments').json()['attachments']
    assert atts == []
    util.wait_for(lambda: nbdkits(cluster) == [], timeout=30,
                  what='no nbdkit left: %s' % nbdkits(cluster))
    assert nbd_records(cluster) == []
    assert [n for n in os.listdir(volumes_dir(cluster))
            if n.startswith('snapshot-')] == []
    check = cluster.manage('quota', 'check', check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert 'equals what the volumes say' in check.stdout
    assert usage(api) == {
        'volumes': len(vols), 'gigabytes': sum(v['size'] for v in vols),
        'backups': len(made),
        'backup_gigabytes': sum(b['size'] for b in made),
        'snapshots': len(snaps)}


def delete_volumes(api, *vids):
    for vid in vids:
        resp = api.delete('/volumes/%s' % vid)
        assert resp.status_code == 202, resp.text
    for vid in vids:
        api.wait_deleted(vid)


def delete_backups(api, *bids):
    for bid in bids:
        resp = api.delete('/backups/%s' % bid)
        assert resp.status_code == 202, resp.text
        bk.wait_gone(api, bid)


def restored(api, bid):
    """A new volume restored from ``bid``, once available."""
    vol = bk.restored(api, bid)
    assert vol['metadata']['src_backup_id'] == bid
    assert vol['volume_type'] == 'nbd-ma'
    return vol


# -- 1. full, incremental, each point restored --------------------------------
def test_full_then_incremental_restore_each_point(backups, api, tmp_path):
    cluster = backups
    vol = api.create_volume(size=1, volume_type='nbd-ma')
    host = attacher(cluster, 'a')
    # point 1, written by a host through its attachment: data that does
    # not compress across several objects, marks at the edges
    att, dev = host.attach_device(vol['id'], str(uuid.uuid4()), mode='rw')
    assert att['connection_info']['driver_volume_type'] == 'nbd'
    for offset, data in ((0, os.urandom(40 * MiB)),
                         (GiB // 2 + 5, b'middle of the volume'),
                         (GiB - 7, b'the end')):
        dev.write(offset, data)
    dev.flush()
    host.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')
    first_image = keep_copy(cluster, vol['id'], 'point-1')
    full = bk.backup(api, vol['id'], name='full')
    assert not full['is_incremental'] and full['object_count'] >= 2
    assert volume(api, vol['id'])['status'] == 'available'
    # point 2: some blocks changed, some new, one zeroed
    att, dev = host.attach_device(vol['id'], str(uuid.uuid4()), mode='rw')
    for offset, data in ((5 * MiB, os.urandom(MiB)),
                         (33 * MiB, b'\0' * BLOCK),
                         (700 * MiB, os.urandom(3 * MiB))):
        dev.write(offset, data)
    dev.flush()
    host.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')
    second_image = keep_copy(cluster, vol['id'], 'point-2')
    incr = bk.backup(api, vol['id'], name='incr', incremental=True)
    assert incr['is_incremental']
    assert bk.show(api, full['id'])['has_dependent_backups']
    # the incremental stored about what changed, far less than the full
    sizes = {b['id']: sum(os.path.getsize(p) for p in stored_files(
        cluster, b['id'])) for b in (full, incr)}
    assert sizes[incr['id']] < sizes[full['id']] / 5, sizes
    # the volume changes again: neither backup has it
    att, dev = host.attach_device(vol['id'], str(uuid.uuid4()), mode='rw')
    dev.write(0, b'after both backups')
    dev.flush()
    host.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')
    new = {b['id']: restored(api, b['id']) for b in (incr, full)}
    assert identical(volume_path(cluster, new[full['id']]['id']),
                     first_image)
    assert identical(volume_path(cluster, new[incr['id']]['id']),
                     second_image)
    assert not identical(volume_path(cluster, vol['id']), second_image)
    # what a host of the restored volume reads
    att, dev = host.attach_device(new[incr['id']]['id'], str(uuid.uuid4()),
                                  mode='ro')
    assert dev.read(GiB - 7, 7) == b'the end'
    assert dev.read(33 * MiB, BLOCK) == b'\0' * BLOCK
    host.detach(att['id'], dev)
    # the chain is deleted child first; the store holds nothing of it
    resp = api.delete('/backups/%s' % full['id'])
    assert resp.status_code == 400, resp.text
    delete_backups(api, incr['id'], full['id'])
    assert stored_files(cluster, full['id']) == []
    assert stored_files(cluster, incr['id']) == []
    delete_volumes(api, vol['id'], *[v['id'] for v in new.values()])


# -- 2. a multiattach volume written by two hosts all along a backup ----------
SLOTS = 128      # blocks each writer cycles through


def block(tag, i):
    head = b'%s%09d' % (tag, i)
    return (head * (BLOCK // len(head) + 1))[:BLOCK]


class Writer(threading.Thread):
    """Writes block i of its own (slot i % SLOTS of its region) one after
    the other, recording when each write was issued and acknowledged."""

    def __init__(self, dev, tag, region):
        super().__init__(daemon=True)
        self.dev, self.tag, self.region = dev, tag, region
        self.log = []          # (i, issued, acknowledged), monotonic
        self.stop = threading.Event()
        self.error = None

    def run(self):
        i = 0
        try:
            while not self.stop.is_set():
                issued = time.monotonic()
                self.dev.write(self.region + (i % SLOTS) * BLOCK,
                               block(self.tag, i))
                self.log.append((i, issued, time.monotonic()))
                i += 1
                time.sleep(0.005)
        except Exception as e:      # reported by the test
            self.error = e

    def acked_before(self, t):
        return sum(1 for _i, _issued, acked in self.log if acked < t)

    def first_issued_after(self, t):
        return next((i for i, issued, _acked in self.log if issued > t),
                    None)

    def instant(self, data):
        """The number of this writer's writes ``data`` (its region as a
        copy holds it) shows, checking that it is exactly the state after
        that many writes: the last write of each slot up to that point,
        none after."""
        found = {}
        for slot in range(SLOTS):
            piece = data[slot * BLOCK:(slot + 1) * BLOCK]
            if piece == bytes(BLOCK):
                continue
            i = int(piece[1:10])
            assert piece == block(self.tag, i) and i % SLOTS == slot, \
                (self.tag, slot, piece[:20])
            found[slot] = i
        count = max(found.values()) + 1 if found else 0
        expected = {s: s + (count - 1 - s) // SLOTS * SLOTS
                    for s in range(min(SLOTS, count))}
        assert found == expected, (self.tag, count)
        return count


def test_forced_backup_of_a_volume_two_hosts_write(backups, api):
    cluster = backups
    vol = api.create_volume(size=1, volume_type='nbd-ma-shared')
    assert vol['multiattach']
    hosts = {n: attacher(cluster, n) for n in HOSTS}
    atts, devs, writers = {}, {}, {}
    for n, host in hosts.items():
        atts[n], devs[n] = host.attach_device(vol['id'], str(uuid.uuid4()),
                                              mode='rw')
        assert atts[n]['connection_info']['driver_volume_type'] == 'nbd'
    regions = {'a': 16 * MiB, 'b': 600 * MiB}
    for n in HOSTS:
        writers[n] = Writer(devs[n], n.encode(), regions[n])
    assert volume(api, vol['id'])['status'] == 'in-use'
    # without force an in-use volume is refused, and nothing changes
    resp = api.post('/backups', json={'backup': {'volume_id': vol['id']}})
    assert resp.status_code == 400, resp.text
    for w in writers.values():
        w.start()
    try:
        util.wait_for(lambda: all(len(w.log) > 2 * SLOTS
                                  for w in writers.values()), timeout=60,
                      what='both hosts writing')
        asked = time.monotonic()
        created = bk.create(api, vol['id'], force=True)
        # the volume is backing-up until its temporary snapshot exists;
        # from the moment it is in use again nothing written is in it
        util.wait_for(lambda: volume(api, vol['id'])['status'] == 'in-use',
                      timeout=60, interval=0.02, what='the volume given back')
        given_back = time.monotonic()
        at_snapshot = {n: len(w.log) for n, w in writers.items()}
        made = bk.wait_backup(api, created['id'])
        done = time.monotonic()
        during = {n: len(w.log) - at_snapshot[n] for n, w in writers.items()}
    finally:
        for w in writers.values():
            w.stop.set()
            w.join(30)
    assert {n: w.error for n, w in writers.items()} == {'a': None,
                                                        'b': None}
    # the hosts kept writing while the backup was made
    assert all(count > 10 for count in during.values()), (during, done)
    assert made['volume_id'] == vol['id'] and not made['snapshot_id']
    # the temporary snapshot was a reflink: one instant of the volume
    assert re.search(r'made snapshot %s of volume %s \(1 GiB\) by reflink'
                     % (made['id'], vol['id']),
                     cluster.processes['ma'].read_log())
    # no temporary snapshot, no backup export left; the hosts' stay
    assert not os.path.exists(volume_path(cluster, made['id'], 'snapshot'))
    assert nbdkits(cluster, 'backup-%s' % made['id']) == []
    assert sorted(nbd_records(cluster)) == sorted(a['id']
                                                  for a in atts.values())
    new = restored(api, made['id'])
    with open(volume_path(cluster, new['id']), 'rb') as f:
        for n, w in writers.items():
            f.seek(regions[n])
            count = w.instant(f.read(SLOTS * BLOCK))
            # every write acknowledged before the request is in it, none
            # issued after the volume was given back
            assert count >= w.acked_before(asked), (n, count)
            late = w.first_issued_after(given_back)
            assert late is None or count <= late, (n, count, late)
    # the hosts' volume has their last writes
    last = {n: w.log[-1][0] for n, w in writers.items()}
    for n in HOSTS:
        other = 'b' if n == 'a' else 'a'
        assert devs[n].read(regions[other] + last[other] % SLOTS * BLOCK,
                            BLOCK) == block(other.encode(), last[other])
    for n, host in hosts.items():
        host.detach(atts[n]['id'], devs[n])
    api.wait_volume(vol['id'], 'available')
    delete_backups(api, made['id'])
    assert stored_files(cluster, made['id']) == []
    delete_volumes(api, vol['id'], new['id'])


# -- 3. the backup service killed mid-backup, mid-restore ---------------------
RANDOM_BYTES = 256 * MiB


def restoring(api, bid, vid, least):
    now = progress(api, bid)
    return now['status'] == 'restoring' and \
        now['restore_volume_id'] == vid and \
        least <= now['bytes_done'] < now['bytes_total']


def restart_backup(cluster, name='backup'):
    cluster.kill(name)
    cluster.processes[name].expected_dead = False
    del cluster.processes[name]
    cluster.ensure_running(name, 'cinder-backup', BACKUPS[name])


def test_backup_service_killed_mid_backup_and_mid_restore(backups, api):
    cluster = backups
    vol = api.create_volume(size=1, volume_type='nbd-ma')
    # a few hundred MiB that do not compress: a backup of some seconds
    path = volume_path(cluster, vol['id'])
    with open(path, 'r+b') as f:
        for offset in range(0, RANDOM_BYTES, 16 * MiB):
            f.seek(offset)
            f.write(os.urandom(16 * MiB))
        os.fsync(f.fileno())
    image = keep_copy(cluster, vol['id'], 'killed-%s' % vol['id'])
    good = bk.backup(api, vol['id'], name='good')
    # in use by a host: the backup reads a temporary snapshot
    host = attacher(cluster, 'a')
    att, dev = host.attach_device(vol['id'], str(uuid.uuid4()), mode='rw')
    doomed = bk.create(api, vol['id'], force=True, name='doomed')
    util.wait_for(lambda: progress(api, doomed['id'])['object_count'] >= 2,
                  timeout=bk.TIMEOUT, interval=0.1,
                  what='backup %s under way' % doomed['id'])
    assert progress(api, doomed['id'])['status'] == 'creating'
    restart_backup(cluster)
    failed = bk.wait_backup(api, doomed['id'], 'error')
    assert failed['fail_reason'] == (
        'interrupted: the backup service node-bk1 stopped while it made '
        'the backup')
    assert volume(api, vol['id'])['status'] == 'in-use'
    assert not os.path.exists(volume_path(cluster, doomed['id'],
                                          'snapshot'))
    assert nbdkits(cluster, 'backup-%s' % doomed['id']) == []
    assert nbd_records(cluster) == [att['id']]
    # the host's attachment went on working
    dev.write(0, b'still attached')
    dev.flush()
    host.detach(att['id'], dev)
    # the owner is told why
    messages = api.get('/messages').json()['messages']
    assert [m['event_id'] for m in messages
            if m['resource_uuid'] == doomed['id']] == [
        'VOLUME_VOLUME_BACKUP_013_020']
    # what the cut-short backup wrote is in the store until its delete
    partial = stored_files(cluster, doomed['id'])
    assert partial, 'the killed backup wrote nothing'
    delete_backups(api, doomed['id'])
    assert stored_files(cluster, doomed['id']) == []
    # killed mid-restore
    answer = bk.restore(api, good['id'])
    target = answer['volume_id']
    # (until the service starts it, the progress of a restore is the
    # backup's own: 100 %)
    util.wait_for(lambda: restoring(api, good['id'], target, 64 * MiB),
                  timeout=bk.TIMEOUT, interval=0.1,
                  what='restore of %s under way' % good['id'])
    assert progress(api, good['id'])['status'] == 'restoring'
    restart_backup(cluster)
    api.wait_volume(target, 'error_restoring')
    again = bk.wait_backup(api, good['id'])
    assert again['status'] == 'available'
    assert nbd_records(cluster) == []
    assert nbdkits(cluster) == []
    messages = api.get('/messages').json()['messages']
    assert [m['event_id'] for m in messages
            if m['resource_uuid'] == good['id']] == [
        'VOLUME_VOLUME_BACKUP_015_026']
    # the backup restores whole once the service is back
    whole = restored(api, good['id'])
    assert identical(volume_path(cluster, whole['id']), image)
    delete_backups(api, good['id'])
    assert stored_files(cluster, good['id']) == []
    delete_volumes(api, vol['id'], target, whole['id'])


def restart_backup_with(cluster, **options):
    """node-bk1 stopped and started again with ``options`` in its
    DEFAULT section (none: as the module configures it)."""
    sections = cluster.process_sections['backup']['DEFAULT']
    for key in [k for k in sections if k != 'host']:
        del sections[key]
    sections.update(options)
    cluster.write_process_confs()
    assert cluster.processes['backup'].stop() == 0
    del cluster.processes['backup']
    cluster.ensure_running('backup', 'cinder-backup', BACKUPS['backup'])


def test_volume_force_deleted_before_its_backup_is_begun(backups, api):
    """A backup that waits for a thread of its backup service (one
    operation at a time, behind a backup of some seconds) while its
    volume is force-deleted: when the service comes to it, it finds the
    volume gone and records the backup ``error`` saying so, with the
    owner's message, at once.  (It was left ``creating``, taken by a
    live service, until reconciliation settled it as interrupted:
    ``reconcile_after``, two minutes by default.)  The same for a
    restore into a volume force-deleted before it is begun: the backup
    is ``available`` again at once."""
    cluster = backups
    restart_backup_with(cluster, backup_max_operations=1)
    try:
        busy = api.create_volume(size=1, volume_type='nbd-ma')
        path = volume_path(cluster, busy['id'])
        with open(path, 'r+b') as f:
            for offset in range(0, RANDOM_BYTES, 16 * MiB):
                f.seek(offset)
                f.write(os.urandom(16 * MiB))
            os.fsync(f.fileno())
        doomed = api.create_volume(size=1, volume_type='nbd-ma')
        first = bk.create(api, busy['id'], name='long')
        util.wait_for(lambda: progress(api, first['id'])['object_count']
                      >= 1, timeout=bk.TIMEOUT, interval=0.1,
                      what='backup %s under way' % first['id'])
        queued = bk.create(api, doomed['id'], name='queued')
        assert volume(api, doomed['id'])['status'] == 'backing-up'
        resp = api.post('/volumes/%s/action' % doomed['id'],
                        json={'os-force_delete': {}})
        assert resp.status_code == 202, resp.text
        api.wait_deleted(doomed['id'])
        # (the queued backup is still behind the long one)
        assert bk.show(api, first['id'])['status'] == 'creating'
        assert bk.show(api, queued['id'])['status'] == 'creating'
        bk.wait_backup(api, first['id'])
        failed = bk.wait_backup(api, queued['id'], 'error')
        assert failed['fail_reason'] == (
            'the volume %s was deleted before the backup was made'
            % doomed['id']), failed
        messages = api.get('/messages').json()['messages']
        assert [m['event_id'] for m in messages
                if m['resource_uuid'] == queued['id']] == [
            'VOLUME_VOLUME_BACKUP_013_020']
        assert volume(api, busy['id'])['status'] == 'available'
        # a restore into a volume force-deleted before it is begun
        target = api.create_volume(size=1, volume_type='nbd-ma')
        long_again = bk.create(api, busy['id'], name='long again')
        util.wait_for(lambda: progress(api, long_again['id'])[
            'object_count'] >= 1, timeout=bk.TIMEOUT, interval=0.1,
            what='backup %s under way' % long_again['id'])
        answer = bk.restore(api, first['id'], volume_id=target['id'])
        assert answer['volume_id'] == target['id']
        resp = api.post('/volumes/%s/action' % target['id'],
                        json={'os-force_delete': {}})
        assert resp.status_code == 202, resp.text
        api.wait_deleted(target['id'])
        assert bk.show(api, long_again['id'])['status'] == 'creating'
        assert bk.show(api, first['id'])['status'] == 'restoring'
        bk.wait_backup(api, long_again['id'])
        bk.wait_backup(api, first['id'])
        messages = api.get('/messages').json()['messages']
        assert [m['event_id'] for m in messages
                if m['resource_uuid'] == first['id']] == [
            'VOLUME_VOLUME_BACKUP_015_026']
        # the backup still restores whole
        whole = restored(api, first['id'])
        assert identical(volume_path(cluster, whole['id']), path)
        delete_backups(api, first['id'], queued['id'], long_again['id'])
        delete_volumes(api, busy['id'], whole['id'])
    finally:
        restart_backup_with(cluster)


# -- 4. two backup services ---------------------------------------------------
def made_by(cluster, bid):
    """The backup services whose log says they made backup ``bid``."""
    return {name for name in BACKUPS if name in cluster.processes and
            re.search(r'backup %s of volume \S+: creating -> available'
                      % bid, cluster.processes[name].read_log())}


def test_two_backup_services_share_the_work(backups, api):
    cluster = backups
    cluster.ensure_running('backup2', 'cinder-backup', 'node-bk2')
    vols = [api.create_volume(size=1, volume_type='nbd-ma')
            for _ in range(3)]
    for n, v in enumerate(vols):
        write_file(volume_path(cluster, v['id']), n * MiB,
                   b'volume %d' % n)
    created = [bk.create(api, v['id']) for v in vols]
    made = [bk.wait_backup(api, b['id']) for b in created]
    makers = {b['id']: made_by(cluster, b['id']) for b in made}
    # each made once; both services took some
    assert all(len(m) == 1 for m in makers.values()), makers
    assert set().union(*makers.values()) == set(BACKUPS), makers
    # each service restores and deletes what the other made: stop the
    # maker of the first backup, the other serves its restore and delete
    first = made[0]['id']
    (maker,) = makers[first]
    other = 'backup2' if maker == 'backup' else 'backup'
    assert cluster.processes[maker].stop() == 0
    services = api.get('/os-services?binary=cinder-backup').json()[
        'services']
    assert {s['host'] for s in services} == set(BACKUPS.values())
    util.wait_for(lambda: {s['host']: s['state'] for s in api.get(
        '/os-services?binary=cinder-backup').json()['services']} == {
        BACKUPS[maker]: 'down', BACKUPS[other]: 'up'}, timeout=30,
        what='%s down, %s up' % (maker, other))
    new = restored(api, first)
    with open(volume_path(cluster, new['id']), 'rb') as f:
        assert f.read(8) == b'volume 0'
    log = cluster.processes[other].read_log()
    assert re.search(r'restored backup %s ' % first, log)
    delete_backups(api, *[b['id'] for b in made])
    for b in made:
        assert stored_files(cluster, b['id']) == []
    assert re.search(r'deleted backup %s ' % first,
                     cluster.processes[other].read_log())
    # a new backup is made by the one left
    last = bk.backup(api, vols[1]['id'])
    assert made_by(cluster, last['id']) == {other}
    delete_backups(api, last['id'])
    # the stopped one comes back (the module's later tests want node-bk1)
    del cluster.processes[maker]
    delete_volumes(api, new['id'], *[v['id'] for v in vols])
