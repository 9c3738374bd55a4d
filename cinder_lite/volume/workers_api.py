"""The service layer of POST /workers/cleanup (3.24): settle now what a
service (by default: every one that is down) left in a transition.

Of each service the filters match, a live service is asked to settle
its rows by the rules of reconciliation (``cinder_lite.volume.reconcile``
for volume services, the backup manager's for backup services), up to the
moment of the request instead of ``reconcile_after`` seconds ago:

* a volume service that is up: itself;
* a volume service that is down, in a cluster: a live member of the
  cluster, which settles the backend's volumes and snapshots and, of the
  down member's attachments, what the database alone holds (an
  interrupted connect becomes ``error_attaching``, a connection handed
  out and never completed ``attached``); the rest of them (exports to
  remove, disconnects) waits for the member to come back, whose
  reconciliation at start settles it;
* a volume service that is down and alone: nobody (``unavailable``): its
  backend is out of every other service's reach, and its own
  reconciliation settles its rows when it is back;
* a backup service: itself while up, else any live backup service (they
  share one store).

Schedulers and the API hold no work to clean; they are listed in neither
answer.  The casts are fire-and-forget, as Cinder's: the answer says who
was asked, the services log each change.
"""
import logging

from oslo_utils import timeutils

from cinder_lite.backup import rpcapi as backup_rpcapi
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import services as db_services
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import rpcapi as volume_rpcapi

LOG = logging.getLogger(__name__)

RESOURCE_TYPES = ('Volume', 'Snapshot')
# what a volume or a snapshot may be left in by a service that stopped
PENDING_VOLUME = (states.CREATING, states.DELETING, states.EXTENDING,
                  states.DOWNLOADING, states.UPLOADING, states.ATTACHING,
                  states.DETACHING)
PENDING_SNAPSHOT = (states.CREATING, states.DELETING)


def _matches(service, filters, down_time):
    if filters.get('service_id') is not None and \
            service.id != filters['service_id']:
        return False
    cluster = filters.get('cluster_name')
    if cluster is not None and not (
            service.cluster_name == cluster or
            (service.cluster_name or '').startswith(cluster + '@')):
        return False
    if filters.get('disabled') is not None and \
            service.disabled != filters['disabled']:
        return False
    return db_services.is_up(service.heartbeat_at, down_time) == \
        filters.get('is_up', False)


def _pending_backend(session, resource_id, resource_type):
    """The backend (``node@backend`` or a cluster's) of the volume or
    snapshot ``resource_id`` left in a transition; InvalidInput when
    there is none (Cinder's words)."""
    host = None
    if resource_type in (None, 'Volume'):
        try:
            volume = db_volumes.get(session, resource_id)
            if volume.status in PENDING_VOLUME:
                host = volume.host
        except exception.VolumeNotFound:
            pass
    if host is None and resource_type in (None, 'Snapshot'):
        try:
            snapshot = db_snapshots.get(session, resource_id)
            if snapshot.status in PENDING_SNAPSHOT:
                host = db_volumes.get(session, snapshot.volume_id).host
        except (exception.SnapshotNotFound, exception.VolumeNotFound):
            pass
    if not host:
        raise exception.InvalidInput(
            reason='There is no resource with UUID %s pending cleanup.'
                   % resource_id)
    return volume_rpcapi.backend_host(host)


class WorkersService:

    def __init__(self, conf, volume_rpcapi_client):
        self.conf = conf
        self.volume_rpcapi = volume_rpcapi_client
        self.backup_rpcapi = backup_rpcapi.BackupAPI(conf)

    def _cleaner(self, session, service):
        """The live service to ask to clean ``service`` up, or None."""
        down_time = self.conf.service_down_time
        if db_services.is_up(service.heartbeat_at, down_time):
            return service.host
        if service.binary == constants.VOLUME_BINARY:
            if not service.cluster_name:
                return None
            live = sorted(
                m.host for m in db_services.backend_liveness(
                    session, service.cluster_name, constants.VOLUME_BINARY)
                if m.host != service.host and
                db_services.is_up(m.heartbeat_at, down_time))
        else:
            live = sorted(
                s.host for s in db_services.liveness(
                    session, constants.BACKUP_BINARY)
                if db_services.is_up(s.heartbeat_at, down_time))
        return live[0] if live else None

    def cleanup(self, context, filters):
        """``filters``: service_id, cluster_name, host, binary, is_up
        (default False: the services that are down), disabled,
        resource_id, resource_type (``Volume`` or ``Snapshot``); returns
        (the services whose cleanup was asked, those nobody can clean up
        now), as services rows."""
        policy.authorize(context, policy.WORKERS_CLEANUP)
        until = timeutils.utcnow()
        resource_id = filters.get('resource_id')
        binary = filters.get('binary')
        asked, unavailable = [], []
        with db_api.reader() as session:
            services = [s for s in db_services.list_services(
                session, filters.get('host'), binary)
                if s.binary in (constants.VOLUME_BINARY,
                                constants.BACKUP_BINARY)]
            if resource_id:
                # the services of the resource's backend only
                backend = _pending_backend(session, resource_id,
                                           filters.get('resource_type'))
                services = [s for s in services
                            if s.binary == constants.VOLUME_BINARY and
                            backend in (s.host, s.cluster_name)]
            services = [s for s in services if _matches(
                s, filters, self.conf.service_down_time)]
            plan = [(s, self._cleaner(session, s)) for s in services]
        for service, cleaner in plan:
            if cleaner is not None:
                try:
                    self._ask(context, service, cleaner, until,
                              resource_id)
                except exception.ServiceUnavailable as e:
                    LOG.warning('workers cleanup of %s: %s', service.host,
                                e)
                    cleaner = None
            if cleaner is None:
                unavailable.append(service)
                continue
            LOG.info('workers cleanup of %s %s asked of %s', service.binary,
                     service.host, cleaner)
            asked.append(service)
        return asked, unavailable

    def _ask(self, context, service, cleaner, until, resource_id):
        when = until.isoformat()
        if service.binary == constants.VOLUME_BINARY:
            self.volume_rpcapi.require(volume_rpcapi.CLEANUP_RPC,
                                       'a workers cleanup', cleaner)
            self.volume_rpcapi.work_cleanup(context, cleaner, service.host,
                                            when, resource_id)
        else:
            if not self.backup_rpcapi.can_clean_up():
                raise exception.ServiceUnavailable(
                    host=cleaner, reason='a workers cleanup needs backup '
                                         'RPC API 1.1')
            self.backup_rpcapi.work_cleanup(context, cleaner, service.host,
                                            when, resource_id)
