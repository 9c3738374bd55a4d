"""Builds the scheduler service."""
from cinder_lite.common import constants
from cinder_lite.scheduler import manager
from cinder_lite.scheduler import rpcapi
from cinder_lite import service


def build(conf):
    mgr = manager.SchedulerManager(conf)
    return [service.RPCService(
        conf, constants.SCHEDULER_BINARY, rpcapi.TOPIC, conf.host, [mgr],
        conf.storage_availability_zone,
        rpc_version=rpcapi.RPC_API_VERSION,
        on_up=lambda svc: mgr.start_reconciling(),
        on_stopped=mgr.stop_reconciling)]
