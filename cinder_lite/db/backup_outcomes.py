"""The status changes a backup or a restore ends with, shared by the
backup service, the API and the volume service: each one transaction,
compare-and-swap on both rows, so that whoever comes second (a
reconciler, an operator's reset) finds the change made and leaves it.

A backup of a volume moves it to ``backing-up``; when the copy is made
(of an in-use volume: once its temporary snapshot exists) the volume is
what its attachments make it again.  A restore moves the volume to
``restoring-backup`` and the backup to ``restoring``; it ends with the
volume ``available`` (or ``error_restoring``) and the backup
``available``.

Each transaction runs in ``db_api.run_writer``: on multi-writer Galera it
runs again from its start when it is refused at commit (a certification
failure), and it logs only once it committed.
"""
import json
import logging

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import backups as db_backups
from cinder_lite.db import image_metadata as db_image_metadata
from cinder_lite.db import messages as db_messages
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volume_metadata as db_volume_metadata
from cinder_lite.db import volumes as db_volumes

LOG = logging.getLogger(__name__)

# user messages: Cinder's resource VOLUME_BACKUP, actions 013 "create
# backup", 014 "delete backup", 015 "restore backup", details 020 "Backup
# driver failed to create backup.", 025 "... to delete backup.", 026
# "... to restore backup."
EVENT_BACKUP_FAILED = 'VOLUME_VOLUME_BACKUP_013_020'
EVENT_BACKUP_DELETE_FAILED = 'VOLUME_VOLUME_BACKUP_014_025'
EVENT_RESTORE_FAILED = 'VOLUME_VOLUME_BACKUP_015_026'


def end_backing_up(volume_id):
    """The volume is read no more (or its temporary snapshot exists): it
    is what its attachments make it again.  Returns that status, None
    when it was not backing up (an operator reset it, say)."""
    def _end(session):
        try:
            db_attachments.lock_volume(session, volume_id,
                                       allowed=(states.BACKING_UP,),
                                       load=False)
        except (exception.NotFound, exception.Invalid):
            return None
        status = states.derive_volume_status(
            db_attachments.live_statuses(session, volume_id))
        db_volumes.transition(session, volume_id, 'backup_ended', status)
        return status
    status = db_api.run_writer(_end)
    if status is None:
        return None
    LOG.info('volume %s: backing-up -> %s', volume_id, status)
    return status


def end_snapshot_backup(snapshot_id):
    try:
        db_api.run_writer(db_snapshots.transition, snapshot_id,
                          'backup_ended')
    except (exception.NotFound, exception.InvalidTransition):
        return False
    LOG.info('snapshot %s: backing-up -> available', snapshot_id)
    return True


def backup_failed(backup_id, project_id, reason, event='create_failed',
                  request_id=None):
    """The backup is ``error`` with ``reason``, and its owner gets a
    message; False when it was no longer being made."""
    def _fail(session):
        try:
            db_backups.transition(session, backup_id, event,
                                  values={'fail_reason': reason[:255]})
        except (exception.BackupNotFound, exception.InvalidTransition):
            return False
        db_messages.create(session, project_id, EVENT_BACKUP_FAILED,
                           'create backup: %s' % reason,
                           resource_type='VOLUME_BACKUP',
                           resource_uuid=backup_id, request_id=request_id)
        return True
    if not db_api.run_writer(_fail):
        return False
    LOG.warning('backup %s: creating -> error (%s)', backup_id, reason)
    return True


def message_delete_failed(session, backup, reason):
    db_messages.create(session, backup.project_id,
                       EVENT_BACKUP_DELETE_FAILED,
                       'delete backup: %s' % reason,
                       resource_type='VOLUME_BACKUP',
                       resource_uuid=backup.id)


def _give_meta(session, backup, volume):
    """A volume restored from a backup gets the metadata, image metadata
    and bootable flag its source had when it was backed up (as Cinder's
    drivers restore them), and ``src_backup_id`` when it is another
    volume."""
    meta = json.loads(backup.volume_meta) if backup.volume_meta else {}
    metadata = dict(meta.get('metadata') or {})
    if backup.volume_id != volume.id:
        metadata['src_backup_id'] = backup.id
    if metadata:
        db_volume_metadata.update(session, volume.id, metadata)
    if meta.get('image_metadata'):
        db_image_metadata.update(session, volume.id, meta['image_metadata'])
    if meta.get('bootable'):
        db_volumes.update(session, volume.id, {'bootable': True})


def restored(backup_id, volume_id):
    """The backup is written into the volume: the volume is
    ``available`` with its source's metadata, the backup ``available``
    again."""
    def _end(session):
        # (what kept the volume from being given it, logged once
        # committed)
        why = None
        try:
            volume = db_volumes.lock(session, volume_id)
            db_volumes.transition(session, volume_id, 'restored')
            _give_meta(session, db_backups.get(session, backup_id), volume)
        except (exception.VolumeNotFound, exception.BackupNotFound,
                exception.InvalidTransition) as e:
            why = e
        _backup_back(session, backup_id, 'restored')
        return why
    why = db_api.run_writer(_end)
    if isinstance(why, exception.InvalidTransition):
        LOG.warning('volume %s: restore of backup %s done, but the '
                    'volume is %s now', volume_id, backup_id,
                    why.kwargs.get('actual'))
    elif why is not None:
        LOG.warning('restore of backup %s into volume %s done, but %s',
                    backup_id, volume_id, why)
    LOG.info('backup %s restored into volume %s', backup_id, volume_id)


def restore_failed(ctxt, backup_id, volume_id, project_id, reason):
    """A restore did not finish: the volume is ``error_restoring`` (what
    it holds is part of the backup), the backup ``available`` again and
    the volume's owner gets a message."""
    def _fail(session):
        try:
            db_volumes.lock(session, volume_id)
            db_volumes.transition(session, volume_id, 'restore_failed')
        except (exception.VolumeNotFound, exception.InvalidTransition):
            pass
        _backup_back(session, backup_id, 'restore_failed')
        db_messages.create(session, project_id, EVENT_RESTORE_FAILED,
                           'restore backup %s: %s' % (backup_id, reason),
                           resource_type='VOLUME_BACKUP',
                           resource_uuid=backup_id,
                           request_id=getattr(ctxt, 'request_id', None))
    db_api.run_writer(_fail)
    LOG.warning('restore of backup %s into volume %s failed: %s',
                backup_id, volume_id, reason)


def _backup_back(session, backup_id, event):
    try:
        db_backups.transition(session, backup_id, event,
                              values={'restore_volume_id': None})
    except (exception.BackupNotFound, exception.InvalidTransition):
        pass
