"""Client side of the backup RPC API, topic ``cinder-lite-backup``.

A backup or an import goes to whichever backup service takes it from the
topic's queue (they share the work); a restore or a delete goes to the
service that made the backup while it is up, else to any (every backup
service of a cloud reaches the same store).  All casts: the service
records the outcome on the backup.  Every send is bounded
(``rpc.bounded``): with the broker out of reach the caller gets
ServiceUnavailable (503) within ``rpc.SEND_GRACE`` seconds instead of
waiting for the broker.

History:
    1.0 - create_backup, restore_backup, delete_backup, import_record
    1.1 - work_cleanup: settle what a backup service (this one, or
          another that is down) left in a transition (POST
          /workers/cleanup)
"""
from oslo_config import cfg

from cinder_lite.common import rpc

TOPIC = 'cinder-lite-backup'
RPC_API_VERSION = '1.1'
SERVICE = 'cinder-lite-backup'


class BackupAPI:

    def __init__(self, conf=None):
        conf = conf or cfg.CONF
        self.client = rpc.get_client(
            TOPIC, RPC_API_VERSION,
            version_cap=conf.upgrade_levels.backup_version_cap)

    def _cast(self, ctxt, method, host=None, version='1.0', **kwargs):
        rpc.bounded(self.client.prepare(server=host, version=version),
                    ctxt, method, host or SERVICE, **kwargs)

    def create_backup(self, ctxt, backup_id):
        self._cast(ctxt, 'create_backup', backup_id=backup_id)

    def restore_backup(self, ctxt, host, backup_id, volume_id):
        self._cast(ctxt, 'restore_backup', host, backup_id=backup_id,
                   volume_id=volume_id)

    def delete_backup(self, ctxt, host, backup_id):
        self._cast(ctxt, 'delete_backup', host, backup_id=backup_id)

    def can_clean_up(self):
        return self.client.can_send_version('1.1')

    def work_cleanup(self, ctxt, host, service_host, until,
                     resource_id=None):
        """Ask backup service ``host`` to settle what backup service
        ``service_host`` left ``creating`` or ``restoring`` before
        ``until`` (ISO 8601, UTC)."""
        self._cast(ctxt, 'work_cleanup', host, version='1.1',
                   service_host=service_host, until=until,
                   resource_id=resource_id)

    def import_record(self, ctxt, backup_id):
        self._cast(ctxt, 'import_record', backup_id=backup_id)
