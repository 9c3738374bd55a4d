"""The scheduler: picks a backend for each new volume and hands the volume
to it."""
import datetime
import logging
import threading

import oslo_messaging as messaging

from cinder_lite.common import capabilities
from cinder_lite.common import context as cl_context
from cinder_lite.common import exception
from cinder_lite.db import api as db_api
from cinder_lite.db import group_types as db_group_types
from cinder_lite.db import groups as db_groups
from cinder_lite.db import messages as db_messages
from cinder_lite.db import models
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.scheduler.filters import availability_zone_filter
from cinder_lite.scheduler.filters import capabilities_filter
from cinder_lite.scheduler.filters import capacity_filter
from cinder_lite.scheduler import host_state
from cinder_lite.scheduler import rpcapi
from cinder_lite.scheduler import weighers
from cinder_lite import service
from cinder_lite.volume import rpcapi as volume_rpcapi

LOG = logging.getLogger(__name__)

# backends a refusal names (a cloud may have thousands)
MAX_NAMED = 10
# Stable ids of user messages, as in Cinder's message API.
EVENT_SCHEDULE_FAILED = 'VOLUME_VOLUME_001_003'
EVENT_GROUP_SCHEDULE_FAILED = 'GROUP_GROUP_001_003'

FILTERS = (availability_zone_filter.AvailabilityZoneFilter(),
           capacity_filter.CapacityFilter(),
           capabilities_filter.CapabilitiesFilter())
# host_state's index orders each group of backends by this weigher's
# weight: another weigher needs its own order there
WEIGHERS = (weighers.CapacityWeigher(),)


def _named(hosts):
    names = sorted(hosts)
    more = len(names) - MAX_NAMED
    return '%s%s' % (', '.join(names[:MAX_NAMED]),
                     ' and %d more' % more if more > 0 else '')


def choose_backend(backends, request_spec):
    """The best backend for ``request_spec``, or NoValidBackend naming,
    filter by filter, the backends each removed and why: the last filter
    alone may not be the cause (a volume type pinned to a backend that
    is full reads "CapacityFilter: no room for 1 GiB (node-a@a);
    CapabilitiesFilter: ... (node-b@b)")."""
    candidates = list(backends)
    if not candidates:
        raise exception.NoValidBackend(reason='No volume service is up.')
    rejected = []
    for flt in FILTERS:
        kept = flt.filter_all(candidates, request_spec)
        if len(kept) < len(candidates):
            kept_hosts = {b.host for b in kept}
            rejected.append('%s: %s (%s)' % (
                type(flt).__name__, flt.refusal(request_spec), _named(
                    b.host for b in candidates
                    if b.host not in kept_hosts)))
        if not kept:
            raise exception.NoValidBackend(
                reason='Every backend was rejected: %s.' % '; '.join(
                    rejected))
        candidates = kept
    return max(candidates, key=lambda b: (
        sum(w.weigh(b, request_spec) for w in WEIGHERS), b.host))


def choose_group_backend(backends, request_spec):
    """The best backend for a group: one that every one of its volume
    types passes the filters on (a group lives on one backend) and whose
    capabilities satisfy its group type's specs."""
    candidates = list(backends)
    if not candidates:
        raise exception.NoValidBackend(reason='No volume service is up.')
    for vtype in request_spec['volume_types']:
        spec = {'size': 0, 'extra_specs': vtype['extra_specs'],
                'availability_zone': request_spec.get('availability_zone'),
                'volume_type_id': vtype['id']}
        for flt in FILTERS:
            candidates = flt.filter_all(candidates, spec)
        if not candidates:
            raise exception.NoValidBackend(
                reason='No backend in reach holds volume type %s together '
                       'with the group\'s other volume types.'
                       % vtype['name'])
    candidates = [b for b in candidates if capabilities.satisfies(
        b.capabilities, request_spec.get('group_specs'))]
    if not candidates:
        raise exception.NoValidBackend(
            reason='No backend that holds the volume types satisfies the '
                   'group type\'s specs %s.' % request_spec['group_specs'])
    return max(candidates, key=lambda b: (
        sum(w.weigh(b, {'size': 0}) for w in WEIGHERS), b.host))


class SchedulerManager:

    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def __init__(self, conf):
        self.conf = conf
        self.host_manager = host_state.HostManager(conf)
        self.volume_rpcapi = volume_rpcapi.VolumeAPI(conf)

    def update_backend_capabilities(self, ctxt, host, availability_zone,
                                    capabilities, reported_at):
        self.host_manager.update_from_report(host, availability_zone,
                                             capabilities, reported_at)

    def create_volume(self, ctxt, volume_id, request_spec):
        # One transaction: choose (confirming the choice against its
        # services rows), record the host; run again from the choice when
        # the database refuses it (what the choice notes in memory is
        # what the services rows said, true whatever the commit; the
        # capacity is consumed and the volume cast once it committed).
        def _claim(session):
            chosen = self.host_manager.choose(session, request_spec,
                                              choose_backend)
            cluster_name = chosen.pool if chosen.clustered else None
            return chosen, cluster_name, db_volumes.claim_host(
                session, volume_id, chosen.pool, cluster_name)

        try:
            chosen, cluster_name, claimed = db_api.run_writer(_claim)
        except exception.NoValidBackend as e:
            self._fail(ctxt, volume_id, e.message)
            return
        if not claimed:
            LOG.warning('volume %s is scheduled already or no longer '
                        'creating; not scheduled again', volume_id)
            return
        self.host_manager.consume(chosen, request_spec['size'])
        LOG.info('volume %s scheduled to %s', volume_id, chosen.pool)
        volume = request_spec.get('volume')
        if volume is not None:
            volume = dict(volume, host=chosen.pool,
                          cluster_name=cluster_name)
        self.volume_rpcapi.create_volume(ctxt, chosen.host, volume_id,
                                         volume=volume)

    def create_group(self, ctxt, group_id, request_spec):
        """RPC 1.1: place a ``creating`` group on one backend and make it
        ``available`` (nothing is made on the backend for a generic
        group: its volumes are made there later); ``error`` with a user
        message when no backend can hold it."""
        def _claim(session):
            chosen = self.host_manager.choose_among_live(
                session, request_spec, choose_group_backend)
            cluster_name = chosen.pool if chosen.clustered else None
            return chosen, db_groups.claim_host(
                session, group_id, chosen.pool, cluster_name,
                chosen.availability_zone)

        def _record_failure(session, reason):
            try:
                group = db_groups.get(session, group_id)
                db_groups.transition(session, group_id, 'create_failed')
            except (exception.InvalidTransition, exception.GroupNotFound):
                return
            db_messages.create(session, group.project_id,
                               EVENT_GROUP_SCHEDULE_FAILED,
                               'schedule allocate group: ' + reason,
                               resource_type='GROUP',
                               resource_uuid=group_id,
                               request_id=ctxt.request_id)

        try:
            chosen, claimed = db_api.run_writer(_claim)
        except exception.NoValidBackend as e:
            LOG.warning('group %s: creating -> error: %s', group_id,
                        e.message)
            db_api.run_writer(_record_failure, e.message)
            return
        if claimed:
            LOG.info('group %s: creating -> available on %s', group_id,
                     chosen.pool)

    # -- reconciliation ------------------------------------------------------
    def start_reconciling(self):
        """Schedule the volumes whose scheduling request was lost (an
        API or scheduler that died in between): now, then every
        ``reconcile_interval`` seconds.  Also read the services table
        every ``report_interval`` seconds (what reports do not say)."""
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._reconcile_loop, daemon=True,
                             name='reconcile'),
            threading.Thread(target=self._refresh_loop, daemon=True,
                             name='services-refresh')]
        for thread in self._threads:
            thread.start()

    def stop_reconciling(self):
        if getattr(self, '_threads', None):
            self._stop.set()
            for thread in self._threads:
                thread.join(timeout=30)

    def refresh_services(self):
        with db_api.reader() as session:
            self.host_manager.refresh(session)

    def _refresh_loop(self):
        service.run_periodically(self.refresh_services,
                                 self.conf.report_interval, self._stop,
                                 'services refresh')

    def _reconcile_loop(self):
        service.run_periodically(self.reconcile_now,
                                 self.conf.reconcile_interval, self._stop,
                                 'reconcile of unscheduled volumes')

    def reconcile_now(self, max_age=None):
        if max_age is None:
            max_age = self.conf.reconcile_after
        with db_api.reader() as session:
            lost = []
            for volume in db_volumes.unscheduled(session, max_age):
                try:
                    vtype = db_types.get(session, volume.volume_type_id)
                except exception.NotFound:
                    vtype = {'id': volume.volume_type_id, 'extra_specs': {}}
                lost.append((volume.id, {
                    'size': volume.size,
                    'availability_zone': volume.availability_zone,
                    'volume_type_id': volume.volume_type_id,
                    'extra_specs': vtype['extra_specs'],
                    'multiattach': volume.multiattach,
                    'volume': db_volumes.summary(volume)}))
            lost_groups = [(g.id, self._group_request(session, g))
                           for g in db_groups.creating(
                               session, models.utcnow() -
                               datetime.timedelta(seconds=max_age))]
        changes = []
        for group_id, spec in lost_groups:
            LOG.warning('reconcile: group %s was never scheduled (its '
                        'request was lost); scheduling it now', group_id)
            self.create_group(cl_context.get_admin_context(), group_id,
                              spec)
            changes.append('group %s: scheduled again' % group_id)
        for volume_id, spec in lost:
            LOG.warning('reconcile: volume %s was never scheduled (its '
                        'request was lost); scheduling it now', volume_id)
            self.create_volume(cl_context.get_admin_context(), volume_id,
                               spec)
            changes.append('volume %s: scheduled again' % volume_id)
        return changes

    @staticmethod
    def _group_request(session, group):
        try:
            specs = db_group_types.get(session,
                                       group.group_type_id)['group_specs']
        except exception.NotFound:
            specs = {}
        vtypes = []
        for type_id in db_groups.volume_types_of(session,
                                                 [group.id])[group.id]:
            try:
                vtypes.append(db_types.get(session, type_id))
            except exception.NotFound:
                vtypes.append({'id': type_id, 'name': type_id,
                               'extra_specs': {}})
        return db_groups.request_spec(group, vtypes, specs)

    def _fail(self, ctxt, volume_id, reason):
        LOG.warning('volume %s: creating -> error: %s', volume_id, reason)

        def _record(session):
            try:
                volume = db_volumes.get(session, volume_id)
                db_volumes.transition(session, volume_id, 'schedule_failed')
            except (exception.InvalidTransition,
                    exception.VolumeNotFound):
                return
            db_messages.create(session, volume.project_id,
                               EVENT_SCHEDULE_FAILED,
                               'schedule allocate volume: ' + reason,
                               resource_type='VOLUME',
                               resource_uuid=volume_id,
                               request_id=ctxt.request_id)

        db_api.run_writer(_record)
