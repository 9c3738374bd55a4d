"""The schema the migrations build matches the models; SQLite runs in WAL
mode with BEGIN IMMEDIATE and a busy timeout and takes concurrent writers
without 'database is locked'."""
import threading
import uuid

from alembic import autogenerate
from alembic import migration as alembic_migration
import sqlalchemy as sa

from cinder_lite.db import api as db_api
from cinder_lite.db import migration
from cinder_lite.db import models


def _engine(tmp_path):
    return db_api.create_engine('sqlite:///%s' % (tmp_path / 'db.sqlite'))


def test_migrations_match_models(tmp_path):
    engine = _engine(tmp_path)
    migration.upgrade(engine=engine)
    assert migration.current_revision(engine) == migration.head_revision()
    with engine.connect() as conn:
        ctx = alembic_migration.MigrationContext.configure(
            conn, opts={'compare_type': False})
        diff = autogenerate.compare_metadata(ctx, models.Base.metadata)
    assert diff == []
    engine.dispose()


def test_sqlite_pragmas(tmp_path):
    engine = _engine(tmp_path)
    with engine.connect() as conn:
        assert conn.exec_driver_sql('PRAGMA journal_mode').scalar() == 'wal'
        assert conn.exec_driver_sql('PRAGMA busy_timeout').scalar() == \
            db_api.SQLITE_BUSY_TIMEOUT_S * 1000
        assert conn.exec_driver_sql('PRAGMA foreign_keys').scalar() == 1
    seen = []
    sa.event.listen(engine, 'before_cursor_execute',
                    lambda *a: seen.append(a[2]))
    with engine.begin() as conn:
        conn.exec_driver_sql('SELECT 1')
    assert seen[0] == 'BEGIN IMMEDIATE'
    engine.dispose()


def test_concurrent_read_modify_write_never_locks(tmp_path):
    """16 threads each increment one counter 20 times in read-then-write
    transactions: with BEGIN IMMEDIATE none fails and none is lost."""
    engine = _engine(tmp_path)
    migration.upgrade(engine=engine)
    vid = str(uuid.uuid4())
    with engine.begin() as conn:
        type_id = conn.execute(sa.select(models.VolumeType.id)).scalar()
        conn.execute(sa.insert(models.Volume).values(
            id=vid, project_id='p', size=1, status='available',
            volume_type_id=type_id, multiattach=False, bootable=False,
            deleted=False, created_at=models.utcnow()))
    errors = []
    barrier = threading.Barrier(16)

    def work():
        barrier.wait()
        for _ in range(20):
            try:
                with engine.begin() as conn:
                    seq = conn.execute(sa.select(models.Volume.attach_seq)
                                       .where(models.Volume.id == vid)
                                       ).scalar()
                    conn.execute(sa.update(models.Volume)
                                 .where(models.Volume.id == vid)
                                 .values(attach_seq=seq + 1))
            except Exception as e:  # collected, asserted below
                errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with engine.connect() as conn:
        assert conn.execute(sa.select(models.Volume.attach_seq)).scalar() \
            == 16 * 20
    engine.dispose()


def check_0010_moves_metadata(engine):
    """Migration 0010: the JSON metadata of live volumes becomes rows of
    volume_metadata (and comes back on downgrade); readonly may be null
    after it; services get frozen = false."""
    migration.upgrade('0009', engine=engine)
    volumes = sa.table('volumes', sa.column('id'), sa.column('project_id'),
                       sa.column('size'), sa.column('status'),
                       sa.column('volume_type_id'),
                       sa.column('multiattach'), sa.column('bootable'),
                       sa.column('metadata', sa.JSON),
                       sa.column('readonly', sa.Boolean),
                       sa.column('deleted'),
                       sa.column('created_at'))
    live, gone, bare = (str(uuid.uuid4()) for _ in range(3))
    # (an attachment refers to a volume: the rebuild of the volumes
    # table must keep it)
    attachments = sa.table('volume_attachments', sa.column('id'),
                           sa.column('volume_id'), sa.column('project_id'),
                           sa.column('attach_status'),
                           sa.column('service_owned', sa.Boolean),
                           sa.column('deleted', sa.Boolean),
                           sa.column('created_at'))
    with engine.begin() as conn:
        type_id = conn.execute(sa.select(models.VolumeType.id)).scalar()
        for vid, meta, deleted in ((live, {'a': '1', 'Type': 'x'}, False),
                                   (gone, {'old': 'y'}, True),
                                   (bare, {}, False)):
            conn.execute(sa.insert(volumes).values(
                id=vid, project_id='p', size=1, status='available',
                volume_type_id=type_id, multiattach=False, bootable=False,
                metadata=meta, readonly=vid == bare, deleted=deleted,
                created_at=models.utcnow()))
        conn.execute(sa.insert(attachments).values(
            id=str(uuid.uuid4()), volume_id=live, project_id='p',
            attach_status='attached', service_owned=False, deleted=False,
            created_at=models.utcnow()))
    migration.upgrade(engine=engine)
    M = models.VolumeMetadata
    with engine.connect() as conn:
        rows = conn.execute(sa.select(M.volume_id, M.key, M.value)
                            .order_by(M.key)).all()
        assert [tuple(r) for r in rows] == [(live, 'Type', 'x'),
                                            (live, 'a', '1')]
        assert dict(conn.execute(sa.select(models.Volume.id,
                                           models.Volume.readonly)).all()
                    ) == {live: False, gone: False, bare: True}
    with engine.begin() as conn:
        conn.execute(sa.update(models.Volume).where(
            models.Volume.id == live).values(readonly=None))
    migration.downgrade('0009', engine=engine)
    with engine.connect() as conn:
        found = dict(conn.execute(sa.select(volumes.c.id,
                                            volumes.c.metadata)).all())
        assert found == {live: {'a': '1', 'Type': 'x'}, gone: {},
                         bare: {}}
        assert conn.execute(sa.select(volumes.c.readonly).where(
            volumes.c.id == live)).scalar() is False
    migration.upgrade(engine=engine)


def test_0010_moves_metadata(tmp_path):
    engine = _engine(tmp_path)
    check_0010_moves_metadata(engine)
    engine.dispose()


def check_0015_records_image_sources(engine):
    """Migration 0015: a volume still being made from an image (its
    image metadata names it; no snapshot, no source volume) records the
    image as its image_id, no other volume does; live snapshots keep
    their volume's image metadata; the downgrade drops both."""
    migration.upgrade('0014', engine=engine)
    volumes = sa.table('volumes', sa.column('id'), sa.column('project_id'),
                       sa.column('size'), sa.column('status'),
                       sa.column('volume_type_id'),
                       sa.column('multiattach'), sa.column('bootable'),
                       sa.column('snapshot_id'), sa.column('source_volid'),
                       sa.column('deleted'), sa.column('created_at'))
    image_meta = sa.table('volume_image_metadata', sa.column('volume_id'),
                          sa.column('key'), sa.column('value'),
                          sa.column('created_at'))
    snapshots = sa.table('snapshots', sa.column('id'),
                         sa.column('volume_id'), sa.column('project_id'),
                         sa.column('status'), sa.column('volume_size'),
                         sa.column('volume_type_id'), sa.column('deleted'),
                         sa.column('created_at'))
    image = str(uuid.uuid4())
    ids = {name: str(uuid.uuid4()) for name in (
        'downloading', 'creating', 'available', 'clone', 'named', 'plain')}
    snap, gone_snap = str(uuid.uuid4()), str(uuid.uuid4())
    now = models.utcnow()
    with engine.begin() as conn:
        type_id = conn.execute(sa.select(models.VolumeType.id)).scalar()
        for name, vid in ids.items():
            status = name if name in ('downloading', 'creating') \
                else 'available' if name != 'clone' else 'creating'
            conn.execute(sa.insert(volumes).values(
                id=vid, project_id='p', size=1, status=status,
                volume_type_id=type_id, multiattach=False, bootable=False,
                source_volid=ids['available'] if name == 'clone' else None,
                deleted=False, created_at=now))
            if name != 'plain':
                value = 'not-a-uuid-' + 'x' * 40 if name == 'named' \
                    else image
                conn.execute(sa.insert(image_meta), [
                    {'volume_id': vid, 'key': 'image_id', 'value': value,
                     'created_at': now},
                    {'volume_id': vid, 'key': 'os_distro',
                     'value': 'debian', 'created_at': now}])
        conn.execute(sa.update(volumes).where(volumes.c.id == ids['named'])
                     .values(status='creating'))
        for sid, deleted in ((snap, False), (gone_snap, True)):
            conn.execute(sa.insert(snapshots).values(
                id=sid, volume_id=ids['available'], project_id='p',
                status='available', volume_size=1, volume_type_id=type_id,
                deleted=deleted, created_at=now))
    migration.upgrade(engine=engine)
    with engine.connect() as conn:
        found = dict(conn.execute(sa.select(models.Volume.id,
                                            models.Volume.image_id)).all())
        assert found == {vid: (image if name in ('downloading', 'creating')
                               else None) for name, vid in ids.items()}
        S = models.SnapshotImageMetadata
        rows = conn.execute(sa.select(S.snapshot_id, S.key, S.value)
                            .order_by(S.key)).all()
        assert [tuple(r) for r in rows] == [(snap, 'image_id', image),
                                            (snap, 'os_distro', 'debian')]
    migration.downgrade('0014', engine=engine)
    with engine.connect() as conn:
        inspector = sa.inspect(conn)
        assert 'snapshot_image_metadata' not in inspector.get_table_names()
        assert 'image_id' not in {c['name'] for c in
                                  inspector.get_columns('volumes')}
    migration.upgrade(engine=engine)


def test_0015_records_image_sources(tmp_path):
    engine = _engine(tmp_path)
    check_0015_records_image_sources(engine)
    engine.dispose()


def check_0016_moves_attachment_marks(engine):
    """Migration 0016: the words that marked an operation in
    status_reason become the attachment's operation (and no
    status_reason); any other reason stays; the downgrade writes the
    words back."""
    migration.upgrade('0015', engine=engine)
    volumes = sa.table('volumes', sa.column('id'), sa.column('project_id'),
                       sa.column('size'), sa.column('status'),
                       sa.column('volume_type_id'),
                       sa.column('multiattach'), sa.column('bootable'),
                       sa.column('deleted'), sa.column('created_at'))
    attachments = sa.table('volume_attachments', sa.column('id'),
                           sa.column('volume_id'), sa.column('project_id'),
                           sa.column('attach_status'),
                           sa.column('status_reason'),
                           sa.column('service_owned'), sa.column('deleted'),
                           sa.column('created_at'))
    vid = str(uuid.uuid4())
    reasons = {'taking over': ('attached', 'taking_over', None),
               'disconnecting': ('detaching', 'disconnecting', None),
               'reserved by os-reserve': ('reserved', 'os-reserve', None),
               'connect failed: no export': ('error_attaching', None,
                                             'connect failed: no export'),
               None: ('attached', None, None)}
    ids = {reason: str(uuid.uuid4()) for reason in reasons}
    now = models.utcnow()
    with engine.begin() as conn:
        type_id = conn.execute(sa.select(models.VolumeType.id)).scalar()
        conn.execute(sa.insert(volumes).values(
            id=vid, project_id='p', size=1, status='in-use',
            volume_type_id=type_id, multiattach=True, bootable=False,
            deleted=False, created_at=now))
        for reason, (status, _op, _left) in reasons.items():
            conn.execute(sa.insert(attachments).values(
                id=ids[reason], volume_id=vid, project_id='p',
                attach_status=status, status_reason=reason,
                service_owned=False, deleted=False, created_at=now))
    migration.upgrade(engine=engine)
    A = models.VolumeAttachment
    with engine.connect() as conn:
        found = {row.id: (row.operation, row.status_reason)
                 for row in conn.execute(sa.select(
                     A.id, A.operation, A.status_reason))}
        assert found == {ids[reason]: (operation, left) for reason, (
            _status, operation, left) in reasons.items()}
    migration.downgrade('0015', engine=engine)
    with engine.connect() as conn:
        found = dict(conn.execute(sa.select(
            attachments.c.id, attachments.c.status_reason)).all())
        assert found == {ids[reason]: reason for reason in reasons}
        assert 'operation' not in {c['name'] for c in sa.inspect(
            conn).get_columns('volume_attachments')}
    migration.upgrade(engine=engine)


def test_0016_moves_attachment_marks(tmp_path):
    engine = _engine(tmp_path)
    check_0016_moves_attachment_marks(engine)
    engine.dispose()
