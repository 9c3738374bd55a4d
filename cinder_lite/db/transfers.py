"""SQL for volume transfers.

A transfer is live until it is accepted or deleted; either ends it by a
compare-and-swap on ``deleted``, so of two requests ending one transfer
exactly one succeeds.  The volume's own status (``awaiting-transfer``
while it is offered) and its owner change in the same transaction, in
``cinder_lite.db.volumes``.
"""
import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.db import models
from cinder_lite.db import query

T = models.Transfer

SORT_KEYS = ('id', 'name', 'volume_id', 'created_at', 'updated_at')
FILTERS = ('id', 'name', 'volume_id')


def _live(stmt):
    return stmt.where(T.deleted == sa.false()).execution_options(
        populate_existing=True)


def create(session, values):
    transfer = T(**values)
    session.add(transfer)
    session.flush()
    return transfer


def get(session, transfer_id, project_id=None):
    """A live transfer; ``project_id``: only one that project offers."""
    stmt = _live(sa.select(T).where(T.id == transfer_id))
    if project_id is not None:
        stmt = stmt.where(T.source_project_id == project_id)
    transfer = session.execute(stmt).scalar_one_or_none()
    if transfer is None:
        raise exception.TransferNotFound(transfer_id=transfer_id)
    return transfer


def list_transfers(session, project_id=None, filters=None,
                   sort_keys=('created_at',), sort_dirs=('asc',),
                   limit=None, marker=None):
    """Live transfers (those ``project_id`` offers, or all), a keyset
    page after ``marker``."""
    stmt = _live(sa.select(T))
    if project_id is not None:
        stmt = stmt.where(T.source_project_id == project_id)
    for key, value in (filters or {}).items():
        stmt = stmt.where(getattr(T, key) == value)
    marker_row = None
    if marker is not None:
        marker_row = session.execute(_live(sa.select(T).where(
            T.id == marker))).scalar_one_or_none()
        if marker_row is None:
            raise exception.InvalidInput(
                reason='Marker %s could not be found.' % marker)
    stmt = query.paginate(stmt, T, sort_keys, sort_dirs, limit, marker_row)
    return session.execute(stmt).scalars().all()


def end(session, transfer_id, accepted, destination_project_id=None):
    """End a live transfer (accepted by ``destination_project_id``, or
    deleted); TransferNotFound when it has ended already."""
    now = models.utcnow()
    values = {'deleted': True, 'deleted_at': now, 'updated_at': now,
              'accepted': accepted}
    if accepted:
        values['destination_project_id'] = destination_project_id
    result = session.execute(
        sa.update(T).where(T.id == transfer_id, T.deleted == sa.false())
        .values(**values).execution_options(synchronize_session=False))
    if result.rowcount != 1:
        raise exception.TransferNotFound(transfer_id=transfer_id)


def end_for_volume(session, volume_id, keep=None):
    """End the live transfers of a volume (but ``keep``): it changed
    hands, or it is being deleted.  A volume that changed hands has
    another live transfer only if an operator reset its status while it
    was offered, and the owner offered it again."""
    now = models.utcnow()
    stmt = sa.update(T).where(T.volume_id == volume_id,
                              T.deleted == sa.false())
    if keep is not None:
        stmt = stmt.where(T.id != keep)
    return session.execute(
        stmt.values(deleted=True, deleted_at=now, updated_at=now)
        .execution_options(synchronize_session=False)).rowcount
