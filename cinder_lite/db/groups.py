"""SQL for generic volume groups.  Status changes are compare-and-swap
updates (``states.GROUP``).

A group is recorded with its volume types and its quota (``groups``) in
one transaction; volumes join and leave it under the group's row lock
and their own (``add_volumes``/``remove_volumes``), and a volume is
created into it under the group's row lock too, so a group being deleted
never gets a new volume, and a delete finds every volume it has.
"""
import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import models
from cinder_lite.db import query
from cinder_lite.db import quotas as db_quotas

G = models.Group
M = models.GroupVolumeTypeMapping
V = models.Volume

SORT_KEYS = ('id', 'name', 'description', 'status', 'created_at',
             'updated_at', 'project_id', 'group_type_id',
             'availability_zone')
FILTERS = ('name', 'status', 'group_type_id', 'availability_zone',
           'project_id', 'host')


def _live(stmt):
    return stmt.where(G.deleted == sa.false()).execution_options(
        populate_existing=True)


def create(session, values, volume_type_ids, check=None):
    """Record a group with its volume types, charging ``groups``."""
    group = G(**values)
    db_quotas.change(session, group.project_id, db_quotas.GROUP_FOOTPRINT,
                     check)
    session.add(group)
    session.flush()
    for type_id in volume_type_ids:
        session.add(M(group_id=group.id, volume_type_id=type_id))
    session.flush()
    return group


def get(session, group_id, project_id=None):
    stmt = _live(sa.select(G).where(G.id == group_id))
    if project_id is not None:
        stmt = stmt.where(G.project_id == project_id)
    group = session.execute(stmt).scalar_one_or_none()
    if group is None:
        raise exception.GroupNotFound(group_id=group_id)
    return group


def lock(session, group_id, project_id=None):
    """The live group with its row lock (which writes the row,
    ``query.lock_rows``: certified by Galera)."""
    scope = [G.project_id == project_id] if project_id is not None else []
    if not query.lock_rows(session, G, G.id == group_id,
                           G.deleted == sa.false(), *scope):
        raise exception.GroupNotFound(group_id=group_id)
    return session.execute(_live(sa.select(G).where(
        G.id == group_id))).scalar_one()


def volume_types_of(session, group_ids):
    """group id -> the ids of its volume types (in the order recorded)."""
    found = {g: [] for g in group_ids}
    if not found:
        return found
    for group_id, type_id in session.execute(
            sa.select(M.group_id, M.volume_type_id)
            .where(M.group_id.in_(list(found))).order_by(M.id)):
        found[group_id].append(type_id)
    return found


def volumes_of(session, group_ids, lock=False):
    """group id -> its live volumes, oldest first (locked with
    ``lock``, in the order of their ids)."""
    found = {g: [] for g in group_ids}
    if not found:
        return found
    stmt = sa.select(V).where(V.group_id.in_(list(found)),
                              V.deleted.is_(False))
    if lock:
        # (written, as ``db.volumes.lock`` does, for Galera to certify)
        query.lock_rows(session, V, V.group_id.in_(list(found)),
                        V.deleted.is_(False))
        stmt = stmt.order_by(V.id)
    rows = session.execute(stmt.execution_options(
        populate_existing=True)).scalars().all()
    for volume in sorted(rows, key=lambda v: (v.created_at, v.id)):
        found[volume.group_id].append(volume)
    return found


def uses_volume_type(session, type_id):
    """True when a live group holds volume type ``type_id``."""
    return session.execute(
        sa.select(M.id).join(G, G.id == M.group_id)
        .where(M.volume_type_id == type_id, G.deleted.is_(False)).limit(1)
    ).scalar_one_or_none() is not None


def _filtered(stmt, project_id, filters):
    if project_id is not None:
        stmt = stmt.where(G.project_id == project_id)
    for key, value in (filters or {}).items():
        stmt = stmt.where(getattr(G, key) == value)
    return stmt


def list_groups(session, project_id=None, filters=None,
                sort_keys=('created_at',), sort_dirs=('desc',), limit=None,
                marker=None, offset=None):
    stmt = _filtered(_live(sa.select(G)), project_id, filters)
    marker_row = None
    if marker is not None:
        marker_row = session.execute(_live(sa.select(G).where(
            G.id == marker))).scalar_one_or_none()
        if marker_row is None:
            raise exception.MarkerNotFound(marker=marker)
    stmt = query.paginate(stmt, G, sort_keys, sort_dirs, limit, marker_row)
    if offset:
        stmt = stmt.offset(offset)
    return session.execute(stmt).scalars().all()


def count(session, project_id=None, filters=None):
    stmt = _live(sa.select(sa.func.count()).select_from(G))
    return session.execute(_filtered(stmt, project_id, filters)
                           ).scalar_one()


def transition(session, group_id, event, target=None, values=None):
    """Apply ``event`` (``states.GROUP``) by compare-and-swap; reaching
    ``deleted`` gives its quota back and drops its volume types."""
    ended = query.transition(
        session, G, states.GROUP, group_id, event, target, values,
        lambda: exception.GroupNotFound(group_id=group_id))
    if ended is not None:
        db_quotas.change(session, ended.project_id, db_quotas.difference(
            db_quotas.GROUP_FOOTPRINT, {}))


def claim_host(session, group_id, host, cluster_name, availability_zone):
    """Record the backend the scheduler chose for a ``creating`` group
    and make it ``available``; False when it is no longer creating."""
    try:
        transition(session, group_id, 'created',
                   values={'host': host, 'cluster_name': cluster_name,
                           'availability_zone': availability_zone})
    except (exception.InvalidTransition, exception.GroupNotFound):
        return False
    return True


def update(session, group_id, values):
    values = dict(values, updated_at=models.utcnow())
    result = session.execute(
        sa.update(G).where(G.id == group_id, G.deleted.is_(False))
        .values(**values).execution_options(synchronize_session=False))
    if result.rowcount != 1:
        raise exception.GroupNotFound(group_id=group_id)


def set_volumes_group(session, volume_ids, group_id, expected_group):
    """Move volumes into ``group_id`` (None: out of their group) from
    ``expected_group`` (compare-and-swap on the column); the caller holds
    the rows' locks and checked them."""
    if not volume_ids:
        return
    cond = (V.group_id.is_(None) if expected_group is None
            else V.group_id == expected_group)
    result = session.execute(
        sa.update(V).where(V.id.in_(list(volume_ids)), V.deleted.is_(False),
                           cond)
        .values(group_id=group_id, updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    if result.rowcount != len(set(volume_ids)):
        raise exception.InvalidGroup(
            reason='a volume changed group while it was being updated')


def creating(session, cutoff):
    """Groups still ``creating`` with no host since ``cutoff`` (their
    scheduling request was lost)."""
    return session.execute(_live(sa.select(G).where(
        G.status == states.CREATING, G.host.is_(None),
        G.source_group_id.is_(None), G.group_snapshot_id.is_(None),
        sa.func.coalesce(G.updated_at, G.created_at) <= cutoff))
    ).scalars().all()


def stale(session, host_prefix, statuses, cutoff):
    """Live groups in ``statuses`` on backend ``host_prefix`` (any
    pool), unchanged since ``cutoff`` (reconciliation)."""
    return session.execute(_live(sa.select(G).where(
        G.status.in_(statuses),
        sa.or_(G.host == host_prefix,
               G.host.startswith(host_prefix + '#', autoescape=True)),
        sa.func.coalesce(G.updated_at, G.created_at) <= cutoff))
    ).scalars().all()


def summary(group, volume_type_ids=(), group_specs=None):
    """What the scheduler and volume service need of a group."""
    return {'id': group.id, 'project_id': group.project_id,
            'user_id': group.user_id, 'status': group.status,
            'group_type_id': group.group_type_id, 'host': group.host,
            'cluster_name': group.cluster_name,
            'availability_zone': group.availability_zone,
            'volume_type_ids': list(volume_type_ids),
            'group_specs': dict(group_specs or {})}


def request_spec(group, volume_types, group_specs):
    """What the scheduler needs to place a group: every volume type it
    must hold (with its extra specs) and its group type's specs."""
    return {'group': summary(group, [t['id'] for t in volume_types],
                             group_specs),
            'availability_zone': group.availability_zone,
            'group_specs': dict(group_specs or {}),
            'volume_types': [{'id': t['id'], 'name': t['name'],
                              'extra_specs': t['extra_specs']}
                             for t in volume_types]}
