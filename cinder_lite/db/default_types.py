"""SQL for the default volume type of each project (3.62)."""
import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.db import models

DT = models.ProjectDefaultType


def _view(row):
    return {'project_id': row.project_id,
            'volume_type_id': row.volume_type_id}


def set_default(session, project_id, type_id):
    """Make ``type_id`` (a live type, locked by the caller) the default
    of ``project_id``, replacing any other."""
    row = session.execute(sa.select(DT).where(
        DT.project_id == project_id).with_for_update()).scalar_one_or_none()
    if row is None:
        row = DT(project_id=project_id, volume_type_id=type_id)
        session.add(row)
    else:
        row.volume_type_id = type_id
    session.flush()
    return _view(row)


def get(session, project_id):
    """The project's default, or None."""
    row = session.execute(sa.select(DT).where(
        DT.project_id == project_id)).scalar_one_or_none()
    return None if row is None else _view(row)


def type_id_of(session, project_id):
    """The id of the project's default type, or None."""
    return session.execute(sa.select(DT.volume_type_id).where(
        DT.project_id == project_id)).scalar_one_or_none()


def list_all(session):
    rows = session.execute(sa.select(DT).order_by(DT.project_id)).scalars()
    return [_view(r) for r in rows]


def unset(session, project_id):
    """Forget the project's default; nothing when it has none (Cinder's
    unset answers 204 either way)."""
    session.execute(sa.delete(DT).where(DT.project_id == project_id))


def projects_of(session, type_id):
    """The projects whose default is ``type_id``."""
    return [r[0] for r in session.execute(
        sa.select(DT.project_id).where(DT.volume_type_id == type_id)
        .order_by(DT.project_id))]


def check_not_default(session, type_id):
    """Raise when a project has ``type_id`` as its default: asked by a
    type delete after it took the type's row lock, and a set takes the
    same lock first, so a default is never left on a deleted type."""
    projects = projects_of(session, type_id)
    if projects:
        raise exception.VolumeTypeDefaultDeletion(type_id=type_id)
