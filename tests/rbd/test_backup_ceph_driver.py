"""The Ceph backup driver against the run's Ceph cluster
(tests/harness/ceph.py): volumes are sparse files read and written
through LocalDevice, backups are RADOS objects of the backup pool that
the tests look at as client.admin, and every restore is compared byte
for byte.  The driver connects as the backup user of doc/source/rbd.rst (mon
``allow r``, osd ``profile rbd pool=backups``), never as admin; each test
keeps its backups in a namespace (container) of its own."""
import base64
import json
import os
import subprocess
import uuid

from oslo_config import cfg
import pytest

from cinder_lite.backup import chunked
from cinder_lite.backup.drivers import ceph as ceph_driver
from cinder_lite.common import exception
from cinder_lite import conf as cl_conf
from tests.functional.test_backup_posix_driver import change
from tests.functional.test_backup_posix_driver import run_backup
from tests.functional.test_backup_posix_driver import run_restore
from tests.functional.test_backup_posix_driver import same_bytes
from tests.functional.test_backup_posix_driver import volume
from tests.harness import backups as bk
from tests.harness import ceph as ceph_mod
from tests.harness import stack as stack_mod
from tests.harness.volumes import write

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
BLOCK = 32 * KiB
# more than a RADOS part: random data makes objects of three parts
CHUNK = 10 * MiB
PART = ceph_driver.PART_BYTES
CEPH_DRIVER = 'cinder_lite.backup.drivers.ceph.CephBackupDriver'


@pytest.fixture(scope='module')
def backup_user(ceph):
    """``(conf, keyring)`` of the backup service's user."""
    return ceph.make_backup_user()


def make_conf(conf_path, **overrides):
    conf = cfg.ConfigOpts()
    cl_conf.register_opts(conf)
    conf([], project='cinder_lite_ceph_backup_test',
         default_config_files=[])
    values = dict(backup_ceph_conf=conf_path,
                  backup_ceph_user=ceph_mod.BACKUP_USER,
                  backup_ceph_pool=ceph_mod.BACKUP_POOL,
                  backup_ceph_chunk_size=CHUNK,
                  backup_sha_block_size_bytes=BLOCK)
    values.update(overrides)
    for name, value in values.items():
        conf.set_override(name, value)
    return conf


@pytest.fixture
def driver(backup_user):
    d = ceph_driver.CephBackupDriver(make_conf(backup_user[0]))
    d.check_for_setup_error()
    return d


@pytest.fixture
def container():
    return 'test-%s' % uuid.uuid4().hex


def record(container, volume_id=None):
    return {'id': str(uuid.uuid4()), 'volume_id': volume_id or
            str(uuid.uuid4()), 'size': 1, 'container': container,
            'service_metadata': None, 'project_id': 'p1'}


def rados(ceph, *args, check=True):
    """The ``rados`` tool on the backup pool as client.admin."""
    return ceph.run('rados', '--conf', ceph.conf, '--keyring',
                    ceph.admin_keyring, '-p', ceph_mod.BACKUP_POOL, *args,
                    check=check)


def objects_in(ceph, namespace):
    """{name: size} of the RADOS objects of a namespace of the pool."""
    names = rados(ceph, '-N', namespace, 'ls').split()
    found = {}
    for name in names:
        # "<pool>/<name> mtime <date> <time>..., size <n>"
        out = rados(ceph, '-N', namespace, 'stat', name)
        found[name] = int(out.rsplit('size', 1)[1].strip())
    return found


def of_backup(objects, rec):
    prefix = rec['service_metadata']['prefix']
    return {n: s for n, s in objects.items() if n.startswith(prefix)}


def test_backups_restores_and_deletes_on_rados(driver, ceph, container,
                                               tmp_path):
    src = volume(tmp_path / 'vol', 64 * MiB, [
        (100, os.urandom(25 * MiB)), (50 * MiB, b'far out')])
    full = record(container)
    result = run_backup(driver, full, src)
    assert result['container'] == container
    prefix = full['service_metadata']['prefix']
    objects = objects_in(ceph, container)
    mine = of_backup(objects, full)
    # every object the index names, and nothing else of the backup
    meta = json.loads(rados(ceph, '-N', container, 'get',
                            chunked.metadata_name(prefix), '-'))
    assert meta['parent_id'] is None and meta['size_bytes'] == 64 * MiB
    assert len(meta['objects']) == result['object_count'] >= 3
    first = meta['objects'][0]
    # a chunk of 10 MiB of random data is three RADOS parts: two whole
    assert first['stored_bytes'] > 2 * PART
    assert mine[first['name']] == mine[first['name'] + '.1'] == PART
    assert mine[first['name'] + '.2'] == first['stored_bytes'] - 2 * PART
    assert max(objects.values()) <= PART
    assert set(mine) - {chunked.metadata_name(prefix),
                        chunked.sha_name(prefix),
                        ceph_driver.index_name(prefix)} == {
        ceph_driver.part_name(o['name'], n) for o in meta['objects']
        for n in range(-(-o['stored_bytes'] // PART))}
    listed = driver.list_objects(container, prefix)
    assert {o['name']: o['stored_bytes'] for o in meta['objects']}.items() \
        <= listed.items()

    dst = volume(tmp_path / 'restored', 64 * MiB)
    run_restore(driver, [full], dst)
    assert same_bytes(src, dst)

    # one block changed: the incremental stores about one block
    change(src, [(20 * MiB + 3 * BLOCK + 5, b'\xff' * 10)])
    inc = record(container, full['volume_id'])
    result = run_backup(driver, inc, src, parent=full)
    assert result['object_count'] == 1
    inc_objects = of_backup(objects_in(ceph, container), inc)
    assert sum(inc_objects.values()) < 2 * BLOCK
    dst2 = volume(tmp_path / 'restored2', 64 * MiB)
    run_restore(driver, [full, inc], dst2)
    assert same_bytes(src, dst2)
    # the full one still restores its own point in time
    run_restore(driver, [full], dst2)
    assert same_bytes(dst, dst2)

    driver.delete(inc)
    assert of_backup(objects_in(ceph, container), inc) == {}
    assert of_backup(objects_in(ceph, container), full) == mine
    driver.delete(full)
    assert objects_in(ceph, container) == {}
    # deleting again finds nothing, and is fine
    driver.delete(full)


def test_the_default_container_is_the_pool_name(driver, ceph, tmp_path):
    src = volume(tmp_path / 'vol', 4 * MiB, [(0, b'default')])
    rec = record(None)
    result = run_backup(driver, rec, src)
    assert result['container'] == ceph_mod.BACKUP_POOL
    try:
        assert of_backup(objects_in(ceph, ceph_mod.BACKUP_POOL), rec)
        # nothing in the pool's unnamed namespace
        assert rados(ceph, 'ls').split() == []
    finally:
        driver.delete(rec)
    assert of_backup(objects_in(ceph, ceph_mod.BACKUP_POOL), rec) == {}


@pytest.mark.parametrize('bad', ['', 'a\nb', 'tab\there', 'x' * 256])
def test_a_container_that_is_no_namespace_name_is_refused(driver, bad):
    with pytest.raises(exception.InvalidInput, match='container'):
        driver.open_object(bad, 'backup_x-00001')


def test_a_backup_cut_short_leaves_nothing(driver, ceph, container,
                                           tmp_path):
    src = volume(tmp_path / 'vol', 48 * MiB, [(0, os.urandom(30 * MiB))])
    other = record(container)
    run_backup(driver, other, src)
    before = objects_in(ceph, container)

    class Stop(Exception):
        pass

    seen = []

    def progress(done, objects):
        seen.append(objects)
        if objects >= 2:
            raise Stop()

    with pytest.raises(Stop):
        run_backup(driver, record(container), src, progress=progress)
    assert objects_in(ceph, container) == before
    driver.delete(other)
    assert objects_in(ceph, container) == {}


def test_a_writer_that_died_is_never_listed_and_is_deleted(
        driver, ceph, container, tmp_path):
    src = volume(tmp_path / 'vol', 16 * MiB, [(0, os.urandom(8 * MiB))])
    rec = record(container)
    run_backup(driver, rec, src)
    prefix = rec['service_metadata']['prefix']
    committed = driver.list_objects(container, prefix)
    # a writer that wrote two parts and was never heard of again (its
    # process died): the index says begun
    name = chunked.object_name(prefix, 99)
    writer = driver.open_object(container, name)
    writer.write(os.urandom(PART + PART // 2))
    assert name in objects_in(ceph, container)
    assert driver.list_objects(container, prefix) == committed
    with pytest.raises(exception.BackendError, match='missing'):
        driver.read_object(container, name)
    driver.delete(rec)
    assert objects_in(ceph, container) == {}


def test_an_object_written_again_replaces_every_part(driver, ceph,
                                                     container):
    name = 'backup_again-00001'
    for size in (3 * PART, PART // 2):
        data = os.urandom(size)
        writer = driver.open_object(container, name)
        writer.write(data)
        assert writer.commit() == size
        with driver.read_object(container, name) as f:
            assert chunked.read_exact(f, size + 1) == data
    assert objects_in(ceph, container) == {
        name: PART // 2, ceph_driver.index_name('backup_again'): 0}
    writer = driver.open_object(container, name)
    writer.write(b'abandoned')
    writer.abort()
    assert objects_in(ceph, container) == {}


def test_verify_of_an_imported_record(driver, ceph, container, tmp_path):
    src = volume(tmp_path / 'vol', GiB, [(0, os.urandom(12 * MiB))])
    rec = record(container)
    run_backup(driver, rec, src)
    driver.verify(rec)
    # the record imported under a new id names the same objects, of the
    # size it says
    imported = dict(rec, id=str(uuid.uuid4()))
    driver.verify(imported)
    with pytest.raises(exception.BackendError, match='not the 2 GiB'):
        driver.verify(dict(imported, size=2))
    # a record naming another container finds nothing
    with pytest.raises(exception.BackendError, match='missing'):
        driver.verify(dict(rec, container=container + '-elsewhere'))

    prefix = rec['service_metadata']['prefix']
    first = chunked.object_name(prefix, 1)
    # a part truncated behind the driver's back
    part = first + '.1'
    saved = tmp_path / 'part'
    rados(ceph, '-N', container, 'get', part, str(saved))
    rados(ceph, '-N', container, 'truncate', part, '100')
    with pytest.raises(exception.BackendError,
                       match='part 1 of backup object %s holds 100 bytes'
                       % first):
        driver.verify(rec)
    # a part removed
    rados(ceph, '-N', container, 'rm', part)
    with pytest.raises(exception.BackendError,
                       match='part 1 of backup object %s is missing' % first):
        driver.verify(rec)
    dst = volume(tmp_path / 'restored', GiB)
    with pytest.raises(exception.BackendError, match='missing'):
        run_restore(driver, [rec], dst)
    # put back, it verifies and restores again
    rados(ceph, '-N', container, 'put', part, str(saved))
    driver.verify(rec)
    run_restore(driver, [rec], dst)
    assert same_bytes(src, dst)
    driver.delete(rec)
    assert objects_in(ceph, container) == {}


def _setup_error(conf_path, **overrides):
    d = ceph_driver.CephBackupDriver(make_conf(conf_path, **overrides))
    with pytest.raises(exception.BackendError) as e:
        d.check_for_setup_error()
    return str(e.value)


def test_setup_refuses_a_wrong_pool_user_key_or_caps(ceph, backup_user,
                                                     tmp_path):
    conf_path, _ = backup_user
    assert 'backup_ceph_pool nowhere does not exist' in _setup_error(
        conf_path, backup_ceph_pool='nowhere')
    assert 'no keyring holding a key of client.nobody' in _setup_error(
        conf_path, backup_ceph_user='nobody')
    assert 'backup_ceph_conf %s is not a file' % (tmp_path / 'none') in \
        _setup_error(str(tmp_path / 'none'))
    # the user's name with another secret
    wrong = str(tmp_path / 'wrong.keyring')
    ceph.run('ceph-authtool', '--create-keyring', wrong, '--gen-key', '-n',
             'client.%s' % ceph_mod.BACKUP_USER)
    assert 'refused client.%s: a wrong or removed key' % \
        ceph_mod.BACKUP_USER in _setup_error(
            ceph.client_conf(ceph_mod.BACKUP_USER, wrong, 'wrong'))
    # keys whose caps fall short: on another pool, read-only, no monitor
    for user, caps, words in (
            ('cinder-lite-backup-other',
             [('mon', 'allow r'), ('osd', 'allow rw pool=%s' % ceph.pool)],
             'may not write and read objects of backup_ceph_pool'),
            ('cinder-lite-backup-ro',
             [('mon', 'allow r'),
              ('osd', 'allow r pool=%s' % ceph_mod.BACKUP_POOL)],
             'may not write and read objects of backup_ceph_pool'),
            ('cinder-lite-backup-nomon',
             [('osd', 'allow rw pool=%s' % ceph_mod.BACKUP_POOL)],
             'without the monitor cap "allow r"')):
        keyring = ceph.make_key(user, caps)
        assert words in _setup_error(ceph.client_conf(user, keyring),
                                     backup_ceph_user=user)


def test_setup_refuses_a_chunk_size_no_multiple_of_the_block(backup_user):
    d = ceph_driver.CephBackupDriver(make_conf(
        backup_user[0], backup_ceph_chunk_size=CHUNK + 512))
    with pytest.raises(exception.InvalidInput,
                       match='backup_ceph_chunk_size'):
        d.check_for_setup_error()


def test_a_volume_backed_up_to_ceph_through_the_api(ceph, backup_user,
                                                    tmp_path):
    """The embedded stack (a file backend) with its backup service on
    the Ceph driver, named as Cinder names it."""
    conf_path, _ = backup_user
    container = 'test-%s' % uuid.uuid4().hex
    s = stack_mod.Stack(tmp_path / 'st', extra={
        'backup_driver': 'cinder.backup.drivers.ceph.CephBackupDriver',
        'backup_ceph_conf': conf_path,
        'backup_ceph_user': ceph_mod.BACKUP_USER,
        'backup_ceph_pool': ceph_mod.BACKUP_POOL,
        'backup_container': container}).start()
    try:
        api = s.client()
        vol = api.create_volume(size=1)
        marks = ((0, b'first'), (GiB // 2 + 3, os.urandom(3 * MiB)),
                 (GiB - 7, b'the end'))
        for offset, data in marks:
            write(s, vol['id'], offset, data)
        backup = bk.backup(api, vol['id'])
        assert backup['container'] == container
        assert of_backup(objects_in(ceph, container), {
            'service_metadata': {'prefix': 'backup_%s' % backup['id']}})
        record = api.get('/backups/%s/export_record' % backup['id']).json()[
            'backup-record']
        assert record['backup_service'] == \
            'cinder.backup.drivers.ceph.CephBackupDriver'
        assert json.loads(base64.b64decode(record['backup_url']))[
            'container'] == container
        new = bk.restored(api, backup['id'])
        from tests.functional.test_backups import same
        assert same(s, vol['id'], new['id'])
        assert api.delete('/backups/%s' % backup['id']).status_code == 202
        bk.wait_gone(api, backup['id'])
        assert objects_in(ceph, container) == {}
    finally:
        s.stop()


def test_the_backup_users_caps_are_what_the_docs_say(ceph, backup_user):
    out = subprocess.run(
        ['ceph', '--conf', ceph.conf, '--keyring', ceph.admin_keyring,
         'auth', 'get', 'client.%s' % ceph_mod.BACKUP_USER, '--format',
         'json'], capture_output=True, text=True, timeout=60, check=True)
    caps = json.loads(out.stdout)[0]['caps']
    assert caps == {'mon': 'allow r',
                    'osd': 'profile rbd pool=%s' % ceph_mod.BACKUP_POOL}
    with open(os.path.join(os.path.dirname(__file__), '..', '..', 'doc',
                           'source', 'rbd.rst')) as f:
        doc = f.read()
    assert "mon 'allow r' osd 'profile rbd pool=backups'" in doc
