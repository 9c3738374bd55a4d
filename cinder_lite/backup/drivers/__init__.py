"""Backup drivers: ``base`` is the interface, ``posix`` and ``ceph`` the
stores.

A backup's ``service`` (shown by export_record, compared by
import_record and by clients) is Cinder's class path for the stores
Cinder has, so that a record reads the same in both; ``backup_driver``
accepts either spelling."""

# ours -> Cinder's
CINDER_NAMES = {
    'cinder_lite.backup.drivers.posix.PosixBackupDriver':
        'cinder.backup.drivers.posix.PosixBackupDriver',
    'cinder_lite.backup.drivers.ceph.CephBackupDriver':
        'cinder.backup.drivers.ceph.CephBackupDriver',
}
OUR_CLASSES = {cinder: ours for ours, cinder in CINDER_NAMES.items()}


def service_name(driver):
    """The name a backup's ``service`` shows for the class path
    ``driver`` (ours or Cinder's): Cinder's for the stores Cinder has."""
    return CINDER_NAMES.get(driver, driver)


def class_path(driver):
    """The class of ours that ``driver`` (ours or Cinder's) names."""
    return OUR_CLASSES.get(driver, driver)
