"""SQL for snapshots.  Status changes are compare-and-swap updates.

A snapshot is recorded (and its quota charged) in the transaction that
holds its volume's row lock (``db.volumes.lock``) and checks the
volume's status; a delete of the volume takes the same lock and checks
that no live snapshot is left (or marks them all ``deleting`` with
cascade), so a volume is never deleted from under a snapshot being made.
Deleting a snapshot releases what it counted in the transaction that
records it ``deleted``.
"""
import datetime

import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import image_metadata as db_volume_image_metadata
from cinder_lite.db import models
from cinder_lite.db import query
from cinder_lite.db import quotas as db_quotas
from cinder_lite.db import snapshot_image_metadata as db_image_metadata
from cinder_lite.db import snapshot_metadata as db_metadata

S = models.Snapshot

SORT_KEYS = ('id', 'name', 'description', 'status', 'volume_id',
             'created_at', 'updated_at', 'project_id')


def _live(stmt):
    return stmt.where(S.deleted == sa.false()).execution_options(
        populate_existing=True)


def footprint(snapshot):
    """What a snapshot row counts against quota (nothing once deleted)."""
    if snapshot is None or snapshot.deleted:
        return {}
    return db_quotas.snapshot_footprint(snapshot.volume_type_id,
                                        snapshot.volume_size)


def create(session, values, check=None, metadata=None):
    """Record a snapshot and charge its quota (``check`` asked); the
    caller holds the volume's row lock.  The snapshot keeps the volume's
    image metadata as it is now, as Cinder does: volumes made from the
    snapshot get it."""
    snapshot = S(**values)
    db_quotas.change(session, snapshot.project_id,
                     db_quotas.snapshot_footprint(snapshot.volume_type_id,
                                                  snapshot.volume_size),
                     check)
    session.add(snapshot)
    session.flush()
    db_metadata.add(session, snapshot.id, metadata)
    db_image_metadata.add(session, snapshot.id, db_volume_image_metadata.get(
        session, snapshot.volume_id))
    return snapshot


def get(session, snapshot_id, project_id=None):
    stmt = _live(sa.select(S).where(S.id == snapshot_id))
    if project_id is not None:
        stmt = stmt.where(S.project_id == project_id)
    snapshot = session.execute(stmt).scalar_one_or_none()
    if snapshot is None:
        raise exception.SnapshotNotFound(snapshot_id=snapshot_id)
    return snapshot


def lock(session, snapshot_id, project_id=None):
    """Take the row lock of a live snapshot and return it as it is
    under the lock.  The lock writes the row (``query.lock_rows``:
    certified by Galera)."""
    scope = [S.project_id == project_id] if project_id is not None else []
    if not query.lock_rows(session, S, S.id == snapshot_id,
                           S.deleted == sa.false(), *scope):
        raise exception.SnapshotNotFound(snapshot_id=snapshot_id)
    return session.execute(_live(sa.select(S).where(
        S.id == snapshot_id))).scalar_one()


def of_volume(session, volume_id):
    """The live snapshots of a volume, oldest first."""
    return session.execute(_live(sa.select(S).where(
        S.volume_id == volume_id).order_by(S.created_at, S.id))
    ).scalars().all()


def latest_of_volume(session, volume_id):
    """The newest live snapshot of a volume, whatever its status (the
    one Cinder's revert accepts), or None."""
    return session.execute(_live(sa.select(S).where(
        S.volume_id == volume_id).order_by(S.created_at.desc(),
                                           S.id.desc()).limit(1))
    ).scalars().first()


def _filtered(stmt, project_id, filters):
    if project_id is not None:
        stmt = stmt.where(S.project_id == project_id)
    for key, value in (filters or {}).items():
        if key == 'metadata':
            stmt = stmt.where(*db_metadata.matching(value))
        elif key == 'availability_zone':
            # a snapshot lives where its volume does (as Cinder)
            stmt = stmt.where(S.volume_id.in_(
                sa.select(models.Volume.id).where(
                    models.Volume.availability_zone == value)))
        elif key == 'name~':
            stmt = stmt.where(S.name.contains(value, autoescape=True))
        else:
            stmt = stmt.where(getattr(S, key) == value)
    return stmt


def list_snapshots(session, project_id=None, filters=None,
                   sort_keys=('created_at',), sort_dirs=('desc',),
                   limit=None, marker=None, offset=None):
    """Live snapshots matching ``filters`` (column -> value;
    ``metadata``: a dict every key of which the snapshot has), a keyset
    page after ``marker`` (MarkerNotFound, a 404 as in Cinder), skipping
    ``offset`` more."""
    stmt = _filtered(_live(sa.select(S)), project_id, filters)
    marker_row = None
    if marker is not None:
        marker_row = session.execute(_live(sa.select(S).where(
            S.id == marker))).scalar_one_or_none()
        if marker_row is None:
            raise exception.MarkerNotFound(marker=marker)
    stmt = query.paginate(stmt, S, sort_keys, sort_dirs, limit, marker_row)
    if offset:
        stmt = stmt.offset(offset)
    return session.execute(stmt).scalars().all()


def count(session, project_id=None, filters=None):
    stmt = _live(sa.select(sa.func.count()).select_from(S))
    return session.execute(_filtered(stmt, project_id,
                                     filters)).scalar_one()


def usage_on_backends(session, backends):
    """project id -> (count, GiB) of the live snapshots of the volumes
    whose host is one of ``backends`` (as ``db.volumes``'s)."""
    V = models.Volume
    on = sa.or_(*[sa.or_(V.host == b, V.host.startswith(b + '#',
                                                        autoescape=True))
                  for b in backends])
    rows = session.execute(
        sa.select(S.project_id, sa.func.count(S.id),
                  sa.func.coalesce(sa.func.sum(S.volume_size), 0))
        .join(V, V.id == S.volume_id)
        .where(S.deleted == sa.false(), on)
        .group_by(S.project_id).order_by(S.project_id)).all()
    return {project: (count, int(size)) for project, count, size in rows}


def transition(session, snapshot_id, event, target=None, values=None):
    """Apply ``event`` to a snapshot (``states.SNAPSHOT``): move it to the
    event's target (the one named, for an event that leads to several)
    only from a status the event leads there from; InvalidTransition when
    no row changed.
    Reaching ``deleted`` releases what it counted."""
    counted = query.transition(
        session, S, states.SNAPSHOT, snapshot_id, event, target, values,
        lambda: exception.SnapshotNotFound(snapshot_id=snapshot_id))
    if counted is not None:
        db_metadata.purge(session, snapshot_id)
        db_image_metadata.purge(session, snapshot_id)
        db_quotas.change(session, counted.project_id,
                         db_quotas.difference(footprint(counted), {}))


def give(session, volume_id, donor, project_id, user_id, check=None):
    """Hand the live snapshots of a volume being transferred from
    ``donor`` to ``project_id`` (and ``user_id``), with what they count
    (``check`` asked for the new project), in the caller's transaction;
    the usage rows of the two projects are locked in the order of their
    ids, as ``db.volumes.give`` does.  Returns their ids."""
    snapshots = of_volume(session, volume_id)
    if not snapshots or donor == project_id:
        return [s.id for s in snapshots]
    total = {}
    for snapshot in snapshots:
        for key, (used, reserved) in footprint(snapshot).items():
            old = total.get(key, (0, 0))
            total[key] = (old[0] + used, old[1] + reserved)
    session.execute(
        sa.update(S).where(S.id.in_([s.id for s in snapshots]))
        .values(project_id=project_id, user_id=user_id,
                updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    for project in sorted((donor, project_id)):
        if project == donor:
            db_quotas.change(session, donor,
                             db_quotas.difference(total, {}))
        else:
            db_quotas.change(session, project_id, total, check)
    return [s.id for s in snapshots]


def update(session, snapshot_id, values):
    """Fields that are not the status (name, description, progress)."""
    values = dict(values, updated_at=models.utcnow())
    result = session.execute(
        sa.update(S).where(S.id == snapshot_id, S.deleted.is_(False))
        .values(**values).execution_options(synchronize_session=False))
    if result.rowcount != 1:
        raise exception.SnapshotNotFound(snapshot_id=snapshot_id)


def _locked(session, snapshot_id):
    """``lock``'s, or None when there is no such snapshot."""
    if not query.lock_rows(session, S, S.id == snapshot_id,
                           S.deleted == sa.false()):
        return None
    return session.execute(_live(sa.select(S).where(
        S.id == snapshot_id))).scalar_one()


def remove(session, snapshot_id):
    """Erase the record of a snapshot that was never handed on (its cast
    failed), and what it counted."""
    row = _locked(session, snapshot_id)
    if row is None:
        return
    db_metadata.purge(session, snapshot_id)
    db_image_metadata.purge(session, snapshot_id)
    session.execute(S.__table__.delete().where(S.id == snapshot_id))
    db_quotas.change(session, row.project_id,
                     db_quotas.difference(footprint(row), {}))


def stale(session, volume_host_prefix, statuses, cutoff):
    """Live snapshots in ``statuses``, unchanged since ``cutoff``, whose
    volume lives on the backend ``volume_host_prefix`` (``node@backend``
    or a cluster's), any pool: what reconciliation settles.  Those of a
    group snapshot are settled with it (volume/group_manager.py)."""
    V = models.Volume
    return session.execute(
        sa.select(S, V.host).join(V, V.id == S.volume_id)
        .where(S.deleted == sa.false(), S.status.in_(statuses),
               S.group_snapshot_id.is_(None),
               sa.or_(V.host == volume_host_prefix,
                      V.host.startswith(volume_host_prefix + '#',
                                        autoescape=True)),
               sa.func.coalesce(S.updated_at, S.created_at) <= cutoff)
        .execution_options(populate_existing=True)).all()


def claim_stale(session, snapshot_id, status, updated_at):
    """Touch a snapshot still ``status`` and unchanged since
    ``updated_at`` (compare-and-swap), so one reconciler settles it."""
    stmt = sa.update(S).where(S.id == snapshot_id, S.deleted.is_(False),
                              S.status == status)
    if updated_at is None:
        stmt = stmt.where(S.updated_at.is_(None))
    else:
        stmt = stmt.where(S.updated_at == updated_at)
    now = models.utcnow()
    if updated_at is not None and now <= updated_at:
        now = updated_at + datetime.timedelta(microseconds=1)
    return session.execute(stmt.values(updated_at=now).execution_options(
        synchronize_session=False)).rowcount == 1


def summary(snapshot, volume_host=None):
    """What the volume service needs of a snapshot, a plain dict."""
    created = snapshot.created_at
    return {'id': snapshot.id, 'volume_id': snapshot.volume_id,
            'volume_size': snapshot.volume_size,
            'volume_type_id': snapshot.volume_type_id,
            'project_id': snapshot.project_id,
            'user_id': snapshot.user_id, 'name': snapshot.name,
            'status': snapshot.status, 'host': volume_host,
            'created_at': created.isoformat() if created else None}


def charge_size(session, snapshot_id, size, check=None):
    """Give a snapshot being managed the size its copy turned out to have
    (``volume_size``), charging the difference to its project; ``check``
    refuses it beyond a limit.  InvalidTransition unless ``managing``."""
    row = _locked(session, snapshot_id)
    if row is None:
        raise exception.SnapshotNotFound(snapshot_id=snapshot_id)
    if row.status != states.MANAGING:
        raise exception.InvalidTransition(
            resource='snapshot', id=snapshot_id, target=states.MANAGING,
            actual=row.status, allowed=states.MANAGING)
    db_quotas.change(session, row.project_id, db_quotas.difference(
        footprint(row),
        db_quotas.snapshot_footprint(row.volume_type_id, size)), check)
    session.execute(
        sa.update(S).where(S.id == snapshot_id)
        .values(volume_size=size, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))


def live_ids(session, ids):
    """Those of ``ids`` that are live snapshots, id -> volume id."""
    if not ids:
        return {}
    return dict(session.execute(
        sa.select(S.id, S.volume_id).where(S.id.in_(list(ids)),
                                           S.deleted == sa.false())).all())
