"""Builds the services of a volume node: one manager per backend section,
each an RPC server ``host@backend`` reporting its capabilities."""
import logging

from cinder_lite.common import constants
from cinder_lite.common import context as cl_context
from cinder_lite.db import models
from cinder_lite.scheduler import rpcapi as scheduler_rpcapi
from cinder_lite import service
from cinder_lite.volume import manager
from cinder_lite.volume import rpcapi

LOG = logging.getLogger(__name__)


def build(conf):
    scheduler = scheduler_rpcapi.SchedulerAPI(conf)
    services = []
    for section in conf.enabled_backends:
        mgr = manager.VolumeManager(conf, conf.host, section)
        mgr.init_host()

        def report(svc, mgr=mgr):
            return mgr.capabilities()

        def fan_out(svc, caps, mgr=mgr):
            try:
                # a cluster is one backend to the schedulers
                scheduler.update_backend_capabilities(
                    cl_context.get_admin_context(), mgr.backend_id,
                    svc.availability_zone, caps,
                    models.utcnow().isoformat())
            except Exception:
                LOG.exception('capability report of %s to the schedulers '
                              'failed', svc.host)

        def registered(svc, mgr=mgr):
            mgr.service_uuid = svc.service_uuid

        def up(svc, mgr=mgr):
            mgr.join_cluster()
            mgr.start_reconciling()

        services.append(service.RPCService(
            conf, constants.VOLUME_BINARY, rpcapi.TOPIC, mgr.host, [mgr],
            conf.storage_availability_zone, backend=section, report=report,
            fan_out=fan_out,
            rpc_version=rpcapi.RPC_API_VERSION, on_registered=registered,
            on_up=up,
            on_stopped=mgr.cleanup, cluster_name=mgr.cluster_name))
    return services
