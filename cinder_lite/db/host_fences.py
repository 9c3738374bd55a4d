"""SQL for host fences (``host_fences``): the durable mark that a consumer
host is cut off a volume.  Marks are added and ended inside the
transaction that holds the volume's row lock
(``db.attachments.lock_volume``), as every attachment change is, so a
connect and a fence of one volume happen one after the other."""
from oslo_context import context as o_context
import sqlalchemy as sa

from cinder_lite.db import models
from cinder_lite.db import query

F = models.HostFence


def _live(stmt):
    return stmt.where(F.deleted == sa.false())


def is_fenced(session, host, volume_id):
    """Whether consumer ``host`` is fenced off ``volume_id``."""
    if not host:
        return False
    return bool(query.core(session).execute(query.built(
        'is_fenced', lambda: sa.select(fenced(sa.bindparam('volume_id'),
                                              sa.bindparam('host')))),
        {'volume_id': volume_id, 'host': host}).scalar_one())


def fenced(volume_id, host):
    """The SQL of ``is_fenced`` (an EXISTS) for the given column or bind
    parameter expressions, for a statement that asks it of its rows."""
    FT = F.__table__
    return sa.exists().where(FT.c.volume_id == volume_id,
                             FT.c.host == host, FT.c.deleted == sa.false())


def fence(session, host, volume, reason):
    """Mark ``host`` fenced off ``volume`` (a Volume row, locked by the
    caller); returns (mark, created): an existing live mark is kept as
    it is."""
    current = session.execute(_live(sa.select(F).where(
        F.volume_id == volume.id, F.host == host))).scalars().first()
    if current is not None:
        return current, False
    actor = o_context.get_current()
    mark = F(host=host, volume_id=volume.id, project_id=volume.project_id,
             reason=(reason or '')[:1024] or None,
             fenced_by=getattr(actor, 'user_id', None),
             request_id=getattr(actor, 'request_id', None), deleted=False)
    session.add(mark)
    session.flush()
    return mark, True


def unfence(session, host, volume_id, reason):
    """End the live marks of ``host`` on ``volume_id`` (the caller holds
    the volume's lock); returns how many there were."""
    actor = o_context.get_current()
    return session.execute(
        _live(sa.update(F).where(F.volume_id == volume_id, F.host == host))
        .values(deleted=True, deleted_at=models.utcnow(),
                updated_at=models.utcnow(),
                unfenced_by=getattr(actor, 'user_id', None),
                unfence_reason=(reason or '')[:1024] or None)
        .execution_options(synchronize_session=False)).rowcount


def live(session, host=None, volume_ids=None, limit=1000):
    """Live marks, oldest first; of ``host`` and of ``volume_ids`` when
    given."""
    stmt = _live(sa.select(F)).order_by(F.id)
    if host is not None:
        stmt = stmt.where(F.host == host)
    if volume_ids is not None:
        stmt = stmt.where(F.volume_id.in_(list(volume_ids)))
    return session.execute(stmt.limit(limit)).scalars().all()


def history(session, host, volume_id):
    """Every mark, live or ended, of ``host`` on ``volume_id``."""
    return session.execute(sa.select(F).where(
        F.volume_id == volume_id, F.host == host).order_by(F.id)
    ).scalars().all()
