"""API-side create: resolve the type, check policy and that some live
backend can hold it, record the volume, hand it to the scheduler.

If the cast fails the recorded volume is removed again, so a refused or
failed request leaves nothing behind.

These steps run as plain calls, not on a taskflow engine: only the record
has a side effect to undo, and an engine costs about 10 ms per run here
(compile, atom uuids, storage locks) — a third of the latency budget of a
create.  The manager-side flows, where the driver's side effects live, run
on taskflow engines.
"""
import datetime
import logging
import threading
import time
import uuid

import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.common import notify
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import models
from cinder_lite.db import quotas as db_quotas
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.scheduler.filters import capabilities_filter
from cinder_lite.scheduler import host_state
from cinder_lite.volume import quota
from cinder_lite.volume import types as volume_types

LOG = logging.getLogger(__name__)


def resolve_type(session, context, request, conf):
    name_or_id = request.get('volume_type') or conf.default_volume_type
    project = None if context.is_admin else context.project_id
    return db_types.get_by_name_or_id(session, name_or_id, project)


def check_policy(context, volume_type, conf):
    policy.authorize(context, policy.VOLUME_CREATE)
    if volume_types.is_multiattach(volume_type):
        if not conf.allow_multiattach:
            raise exception.InvalidVolumeType(
                reason='multi-attach is turned off in this cloud, so type '
                       '%s cannot be used' % volume_type['name'])
        policy.authorize(context, policy.MULTIATTACH)


def capacity_limit(caps):
    """The most a backend could ever hold: its size, times the
    over-subscription ratio when it is thin."""
    total = float(caps.get('total_capacity_gb') or 0)
    if caps.get('thin_provisioning_support'):
        total *= float(caps.get('max_over_subscription_ratio') or 1)
    return total


class _Backend:
    __slots__ = ('host', 'availability_zone', 'disabled', 'heartbeat_at',
                 'capabilities', 'limit')

    def __init__(self, row):
        self.host = row.host
        self.availability_zone = row.availability_zone
        self.disabled = row.disabled
        self.heartbeat_at = row.heartbeat_at
        self.capabilities = row.capabilities
        self.limit = capacity_limit(row.capabilities or {})


class ServicesView:
    """The volume services as ``check_backends`` needs them, read from the
    services table at most every ``report_interval`` seconds (a cloud of
    10,000 backends made every create read 10,000 rows).  Backends that
    report the same capabilities but for capacity and name form one
    group, matched against a type once.  A refusal is never made on a
    copy (the table is read again first), and an acceptance is confirmed
    by the rows of a few of the backends it counted on."""

    def __init__(self):
        self._lock = threading.Lock()
        self._read_at = None
        self._engine = None
        self._groups = None
        self._named = None

    def snapshot(self, session, conf, fresh=False):
        # (a process that configured another database meanwhile)
        engine = db_api.get_engine()
        with self._lock:
            if not (fresh or self._read_at is None
                    or self._engine is not engine
                    or time.monotonic() - self._read_at
                    > conf.report_interval):
                return self._groups, self._named
        # read outside the lock: requests that need the table read it side
        # by side, none waits behind another's read
        S = models.Service
        rows = session.execute(
            sa.select(S.host, S.availability_zone, S.disabled,
                      S.heartbeat_at, S.capabilities)
            .where(S.binary == host_state.VOLUME_BINARY)).all()
        groups, named = {}, {}
        for row in rows:
            backend = _Backend(row)
            caps = backend.capabilities or {}
            key = (backend.availability_zone, host_state.signature(caps))
            groups.setdefault(key, []).append(backend)
            named.setdefault(str(caps.get(host_state.NAME_KEY)),
                             []).append(backend)
        with self._lock:
            self._groups, self._named = groups, named
            self._read_at = time.monotonic()
            self._engine = engine
        return groups, named


SERVICES = ServicesView()


def check_backends(session, request, volume_type, conf):
    """Refuse at once what no live backend could ever hold, instead of
    recording a volume that is bound to fail; returns the AZ."""
    try:
        az, able = _check_backends(session, request, volume_type, conf,
                                   False)
    except (exception.InvalidInput, exception.ServiceUnavailable,
            exception.NoValidBackend):
        # the copy may be older than a service that just came up
        return _check_backends(session, request, volume_type, conf,
                               True)[0]
    if _still_up(session, able, conf):
        return az
    # the copy is older than an outage or a disable: the table decides
    return _check_backends(session, request, volume_type, conf, True)[0]


CONFIRM_AT_MOST = 20


def _still_up(session, backends, conf):
    """Whether one of (the first few of) ``backends`` is up and enabled
    by the table now, not only by the copy: one indexed read."""
    S = models.Service
    cutoff = models.utcnow() - datetime.timedelta(
        seconds=conf.service_down_time)
    hosts = [b.host for b in backends[:CONFIRM_AT_MOST]]
    return session.execute(
        sa.select(S.id).where(S.binary == host_state.VOLUME_BINARY,
                              S.host.in_(hosts), S.disabled == sa.false(),
                              S.heartbeat_at >= cutoff).limit(1)
    ).first() is not None


def _capable(groups, named, az, specs):
    """The backends of ``az`` whose capabilities satisfy ``specs``."""
    required = capabilities_filter.capability_requirements(specs)
    name = host_state.pinned_name(required)
    if name is not None:
        # only the backends of that name can match
        pool = [b for b in named.get(name, ())
                if b.availability_zone == az]
    elif host_state.PER_BACKEND_KEYS.intersection(required):
        # capacity or name: each backend answers for itself
        pool = [b for (zone, _), members in groups.items() if zone == az
                for b in members]
    else:
        # the members of a group answer alike
        return [b for (zone, _), members in groups.items()
                if zone == az and capabilities_filter.satisfies(
                    members[0].capabilities or {}, specs)
                for b in members]
    return [b for b in pool
            if capabilities_filter.satisfies(b.capabilities or {}, specs)]


def _check_backends(session, request, volume_type, conf, fresh):
    groups, named = SERVICES.snapshot(session, conf, fresh)
    az = (request.get('availability_zone')
          or conf.default_availability_zone
          or conf.storage_availability_zone)
    cutoff = models.utcnow() - datetime.timedelta(
        seconds=conf.service_down_time)

    def up(b):
        return not b.disabled and b.heartbeat_at is not None and \
            b.heartbeat_at >= cutoff
    zones = {zone for (zone, _), members in groups.items()
             if any(up(b) for b in members)}
    if request.get('availability_zone') and az not in zones:
        raise exception.InvalidInput(
            reason="Availability zone '%s' is invalid." % az)
    if az not in zones:
        # transient (services restarting, heartbeats late): retry later
        raise exception.ServiceUnavailable(
            host='cinder-volume',
            reason='no volume service in availability zone %s has '
                   'reported within service_down_time; retry later' % az)
    capable = [b for b in _capable(groups, named, az,
                                   volume_type['extra_specs']) if up(b)]
    if not capable:
        silent = sorted(b.host for (zone, _), members in groups.items()
                        if zone == az for b in members
                        if up(b) and not b.capabilities)
        if silent:
            # up, but its first report is not in yet: it may hold this
            raise exception.ServiceUnavailable(
                host=', '.join(silent),
                reason='it has not reported its capabilities yet; retry '
                       'later')
        wanted = capabilities_filter.capability_requirements(
            volume_type['extra_specs'])
        raise exception.NoValidBackend(
            reason='No live backend in availability zone %s reports the '
                   'capabilities volume type %s asks for: %s.' % (
                       az, volume_type['name'], wanted or '{}'))
    largest = max(b.limit for b in capable)
    if request['size'] > largest:
        raise exception.NoValidBackend(
            reason='Requested size %d GiB exceeds the capacity of every '
                   'backend that can hold volume type %s (largest: %.0f '
                   'GiB).' % (request['size'], volume_type['name'],
                              largest))
    return az, [b for b in capable if b.limit >= request['size']]


def record_volume(context, request, volume_type, availability_zone, conf):
    values = {
        'id': str(uuid.uuid4()),
        'project_id': context.project_id,
        'user_id': context.user_id,
        'name': request.get('name'),
        'description': request.get('description'),
        'size': request['size'],
        'status': states.CREATING,
        'volume_type_id': volume_type['id'],
        'availability_zone': availability_zone,
        'multiattach': volume_types.is_multiattach(volume_type),
        'bootable': False,
        'deleted': False,
        'created_at': models.utcnow(),
    }

    def record():
        with db_api.writer() as session:
            # a type deleted since it was resolved answers 404; one being
            # deleted now waits for this volume and is then refused as in
            # use
            db_types.lock_live(session, volume_type['id'])
            return db_volumes.create(session, values, quota.Checker(
                conf, session, size=values['size']),
                metadata=request.get('metadata'))
    volume = quota.ensuring_rows(record)
    LOG.info('volume %s: recorded as creating', volume.id)
    return volume


def forget_volume(volume):
    """Undo ``record_volume``."""
    LOG.warning('volume %s: removing the record of a failed create',
                volume.id)
    with db_api.writer() as session:
        db_volumes.remove(session, volume.id)


def cast_to_scheduler(context, scheduler_rpcapi, volume, volume_type,
                      availability_zone):
    scheduler_rpcapi.create_volume(context, volume.id, {
        'size': volume.size,
        'availability_zone': availability_zone,
        'volume_type_id': volume_type['id'],
        'extra_specs': volume_type['extra_specs'],
        'multiattach': volume.multiattach,
        # passed on to the volume service (RPC 1.2), which then need not
        # read it back; older schedulers ignore it
        'volume': db_volumes.summary(volume),
    })


def run(context, request, conf, scheduler_rpcapi):
    """Returns (volume row, volume type dict)."""
    with db_api.reader() as session:
        volume_type = resolve_type(session, context, request, conf)
        check_policy(context, volume_type, conf)
        try:
            az = check_backends(session, request, volume_type, conf)
        except exception.Invalid:
            # over quota is told first, as Cinder checks it before it
            # asks the backends
            quota.Checker(conf, session).now(
                context.project_id,
                db_quotas.footprint(volume_type['id'], request['size']),
                size=request['size'])
            raise
    volume = record_volume(context, request, volume_type, az, conf)
    try:
        cast_to_scheduler(context, scheduler_rpcapi, volume, volume_type,
                          az)
    except Exception:
        forget_volume(volume)
        raise
    notify.info(context, conf.host, 'volume.create.start',
                notify.volume_payload(volume))
    return volume, volume_type
