"""SQL for group snapshots.  Status changes are compare-and-swap updates
(``states.GROUP_SNAPSHOT``).

A group snapshot is recorded with one snapshot of each volume of its
group (``snapshots.group_snapshot_id``) in the transaction that holds
the group's row lock and the volumes' (``db.groups.volumes_of(...,
lock=True)``): every snapshot charges its quota there, as a single one
does, and no volume joins or leaves the group meanwhile.
"""
import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import models
from cinder_lite.db import query
from cinder_lite.db import snapshots as db_snapshots

GS = models.GroupSnapshot
S = models.Snapshot

SORT_KEYS = ('id', 'name', 'description', 'status', 'created_at',
             'updated_at', 'project_id', 'group_id', 'group_type_id')
FILTERS = ('name', 'status', 'group_id', 'group_type_id', 'project_id')


def _live(stmt):
    return stmt.where(GS.deleted == sa.false()).execution_options(
        populate_existing=True)


def create(session, values, snapshot_values, check=None):
    """Record a group snapshot and its snapshots (each a dict of
    ``db.snapshots.create``'s values), charging their quota."""
    group_snapshot = GS(**values)
    session.add(group_snapshot)
    session.flush()
    for snapshot in snapshot_values:
        db_snapshots.create(session, dict(
            snapshot, group_snapshot_id=group_snapshot.id), check)
    return group_snapshot


def get(session, group_snapshot_id, project_id=None):
    stmt = _live(sa.select(GS).where(GS.id == group_snapshot_id))
    if project_id is not None:
        stmt = stmt.where(GS.project_id == project_id)
    found = session.execute(stmt).scalar_one_or_none()
    if found is None:
        raise exception.GroupSnapshotNotFound(
            group_snapshot_id=group_snapshot_id)
    return found


def lock(session, group_snapshot_id, project_id=None):
    # (the lock writes the row, ``query.lock_rows``: certified by
    # Galera)
    scope = [GS.project_id == project_id] if project_id is not None \
        else []
    if not query.lock_rows(session, GS, GS.id == group_snapshot_id,
                           GS.deleted == sa.false(), *scope):
        raise exception.GroupSnapshotNotFound(
            group_snapshot_id=group_snapshot_id)
    found = session.execute(_live(sa.select(GS).where(
        GS.id == group_snapshot_id))).scalar_one()
    return found


def snapshots_of(session, group_snapshot_id):
    """The live snapshots a group snapshot took, by volume creation."""
    return session.execute(
        sa.select(S).where(S.group_snapshot_id == group_snapshot_id,
                           S.deleted.is_(False))
        .order_by(S.created_at, S.id)
        .execution_options(populate_existing=True)).scalars().all()


def of_group(session, group_id):
    """The live group snapshots of a group."""
    return session.execute(_live(sa.select(GS).where(
        GS.group_id == group_id))).scalars().all()


def _filtered(stmt, project_id, filters):
    if project_id is not None:
        stmt = stmt.where(GS.project_id == project_id)
    for key, value in (filters or {}).items():
        stmt = stmt.where(getattr(GS, key) == value)
    return stmt


def list_group_snapshots(session, project_id=None, filters=None,
                         sort_keys=('created_at',), sort_dirs=('desc',),
                         limit=None, marker=None, offset=None):
    stmt = _filtered(_live(sa.select(GS)), project_id, filters)
    marker_row = None
    if marker is not None:
        marker_row = session.execute(_live(sa.select(GS).where(
            GS.id == marker))).scalar_one_or_none()
        if marker_row is None:
            raise exception.MarkerNotFound(marker=marker)
    stmt = query.paginate(stmt, GS, sort_keys, sort_dirs, limit, marker_row)
    if offset:
        stmt = stmt.offset(offset)
    return session.execute(stmt).scalars().all()


def count(session, project_id=None, filters=None):
    stmt = _live(sa.select(sa.func.count()).select_from(GS))
    return session.execute(_filtered(stmt, project_id, filters)
                           ).scalar_one()


def transition(session, group_snapshot_id, event, target=None,
               values=None):
    query.transition(
        session, GS, states.GROUP_SNAPSHOT, group_snapshot_id, event,
        target, values, lambda: exception.GroupSnapshotNotFound(
            group_snapshot_id=group_snapshot_id))


def mark_snapshots(session, group_snapshot_id, event):
    """Apply a snapshot event to every live snapshot of a group snapshot
    that it applies to (the others are left as they are)."""
    for snapshot in snapshots_of(session, group_snapshot_id):
        try:
            db_snapshots.transition(session, snapshot.id, event)
        except exception.InvalidTransition:
            pass


def stale(session, host_prefix, statuses, cutoff):
    """Live group snapshots in ``statuses``, unchanged since ``cutoff``,
    of groups on backend ``host_prefix`` (reconciliation)."""
    G = models.Group
    return session.execute(
        sa.select(GS).join(G, G.id == GS.group_id)
        .where(GS.deleted == sa.false(), GS.status.in_(statuses),
               sa.or_(G.host == host_prefix,
                      G.host.startswith(host_prefix + '#',
                                        autoescape=True)),
               sa.func.coalesce(GS.updated_at, GS.created_at) <= cutoff)
        .execution_options(populate_existing=True)).scalars().all()
