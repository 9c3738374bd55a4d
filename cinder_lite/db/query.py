"""Helpers shared by the per-entity query modules: keyset pagination,
and statements built once."""
import functools
import re

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from cinder_lite.common import exception
from cinder_lite.db import models

_BUILT = {}


def built(key, make):
    """The statement ``make()`` builds, built once per process under
    ``key`` (what varies is a bind parameter, given at execution).  A
    statement of the hot path built afresh each time costs more than its
    round trip: constructing the clauses and computing the key of
    SQLAlchemy's compiled cache, which a statement object memoizes."""
    stmt = _BUILT.get(key)
    if stmt is None:
        stmt = _BUILT.setdefault(key, make())
    return stmt


# what ``fixed`` writes into the SQL itself: words of letters, digits,
# '-' and '_' (statuses, modes, operations), which every database reads
# the same between single quotes
_PLAIN = re.compile(r'[A-Za-z0-9_-]*')


def fixed(value, type_=None):
    """The constant ``value`` in a statement built once (``built``):
    written into its SQL, not sent as a bind parameter, when it is a
    plain word (a status, a mode) or an int (not a bool).  A parameter is
    processed and sent (PyMySQL escapes it in Python) at every execution:
    the attach path's statements carry some sixty such constants a cycle
    (the statuses a lock allows, each status its EXISTS probes).  Any
    other value stays a bind parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return sa.literal(value, type_)
    if isinstance(value, int):
        return sa.literal_column(str(value), type_ or sa.Integer())
    if not _PLAIN.fullmatch(value):
        return sa.literal(value, type_)
    return sa.literal_column("'%s'" % value, type_ or sa.String())


def one_of(column, values):
    """``column IN values`` for a statement built once (``built``), the
    values (statuses, say) fixed in it (``fixed``).  ``in_`` of a list
    makes one "expanding" parameter instead, and SQLAlchemy writes the
    statement's SQL again at every execution to expand it (4 % of the
    API's CPU in an attach cycle)."""
    return column.in_([fixed(value, column.type) for value in values])


_COMPARISONS = {'gt': lambda c, v: c > v, 'gte': lambda c, v: c >= v,
                'eq': lambda c, v: c == v, 'neq': lambda c, v: c != v,
                'lt': lambda c, v: c < v, 'lte': lambda c, v: c <= v}


def compared(column, wanted):
    """Conditions on ``column`` for Cinder's time filters: ``wanted``
    maps an operator (``gt``, ``gte``, ``eq``, ``neq``, ``lt``, ``lte``)
    to a value; every condition must hold."""
    return [_COMPARISONS[op](column, value) for op, value in wanted.items()]


def lock_rows(session, model, *conditions):
    """The row locks of the live rows of ``model`` that ``conditions``
    select, taken by writing them: their ``lock_seq`` bumped (migration
    0025), ``updated_at`` left as it is.  Returns how many it found; the
    caller reads them after it (at READ COMMITTED the read sees what a
    transaction the lock waited for committed).

    A ``SELECT ... FOR UPDATE`` takes the same lock on one server, but a
    Galera cluster replicates no lock, and a transaction that only read
    the row it locked gives the cluster nothing of that row to certify:
    two writers on two nodes both pass a check made under it (a snapshot
    recorded for a volume another node marks deleting).  A row written
    is in the transaction's write set: of two transactions on two nodes
    that locked it so, the one that commits second fails certification
    with a deadlock (1213), and is run again (``db.api.run_writer``) or
    refused with nothing written."""
    result = session.execute(
        sa.update(model)
        .where(*conditions)
        .values(lock_seq=model.lock_seq + 1, updated_at=model.updated_at)
        .execution_options(synchronize_session=False))
    return result.rowcount


def is_mariadb(conn):
    """Whether ``conn`` talks to MariaDB (MySQL proper has no compound
    statement outside a stored program: ``compound``)."""
    return getattr(conn.dialect, 'is_mariadb', False)


# the statements ``compound`` joins are written for MariaDB with named
# parameters (":name"), the form a textual statement takes them in
_NAMED = mysql.dialect(paramstyle='named')
_NAMED.is_mariadb = True


def compound(*statements):
    """MariaDB: ``statements`` (Core statements that return no rows; a
    bind parameter named in two of them is one value) as one compound
    statement, ``BEGIN NOT ATOMIC ...; END``: one round trip, run inside
    the caller's transaction (a failure in any of them fails the whole,
    and the caller's transaction rolls back).  Its rowcount is the sum of
    theirs.  Built once (``built``): textual, its SQL is compiled once
    and cached as any statement's."""
    return _compound('BEGIN NOT ATOMIC %s; END' % '; '.join(
        ['{}'] * len(statements)), *statements).execution_options(
        preserve_rowcount=True)


def compound_read(*statements):
    """MariaDB: ``statements`` (Core statements) as one compound statement
    (``compound``), the last a SELECT run only when the one before it
    found one row: a lock (an UPDATE of the row a read waits for), or the
    INSERT of a change's event, which inserts one row when the change
    found its row.  Executed, it returns the read's rows, typed as its
    columns, when the statement before it found its row, and no result at
    all (``returns_rows`` false) when it did not.  The read is a
    statement of its own after the others, so after a lock it sees what
    the transaction the lock waited for committed."""
    *writes, read = statements
    return _compound('BEGIN NOT ATOMIC %s; IF ROW_COUNT() = 1 THEN {}; '
                     'END IF; END' % '; '.join(['{}'] * len(writes)),
                     *statements).columns(*read.selected_columns)


def _compound(template, *statements):
    parts, binds, filled = [], {}, {}
    for stmt in statements:
        compiled = stmt.compile(dialect=_NAMED)
        parts.append(str(compiled))
        for name, bind in compiled.binds.items():
            # a name two parts give: one value, so one meaning
            seen = binds.setdefault(name, bind)
            if (seen.value, seen.type._type_affinity) != (
                    bind.value, bind.type._type_affinity):
                raise TypeError('parameter %s of two meanings' % name)
        # a column's Python-side default (an UPDATE's updated_at): the
        # statement's execution computes it, a textual one does not, so
        # its parameter computes it itself
        defaults = dict(
            [(c.key, c.default) for c in compiled.insert_prefetch] +
            [(c.key, c.onupdate) for c in compiled.update_prefetch])
        if not set(defaults) <= set(compiled.binds):
            raise TypeError('defaults of %s not a parameter of their name'
                            % ', '.join(sorted(set(defaults) -
                                               set(compiled.binds))))
        filled.update(defaults)
    return sa.text(template.format(*parts)).bindparams(
        *[_filled(name, bind, filled[name]) if name in filled else
          sa.bindparam(name, value=bind.value, type_=bind.type,
                       required=bind.required)
          for name, bind in binds.items()])


def _filled(name, bind, default):
    if default.is_scalar:
        return sa.bindparam(name, value=default.arg, type_=bind.type)
    if default.is_callable:
        # (SQLAlchemy calls a column's default with the execution context,
        # which none of ours reads)
        return sa.bindparam(name, callable_=functools.partial(
            default.arg, None), type_=bind.type)
    raise TypeError('column default of %s computed by the database' % name)


def core(session):
    """The session's connection, for a Core statement that needs nothing
    of the ORM (no entities loaded, no identity map to keep in step):
    ``Session.execute`` would route it through the ORM's statement
    handling first."""
    return session.connection()


def paginate(stmt, model, sort_keys, sort_dirs, limit, marker_row):
    """Order ``stmt`` by ``sort_keys`` (plus ``id`` as tie-breaker) and keep
    the rows strictly after ``marker_row`` in that order.

    NULLs sort first on every database: a nullable key is ordered by
    ``(col IS NOT NULL, col)`` so MySQL, SQLite and PostgreSQL agree.  A
    key that cannot be NULL (``created_at``, ``id``, the default sort) is
    ordered by the column alone, so an index on the filter columns and the
    sort keys serves the page: the database reads ``limit`` rows from the
    marker on instead of sorting every row.
    """
    keys = list(sort_keys)
    dirs = list(sort_dirs)
    if 'id' not in keys:
        keys.append('id')
        dirs.append(dirs[0] if dirs else 'asc')
    columns = [getattr(model, k) for k in keys]
    order = []
    for col, direction in zip(columns, dirs):
        if _nullable(col):
            notnull = sa.case((col.is_(None), 0), else_=1)
            order.append(notnull.desc() if direction == 'desc'
                         else notnull.asc())
        order.append(col.desc() if direction == 'desc' else col.asc())
    stmt = stmt.order_by(*order)
    if marker_row is not None:
        stmt = stmt.where(_after(columns, dirs, marker_row, keys))
        first = getattr(marker_row, keys[0])
        if not _nullable(columns[0]):
            # implied by the condition above; said again as a plain range
            # on the leading key, which an index can seek to
            stmt = stmt.where(columns[0] <= first if dirs[0] == 'desc'
                              else columns[0] >= first)
    if limit is not None:
        stmt = stmt.limit(limit)
    return stmt


def _nullable(col):
    return col.property.columns[0].nullable


def _after(columns, dirs, marker_row, keys):
    """Rows after the marker: an OR over each prefix of equal keys."""
    clauses = []
    for i, (col, direction) in enumerate(zip(columns, dirs)):
        equal_prefix = [_equal(c, getattr(marker_row, k))
                        for c, k in zip(columns[:i], keys[:i])]
        clauses.append(sa.and_(*equal_prefix,
                               _beyond(col, direction,
                                       getattr(marker_row, keys[i]))))
    return sa.or_(*clauses)


def _equal(col, value):
    return col.is_(None) if value is None else col == value


def _beyond(col, direction, value):
    if not _nullable(col):
        return col < value if direction == 'desc' else col > value
    if direction == 'desc':
        # NULLs come last in descending order
        return sa.false() if value is None else sa.or_(col < value,
                                                       col.is_(None))
    return col.is_not(None) if value is None else col > value


def transition(session, model, machine, row_id, event, target, values,
               not_found):
    """Apply ``event`` of state machine ``machine`` to the live row
    ``row_id`` of ``model`` by compare-and-swap: to the event's target
    (the one named, for an event that leads to several) only from a
    status the event leads there from, with ``values`` set too.
    ``not_found()`` is raised when there is no such row, InvalidTransition
    when its status is another.  Returns the row as it was, locked, when
    the event ends it (``deleted``: the caller releases what it counted),
    else None."""
    target, allowed = machine.resolve(event, target)
    values = dict(values or {})
    values['status'] = target
    values['updated_at'] = models.utcnow()
    ended = None
    if target == 'deleted':
        values.update(deleted=True, deleted_at=values['updated_at'])
        ended = session.execute(
            sa.select(model).where(model.id == row_id,
                                   model.deleted.is_(False))
            .with_for_update()
            .execution_options(populate_existing=True)
        ).scalar_one_or_none()
    result = session.execute(
        sa.update(model)
        .where(model.id == row_id, model.deleted.is_(False),
               model.status.in_(allowed))
        .values(**values)
        .execution_options(synchronize_session=False))
    if result.rowcount != 1:
        current = session.execute(
            sa.select(model.status).where(model.id == row_id,
                                          model.deleted.is_(False))
        ).scalar_one_or_none()
        if current is None:
            raise not_found()
        raise exception.InvalidTransition(
            resource=machine.resource, id=row_id, target=target,
            actual=current, allowed=', '.join(allowed))
    return ended


def parse_sort(sort=None, sort_key=None, sort_dir=None, allowed=()):
    """Cinder's ``sort=k1:dir,k2`` or legacy ``sort_key``/``sort_dir``."""
    keys, dirs = [], []
    if sort:
        if sort_key or sort_dir:
            raise exception.InvalidInput(
                reason="The 'sort_key' and 'sort_dir' parameters are "
                       "deprecated and cannot be used with the 'sort' "
                       "parameter.")
        for part in sort.split(','):
            key, _, direction = part.strip().partition(':')
            keys.append(key.strip())
            dirs.append((direction or 'desc').strip().lower())
    else:
        keys.append(sort_key or 'created_at')
        dirs.append((sort_dir or 'desc').lower())
    for key, direction in zip(keys, dirs):
        if key not in allowed:
            raise exception.InvalidInput(reason='Invalid sort key: %s' % key)
        if direction not in ('asc', 'desc'):
            raise exception.InvalidInput(
                reason='Invalid sort direction: %s' % direction)
    return keys, dirs
