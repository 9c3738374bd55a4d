"""SQL for user messages (asynchronous failures reported to users)."""
import datetime
import uuid

import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.db import models
from cinder_lite.db import query


# how long a message is kept at least (Cinder's ``message_ttl``
# default); the API shows the moment as ``guaranteed_until``
KEPT_FOR = datetime.timedelta(days=30)


def create(session, project_id, event_id, detail, resource_type=None,
           resource_uuid=None, request_id=None, level='ERROR'):
    """``request_id``: the request that failed; a message no request
    caused (a service's own reconciliation) gets a request id of its own,
    as every Cinder message has one."""
    now = models.utcnow()
    msg = models.Message(id=str(uuid.uuid4()), project_id=project_id,
                         event_id=event_id, detail=detail[:1024],
                         resource_type=resource_type,
                         resource_uuid=resource_uuid,
                         request_id=request_id or 'req-%s' % uuid.uuid4(),
                         message_level=level, created_at=now,
                         expires_at=now + KEPT_FOR)
    session.add(msg)
    session.flush()
    return msg


# what a list may be sorted by (3.5)
SORT_KEYS = ('created_at', 'id', 'event_id', 'message_level',
             'resource_type', 'resource_uuid', 'request_id', 'expires_at')


def list_messages(session, project_id=None, filters=None, sort_keys=None,
                  sort_dirs=None, limit=None, marker=None, offset=None):
    """``filters``: column -> value (resource_uuid, resource_type,
    event_id, request_id, message_level).  Without ``sort_keys`` the
    oldest come first, as before paging (3.5) existed; ``marker`` is a
    message id the caller may see (MarkerNotFound otherwise)."""
    M = models.Message
    stmt = sa.select(M)
    if project_id is not None:
        stmt = stmt.where(M.project_id == project_id)
    for key, value in (filters or {}).items():
        stmt = stmt.where(getattr(M, key) == value)
    marker_row = None
    if marker is not None:
        marker_stmt = sa.select(M).where(M.id == marker)
        if project_id is not None:
            marker_stmt = marker_stmt.where(M.project_id == project_id)
        marker_row = session.execute(marker_stmt).scalar_one_or_none()
        if marker_row is None:
            raise exception.MarkerNotFound(marker=marker)
    stmt = query.paginate(stmt, M, sort_keys or ('created_at',),
                          sort_dirs or ('asc',), limit, marker_row)
    if offset:
        stmt = stmt.offset(offset)
    return session.execute(stmt).scalars().all()


def get(session, message_id, project_id=None):
    stmt = sa.select(models.Message).where(models.Message.id == message_id)
    if project_id is not None:
        stmt = stmt.where(models.Message.project_id == project_id)
    msg = session.execute(stmt).scalar_one_or_none()
    if msg is None:
        raise exception.MessageNotFound(message_id=message_id)
    return msg


def delete(session, message_id, project_id=None):
    get(session, message_id, project_id)
    session.execute(sa.delete(models.Message).where(
        models.Message.id == message_id))
