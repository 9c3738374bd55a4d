"""SQL for group types, their group specs and their project access.

As volume types: soft-deleted (a deleted one's name becomes
``#deleted:<id>`` so the name is free again), lookups see live ones only,
and a group takes its type under the type's row lock (``lock_live``)
while a delete takes the same lock and refuses when a live group has it.
"""
import uuid

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cinder_lite.common import exception
from cinder_lite.db import models

GT = models.GroupType
GS = models.GroupTypeSpec
GP = models.GroupTypeProject


def _specs_of(session, type_ids):
    specs = {type_id: {} for type_id in type_ids}
    if not specs:
        return specs
    rows = session.execute(sa.select(GS.group_type_id, GS.key, GS.value)
                           .where(GS.group_type_id.in_(list(type_ids))))
    for type_id, key, value in rows:
        specs[type_id][key] = value
    return specs


def _view(gtype, specs):
    return {'id': gtype.id, 'name': gtype.name,
            'description': gtype.description,
            'is_public': gtype.is_public, 'group_specs': specs,
            'created_at': gtype.created_at, 'updated_at': gtype.updated_at}


def _visible(stmt, project_id):
    """Live types: public ones and the private ones ``project_id`` was
    given (every one when it is None)."""
    stmt = stmt.where(GT.deleted.is_(False))
    if project_id is None:
        return stmt
    access = sa.select(GP.group_type_id).where(GP.project_id == project_id)
    return stmt.where(sa.or_(GT.is_public.is_(True), GT.id.in_(access)))


def create(session, name, description=None, is_public=True,
           group_specs=None):
    gtype = GT(id=str(uuid.uuid4()), name=name, description=description,
               is_public=is_public, deleted=False)
    session.add(gtype)
    try:
        session.flush()
    except sa_exc.IntegrityError:
        raise exception.GroupTypeExists(id=name) from None
    for key, value in (group_specs or {}).items():
        session.add(GS(group_type_id=gtype.id, key=key, value=value))
    session.flush()
    return _view(gtype, dict(group_specs or {}))


def _row(session, type_id, project_id=None, lock=False):
    stmt = _visible(sa.select(GT).where(GT.id == type_id), project_id)
    if lock:
        stmt = stmt.with_for_update()
    gtype = session.execute(stmt.execution_options(
        populate_existing=True)).scalar_one_or_none()
    if gtype is None:
        raise exception.GroupTypeNotFound(group_type_id=type_id)
    return gtype


def get(session, type_id, project_id=None):
    gtype = _row(session, type_id, project_id)
    return _view(gtype, _specs_of(session, [gtype.id])[gtype.id])


def get_by_name_or_id(session, ident, project_id=None):
    try:
        return get(session, ident, project_id)
    except exception.GroupTypeNotFound:
        pass
    gtype = session.execute(_visible(sa.select(GT).where(GT.name == ident),
                                     project_id)).scalar_one_or_none()
    if gtype is None:
        raise exception.GroupTypeNotFoundByName(group_type_name=ident)
    return _view(gtype, _specs_of(session, [gtype.id])[gtype.id])


def lock_live(session, type_id):
    """The live type's row lock: a delete waits for the group being
    recorded with it (or has happened, and this is a 404)."""
    return _row(session, type_id, lock=True)


SORT_KEYS = ('id', 'name', 'description', 'is_public', 'created_at',
             'updated_at')


def list_types(session, project_id=None, is_public=None,
               sort_keys=('created_at',), sort_dirs=('asc',)):
    stmt = _visible(sa.select(GT), project_id)
    if is_public is not None:
        stmt = stmt.where(GT.is_public.is_(bool(is_public)))
    order = [getattr(GT, k).desc() if d == 'desc' else getattr(GT, k).asc()
             for k, d in zip(sort_keys, sort_dirs)]
    rows = session.execute(stmt.order_by(*order, GT.id)).scalars().all()
    specs = _specs_of(session, [r.id for r in rows])
    return [_view(r, specs[r.id]) for r in rows]


def update(session, type_id, values):
    gtype = _row(session, type_id, lock=True)
    for key, value in values.items():
        setattr(gtype, key, value)
    gtype.updated_at = models.utcnow()
    try:
        session.flush()
    except sa_exc.IntegrityError:
        raise exception.GroupTypeExists(id=values.get('name')) from None
    return _view(gtype, _specs_of(session, [gtype.id])[gtype.id])


def delete(session, type_id):
    """Soft-delete a type no live group has (GroupTypeInUse otherwise)."""
    gtype = _row(session, type_id, lock=True)
    G = models.Group
    in_use = session.execute(sa.select(G.id).where(
        G.group_type_id == type_id, G.deleted.is_(False)).limit(1)
    ).scalar_one_or_none()
    if in_use is not None:
        raise exception.GroupTypeInUse(group_type_id=type_id)
    now = models.utcnow()
    gtype.deleted, gtype.deleted_at, gtype.updated_at = True, now, now
    gtype.name = '#deleted:%s' % type_id
    session.execute(sa.delete(GS).where(GS.group_type_id == type_id))
    session.execute(sa.delete(GP).where(GP.group_type_id == type_id))


def set_specs(session, type_id, specs):
    """Create or update group specs (under the type's lock)."""
    _row(session, type_id, lock=True)
    existing = {r.key: r for r in session.execute(
        sa.select(GS).where(GS.group_type_id == type_id)).scalars()}
    for key, value in specs.items():
        if key in existing:
            existing[key].value = value
        else:
            session.add(GS(group_type_id=type_id, key=key, value=value))
    session.flush()
    return _specs_of(session, [type_id])[type_id]


def delete_spec(session, type_id, key):
    _row(session, type_id, lock=True)
    result = session.execute(sa.delete(GS).where(
        GS.group_type_id == type_id, GS.key == key))
    if result.rowcount != 1:
        raise exception.GroupTypeSpecsNotFound(group_type_id=type_id,
                                               group_specs_key=key)


def list_access(session, type_id):
    _row(session, type_id)
    return [r for (r,) in session.execute(
        sa.select(GP.project_id).where(GP.group_type_id == type_id)
        .order_by(GP.project_id))]


def add_access(session, type_id, project_id):
    _row(session, type_id, lock=True)
    session.add(GP(group_type_id=type_id, project_id=project_id))
    try:
        session.flush()
    except sa_exc.IntegrityError:
        raise exception.GroupTypeAccessExists(
            group_type_id=type_id, project_id=project_id) from None


def remove_access(session, type_id, project_id):
    _row(session, type_id, lock=True)
    result = session.execute(sa.delete(GP).where(
        GP.group_type_id == type_id, GP.project_id == project_id))
    if result.rowcount != 1:
        raise exception.GroupTypeAccessNotFound(group_type_id=type_id,
                                                project_id=project_id)
