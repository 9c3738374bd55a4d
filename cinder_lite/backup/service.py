"""Builds the service of a backup node: one backup manager serving the
topic ``cinder-lite-backup`` as ``host`` (and taking its share of the
topic's backups), with a heartbeat and a services row."""
from cinder_lite.backup import manager
from cinder_lite.backup import rpcapi
from cinder_lite.common import constants
from cinder_lite import service


def build(conf):
    mgr = manager.BackupManager(conf, conf.host)
    mgr.init_host()

    def up(svc):
        mgr.start_reconciling()

    return [service.RPCService(
        conf, constants.BACKUP_BINARY, rpcapi.TOPIC, conf.host, [mgr],
        conf.storage_availability_zone, rpc_version=rpcapi.RPC_API_VERSION,
        on_up=up, on_stopped=mgr.cleanup)]
