"""SQL for backups.  Status changes are compare-and-swap updates.

A backup is recorded (and its quota charged) in the transaction that
holds its volume's row lock and moves the volume to ``backing-up``, so a
delete of the volume, which takes the same lock, never finds it half
made.  An incremental backup names its parent; the parent counts its
live children (``num_dependent_backups``), changed in the transactions
that record and delete them, and is never deleted while it has any.
Reaching ``deleted`` releases what the backup counted.
"""
import datetime
import json

import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import backup_metadata as db_metadata
from cinder_lite.db import models
from cinder_lite.db import query
from cinder_lite.db import quotas as db_quotas

B = models.Backup

SORT_KEYS = ('id', 'name', 'description', 'status', 'volume_id', 'size',
             'container', 'availability_zone', 'created_at', 'updated_at',
             'project_id', 'data_timestamp', 'object_count')
FILTER_KEYS = ('name', 'status', 'volume_id', 'project_id',
               'availability_zone', 'container', 'parent_id',
               'snapshot_id', 'user_id', 'size', 'host', 'id')


def _live(stmt):
    return stmt.where(B.deleted == sa.false()).execution_options(
        populate_existing=True)


def footprint(backup):
    """What a backup row counts against quota (nothing once deleted)."""
    if backup is None or backup.deleted:
        return {}
    return db_quotas.backup_footprint(backup.size)


def create(session, values, check=None, metadata=None):
    """Record a backup and charge its quota (``check`` asked); the caller
    holds its volume's row lock.  An incremental one's parent gains a
    dependent in the same transaction."""
    backup = B(**values)
    db_quotas.change(session, backup.project_id,
                     db_quotas.backup_footprint(backup.size), check)
    session.add(backup)
    session.flush()
    db_metadata.add(session, backup.id, metadata)
    if backup.parent_id:
        _dependents(session, backup.parent_id, +1)
    return backup


def _dependents(session, backup_id, delta):
    session.execute(
        sa.update(B).where(B.id == backup_id)
        .values(num_dependent_backups=B.num_dependent_backups + delta,
                updated_at=models.utcnow())
        .execution_options(synchronize_session=False))


def get(session, backup_id, project_id=None):
    stmt = _live(sa.select(B).where(B.id == backup_id))
    if project_id is not None:
        stmt = stmt.where(B.project_id == project_id)
    backup = session.execute(stmt).scalar_one_or_none()
    if backup is None:
        raise exception.BackupNotFound(backup_id=backup_id)
    return backup


def lock(session, backup_id, project_id=None):
    """Take the row lock of a live backup and return it as it is under
    the lock.  The lock writes the row (``query.lock_rows``: certified
    by Galera)."""
    scope = [B.project_id == project_id] if project_id is not None else []
    if not query.lock_rows(session, B, B.id == backup_id,
                           B.deleted == sa.false(), *scope):
        raise exception.BackupNotFound(backup_id=backup_id)
    return session.execute(_live(sa.select(B).where(
        B.id == backup_id))).scalar_one()


def latest_of_volume(session, volume_id, project_id):
    """The newest ``available`` backup of a volume in a project (by the
    point in time it holds), the parent of an incremental one; None."""
    return session.execute(_live(sa.select(B).where(
        B.volume_id == volume_id, B.project_id == project_id,
        B.status == states.AVAILABLE)
        .order_by(B.data_timestamp.desc(), B.created_at.desc(),
                  B.id.desc()).limit(1))).scalar_one_or_none()


def busy_of_volume(session, volume_id):
    """Ids of the backups of a volume being made now."""
    return session.execute(sa.select(B.id).where(
        B.volume_id == volume_id, B.deleted == sa.false(),
        B.status == states.CREATING)).scalars().all()


def of_volume(session, volume_id):
    """The live backups of a volume (any status but deleted)."""
    return session.execute(_live(sa.select(B).where(
        B.volume_id == volume_id))).scalars().all()


def restoring_into(session, volume_id):
    """Ids of the backups being restored into a volume now."""
    return session.execute(sa.select(B.id).where(
        B.restore_volume_id == volume_id, B.deleted == sa.false(),
        B.status == states.RESTORING)).scalars().all()


def take(session, backup_id, host):
    """``host``'s backup service has the backup to make (it is
    ``creating`` and no service had it)."""
    session.execute(sa.update(B).where(
        B.id == backup_id, B.status == states.CREATING,
        B.host.is_(None)).values(host=host, updated_at=models.utcnow()))


def others_in_container(session, backup):
    """The other live backups whose objects ``backup``'s container holds
    and that are not being deleted (a record imported under a new id
    shares the store of the backup it was exported from)."""
    return session.execute(sa.select(B).where(
        B.container == backup.container, B.id != backup.id,
        B.deleted == sa.false(),
        B.status != states.DELETING)).scalars().all()


def chain(session, backup):
    """The records from ``backup``'s full backup to it, oldest first."""
    found = [backup]
    seen = {backup.id}
    while found[0].parent_id:
        parent = session.execute(sa.select(B).where(
            B.id == found[0].parent_id)).scalar_one_or_none()
        if parent is None or parent.deleted or parent.id in seen:
            raise exception.InvalidBackup(
                reason='the backup %s it is incremental to is gone' %
                found[0].parent_id)
        seen.add(parent.id)
        found.insert(0, parent)
    return found


def has_dependents(session, backup_id):
    return session.execute(sa.select(sa.func.count()).select_from(B).where(
        B.parent_id == backup_id, B.deleted == sa.false())).scalar_one() > 0


def _filtered(stmt, project_id, filters):
    if project_id is not None:
        stmt = stmt.where(B.project_id == project_id)
    for key, value in (filters or {}).items():
        if key == 'metadata':
            stmt = stmt.where(*db_metadata.matching(value))
        elif key == 'name~':
            stmt = stmt.where(B.name.contains(value, autoescape=True))
        else:
            stmt = stmt.where(getattr(B, key) == value)
    return stmt


def list_backups(session, project_id=None, filters=None,
                 sort_keys=('created_at',), sort_dirs=('desc',),
                 limit=None, marker=None, offset=None):
    """Live backups matching ``filters`` (column -> value; ``metadata``:
    a dict every key of which the backup has), a keyset page after
    ``marker`` (MarkerNotFound), skipping ``offset`` more."""
    stmt = _filtered(_live(sa.select(B)), project_id, filters)
    marker_row = None
    if marker is not None:
        marker_row = session.execute(_live(sa.select(B).where(
            B.id == marker))).scalar_one_or_none()
        if marker_row is None:
            raise exception.MarkerNotFound(marker=marker)
    stmt = query.paginate(stmt, B, sort_keys, sort_dirs, limit, marker_row)
    if offset:
        stmt = stmt.offset(offset)
    return session.execute(stmt).scalars().all()


def count(session, project_id=None, filters=None):
    stmt = _live(sa.select(sa.func.count()).select_from(B))
    return session.execute(_filtered(stmt, project_id,
                                     filters)).scalar_one()


def transition(session, backup_id, event, target=None, values=None):
    """Apply ``event`` to a backup (``states.BACKUP``) by
    compare-and-swap; InvalidTransition when no row changed.  Reaching
    ``deleted`` releases its quota, its metadata and its place among its
    parent's dependents."""
    counted = query.transition(
        session, B, states.BACKUP, backup_id, event, target, values,
        lambda: exception.BackupNotFound(backup_id=backup_id))
    if counted is not None:
        db_metadata.purge(session, backup_id)
        if counted.parent_id:
            _dependents(session, counted.parent_id, -1)
        db_quotas.change(session, counted.project_id,
                         db_quotas.difference(footprint(counted), {}))


def status_of(backup_id):
    """The statement that reads a live backup's status."""
    return sa.select(B.status).where(B.id == backup_id,
                                     B.deleted == sa.false())


def update(session, backup_id, values):
    """Fields that are not the status."""
    values = dict(values, updated_at=models.utcnow())
    result = session.execute(
        sa.update(B).where(B.id == backup_id, B.deleted.is_(False))
        .values(**values).execution_options(synchronize_session=False))
    if result.rowcount != 1:
        raise exception.BackupNotFound(backup_id=backup_id)


def purge_deleted(session, backup_id):
    """Erase the row of a deleted backup (it counts nothing any more), so
    that an import may record the backup again under its id."""
    db_metadata.purge(session, backup_id)
    session.execute(B.__table__.delete().where(
        B.id == backup_id, B.deleted == sa.true()))
    session.flush()


def remove(session, backup_id):
    """Erase the record of a backup that was never handed on (its cast
    failed), and what it counted."""
    if not query.lock_rows(session, B, B.id == backup_id,
                           B.deleted == sa.false()):
        return
    row = session.execute(_live(sa.select(B).where(
        B.id == backup_id))).scalar_one()
    db_metadata.purge(session, backup_id)
    session.execute(B.__table__.delete().where(B.id == backup_id))
    if row.parent_id:
        _dependents(session, row.parent_id, -1)
    db_quotas.change(session, row.project_id,
                     db_quotas.difference(footprint(row), {}))


def stale(session, statuses, cutoff, host=None):
    """Live backups in ``statuses`` unchanged since ``cutoff`` (of the
    backup service ``host``, or any): what reconciliation settles."""
    stmt = _live(sa.select(B).where(
        B.status.in_(statuses),
        sa.func.coalesce(B.updated_at, B.created_at) <= cutoff))
    if host is not None:
        stmt = stmt.where(B.host == host)
    return session.execute(stmt).scalars().all()


def claim_stale(session, backup_id, status, updated_at):
    """Touch a backup still ``status`` and unchanged since ``updated_at``
    (compare-and-swap), so one reconciler settles it."""
    stmt = sa.update(B).where(B.id == backup_id, B.deleted.is_(False),
                              B.status == status)
    if updated_at is None:
        stmt = stmt.where(B.updated_at.is_(None))
    else:
        stmt = stmt.where(B.updated_at == updated_at)
    now = models.utcnow()
    if updated_at is not None and now <= updated_at:
        now = updated_at + datetime.timedelta(microseconds=1)
    return session.execute(stmt.values(updated_at=now).execution_options(
        synchronize_session=False)).rowcount == 1


def record(backup):
    """What the backup service and its driver need of a backup, a plain
    dict (``service_metadata`` decoded)."""
    meta = backup.service_metadata
    return {'id': backup.id, 'volume_id': backup.volume_id,
            'snapshot_id': backup.snapshot_id,
            'project_id': backup.project_id, 'user_id': backup.user_id,
            'size': backup.size, 'container': backup.container,
            'parent_id': backup.parent_id, 'status': backup.status,
            'host': backup.host, 'name': backup.name,
            'availability_zone': backup.availability_zone,
            'service_metadata': json.loads(meta) if meta else None,
            'restore_volume_id': backup.restore_volume_id,
            'volume_status': backup.volume_status,
            'created_at': backup.created_at}
