"""Admission of a new volume: the availability zone it goes to, and a
503 while no volume service of that zone is up or has reported.

The scheduler places a volume after the API has answered (the create is a
cast), so the API cannot ask it.  What the API can know before it records
the volume is whether the zone has live, enabled backends at all
(refused at once: a client retries later) and whether one of them reports
the capabilities the type requires and is large enough.  A request none
can hold is recorded all the same, as Cinder records it: the scheduler
then fails it (``error`` and a user message saying why), so a client
sees one behaviour whichever part of placement refuses.  This chooses
no backend; placement is the scheduler's.  It matches types
as the scheduler does (``cinder_lite.common.capabilities``) and reads the
services table through ``cinder_lite.db.services``.
"""
import logging
import threading
import time

from cinder_lite.common import capabilities
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.db import api as db_api
from cinder_lite.db import services as db_services

LOG = logging.getLogger(__name__)


class _Backend:
    __slots__ = ('host', 'availability_zone', 'disabled', 'heartbeat_at',
                 'capabilities', 'limit')

    def __init__(self, row):
        self.host = row.host
        self.availability_zone = row.availability_zone
        self.disabled = row.disabled
        self.heartbeat_at = row.heartbeat_at
        self.capabilities = row.capabilities
        self.limit = capabilities.capacity_limit(row.capabilities or {})


class ServicesView:
    """The volume services as ``check_backends`` needs them, read from the
    services table at most every ``report_interval`` seconds (a cloud of
    10,000 backends made every create read 10,000 rows).  A request that
    finds the copy older than that answers from it and has it read again
    in the background (the read costs about 250 ms at 10,000 backends,
    which no create waits for).  Backends that report the same
    capabilities but for capacity and name form one group, matched
    against a type once.  A refusal is never made on a copy (the table
    is read again first), and an acceptance is confirmed by the rows of a
    few of the backends it counted on."""

    def __init__(self):
        self._lock = threading.Lock()
        self._read_at = None
        self._engine = None
        self._copy = None
        self._refreshing = False

    def snapshot(self, session, conf, fresh=False):
        """(groups, by name, freshest heartbeat of each zone)."""
        # (a process that configured another database meanwhile)
        engine = db_api.get_engine()
        with self._lock:
            current = (self._read_at is not None
                       and self._engine is engine)
            if current and not fresh:
                old = time.monotonic() - self._read_at > \
                    conf.report_interval
                if old and not self._refreshing:
                    self._refreshing = True
                    threading.Thread(target=self._refresh, args=(engine,),
                                     name='services-view',
                                     daemon=True).start()
                return self._copy
        # read outside the lock: requests that need the table read it side
        # by side, none waits behind another's read
        return self._read(session, engine)

    def _refresh(self, engine):
        try:
            with db_api.reader() as session:
                self._read(session, engine)
        except Exception:
            # the next request that finds the copy old tries again
            LOG.exception('reading the volume services for the API failed')
        finally:
            with self._lock:
                self._refreshing = False

    def _read(self, session, engine):
        read_at = time.monotonic()
        copy = copy_of(db_services.with_capabilities(
            session, constants.VOLUME_BINARY))
        with self._lock:
            # a read that began before another one ended keeps the newer
            if self._engine is not engine or self._read_at is None or \
                    read_at >= self._read_at:
                self._copy, self._read_at = copy, read_at
                self._engine = engine
        return copy


SERVICES = ServicesView()


def copy_of(rows):
    """(groups, by name, freshest heartbeat of each zone) of services rows
    (host, availability_zone, disabled, heartbeat_at, capabilities): what
    ``ServicesView`` keeps, each list of backends the largest first."""
    groups, named, zones = {}, {}, {}
    for row in rows:
        backend = _Backend(row)
        caps = backend.capabilities or {}
        zone = backend.availability_zone
        key = (zone, capabilities.signature(caps))
        groups.setdefault(key, []).append(backend)
        named.setdefault(str(caps.get(capabilities.NAME_KEY)),
                         []).append(backend)
        heard = backend.heartbeat_at
        if not backend.disabled and heard is not None and (
                zone not in zones or heard > zones[zone]):
            zones[zone] = heard
    for members in (*groups.values(), *named.values()):
        # (``admit`` walks each from its largest)
        members.sort(key=_largest_first)
    return groups, named, zones


def check_backends(session, request, volume_type, conf):
    """The AZ of the new volume; InvalidInput (an unknown zone) or
    ServiceUnavailable (none of its services up or reported yet) refuse
    it at once.  A volume no live backend can hold is admitted: the
    scheduler fails it with a user message, as Cinder's."""
    try:
        try:
            az, able = _check_backends(session, request, volume_type,
                                       conf, False)
        except (exception.InvalidInput, exception.ServiceUnavailable,
                exception.NoValidBackend):
            # the copy may be older than a service that just came up
            return _check_backends(session, request, volume_type, conf,
                                   True)[0]
        if _still_up(session, able, conf):
            return az
        # the copy is older than an outage or a disable: the table decides
        return _check_backends(session, request, volume_type, conf,
                               True)[0]
    except exception.NoValidBackend:
        return _zone(request, conf)


def _zone(request, conf):
    return (request.get('availability_zone')
            or conf.default_availability_zone
            or conf.storage_availability_zone)


CONFIRM_AT_MOST = 20


def _still_up(session, backends, conf):
    """Whether one of (the first few of) ``backends`` is up and enabled
    by the table now, not only by the copy: one indexed read."""
    hosts = [b.host for b in backends[:CONFIRM_AT_MOST]]
    return db_services.any_enabled_and_up(session, hosts,
                                          constants.VOLUME_BINARY,
                                          conf.service_down_time)


def _capable(groups, named, az, specs):
    """The backends of ``az`` whose capabilities satisfy ``specs``, as
    lists each in the order of their ``limit``, the largest first (the
    copy's lists are, ``copy_of``)."""
    required = capabilities.capability_requirements(specs)
    name = capabilities.pinned_name(required)
    if name is not None:
        # only the backends of that name can match
        pools = [[b for b in named.get(name, ())
                  if b.availability_zone == az]]
    elif capabilities.PER_BACKEND_KEYS.intersection(required):
        # capacity or name: each backend answers for itself
        pools = [members for (zone, _), members in groups.items()
                 if zone == az]
    else:
        # the members of a group answer alike
        return [members for (zone, _), members in groups.items()
                if zone == az and capabilities.satisfies(
                    members[0].capabilities or {}, specs)]
    return [[b for b in pool
             if capabilities.satisfies(b.capabilities or {}, specs)]
            for pool in pools]


def _largest_first(backend):
    return -backend.limit


def _check_backends(session, request, volume_type, conf, fresh):
    # one cutoff for every backend (10,000 of them, each create)
    return admit(SERVICES.snapshot(session, conf, fresh), request,
                 volume_type, conf,
                 db_services.up_cutoff(conf.service_down_time))


def admit(copy, request, volume_type, conf, cutoff):
    """(the zone, a few of the backends that can hold it) of a create of
    ``request`` of ``volume_type`` by ``copy`` (``copy_of``), a backend
    being up while it has reported since ``cutoff``; refuses as
    ``check_backends`` says."""
    groups, named, freshest = copy
    az = _zone(request, conf)

    def up(b):
        return not b.disabled and b.heartbeat_at is not None and \
            b.heartbeat_at >= cutoff
    # a zone is up while its freshest enabled backend is
    zones = {zone for zone, heard in freshest.items() if heard >= cutoff}
    if request.get('availability_zone') and az not in zones:
        raise exception.InvalidInput(
            reason="Availability zone '%s' is invalid." % az)
    if az not in zones:
        # transient (services restarting, heartbeats late): retry later
        raise exception.ServiceUnavailable(
            host=constants.VOLUME_BINARY,
            reason='no volume service in availability zone %s has '
                   'reported within service_down_time; retry later' % az)
    # the up backends large enough, at most as many as are confirmed,
    # found without walking every capable backend (a third of 10,000
    # for a multiattach type, each create): each list is walked from its
    # largest down to the first too small
    able, largest = [], None
    for members in _capable(groups, named, az, volume_type['extra_specs']):
        for b in members:
            if not up(b):
                continue
            if largest is None or b.limit > largest:
                largest = b.limit
            if b.limit < request['size']:
                break
            able.append(b)
            if len(able) == CONFIRM_AT_MOST:
                break
        if len(able) == CONFIRM_AT_MOST:
            break
    if largest is None:
        silent = sorted(b.host for (zone, _), members in groups.items()
                        if zone == az for b in members
                        if up(b) and not b.capabilities)
        if silent:
            # up, but its first report is not in yet: it may hold this
            raise exception.ServiceUnavailable(
                host=', '.join(silent),
                reason='it has not reported its capabilities yet; retry '
                       'later')
        wanted = capabilities.capability_requirements(
            volume_type['extra_specs'])
        raise exception.NoValidBackend(
            reason='No live backend in availability zone %s reports the '
                   'capabilities volume type %s asks for: %s.' % (
                       az, volume_type['name'], wanted or '{}'))
    if not able:
        raise exception.NoValidBackend(
            reason='Requested size %d GiB exceeds the capacity of every '
                   'backend that can hold volume type %s (largest: %.0f '
                   'GiB).' % (request['size'], volume_type['name'],
                              largest))
    return az, able
