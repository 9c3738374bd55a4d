"""SQL for the services table: registration, heartbeats, enable/disable."""
import datetime
import uuid

import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.db import models


def register(session, host, binary, topic, availability_zone, backend=None,
             rpc_version=None, cluster_name=None, capabilities=None):
    """Create the service row or refresh the existing one; returns it."""
    row = session.execute(sa.select(models.Service).where(
        models.Service.host == host,
        models.Service.binary == binary)).scalar_one_or_none()
    if row is None:
        row = models.Service(uuid=str(uuid.uuid4()), host=host,
                             binary=binary, topic=topic, report_count=0,
                             disabled=False)
        session.add(row)
    row.topic = topic
    row.backend = backend
    row.cluster_name = cluster_name
    if capabilities is not None:
        row.capabilities = capabilities
    row.availability_zone = availability_zone
    row.rpc_version = rpc_version
    row.heartbeat_at = models.utcnow()
    session.flush()
    return row


def heartbeat(session, service_id, capabilities=None):
    values = {'report_count': models.Service.report_count + 1,
              'heartbeat_at': models.utcnow()}
    if capabilities is not None:
        values['capabilities'] = capabilities
    session.execute(sa.update(models.Service)
                    .where(models.Service.id == service_id)
                    .values(**values)
                    .execution_options(synchronize_session=False))


def record_stopped(session, service_id):
    """A service that stopped cleanly: down from now (no heartbeat),
    until it starts and beats again."""
    session.execute(sa.update(models.Service)
                    .where(models.Service.id == service_id)
                    .values(heartbeat_at=None)
                    .execution_options(synchronize_session=False))


def list_services(session, host=None, binary=None):
    stmt = sa.select(models.Service).order_by(models.Service.binary,
                                              models.Service.host)
    if host is not None:
        stmt = stmt.where(models.Service.host == host)
    if binary is not None:
        stmt = stmt.where(models.Service.binary == binary)
    return session.execute(stmt).scalars().all()


def backend_members(session, backend, binary):
    """The services serving ``backend``: the members of cluster
    ``backend`` (``cluster@section``), or the service ``backend``
    (``node@section``) itself."""
    return session.execute(
        sa.select(models.Service).where(
            models.Service.binary == binary,
            sa.or_(models.Service.cluster_name == backend,
                   models.Service.host == backend))
        .order_by(models.Service.host)).scalars().all()


def get_by_host(session, host, binary):
    row = session.execute(sa.select(models.Service).where(
        models.Service.host == host,
        models.Service.binary == binary)).scalar_one_or_none()
    if row is None:
        raise exception.ServiceNotFound(host=host, binary=binary)
    return row


def set_disabled(session, host, binary, disabled, reason=None):
    result = session.execute(
        sa.update(models.Service)
        .where(models.Service.host == host, models.Service.binary == binary)
        .values(disabled=disabled, disabled_reason=reason,
                updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    if result.rowcount == 0:
        raise exception.ServiceNotFound(host=host, binary=binary)
    return get_by_host(session, host, binary)


def freshest(services):
    """The service of ``services`` with the latest heartbeat (of a
    cluster's members: the one whose report is newest, and up if any
    is)."""
    return max(services, key=lambda s: s.heartbeat_at or
               datetime.datetime.min)


def is_up(service, down_time):
    """A service is up while its last heartbeat is younger than
    ``down_time`` seconds."""
    if service.heartbeat_at is None:
        return False
    age = models.utcnow() - service.heartbeat_at
    return age <= datetime.timedelta(seconds=down_time)


def remove_if_down(session, service_id, down_time):
    """Delete the service row unless it sent a heartbeat within
    ``down_time`` seconds; the condition is in the DELETE, so a service
    that comes back meanwhile keeps its row.  True when the row went."""
    cutoff = models.utcnow() - datetime.timedelta(seconds=down_time)
    result = session.execute(
        sa.delete(models.Service)
        .where(models.Service.id == service_id,
               sa.or_(models.Service.heartbeat_at.is_(None),
                      models.Service.heartbeat_at < cutoff))
        .execution_options(synchronize_session=False))
    return result.rowcount == 1
