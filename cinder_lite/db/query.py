"""Helpers shared by the per-entity query modules: keyset pagination."""
import sqlalchemy as sa

from cinder_lite.common import exception


def paginate(stmt, model, sort_keys, sort_dirs, limit, marker_row):
    """Order ``stmt`` by ``sort_keys`` (plus ``id`` as tie-breaker) and keep
    the rows strictly after ``marker_row`` in that order.

    NULLs sort first on every database: each key is ordered by
    ``(col IS NOT NULL, col)`` so MySQL, SQLite and PostgreSQL agree.
    """
    keys = list(sort_keys)
    dirs = list(sort_dirs)
    if 'id' not in keys:
        keys.append('id')
        dirs.append(dirs[0] if dirs else 'asc')
    columns = [getattr(model, k) for k in keys]
    order = []
    for col, direction in zip(columns, dirs):
        notnull = sa.case((col.is_(None), 0), else_=1)
        if direction == 'desc':
            order.extend([notnull.desc(), col.desc()])
        else:
            order.extend([notnull.asc(), col.asc()])
    stmt = stmt.order_by(*order)
    if marker_row is not None:
        stmt = stmt.where(_after(columns, dirs, marker_row, keys))
    if limit is not None:
        stmt = stmt.limit(limit)
    return stmt


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
    if direction == 'desc':
        # NULLs come last in descending order
        return sa.false() if value is None else sa.or_(col < value,
                                                       col.is_(None))
    return col.is_not(None) if value is None else col > value


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
