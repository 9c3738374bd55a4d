"""SQL for quotas: limits, quota classes and recorded usage.

A resource is keyed ``volumes`` or ``gigabytes``, and per volume type
``volumes:<type id>`` / ``gigabytes:<type id>``.  Usage changes only
through ``change``, inside the transaction that changes the volumes it
counts, after the usage rows are locked (``SELECT ... FOR UPDATE``; on
SQLite the writer's ``BEGIN IMMEDIATE`` serialises).  A project's rows are
always locked in the order of their keys.

A usage row is made once, the first time a project uses a resource, by
``ensure`` in a transaction of its own (an insert that ignores a row
another request made meanwhile; see ``cinder_lite.db.quota_limits``): two
first creates in a project then never fail on each other's insert.
"""
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from cinder_lite.db import models

VOLUMES = 'volumes'
GIGABYTES = 'gigabytes'
SNAPSHOTS = 'snapshots'
BACKUPS = 'backups'
BACKUP_GIGABYTES = 'backup_gigabytes'
GROUPS = 'groups'
COUNTED = (VOLUMES, GIGABYTES, SNAPSHOTS, BACKUPS, BACKUP_GIGABYTES, GROUPS)
# what one live generic volume group counts
GROUP_FOOTPRINT = {GROUPS: (1, 0)}

Q, QC, U = models.Quota, models.QuotaClass, models.QuotaUsage


def type_key(resource, type_id):
    return '%s:%s' % (resource, type_id)


def split_key(key):
    """``(resource, type id or None)``."""
    resource, _, type_id = key.partition(':')
    return resource, type_id or None


def footprint(type_id, size, pending_size=None):
    """What one live volume counts: resource -> (in use, reserved)."""
    grow = pending_size - size if pending_size else 0
    return {VOLUMES: (1, 0), GIGABYTES: (size, grow),
            type_key(VOLUMES, type_id): (1, 0),
            type_key(GIGABYTES, type_id): (size, grow)}


def snapshot_footprint(type_id, size):
    """What one live snapshot counts (its volume's size and type when it
    was taken), as in Cinder: one snapshot and its GiB."""
    return {SNAPSHOTS: (1, 0), GIGABYTES: (size, 0),
            type_key(SNAPSHOTS, type_id): (1, 0),
            type_key(GIGABYTES, type_id): (size, 0)}


def backup_footprint(size):
    """What one live backup counts, as in Cinder: one backup and its
    volume's GiB (whatever the store keeps of it)."""
    return {BACKUPS: (1, 0), BACKUP_GIGABYTES: (size, 0)}


def difference(before, after):
    """``after - before`` of two footprints (either may be empty)."""
    keys = set(before) | set(after)
    deltas = {}
    for key in keys:
        b = before.get(key, (0, 0))
        a = after.get(key, (0, 0))
        d = (a[0] - b[0], a[1] - b[1])
        if d != (0, 0):
            deltas[key] = d
    return deltas


class MissingUsage(Exception):
    """A usage row to charge is not there yet: ``ensure`` it (outside
    this transaction) and try again."""

    def __init__(self, project_id, resources):
        super().__init__('no usage rows for %s of project %s' % (
            ', '.join(sorted(resources)), project_id))
        self.project_id = project_id
        self.resources = sorted(resources)


def _insert(session, model, rows, unique, update=None):
    """INSERT ``rows``; a row whose ``unique`` columns exist already is
    left alone, or gets the columns in ``update`` from the new row."""
    dialect = session.get_bind().dialect.name
    if dialect in ('postgresql', 'sqlite'):
        insert = (postgresql.insert if dialect == 'postgresql'
                  else sqlite.insert)(model)
        if update:
            stmt = insert.on_conflict_do_update(
                index_elements=unique,
                set_={c: insert.excluded[c] for c in update})
        else:
            stmt = insert.on_conflict_do_nothing(index_elements=unique)
    else:
        insert = mysql.insert(model)
        if update:
            stmt = insert.on_duplicate_key_update(
                {c: insert.inserted[c] for c in update})
        else:
            stmt = insert.prefix_with('IGNORE')
    session.execute(stmt, rows)


def ensure(session, project_id, resources):
    """Make the usage rows of ``resources`` that are not there."""
    now = models.utcnow()
    _insert(session, U, [{'project_id': project_id, 'resource': r,
                          'in_use': 0, 'reserved': 0, 'created_at': now}
                         for r in sorted(resources)],
            ['project_id', 'resource'])


UNIQUE_INDEX = 'uniq_quota_usage_project_resource'


def _by_unique_index(stmt):
    """MariaDB: find a project's rows through (project, resource) even in
    a small table.  A locking read that scans the table instead locks
    other projects' rows on its way, and in another order than a
    transaction that went through the index: deadlocks."""
    hint = 'FORCE INDEX (%s)' % UNIQUE_INDEX
    return stmt.with_hint(U, hint, 'mysql').with_hint(U, hint, 'mariadb')


def _rows(session, project_id, resources, lock):
    stmt = sa.select(U.id, U.resource, U.in_use, U.reserved).where(
        U.project_id == project_id)
    if resources is not None:
        stmt = stmt.where(U.resource.in_(sorted(resources)))
    stmt = stmt.order_by(U.resource)
    if lock:
        stmt = _by_unique_index(stmt).with_for_update()
    return session.execute(stmt).all()


def read(session, project_id, resources, lock=False):
    """The usage rows of ``resources`` (locked with ``lock``): resource ->
    ``(in_use, reserved)``; missing rows are left out."""
    return {r.resource: (r.in_use, r.reserved)
            for r in _rows(session, project_id, resources, lock)}


def change(session, project_id, deltas, check=None):
    """Apply ``deltas`` (resource -> (in use, reserved) change) to the
    project's usage.  The rows are locked first, in the order of their
    keys, then changed by id in one UPDATE; ``check(project, resource,
    delta, in_use, reserved)`` is asked about each resource that grows
    (it raises to refuse).  A shrinking resource without a row (one
    deleted by hand) is left to ``quota sync``."""
    if not deltas:
        return
    rows = {r.resource: r for r in _rows(session, project_id, deltas,
                                         lock=True)}
    growing = sorted(k for k, d in deltas.items() if d[0] > 0 or d[1] > 0)
    missing = set(growing) - set(rows)
    if missing:
        raise MissingUsage(project_id, missing)
    if check is not None:
        for key in growing:
            check(project_id, key, deltas[key], rows[key].in_use,
                  rows[key].reserved)
    present = sorted(set(deltas) & set(rows))
    if not present:
        return

    def by_id(column, index):
        changes = {rows[k].id: deltas[k][index] for k in present
                   if deltas[k][index]}
        if not changes:
            return column
        return column + sa.case(changes, value=U.id, else_=0)
    session.execute(
        sa.update(U)
        .where(U.id.in_([rows[k].id for k in present]))
        .values(in_use=by_id(U.in_use, 0), reserved=by_id(U.reserved, 1),
                updated_at=models.utcnow())
        .execution_options(synchronize_session=False))


def usage(session, project_id, for_update=False):
    """The recorded usage of a project: resource -> (in use, reserved)."""
    return {r.resource: (r.in_use, r.reserved)
            for r in _rows(session, project_id, None, for_update)}


def counted(session, project_id=None):
    """The usage the volumes themselves say: project -> resource ->
    (in use, reserved), from one pass grouped by project and type."""
    V = models.Volume
    grow = sa.case((V.pending_size.is_not(None), V.pending_size - V.size),
                   else_=0)
    stmt = (sa.select(V.project_id, V.volume_type_id, sa.func.count(),
                      sa.func.sum(V.size), sa.func.sum(grow))
            .where(V.deleted == sa.false())
            .group_by(V.project_id, V.volume_type_id))
    if project_id is not None:
        stmt = stmt.where(V.project_id == project_id)
    found = {}
    for project, type_id, count, size, reserved in session.execute(stmt):
        totals = found.setdefault(project, {})
        count, size, reserved = int(count), int(size or 0), \
            int(reserved or 0)
        for key, value in ((VOLUMES, (count, 0)),
                           (GIGABYTES, (size, reserved)),
                           (type_key(VOLUMES, type_id), (count, 0)),
                           (type_key(GIGABYTES, type_id),
                            (size, reserved))):
            old = totals.get(key, (0, 0))
            totals[key] = (old[0] + value[0], old[1] + value[1])
    S = models.Snapshot
    stmt = (sa.select(S.project_id, S.volume_type_id, sa.func.count(),
                      sa.func.sum(S.volume_size))
            .where(S.deleted == sa.false())
            .group_by(S.project_id, S.volume_type_id))
    if project_id is not None:
        stmt = stmt.where(S.project_id == project_id)
    for project, type_id, count, size in session.execute(stmt):
        totals = found.setdefault(project, {})
        for key, value in snapshot_footprint(type_id,
                                             int(size or 0)).items():
            if key.startswith(SNAPSHOTS):
                value = (int(count), 0)
            old = totals.get(key, (0, 0))
            totals[key] = (old[0] + value[0], old[1] + value[1])
    B = models.Backup
    stmt = (sa.select(B.project_id, sa.func.count(), sa.func.sum(B.size))
            .where(B.deleted == sa.false()).group_by(B.project_id))
    if project_id is not None:
        stmt = stmt.where(B.project_id == project_id)
    for project, count, size in session.execute(stmt):
        totals = found.setdefault(project, {})
        for key, value in ((BACKUPS, (int(count), 0)),
                           (BACKUP_GIGABYTES, (int(size or 0), 0))):
            old = totals.get(key, (0, 0))
            totals[key] = (old[0] + value[0], old[1] + value[1])
    G = models.Group
    stmt = (sa.select(G.project_id, sa.func.count())
            .where(G.deleted == sa.false()).group_by(G.project_id))
    if project_id is not None:
        stmt = stmt.where(G.project_id == project_id)
    for project, count in session.execute(stmt):
        totals = found.setdefault(project, {})
        old = totals.get(GROUPS, (0, 0))
        totals[GROUPS] = (old[0] + int(count), old[1])
    return found


def recorded_projects(session, project_id=None):
    """project -> resource -> (in use, reserved), as recorded."""
    stmt = sa.select(U.project_id, U.resource, U.in_use, U.reserved)
    if project_id is not None:
        stmt = stmt.where(U.project_id == project_id)
    found = {}
    for row in session.execute(stmt):
        found.setdefault(row.project_id, {})[row.resource] = (
            row.in_use, row.reserved)
    return found


def set_usage(session, project_id, resource, in_use, reserved):
    """Overwrite one recorded usage (``quota sync``); the row is made
    when it is missing."""
    now = models.utcnow()
    _insert(session, U, [{'project_id': project_id, 'resource': resource,
                          'in_use': in_use, 'reserved': reserved,
                          'created_at': now, 'updated_at': now}],
            ['project_id', 'resource'],
            update=('in_use', 'reserved', 'updated_at'))


# -- limits ---------------------------------------------------------------
def limits(session, project_id):
    """(the project's own limits, the default class's), one query."""
    rows = session.execute(sa.union_all(
        sa.select(sa.literal('p').label('owner'), Q.resource, Q.hard_limit)
        .where(Q.project_id == project_id),
        sa.select(sa.literal('c').label('owner'), QC.resource,
                  QC.hard_limit).where(QC.class_name == 'default')))
    found = {'p': {}, 'c': {}}
    for owner, resource, limit in rows:
        found[owner][resource] = limit
    return found['p'], found['c']


def class_limits(session, class_name):
    return {r.resource: r.hard_limit for r in session.execute(
        sa.select(QC.resource, QC.hard_limit).where(
            QC.class_name == class_name))}


def _set_limits(session, model, owner, limits):
    """Upsert ``limits`` (resource -> limit) of one owner, ``owner`` being
    ``(column name, value)``."""
    now = models.utcnow()
    column, value = owner
    _insert(session, model, [{column: value, 'resource': r,
                               'hard_limit': v, 'created_at': now,
                               'updated_at': now}
                              for r, v in sorted(limits.items())],
            [column, 'resource'], update=('hard_limit', 'updated_at'))


def set_project_limits(session, project_id, limits):
    _set_limits(session, Q, ('project_id', project_id), limits)


def set_class_limits(session, class_name, limits):
    _set_limits(session, QC, ('class_name', class_name), limits)


def delete_project_limits(session, project_id):
    session.execute(sa.delete(Q).where(Q.project_id == project_id))


def forget_type(session, type_id):
    """Drop the (zero) usage and the limits of a type being deleted:
    usage first, as a quota update locks usage before limits; each table
    by the ids a plain read found (a locking scan of the table would wait
    on every project's locked rows)."""
    keys = [type_key(r, type_id) for r in ('volumes', 'gigabytes',
                                          'snapshots')]
    for model in (U, Q, QC):
        ids = session.execute(sa.select(model.id).where(
            model.resource.in_(keys))).scalars().all()
        if ids:
            session.execute(sa.delete(model).where(model.id.in_(ids)))
