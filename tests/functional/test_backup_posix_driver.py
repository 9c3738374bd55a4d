"""The POSIX backup driver on real files: volumes are sparse files read
and written through LocalDevice, backups are the files the driver leaves
in a directory, and every restore is compared byte for byte."""
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
import uuid

from oslo_config import cfg
import pytest

from cinder_lite.backup import chunked
from cinder_lite.backup.drivers import posix
from cinder_lite.common import exception
from cinder_lite import conf as cl_conf
from cinder_lite.connector import devices

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
BLOCK = 32 * KiB
FILE_SIZE = 4 * MiB


def make_conf(root, **overrides):
    conf = cfg.ConfigOpts()
    cl_conf.register_opts(conf)
    conf([], project='cinder_lite_posix_backup_test', default_config_files=[])
    conf.set_override('backup_posix_path', str(root))
    conf.set_override('backup_file_size', FILE_SIZE)
    conf.set_override('backup_sha_block_size_bytes', BLOCK)
    for name, value in overrides.items():
        conf.set_override(name, value)
    return conf


@pytest.fixture
def store(tmp_path):
    return tmp_path / 'store'


@pytest.fixture
def driver(store):
    d = posix.PosixBackupDriver(make_conf(store))
    d.check_for_setup_error()
    return d


def volume(path, size, writes=()):
    """A sparse file of ``size`` bytes with ``writes`` ((offset, bytes))
    in it."""
    with open(path, 'wb') as f:
        f.truncate(size)
    change(path, writes)
    return str(path)


def change(path, writes):
    with open(path, 'r+b') as f:
        for offset, data in writes:
            f.seek(offset)
            f.write(data)


def record(volume_id=None, container=None):
    return {'id': str(uuid.uuid4()), 'volume_id': volume_id or
            str(uuid.uuid4()), 'size': 1, 'container': container,
            'service_metadata': None, 'project_id': 'p1'}


def run_backup(driver, rec, path, parent=None, progress=None):
    dev = devices.connect({'driver_volume_type': 'local',
                           'device_path': path, 'access_mode': 'ro'})
    try:
        result = driver.backup(rec, dev, parent, progress)
    finally:
        dev.close()
    rec.update(container=result['container'],
               service_metadata=result['service_metadata'],
               object_count=result['object_count'])
    return result


def run_restore(driver, chain, path, progress=None):
    dev = devices.connect({'driver_volume_type': 'local',
                           'device_path': path, 'access_mode': 'rw'})
    try:
        driver.restore(chain, dev, progress)
    finally:
        dev.close()


def same_bytes(a, b, length=None):
    """Whether the first ``length`` bytes (all, if None) of files ``a``
    and ``b`` are the same."""
    if length is None:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        length = os.path.getsize(a)
    with open(a, 'rb') as fa, open(b, 'rb') as fb:
        done = 0
        while done < length:
            n = min(8 * MiB, length - done)
            if fa.read(n) != fb.read(n):
                return False
            done += n
    return True


def files_of(store, rec):
    """{name: size} of the files of backup ``rec`` in its container."""
    directory = os.path.join(store, rec['container'])
    prefix = rec['service_metadata']['prefix']
    return {n: os.path.getsize(os.path.join(directory, n))
            for n in os.listdir(directory) if prefix in n}


def metadata(store, rec):
    path = os.path.join(store, rec['container'],
                        rec['service_metadata']['prefix'] + '_metadata')
    with open(path) as f:
        return json.load(f)


def allocated(path):
    return os.stat(path).st_blocks * 512


def sparse_gib(path):
    """1 GiB with data at a few places: its first bytes, an unaligned run
    in the first object, 3 MiB across two objects, its last bytes."""
    return volume(path, GiB, [
        (0, os.urandom(1000)),
        (5 * MiB + 123, os.urandom(100 * KiB)),
        (700 * MiB - 1 * MiB, os.urandom(3 * MiB)),
        (GiB - 10, os.urandom(10))])


def test_full_backup_of_a_sparse_gib_restores_byte_for_byte(
        driver, store, tmp_path):
    src = sparse_gib(tmp_path / 'vol')
    rec = record()
    calls = []
    result = run_backup(driver, rec, src,
                        progress=lambda done, n: calls.append((done, n)))
    assert result['object_count'] >= 4
    assert result['container'] == '%s/%s/%s' % (
        rec['volume_id'][:2], rec['volume_id'][2:4], rec['volume_id'])
    stored = sum(files_of(store, rec).values())
    # 3.2 MiB of data in a 1 GiB volume: the zeros cost nothing
    assert stored < 5 * MiB
    meta = metadata(store, rec)
    assert meta['size_bytes'] == GiB and meta['parent_id'] is None
    assert sum(z[1] for z in meta['zero_extents']) > GiB - 10 * MiB
    # progress at least every few MiB, ending with the whole volume
    assert calls[-1] == (GiB, result['object_count'])
    steps = [b[0] - a[0] for a, b in zip([(0, 0)] + calls, calls)]
    assert max(steps) <= 4 * MiB

    dst = volume(tmp_path / 'restored', GiB)
    restored = []
    run_restore(driver, [rec], dst,
                progress=lambda done, n: restored.append((done, n)))
    assert same_bytes(src, dst)
    assert restored[-1] == (GiB, result['object_count'])
    # the zeros were not written: the restored volume is as sparse
    assert allocated(dst) < 16 * MiB


def test_incremental_after_one_changed_block_stores_about_one_block(
        driver, store, tmp_path):
    src = sparse_gib(tmp_path / 'vol')
    full = record()
    run_backup(driver, full, src)
    # one byte in a block in the middle of the data
    change(src, [(700 * MiB + 3 * BLOCK + 77, b'\xff')])
    inc = record(full['volume_id'])
    result = run_backup(driver, inc, src, parent=full)
    assert inc['container'] == full['container']

    files = files_of(store, inc)
    prefix = inc['service_metadata']['prefix']
    objects = {n: s for n, s in files.items() if n.startswith(prefix + '-')}
    assert result['object_count'] == len(objects) == 1
    meta = metadata(store, inc)
    assert meta['parent_id'] == full['id']
    assert [(o['offset'], o['length']) for o in meta['objects']] == [
        (700 * MiB + 3 * BLOCK, BLOCK)]
    assert meta['zero_extents'] == []
    # random data does not compress: the object is the block
    assert BLOCK <= sum(objects.values()) < BLOCK + 1 * KiB
    # with its hashes and its metadata, still less than two blocks
    assert sum(files.values()) < 2 * BLOCK
    assert sum(files.values()) * 50 < sum(files_of(store, full).values())

    dst = volume(tmp_path / 'restored', GiB)
    run_restore(driver, [full, inc], dst)
    assert same_bytes(src, dst)


def test_a_chain_of_three_incrementals_restores_each_point_in_time(
        driver, tmp_path):
    src = volume(tmp_path / 'vol', 64 * MiB, [
        (0, os.urandom(6 * MiB)), (40 * MiB, os.urandom(2 * MiB))])
    points = []

    def keep(name):
        copy = str(tmp_path / name)
        with open(src, 'rb') as f, open(copy, 'wb') as out:
            out.write(f.read())
        points.append(copy)

    chain = [record()]
    run_backup(driver, chain[0], src)
    keep('p0')
    edits = [
        # within a block, and across the boundary of two blocks and of
        # two objects
        [(1 * MiB + 5, b'one'), (FILE_SIZE - 10, os.urandom(20))],
        # data made zeros, and data where there were zeros
        [(40 * MiB, bytes(1 * MiB)), (20 * MiB, os.urandom(300 * KiB))],
        # the volume grew (to a size no multiple of a block) and was
        # written at its new end
        None,
    ]
    for n, edit in enumerate(edits, 1):
        if edit is None:
            with open(src, 'r+b') as f:
                f.truncate(80 * MiB + 777)
            edit = [(80 * MiB - 100, os.urandom(877)),
                    (2 * MiB, os.urandom(BLOCK))]
        change(src, edit)
        inc = record(chain[0]['volume_id'])
        run_backup(driver, inc, src, parent=chain[-1])
        chain.append(inc)
        keep('p%d' % n)
    assert metadata(driver.root, chain[2])['zero_extents'] == [
        [40 * MiB, 1 * MiB]]

    for n, point in enumerate(points):
        dst = volume(tmp_path / ('r%d' % n), os.path.getsize(point))
        run_restore(driver, chain[:n + 1], dst)
        assert same_bytes(point, dst), 'point %d' % n
    # an old point restored over the newest data
    dst = str(tmp_path / 'r3')
    run_restore(driver, chain[:2], dst)
    assert same_bytes(points[1], dst, os.path.getsize(points[1]))


@pytest.mark.parametrize('discard', [True, False])
def test_restore_over_other_data_makes_the_volume_the_backup(
        store, tmp_path, discard):
    driver = posix.PosixBackupDriver(make_conf(
        store, restore_discard_excess_bytes=discard))
    src = volume(tmp_path / 'vol', 32 * MiB, [
        (3 * MiB, os.urandom(5 * MiB)), (20 * MiB, b'x' * 100)])
    rec = record()
    run_backup(driver, rec, src)
    junk = os.urandom(48 * MiB)
    dst = volume(tmp_path / 'dst', 48 * MiB, [(0, junk)])
    run_restore(driver, [rec], dst)
    assert same_bytes(src, dst, 32 * MiB)
    # the bytes past the backup's size read as zeros, as in Cinder, or
    # are left alone when restore_discard_excess_bytes is off
    with open(dst, 'rb') as f:
        f.seek(32 * MiB)
        assert f.read() == (bytes(16 * MiB) if discard
                            else junk[32 * MiB:])


def test_restore_refuses_a_smaller_volume(driver, tmp_path):
    rec = record()
    run_backup(driver, rec, volume(tmp_path / 'vol', 8 * MiB,
                                   [(0, b'a')]))
    with pytest.raises(exception.InvalidInput, match='smaller'):
        run_restore(driver, [rec], volume(tmp_path / 'dst', 4 * MiB))


@pytest.mark.parametrize('algorithm,canonical', [
    ('none', 'none'), ('zlib', 'zlib'), ('gzip', 'zlib'), ('bz2', 'bz2'),
    ('bzip2', 'bz2'), ('zstd', 'zstd')])
def test_each_compression_round_trips(store, tmp_path, algorithm,
                                      canonical):
    d = posix.PosixBackupDriver(make_conf(
        store, backup_compression_algorithm=algorithm))
    d.check_for_setup_error()
    text = b'a volume of words, words and words. ' * (8 * MiB // 36)
    src = volume(tmp_path / 'vol', 16 * MiB, [
        (0, text), (12 * MiB, os.urandom(1 * MiB))])
    rec = record()
    run_backup(d, rec, src)
    meta = metadata(store, rec)
    assert {o['compression'] for o in meta['objects']} == {canonical}
    stored = sum(o['stored_bytes'] for o in meta['objects'])
    if canonical == 'none':
        assert stored == 9 * MiB
    else:
        assert stored < 2 * MiB
    dst = volume(tmp_path / 'dst', 16 * MiB)
    run_restore(d, [rec], dst)
    assert same_bytes(src, dst)


def test_an_incremental_reads_a_parent_of_another_compression(
        store, tmp_path):
    src = volume(tmp_path / 'vol', 16 * MiB, [(0, os.urandom(9 * MiB))])
    full = record()
    run_backup(posix.PosixBackupDriver(make_conf(
        store, backup_compression_algorithm='bz2')), full, src)
    change(src, [(5 * MiB, b'new')])
    d = posix.PosixBackupDriver(make_conf(
        store, backup_compression_algorithm='zstd',
        backup_sha_block_size_bytes=64 * KiB))
    inc = record(full['volume_id'])
    run_backup(d, inc, src, parent=full)
    # the blocks of the parent, though the option changed since
    assert metadata(store, inc)['block_size'] == BLOCK
    assert metadata(store, inc)['objects'][0]['length'] == BLOCK
    dst = volume(tmp_path / 'dst', 16 * MiB)
    run_restore(d, [full, inc], dst)
    assert same_bytes(src, dst)


def test_delete_removes_the_backups_files_only(driver, store, tmp_path):
    src = volume(tmp_path / 'vol', 16 * MiB, [(0, os.urandom(6 * MiB))])
    full = record()
    run_backup(driver, full, src)
    full_files = files_of(store, full)
    with open(src, 'rb') as f:
        f.seek(1 * MiB)
        was = f.read(7)
    change(src, [(1 * MiB, b'changed')])
    inc = record(full['volume_id'])
    run_backup(driver, inc, src, parent=full)
    assert files_of(store, inc)

    driver.delete(inc)
    directory = os.path.join(store, full['container'])
    assert {n: os.path.getsize(os.path.join(directory, n))
            for n in os.listdir(directory)} == full_files
    driver.delete(inc)      # absent objects are no error
    dst = volume(tmp_path / 'dst', 16 * MiB)
    run_restore(driver, [full], dst)
    change(src, [(1 * MiB, was)])
    assert same_bytes(src, dst)

    driver.delete(full)
    # the emptied container's directories go; the store stays
    assert os.listdir(store) == []


def test_a_backup_whose_progress_raises_leaves_nothing(
        driver, store, tmp_path):
    src = volume(tmp_path / 'vol', 32 * MiB, [(0, os.urandom(20 * MiB))])
    other = record()
    run_backup(driver, other, src)
    before = sorted(os.listdir(os.path.join(store, other['container'])))

    class Stop(Exception):
        pass

    seen = []

    def progress(done, objects):
        seen.append(objects)
        if len(seen) == 3:
            raise Stop()

    rec = record(other['volume_id'])
    with pytest.raises(Stop):
        run_backup(driver, rec, src, parent=None, progress=progress)
    # two objects were whole and a third begun when it stopped
    assert seen[-1] == 3
    assert sorted(os.listdir(os.path.join(store, other['container']))) == \
        before

    # alone in its container, not even the container is left
    seen.clear()
    with pytest.raises(Stop):
        run_backup(driver, record(), src, progress=progress)
    assert os.listdir(store) == [other['container'][:2]]


def test_a_killed_backup_leaves_only_what_its_delete_removes(
        driver, store, tmp_path):
    src = volume(tmp_path / 'vol', 64 * MiB, [(0, os.urandom(40 * MiB))])
    rec = record()
    marker = tmp_path / 'marker'
    script = textwrap.dedent('''
        import sys, time
        from tests.functional import test_backup_posix_driver as t
        from cinder_lite.backup.drivers import posix
        d = posix.PosixBackupDriver(t.make_conf(sys.argv[1]))
        def progress(done, objects):
            if objects >= 3:
                open(sys.argv[2], 'w').close()
                time.sleep(600)
        rec = {'id': sys.argv[3], 'volume_id': sys.argv[4],
               'container': None}
        t.run_backup(d, rec, sys.argv[5], progress=progress)
    ''')
    child = subprocess.Popen(
        [sys.executable, '-c', script, str(store), str(marker), rec['id'],
         rec['volume_id'], src], cwd=os.path.dirname(os.path.dirname(
             os.path.dirname(os.path.abspath(__file__)))))
    try:
        for _ in range(600):
            if marker.exists() or child.poll() is not None:
                break
            time.sleep(0.1)
        assert marker.exists(), 'the backup process never got to 3 objects'
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    container = driver.default_container(rec)
    directory = os.path.join(store, container)
    left = os.listdir(directory)
    assert any(n.startswith('.') for n in left)         # an object begun
    assert not any(n.endswith('_metadata') for n in left)
    rec['container'] = container
    with pytest.raises(exception.BackendError):
        driver.verify(rec)
    driver.delete(rec)
    assert not os.path.exists(directory)


@pytest.mark.parametrize('container', [
    '../outside', '/tmp/elsewhere', 'a/../../outside', '..', 'a//b',
    './a', '.hidden', 'a/b/', 'a\0b'])
def test_a_container_outside_the_store_is_refused(driver, store, tmp_path,
                                                  container):
    src = volume(tmp_path / 'vol', 1 * MiB, [(0, b'data')])
    rec = record(container=container)
    with pytest.raises(exception.InvalidInput):
        run_backup(driver, rec, src)
    rec['service_metadata'] = {'prefix': 'backup_' + rec['id']}
    for call in (driver.delete, driver.verify):
        with pytest.raises(exception.InvalidInput):
            call(rec)
    assert sorted(os.listdir(tmp_path)) == ['store', 'vol']
    assert os.listdir(store) == []


def test_a_symlink_in_the_store_does_not_lead_out_of_it(
        driver, store, tmp_path):
    outside = tmp_path / 'outside'
    outside.mkdir()
    victim = outside / 'backup_b1_metadata'
    victim.write_text('{}')
    os.symlink(str(outside), str(store / 'link'))
    rec = {'id': 'b1', 'volume_id': 'v1', 'container': 'link/sub',
           'service_metadata': None}
    with pytest.raises(exception.InvalidInput, match='leads out'):
        run_backup(driver, rec, volume(tmp_path / 'vol', MiB, [(0, b'a')]))
    rec['container'] = 'link'
    with pytest.raises(exception.InvalidInput):
        driver.delete(rec)
    assert victim.exists() and os.listdir(outside) == ['backup_b1_metadata']


def test_verify_finds_a_missing_or_truncated_object(driver, store, tmp_path):
    src = volume(tmp_path / 'vol', 16 * MiB, [(0, os.urandom(10 * MiB))])
    rec = record()
    run_backup(driver, rec, src)
    driver.verify(rec)
    directory = os.path.join(store, rec['container'])
    prefix = rec['service_metadata']['prefix']
    second = os.path.join(directory, chunked.object_name(prefix, 2))
    with open(second, 'r+b') as f:
        f.truncate(os.path.getsize(second) - 1)
    with pytest.raises(exception.BackendError, match='-00002 of backup'):
        driver.verify(rec)
    os.unlink(second)
    with pytest.raises(exception.BackendError, match='-00002 .*missing'):
        driver.verify(rec)
    with pytest.raises(exception.BackendError, match='missing'):
        run_restore(driver, [rec], volume(tmp_path / 'dst', 16 * MiB))
    os.unlink(os.path.join(directory, chunked.metadata_name(prefix)))
    with pytest.raises(exception.BackendError, match='_metadata'):
        driver.verify(rec)


def test_restore_refuses_an_object_whose_blocks_changed(
        store, tmp_path):
    d = posix.PosixBackupDriver(make_conf(
        store, backup_compression_algorithm='none'))
    src = volume(tmp_path / 'vol', 8 * MiB, [(0, os.urandom(2 * MiB))])
    rec = record()
    run_backup(d, rec, src)
    path = os.path.join(store, rec['container'], chunked.object_name(
        rec['service_metadata']['prefix'], 1))
    with open(path, 'r+b') as f:
        f.seek(BLOCK * 5 + 3)
        byte = f.read(1)
        f.seek(BLOCK * 5 + 3)
        f.write(bytes([byte[0] ^ 1]))
    d.verify(rec)           # the sizes are right: only a restore sees it
    with pytest.raises(exception.BackendError, match='block 5 .*SHA-256'):
        run_restore(d, [rec], volume(tmp_path / 'dst', 8 * MiB))


def test_restore_refuses_a_chain_out_of_order(driver, tmp_path):
    src = volume(tmp_path / 'vol', 8 * MiB, [(0, b'a')])
    full, inc = record(), record()
    run_backup(driver, full, src)
    change(src, [(0, b'b')])
    run_backup(driver, inc, src, parent=full)
    dst = volume(tmp_path / 'dst', 8 * MiB)
    for chain in ([inc], [inc, full], [full, inc, inc]):
        with pytest.raises(exception.BackendError, match='incremental to'):
            run_restore(driver, chain, dst)


def test_files_are_private_to_the_service(driver, store, tmp_path):
    rec = record(container='team/nightly')
    run_backup(driver, rec, volume(tmp_path / 'vol', MiB, [(0, b'a')]))
    for path in (store, store / 'team', store / 'team' / 'nightly'):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700, path
    names = os.listdir(store / 'team' / 'nightly')
    assert len(names) == 3
    for name in names:
        mode = os.stat(store / 'team' / 'nightly' / name).st_mode
        assert stat.S_IMODE(mode) == 0o600, name


def test_the_configured_container_is_the_default(store, tmp_path):
    d = posix.PosixBackupDriver(make_conf(store, backup_container='nfs1'))
    rec = record()
    result = run_backup(d, rec, volume(tmp_path / 'vol', MiB, [(0, b'a')]))
    assert result['container'] == 'nfs1'
    assert len(os.listdir(store / 'nfs1')) == 3


def test_setup_fails_clearly_when_the_store_cannot_be_written(tmp_path):
    a_file = tmp_path / 'file'
    a_file.write_text('not a directory')
    with pytest.raises(exception.BackendError, match='cannot be created'):
        posix.PosixBackupDriver(make_conf(a_file / 'backups')) \
            .check_for_setup_error()
    with pytest.raises(exception.BackendError, match='not a directory'):
        posix.PosixBackupDriver(make_conf(a_file)).check_for_setup_error()
    with pytest.raises(exception.InvalidInput, match='multiple'):
        posix.PosixBackupDriver(make_conf(
            tmp_path / 's', backup_file_size=FILE_SIZE + 512)) \
            .check_for_setup_error()
    fresh = tmp_path / 'new' / 'backups'
    posix.PosixBackupDriver(make_conf(fresh)).check_for_setup_error()
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o700
    assert os.listdir(fresh) == []


class _Counting:
    """A device that counts the bytes read from it, and whose holes are
    known (``holes``) or not."""

    def __init__(self, path, holes):
        self._dev = devices.LocalDevice({'device_path': path,
                                         'access_mode': 'ro'})
        self.size = self._dev.size
        self.read_bytes = 0
        if holes:
            self.holds_data = self._dev.holds_data

    def read(self, offset, length):
        data = self._dev.read(offset, length)
        self.read_bytes += len(data)
        return data

    def close(self):
        self._dev.close()


def test_the_holes_of_a_sparse_volume_are_not_read(driver, store,
                                                   tmp_path):
    src = sparse_gib(tmp_path / 'vol')
    made = {}
    for holes in (True, False):
        rec = record()
        dev = _Counting(src, holes)
        try:
            result = driver.backup(rec, dev, None, None)
        finally:
            dev.close()
        rec.update(container=result['container'],
                   service_metadata=result['service_metadata'])
        meta = metadata(store, rec)
        made[holes] = (dev.read_bytes, meta['objects'], meta['zero_extents'],
                       rec)
    # the data is read (the five 4 MiB reads that hold some), the holes
    # not
    assert made[True][0] == 5 * chunked.READ_BYTES
    assert made[False][0] == GiB
    # and the backup is the same either way
    strip = [{k: v for k, v in o.items() if k != 'name'}
             for o in made[True][1]]
    assert strip == [{k: v for k, v in o.items() if k != 'name'}
                     for o in made[False][1]]
    assert made[True][2] == made[False][2]
    dst = volume(tmp_path / 'restored', GiB)
    run_restore(driver, [made[True][3]], dst)
    assert same_bytes(src, dst)


def test_a_local_device_knows_its_holes(tmp_path):
    path = volume(tmp_path / 'vol', 64 * MiB, [(40 * MiB, b'x' * 4096)])
    dev = devices.LocalDevice({'device_path': path, 'access_mode': 'ro'})
    try:
        assert not dev.holds_data(0, 32 * MiB)
        assert dev.holds_data(36 * MiB, 8 * MiB)
        assert dev.holds_data(40 * MiB, 1)
        assert not dev.holds_data(48 * MiB, 16 * MiB)
    finally:
        dev.close()
