"""SQL for the services table: registration, heartbeats, enable/disable,
freeze/thaw, what the availability-zone and host listings read, and the
one definition of a service that is up (``is_up``, and ``up_clause``, the
same test in SQL)."""
import collections
import datetime
import uuid

import sqlalchemy as sa
from sqlalchemy.ext import compiler as sa_compiler
from sqlalchemy.sql import functions as sa_functions

from cinder_lite.common import exception
from cinder_lite.db import models
from cinder_lite.db import query


def register(session, host, binary, topic, availability_zone, backend=None,
             rpc_version=None, cluster_name=None, capabilities=None):
    """Create the service row or refresh the existing one; returns it.

    A new row is not up: the service's first heartbeat (``heartbeat``,
    with its capabilities) makes it so, once it consumes its queues.  An
    existing row keeps its last heartbeat: its queues outlive a crash."""
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


def liveness(session, binary):
    """(host, cluster_name, disabled, heartbeat_at, availability_zone) of
    every service of ``binary``: whether each is up, without the
    capabilities (a cloud of 10,000 backends reads this often)."""
    S = models.Service
    return session.execute(
        sa.select(S.host, S.cluster_name, S.disabled, S.heartbeat_at,
                  S.availability_zone)
        .where(S.binary == binary)).all()


# names per IN (...) list: a statement stays small however many backends
NAMES_PER_READ = 500


def capabilities_of(session, binary, names):
    """(host, cluster_name, heartbeat_at, capabilities) of the services of
    ``binary`` named ``names`` or serving a cluster of those names."""
    S = models.Service
    rows = []
    for i in range(0, len(names), NAMES_PER_READ):
        chunk = names[i:i + NAMES_PER_READ]
        rows.extend(session.execute(
            sa.select(S.host, S.cluster_name, S.heartbeat_at,
                      S.capabilities)
            .where(S.binary == binary,
                   sa.or_(S.host.in_(chunk), S.cluster_name.in_(chunk)))))
    return rows


def with_capabilities(session, binary):
    """(host, availability_zone, disabled, heartbeat_at, capabilities) of
    every service of ``binary``."""
    S = models.Service
    return session.execute(
        sa.select(S.host, S.availability_zone, S.disabled,
                  S.heartbeat_at, S.capabilities)
        .where(S.binary == binary)).all()


def any_enabled_and_up(session, hosts, binary, down_time):
    """Whether one of the services ``hosts`` of ``binary`` is enabled and
    up now: one indexed read."""
    S = models.Service
    return session.execute(
        sa.select(S.id).where(S.binary == binary, S.host.in_(hosts),
                              S.disabled == sa.false(),
                              up_clause(down_time)).limit(1)
    ).first() is not None


def list_services(session, host=None, binary=None):
    stmt = sa.select(models.Service).order_by(models.Service.binary,
                                              models.Service.host)
    if host is not None:
        # as Cinder: a host names its services and its backends
        # (``host@backend``, ``host@backend#pool``) too
        column = models.Service.host
        stmt = stmt.where(sa.or_(
            column == host,
            column.startswith(host + '@', autoescape=True),
            column.startswith(host + '#', autoescape=True)))
    if binary is not None:
        stmt = stmt.where(models.Service.binary == binary)
    return session.execute(stmt).scalars().all()


def backend_members(session, backend, binary):
    """The services serving ``backend``: the members of cluster
    ``backend`` (``cluster@section``), or the service ``backend``
    (``node@section``) itself."""
    return session.execute(
        sa.select(models.Service).where(
            _serving(models.Service.__table__, backend, binary))
        .order_by(models.Service.host)).scalars().all()


# A member of a backend as the attach path reads it (``backend_liveness``,
# or the join of ``backend_members_join``).
Member = collections.namedtuple(
    'Member', 'host heartbeat_at disabled capabilities')
# The service holding an attachment's export, as a detach reads it with
# the attachment (``db.attachments.get_to_detach``) to ask ``serves``.
ExportService = collections.namedtuple(
    'ExportService', 'host cluster_name heartbeat_at')


def _serving(services, backend, binary):
    """The condition on ``services`` (the table) of the services of
    ``binary`` serving ``backend`` (an expression): the members of
    cluster ``backend``, or the service ``backend`` itself."""
    return sa.and_(services.c.binary == binary,
                   sa.or_(services.c.cluster_name == backend,
                          services.c.host == backend))


class backend_of(sa_functions.FunctionElement):
    """SQL for ``volume.rpcapi.backend_host``: a volume's ``host``
    (``node@backend#pool``, or a cluster's ``cluster@backend#pool``) up to
    its ``#``, the name its backend's services answer to."""
    type = sa.String()
    inherit_cache = True
    name = 'backend_of'


@sa_compiler.compiles(backend_of)
def _backend_of(element, compiler, **kw):
    host = compiler.process(list(element.clauses)[0], **kw)
    return "substr(%s, 1, instr(%s || '#', '#') - 1)" % (host, host)


@sa_compiler.compiles(backend_of, 'mysql')
@sa_compiler.compiles(backend_of, 'mariadb')
def _backend_of_mysql(element, compiler, **kw):
    return "SUBSTRING_INDEX(%s, '#', 1)" % compiler.process(
        list(element.clauses)[0], **kw)


@sa_compiler.compiles(backend_of, 'postgresql')
def _backend_of_postgresql(element, compiler, **kw):
    return "split_part(%s, '#', 1)" % compiler.process(
        list(element.clauses)[0], **kw)


def backend_members_join(host, binary):
    """(The services table, the condition that joins the services of
    ``binary`` serving the backend of volume host ``host`` (a column) to
    it): ``backend_members`` for a statement that reads the volume."""
    S = models.Service.__table__
    return S, _serving(S, backend_of(host), binary)


def backend_liveness(session, backend, binary):
    """``backend_members`` as rows of (host, heartbeat_at, disabled,
    capabilities): what the attach path reads on every request, without
    loading whole services."""
    S = models.Service.__table__
    return query.core(session).execute(query.built(
        'backend_liveness', lambda: sa.select(
            S.c.host, S.c.heartbeat_at, S.c.disabled, S.c.capabilities)
        .where(_serving(S, sa.bindparam('backend'), sa.bindparam('binary')))
        .order_by(S.c.host)),
        {'backend': backend, 'binary': binary}).all()


def live_members(session, backend, binary, down_time, member=None,
                 members=None):
    """The services of ``backend`` (a service host, or a cluster's name)
    that are up (only ``member`` when given), as ``backend_liveness``
    rows; ServiceUnavailable, saying why, when none is.  ``members``:
    the backend's services (``Member``s), as this transaction read them
    already."""
    if members is None:
        members = backend_liveness(session, backend, binary)
    if member is not None:
        members = [m for m in members if m.host == member]
    who = member or backend
    if not members:
        raise exception.ServiceUnavailable(
            host=who, reason='no such volume service')
    live = [m for m in members if is_up(m.heartbeat_at, down_time)]
    if not live:
        raise exception.ServiceUnavailable(
            host=who, reason='%s heartbeat is older than %d s' % (
                'its' if len(members) == 1 else 'every member\'s',
                down_time))
    return live


def stand_in(session, backend, binary, down_time, export_host,
             members=None):
    """A live member of ``backend`` other than ``export_host`` that can
    act on the exports ``export_host`` made: one whose driver keeps them
    in the storage, where every member reaches them (capability
    ``cluster_exports``, e.g. RBD's keys and records in the pool); None
    when there is none.  ``members``: as ``live_members``'."""
    try:
        live = live_members(session, backend, binary, down_time,
                            members=members)
    except exception.ServiceUnavailable:
        return None
    able = sorted(m.host for m in live if m.host != export_host and
                  (m.capabilities or {}).get('cluster_exports'))
    return able[0] if able else None


def exports_server(session, backend, binary, down_time, export_host):
    """The volume service to ask to act on the exports ``export_host``
    (a member of ``backend``, or ``backend`` itself) made: ``export_host``
    while it is up, else its ``stand_in``; ServiceUnavailable naming
    ``export_host`` when neither answers."""
    members = backend_liveness(session, backend, binary)
    member = None if export_host == backend else export_host
    try:
        live_members(session, backend, binary, down_time, member=member,
                     members=members)
        return export_host
    except exception.ServiceUnavailable:
        host = member and stand_in(session, backend, binary, down_time,
                                   member, members=members)
        if not host:
            raise
        return host


def serves(service, backend, down_time):
    """``live_members``'s verdict on one member read elsewhere: whether
    ``service`` (with host, cluster_name and heartbeat_at; None: no such
    service) is a member of ``backend`` and up."""
    return (service is not None
            and backend in (service.cluster_name, service.host)
            and is_up(service.heartbeat_at, down_time))


def get_by_host(session, host, binary):
    row = session.execute(sa.select(models.Service).where(
        models.Service.host == host,
        models.Service.binary == binary)).scalar_one_or_none()
    if row is None:
        raise exception.ServiceNotFound(host=host, binary=binary)
    return row


def set_disabled(session, host, binary, disabled, reason=None):
    if not disabled and session.execute(sa.select(models.Service.id).where(
            models.Service.host == host, models.Service.binary == binary,
            models.Service.frozen == sa.true())).first() is not None:
        # a frozen service is disabled until it is thawed (Cinder's
        # scheduler skips frozen services whatever their flag; here the
        # flag is the one thing schedulers read)
        raise exception.InvalidInput(
            reason='Service %s on host %s is frozen: thaw it '
                   '(os-services/thaw) to enable it.' % (binary, host))
    result = session.execute(
        sa.update(models.Service)
        .where(models.Service.host == host, models.Service.binary == binary)
        .values(disabled=disabled, disabled_reason=reason,
                updated_at=models.utcnow())
        .execution_options(synchronize_session=False))
    if result.rowcount == 0:
        raise exception.ServiceNotFound(host=host, binary=binary)
    return get_by_host(session, host, binary)


def _host_matches(column, value):
    """Cinder's host matching: ``node`` names every backend of the node
    (``node``, ``node@…``, ``node#…``), ``node@section`` the backend and
    its pools, ``node@section#pool`` that pool only."""
    conditions = [column == value]
    if '#' not in value:
        conditions.append(column.startswith(value + '#', autoescape=True))
        if '@' not in value:
            conditions.append(column.startswith(value + '@',
                                                autoescape=True))
    return sa.or_(*conditions)


def set_frozen(session, host, cluster_name, frozen, binary):
    """Freeze (or thaw) one volume backend: the services ``host`` names,
    or the members of cluster ``cluster_name``; a service in a cluster
    takes its whole cluster along, as in Cinder.  A frozen service is
    also disabled (reason ``frozen``); a thawed one enabled.  Returns the
    hosts changed.  InvalidInput when none matches, when ``host`` names
    several backends, or when they are all frozen (thawed) already."""
    S = models.Service
    where = [S.binary == binary]
    if host:
        where.append(_host_matches(S.host, host))
    else:
        where.append(_host_matches(S.cluster_name, cluster_name))
    rows = session.execute(sa.select(S).where(*where)
                           .order_by(S.host)).scalars().all()
    if not rows:
        raise exception.InvalidInput(
            reason='No service found with %s=%s' % (
                ('host', host) if host else ('cluster', cluster_name)))
    if len({r.host if host else r.cluster_name for r in rows}) > 1:
        raise exception.InvalidInput(
            reason='Services from different clusters found: %s names %s.'
                   % (host or cluster_name,
                      ', '.join(sorted({r.host for r in rows}))))
    cluster = rows[0].cluster_name
    if host and cluster:
        rows = backend_members(session, cluster, binary)
    ids = [r.id for r in rows]
    values = {'frozen': frozen, 'disabled': frozen,
              'disabled_reason': 'frozen' if frozen else None,
              'updated_at': models.utcnow()}
    # compare-and-swap: a concurrent freeze of the same backend changes
    # each row once
    changed = session.execute(
        sa.update(S).where(S.id.in_(ids), S.frozen == (not frozen))
        .values(**values).execution_options(synchronize_session=False)
    ).rowcount
    if not changed:
        raise exception.InvalidInput(
            reason='No service could be changed: frozen of %s must be %s '
                   '(it is %s already).' % (
                       ', '.join(r.host for r in rows), not frozen,
                       'frozen' if frozen else 'thawed'))
    return [r.host for r in rows]


def backend_frozen(session, backend, binary):
    """Whether ``backend`` (``node@section`` or a cluster's
    ``cluster@section``) is frozen: a volume there is not deleted."""
    S = models.Service
    return session.execute(sa.select(S.id).where(
        S.binary == binary, S.frozen == sa.true(),
        sa.or_(S.cluster_name == backend, S.host == backend)).limit(1)
    ).first() is not None


def availability_zones(session, binary):
    """Zone -> whether any service of ``binary`` there is enabled."""
    zones = {}
    for zone, disabled in session.execute(
            sa.select(models.Service.availability_zone,
                      models.Service.disabled)
            .where(models.Service.binary == binary)
            .order_by(models.Service.availability_zone)):
        zones[zone] = zones.get(zone, False) or not disabled
    return zones


def enabled_services(session, zone=None):
    """The enabled services of every binary (of ``zone``), for
    os-hosts."""
    S = models.Service
    stmt = sa.select(S).where(S.disabled == sa.false()).order_by(S.binary,
                                                                 S.host)
    if zone:
        stmt = stmt.where(S.availability_zone == zone)
    return session.execute(stmt).scalars().all()


def freshest(services):
    """The service of ``services`` with the latest heartbeat (of a
    cluster's members: the one whose report is newest, and up if any
    is)."""
    return max(services, key=lambda s: s.heartbeat_at or
               datetime.datetime.min)


def up_cutoff(down_time, now=None):
    """The oldest heartbeat of a service that is up at ``now`` (default:
    the clock): ``is_up`` against one cutoff, for a caller that asks it
    of many services at once."""
    now = models.utcnow() if now is None else now
    return now - datetime.timedelta(seconds=down_time)


def is_up(heard_at, down_time, now=None):
    """What "up" means, everywhere: a service is up while the last time
    it was heard of (its heartbeat; for the scheduler, the newer of a
    backend's report and its heartbeat) is at most ``down_time`` seconds
    before ``now`` (default: the clock), that is, not older than
    ``up_cutoff``.  ``up_clause`` is the same test in SQL; whether a
    service is disabled is a separate question."""
    return heard_at is not None and heard_at >= up_cutoff(down_time, now)


def up_clause(down_time, now=None):
    """``is_up`` of a services row, in SQL."""
    return sa.and_(models.Service.heartbeat_at.isnot(None),
                   models.Service.heartbeat_at >= up_cutoff(down_time, now))


def remove_if_down(session, service_id, down_time):
    """Delete the service row unless it sent a heartbeat within
    ``down_time`` seconds; the condition is in the DELETE, so a service
    that comes back meanwhile keeps its row.  True when the row went."""
    result = session.execute(
        sa.delete(models.Service)
        .where(models.Service.id == service_id,
               sa.not_(up_clause(down_time)))
        .execution_options(synchronize_session=False))
    return result.rowcount == 1


def check_backend_up(session, backend, binary, down_time):
    """ServiceUnavailable (503, at once) when no service of ``backend``
    (``node@backend`` or a cluster's) is up, BackendFrozen when it is
    frozen: a request cast to it would wait for nobody."""
    members = backend_members(session, backend, binary)
    if not any(is_up(m.heartbeat_at, down_time) for m in members):
        raise exception.ServiceUnavailable(
            host=backend, reason='no volume service of it is up')
    if backend_frozen(session, backend, binary):
        raise exception.BackendFrozen(backend=backend)


def check_any_up(session, binary, down_time, what):
    """ServiceUnavailable (503) unless a service of ``binary`` is enabled
    and up: work cast to its topic would wait for nobody."""
    for row in liveness(session, binary):
        if not row.disabled and is_up(row.heartbeat_at, down_time):
            return
    raise exception.ServiceUnavailable(
        host=binary, reason='no %s is enabled and up' % what)
