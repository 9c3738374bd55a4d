"""SQL for volume types, their extra specs and their project access.

Types are soft-deleted (volumes deleted long ago still point at theirs;
the row keeps its id, its name becomes ``deleted_name(id)``);
every lookup and listing here sees live types only, except ``names``,
which volume views use.  A type is deleted and a volume takes a type
inside one transaction each, and the type's row lock orders the two
(``lock_live`` / ``delete``), so a volume never gets a deleted type.
"""
import uuid

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cinder_lite.common import exception
from cinder_lite.db import models
from cinder_lite.db import query


def _specs_of(session, type_ids):
    rows = session.execute(
        sa.select(models.VolumeTypeExtraSpec.volume_type_id,
                  models.VolumeTypeExtraSpec.key,
                  models.VolumeTypeExtraSpec.value).where(
            models.VolumeTypeExtraSpec.volume_type_id.in_(list(type_ids))))
    specs = {type_id: {} for type_id in type_ids}
    for type_id, key, value in rows:
        specs[type_id][key] = value
    return specs


def spec(session, type_id, key):
    """One extra spec of a type (deleted or not), or None: one indexed
    read where a whole type would take two."""
    ES = models.VolumeTypeExtraSpec.__table__
    return query.core(session).execute(query.built('type_spec', lambda: (
        sa.select(ES.c.value).where(
            ES.c.volume_type_id == sa.bindparam('type_id'),
            ES.c.key == sa.bindparam('key')))),
        {'type_id': type_id, 'key': key}).scalar_one_or_none()


def _view(vtype, specs):
    return {'id': vtype.id, 'name': vtype.name,
            'description': vtype.description,
            'is_public': vtype.is_public,
            'qos_specs_id': vtype.qos_specs_id,
            'extra_specs': specs,
            'created_at': vtype.created_at, 'updated_at': vtype.updated_at}


def _to_dict(session, vtype):
    return _view(vtype, _specs_of(session, [vtype.id])[vtype.id])


def names(session, type_ids):
    """Type id -> name, for volume views."""
    if not type_ids:
        return {}
    rows = session.execute(sa.select(models.VolumeType.id,
                                     models.VolumeType.name).where(
        models.VolumeType.id.in_(list(type_ids))))
    return dict(rows.all())


def live_names(session):
    """id -> name of every type not deleted."""
    T = models.VolumeType
    return dict(session.execute(
        sa.select(T.id, T.name).where(T.deleted.is_(False))).all())


def _visible(stmt, project_id):
    """Live types: public ones, and private ones the project was given
    access to (all of them when ``project_id`` is None)."""
    stmt = stmt.where(models.VolumeType.deleted.is_(False))
    if project_id is None:
        return stmt
    access = sa.select(models.VolumeTypeProject.volume_type_id).where(
        models.VolumeTypeProject.project_id == project_id)
    return stmt.where(sa.or_(models.VolumeType.is_public.is_(True),
                             models.VolumeType.id.in_(access)))


def create(session, name, description=None, is_public=True,
           extra_specs=None):
    vtype = models.VolumeType(id=str(uuid.uuid4()), name=name,
                              description=description, is_public=is_public)
    session.add(vtype)
    try:
        session.flush()
    except sa_exc.IntegrityError:
        raise exception.VolumeTypeExists(name=name)
    for key, value in (extra_specs or {}).items():
        session.add(models.VolumeTypeExtraSpec(volume_type_id=vtype.id,
                                               key=key, value=value))
    session.flush()
    return _to_dict(session, vtype)


def _get_row(session, type_id, project_id=None, for_change=False):
    """The live type; ``for_change``: with its row lock, so that a delete
    running at the same moment either finishes first (and this finds
    nothing) or waits for this change."""
    stmt = _visible(sa.select(models.VolumeType).where(
        models.VolumeType.id == type_id), project_id)
    if for_change:
        stmt = stmt.with_for_update().execution_options(
            populate_existing=True)
    vtype = session.execute(stmt).scalar_one_or_none()
    if vtype is None:
        raise exception.VolumeTypeNotFound(type_id=type_id)
    return vtype


def lock_row(session, type_id):
    """The live type's row, locked for a change."""
    return _get_row(session, type_id, for_change=True)


def get(session, type_id, project_id=None):
    """A type by id; ``project_id`` limits it to types that project may
    use."""
    return _to_dict(session, _get_row(session, type_id, project_id))


def get_by_name(session, name, project_id=None):
    stmt = _visible(sa.select(models.VolumeType).where(
        models.VolumeType.name == name), project_id)
    vtype = session.execute(stmt).scalar_one_or_none()
    if vtype is None:
        raise exception.VolumeTypeNotFoundByName(name=name)
    return _to_dict(session, vtype)


def get_by_name_or_id(session, ident, project_id=None):
    try:
        return get(session, ident, project_id)
    except exception.VolumeTypeNotFound:
        try:
            return get_by_name(session, ident, project_id)
        except exception.VolumeTypeNotFoundByName:
            raise exception.VolumeTypeNotFound(type_id=ident)


def list_types(session, project_id=None, is_public=None, name=None,
               extra_specs=None):
    """``is_public``: True only public, False only private, None both;
    ``project_id`` hides private types the project has no access to;
    ``extra_specs``: only types with each of these key/value pairs."""
    stmt = _visible(sa.select(models.VolumeType), project_id)
    if is_public is not None:
        stmt = stmt.where(models.VolumeType.is_public.is_(is_public))
    if name is not None:
        stmt = stmt.where(models.VolumeType.name == name)
    ES = models.VolumeTypeExtraSpec
    for key, value in (extra_specs or {}).items():
        stmt = stmt.where(sa.exists().where(
            ES.volume_type_id == models.VolumeType.id, ES.key == key,
            ES.value == value))
    stmt = stmt.order_by(models.VolumeType.created_at,
                         models.VolumeType.name)
    types = session.execute(stmt).scalars().all()
    specs = _specs_of(session, [t.id for t in types])
    return [_view(t, specs[t.id]) for t in types]


def update(session, type_id, values):
    vtype = _get_row(session, type_id, for_change=True)
    for key, value in values.items():
        setattr(vtype, key, value)
    try:
        session.flush()
    except sa_exc.IntegrityError:
        raise exception.VolumeTypeExists(name=values.get('name'))
    return _to_dict(session, vtype)


# A deleted type's name: a prefix no live type may use, and its id, so the
# name is free again and never collides with another.
DELETED_PREFIX = '#deleted:'


def deleted_name(type_id):
    return DELETED_PREFIX + type_id


def lock_live(session, type_id):
    """Take a shared lock on a live type's row for the rest of the
    transaction, so that it cannot be deleted before a volume recorded
    with it commits; VolumeTypeNotFound when it is deleted (or being
    deleted: the lock waits for that transaction, and at READ COMMITTED
    the row is then read again).  SQLite's BEGIN IMMEDIATE serialises the
    two transactions anyway."""
    found = session.execute(
        sa.select(models.VolumeType.id)
        .where(models.VolumeType.id == type_id,
               models.VolumeType.deleted.is_(False))
        .with_for_update(read=True)).scalar_one_or_none()
    if found is None:
        raise exception.VolumeTypeNotFound(type_id=type_id)


def delete(session, type_id, in_use):
    """Mark a type deleted and free its name.  ``in_use(session)`` is
    asked after the row lock is taken: a volume create holding the type
    (``lock_live``) has committed by then and is seen, so either the
    create or the delete fails, never both or neither."""
    now = models.utcnow()
    result = session.execute(
        sa.update(models.VolumeType)
        .where(models.VolumeType.id == type_id,
               models.VolumeType.deleted.is_(False))
        .values(deleted=True, deleted_at=now, updated_at=now,
                name=deleted_name(type_id))
        .execution_options(synchronize_session=False))
    if result.rowcount != 1:
        raise exception.VolumeTypeNotFound(type_id=type_id)
    if in_use(session):
        raise exception.VolumeTypeInUse(type_id=type_id)


def set_extra_specs(session, type_id, specs):
    _get_row(session, type_id, for_change=True)
    for key, value in specs.items():
        row = session.execute(sa.select(models.VolumeTypeExtraSpec).where(
            models.VolumeTypeExtraSpec.volume_type_id == type_id,
            models.VolumeTypeExtraSpec.key == key)).scalar_one_or_none()
        if row is None:
            session.add(models.VolumeTypeExtraSpec(
                volume_type_id=type_id, key=key, value=value))
        else:
            row.value = value
    session.flush()
    return get(session, type_id)['extra_specs']


def delete_extra_spec(session, type_id, key):
    _get_row(session, type_id, for_change=True)
    result = session.execute(sa.delete(models.VolumeTypeExtraSpec).where(
        models.VolumeTypeExtraSpec.volume_type_id == type_id,
        models.VolumeTypeExtraSpec.key == key))
    if result.rowcount == 0:
        raise exception.ExtraSpecNotFound(type_id=type_id, key=key)


def list_access(session, type_id):
    _get_row(session, type_id)
    rows = session.execute(sa.select(models.VolumeTypeProject.project_id)
                           .where(models.VolumeTypeProject.volume_type_id
                                  == type_id)
                           .order_by(models.VolumeTypeProject.project_id))
    return [r[0] for r in rows]


def add_access(session, type_id, project_id):
    _get_row(session, type_id, for_change=True)
    session.add(models.VolumeTypeProject(volume_type_id=type_id,
                                         project_id=project_id))
    try:
        session.flush()
    except sa_exc.IntegrityError:
        raise exception.TypeAccessExists(type_id=type_id,
                                         project_id=project_id)


def remove_access(session, type_id, project_id):
    _get_row(session, type_id, for_change=True)
    result = session.execute(sa.delete(models.VolumeTypeProject).where(
        models.VolumeTypeProject.volume_type_id == type_id,
        models.VolumeTypeProject.project_id == project_id))
    if result.rowcount == 0:
        raise exception.TypeAccessNotFound(type_id=type_id,
                                           project_id=project_id)
