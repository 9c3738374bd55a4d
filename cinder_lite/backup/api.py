"""The service layer for backups: what ``/backups`` and its actions call.

A create locks the volume's row, checks its status there, moves it to
``backing-up`` and records the backup with its quota in the same
transaction (a snapshot being backed up goes ``backing-up`` instead),
then casts to the backup services' topic, where one of them takes it.
If the cast fails, the record is removed and the volume's status given
back, so a refused or failed request leaves nothing behind.

A restore locks the volume it writes (made first, when none is named:
the volume service hands it to a backup service once its storage
exists) and the backup, moves them to ``restoring-backup`` and
``restoring`` and casts to the backup service that made the backup
while it is up, else to any.  A delete moves the backup to ``deleting``
by compare-and-swap and casts the same way; a backup others are
incremental to is never deleted.
"""
import base64
import binascii
import datetime
import json
import logging
import uuid

from cinder_lite.backup import drivers
from cinder_lite.backup import rpcapi as backup_rpcapi
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import notify
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import backup_metadata as db_metadata
from cinder_lite.db import backup_outcomes as records
from cinder_lite.db import backups as db_backups
from cinder_lite.db import image_metadata as db_image_metadata
from cinder_lite.db import models
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import quotas as db_quotas
from cinder_lite.db import services as db_services
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volume_metadata as db_volume_metadata
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import rpcapi as volume_rpcapi

LOG = logging.getLogger(__name__)

# what import_record needs of a record (Cinder's list)
RECORD_KEYS = ('id', 'size', 'display_name', 'display_description',
               'container', 'service_metadata', 'object_count')
NIL_VOLUME = '00000000-0000-0000-0000-000000000000'


def check_backup_service_up(session, conf):
    """ServiceUnavailable (503) when no backup service is enabled and up:
    a backup cast to the topic would wait for nobody."""
    db_services.check_any_up(session, constants.BACKUP_BINARY,
                             conf.service_down_time, 'backup service')


def _check_volume_backend(session, volume, conf):
    db_services.check_backend_up(
        session, volume_rpcapi.backend_host(volume.host),
        constants.VOLUME_BINARY, conf.service_down_time)


def _backup_host(session, backup, conf):
    """The server a restore or delete of ``backup`` goes to: the backup
    service that made it while it is up and enabled, else None (any)."""
    if backup.host:
        for row in db_services.liveness(session, constants.BACKUP_BINARY):
            if row.host == backup.host and not row.disabled and \
                    db_services.is_up(row.heartbeat_at,
                                      conf.service_down_time):
                return backup.host
    return None


def volume_meta(session, volume):
    """What a restore gives a volume besides its data, as it is now."""
    return json.dumps({
        'metadata': db_volume_metadata.get(session, volume.id),
        'image_metadata': db_image_metadata.get(session, volume.id),
        'bootable': bool(volume.bootable)})


class BackupService:

    def __init__(self, conf, volume_service=None):
        self.conf = conf
        self.rpcapi = backup_rpcapi.BackupAPI(conf)
        self.volume_rpcapi = volume_rpcapi.VolumeAPI(conf)
        # POST /volumes makes the volume a restore without volume_id
        # writes
        self.volumes = volume_service

    @staticmethod
    def _scope(context):
        return None if context.is_admin else context.project_id

    # -- create ---------------------------------------------------------------
    def create(self, context, volume_id, name=None, description=None,
               container=None, incremental=False, force=False,
               snapshot_id=None, metadata=None, availability_zone=None):
        """Record a backup of ``volume_id`` (of its snapshot
        ``snapshot_id``) as ``creating`` and hand it to the backup
        services; returns the backup."""
        self.volume_rpcapi.require(volume_rpcapi.BACKUP_RPC, 'a backup')
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id,
                                    self._scope(context))
            policy.authorize(context, policy.BACKUP_CREATE,
                             {'project_id': volume.project_id})
            snapshot = None
            if snapshot_id:
                snapshot = db_snapshots.get(session, snapshot_id,
                                            self._scope(context))
            self._check_source(volume, snapshot, force)
            if availability_zone and \
                    availability_zone != volume.availability_zone:
                raise exception.InvalidInput(
                    reason='Backups are made in the availability zone of '
                           'their volume (%s), not %s.' % (
                               volume.availability_zone, availability_zone))
            quota.Checker(self.conf, session).now(
                context.project_id, db_quotas.backup_footprint(volume.size))
            check_backup_service_up(session, self.conf)
            _check_volume_backend(session, volume, self.conf)
        now = models.utcnow()
        values = {
            'id': str(uuid.uuid4()),
            'volume_id': volume.id,
            'snapshot_id': snapshot.id if snapshot else None,
            'project_id': context.project_id,
            'user_id': context.user_id,
            'name': name,
            'description': description,
            'container': container,
            'availability_zone': volume.availability_zone,
            'status': states.CREATING,
            'size': volume.size,
            'object_count': 0,
            'progress_bytes': 0,
            'num_dependent_backups': 0,
            'service': drivers.service_name(self.conf.backup_driver),
            'deleted': False,
            'created_at': now,
            'data_timestamp': snapshot.created_at if snapshot else None,
        }

        # (run again from its start on a deadlock: the cast comes after
        # the commit)
        def _record(session):
            locked = db_volumes.lock(session, volume.id)
            if snapshot is not None:
                self._check_source(locked, db_snapshots.lock(
                    session, snapshot.id), force)
                db_snapshots.transition(session, snapshot.id, 'backup')
            else:
                self._check_source(locked, None, force)
                db_volumes.transition(
                    session, volume.id, 'backup'
                    if locked.status == states.AVAILABLE
                    else 'force_backup')
            parent = None
            if incremental:
                parent = self._parent(session, locked, snapshot,
                                      context.project_id)
            values.update(
                size=locked.size,
                volume_status=locked.status,
                parent_id=parent.id if parent else None,
                volume_meta=volume_meta(session, locked))
            return db_backups.create(
                session, values, quota.Checker(self.conf, session),
                metadata=metadata)
        backup = quota.ensuring_rows(lambda: db_api.run_writer(_record))
        LOG.info('backup %s of volume %s%s: recorded as creating%s',
                 backup.id, volume.id,
                 ' (snapshot %s)' % snapshot.id if snapshot else '',
                 ', incremental to %s' % backup.parent_id
                 if backup.parent_id else '')
        notify.info(context, self.conf.host, 'backup.create.start',
                    _payload(backup))
        try:
            self.rpcapi.create_backup(context, backup.id)
        except Exception:
            LOG.warning('backup %s: removing the record of a create that '
                        'could not be sent', backup.id)
            db_api.run_writer(db_backups.remove, backup.id)
            if snapshot is not None:
                records.end_snapshot_backup(snapshot.id)
            else:
                records.end_backing_up(volume.id)
            raise
        return backup

    @staticmethod
    def _check_source(volume, snapshot, force):
        """Cinder's refusals, in its order and words."""
        if snapshot is not None:
            if snapshot.volume_id != volume.id:
                raise exception.InvalidVolume(
                    reason='Volume %s does not match with snapshot.'
                           'volume_id %s.' % (volume.id, snapshot.volume_id))
            if snapshot.status != states.AVAILABLE:
                raise exception.InvalidSnapshot(
                    reason='Snapshot to be backed up must be available, '
                           'but the current status is "%s".'
                           % snapshot.status)
            return
        if not volume.host:
            raise exception.InvalidVolume(
                reason='Volume %s has not been scheduled to any host.'
                       % volume.id)
        if volume.status not in states.BACKUP_FORCE_SOURCE_STATUSES:
            raise exception.InvalidVolume(
                reason='Volume to be backed up must be available or '
                       'in-use, but the current status is "%s".'
                       % volume.status)
        if volume.status != states.AVAILABLE and not force:
            raise exception.InvalidVolume(
                reason='Backing up an in-use volume must use the force '
                       'flag.')

    @staticmethod
    def _parent(session, volume, snapshot, project_id):
        parent = db_backups.latest_of_volume(session, volume.id, project_id)
        if snapshot is not None and parent is not None and \
                parent.data_timestamp and \
                parent.data_timestamp >= snapshot.created_at:
            parent = None
        if parent is None:
            raise exception.InvalidBackup(
                reason='No backups available to do an incremental backup.')
        return parent

    # -- read -----------------------------------------------------------------
    def get(self, context, backup_id, rule=policy.BACKUP_GET):
        with db_api.reader() as session:
            backup = db_backups.get(session, backup_id, self._scope(context))
        policy.authorize(context, rule, {'project_id': backup.project_id})
        return backup

    def list(self, context, filters, sort_keys, sort_dirs, limit, marker,
             all_tenants=False, with_count=False, offset=None):
        project = policy.list_scope(context, policy.BACKUP_GET_ALL,
                                    policy.BACKUP_ALL_TENANTS, filters,
                                    all_tenants)
        with db_api.reader() as session:
            rows = db_backups.list_backups(
                session, project, filters, sort_keys, sort_dirs, limit,
                marker, offset)
            total = (db_backups.count(session, project, filters)
                     if with_count else None)
        return rows, total

    def metadata_of(self, backups):
        with db_api.reader() as session:
            return db_metadata.for_backups(session, [b.id for b in backups])

    # -- update ---------------------------------------------------------------
    def update(self, context, backup_id, values, metadata=None):

        # (run again from its start on a deadlock)
        def _update(session):
            backup = db_backups.lock(session, backup_id,
                                     self._scope(context))
            policy.authorize(context, policy.BACKUP_UPDATE,
                             {'project_id': backup.project_id})
            if values:
                db_backups.update(session, backup.id, values)
            if metadata is not None:
                db_metadata.update(session, backup.id, metadata, True)
        db_api.run_writer(_update)
        LOG.info('backup %s: %s updated', backup_id,
                 ', '.join(sorted(values) + (['metadata'] if metadata
                                             is not None else [])))
        return self.get(context, backup_id)

    # -- delete ---------------------------------------------------------------
    def delete(self, context, backup_id, force=False):
        """``deleting`` from ``available`` or ``error`` (``force``: from
        any status, the caller checked the policy), then a backup
        service removes it from the store."""
        with db_api.reader() as session:
            backup = db_backups.get(session, backup_id, self._scope(context))
            policy.authorize(context, policy.BACKUP_DELETE,
                             {'project_id': backup.project_id})
            check_backup_service_up(session, self.conf)

        # (run again from its start on a deadlock: the cast comes after
        # the commit)
        def _mark(session):
            locked = db_backups.lock(session, backup_id)
            if db_backups.has_dependents(session, locked.id):
                raise exception.InvalidBackup(
                    reason='Incremental backups exist for this backup.')
            try:
                db_backups.transition(session, locked.id,
                                      'force_delete' if force else 'delete')
            except exception.InvalidTransition:
                raise exception.InvalidBackup(
                    reason='Backup status must be available or error')
            return locked, _backup_host(session, locked, self.conf)
        backup, host = db_api.run_writer(_mark)
        LOG.info('backup %s: %s -> deleting%s', backup.id, backup.status,
                 ' (forced)' if force else '')
        notify.info(context, self.conf.host, 'backup.delete.start',
                    _payload(backup, status=states.DELETING))
        try:
            self.rpcapi.delete_backup(context, host, backup.id)
        except Exception:
            if backup.status == states.DELETING:
                raise       # (a forced delete of one being deleted)
            # nobody would ever finish it: the backup is as it was, and
            # the caller may ask again
            LOG.warning('backup %s: deleting -> %s (the delete could not '
                        'be sent)', backup.id, backup.status)
            try:
                db_api.run_writer(db_backups.transition, backup.id,
                                  'delete_not_sent', target=backup.status)
            except (exception.InvalidTransition, exception.BackupNotFound):
                pass        # a late send went out and was served
            raise

    # -- restore --------------------------------------------------------------
    def restore(self, context, backup_id, volume_id=None, name=None):
        """Write the backup into ``volume_id`` (available, large enough,
        of the caller's project), or into a new volume (named ``name``
        or ``restore_backup_<id>``); returns (backup, volume)."""
        self.volume_rpcapi.require(volume_rpcapi.BACKUP_RPC, 'a restore')
        with db_api.reader() as session:
            backup = db_backups.get(session, backup_id, self._scope(context))
            policy.authorize(context, policy.BACKUP_RESTORE,
                             {'project_id': backup.project_id})
            self._check_restorable(backup)
            check_backup_service_up(session, self.conf)
            if volume_id is not None:
                volume = db_volumes.get(session, volume_id,
                                        self._scope(context))
                policy.authorize(context, policy.VOLUME_UPDATE,
                                 {'project_id': volume.project_id})
                self._check_target(volume, backup)
                _check_volume_backend(session, volume, self.conf)
        if volume_id is None:
            return backup, self._restore_to_new(context, backup, name)

        # (run again from its start on a deadlock: the cast comes after
        # the commit)
        def _mark(session):
            locked = db_volumes.lock(session, volume_id)
            self._check_target(locked, backup)
            self._check_restorable(db_backups.lock(session, backup.id))
            if db_attachments.live_statuses(session, volume_id):
                raise exception.InvalidVolume(
                    reason='Volume to be restored to must be available')
            db_volumes.transition(session, volume_id, 'restore')
            db_backups.transition(session, backup.id, 'restore',
                                  values={'restore_volume_id': volume_id,
                                          'progress_bytes': 0})
            return locked, _backup_host(session, backup, self.conf)
        locked, host = db_api.run_writer(_mark)
        LOG.info('backup %s: restoring into volume %s', backup.id,
                 volume_id)
        try:
            self.rpcapi.restore_backup(context, host, backup.id, volume_id)
        except Exception as e:
            records.restore_failed(context, backup.id, volume_id,
                                   locked.project_id,
                                   'the restore could not be sent: %s' % e)
            raise
        return backup, locked

    def _restore_to_new(self, context, backup, name):
        request = {'size': backup.size,
                   'name': name or 'restore_backup_%s' % backup.id,
                   'description': 'auto-created_from_restore_from_backup',
                   'backup_id': backup.id}
        volume, _type = self.volumes.create(context, request)
        return volume

    @staticmethod
    def _check_restorable(backup):
        if backup.status != states.AVAILABLE:
            raise exception.InvalidBackup(
                reason='Backup status must be available')
        if not backup.size:
            raise exception.InvalidBackup(
                reason='Backup to be restored has invalid size')

    @staticmethod
    def _check_target(volume, backup):
        if volume.status != states.AVAILABLE:
            raise exception.InvalidVolume(
                reason='Volume to be restored to must be available')
        if backup.size > volume.size:
            raise exception.InvalidVolume(
                reason='volume size %d is too small to restore backup of '
                       'size %d.' % (volume.size, backup.size))

    # -- actions --------------------------------------------------------------
    def reset_status(self, context, backup_id, status):
        backup = self.get(context, backup_id, policy.BACKUP_RESET_STATUS)
        notify.info(context, self.conf.host, 'backup.reset_status.start',
                    _payload(backup))
        db_api.run_writer(db_backups.transition, backup.id, 'reset_status',
                          status)
        LOG.warning('backup %s: %s -> %s (os-reset_status by %s)',
                    backup.id, backup.status, status, context.user_id)
        notify.info(context, self.conf.host, 'backup.reset_status.end',
                    _payload(backup, status=status))

    # -- export and import ----------------------------------------------------
    def export_record(self, context, backup_id):
        backup = self.get(context, backup_id, policy.BACKUP_EXPORT)
        if backup.status != states.AVAILABLE:
            raise exception.InvalidBackup(
                reason='Backup status must be available and not %s.'
                % backup.status)
        with db_api.reader() as session:
            metadata = db_metadata.get(session, backup.id)
        return {'backup_service': backup.service,
                'backup_url': encode_record(backup, metadata)}

    def import_record(self, context, backup_service, backup_url):
        """Record the backup a record (of export_record) describes, with
        the record's id, in the caller's project (``creating``), and ask
        a backup service to find it in the store."""
        policy.authorize(context, policy.BACKUP_IMPORT)
        record = decode_record(backup_url)
        ours = drivers.service_name(self.conf.backup_driver)
        if drivers.service_name(backup_service) != ours:
            raise exception.InvalidInput(
                reason='The backup services of this cloud keep backups '
                       'with %s, not %s.' % (ours, backup_service))
        with db_api.reader() as session:
            check_backup_service_up(session, self.conf)
        values = {
            'id': record['id'],
            'volume_id': record.get('volume_id') or NIL_VOLUME,
            'snapshot_id': record.get('snapshot_id'),
            'project_id': context.project_id,
            'user_id': context.user_id,
            'name': record.get('display_name'),
            'description': record.get('display_description'),
            'container': record.get('container'),
            'availability_zone': record.get('availability_zone'),
            'status': states.CREATING,
            'size': record['size'],
            'object_count': record.get('object_count') or 0,
            'progress_bytes': 0,
            'num_dependent_backups': 0,
            'service': ours,
            'service_metadata': json.dumps(record['service_metadata'])
            if isinstance(record['service_metadata'], dict)
            else record['service_metadata'],
            'volume_meta': record.get('volume_meta'),
            'data_timestamp': _parse_time(record.get('data_timestamp')),
            'deleted': False,
            'created_at': models.utcnow(),
        }

        # (run again from its start on a deadlock: the cast comes after
        # the commit)
        def make(session):
            existing = session.get(models.Backup, record['id'])
            if existing is not None and not existing.deleted:
                raise exception.InvalidBackup(
                    reason='Backup already exists in database.')
            if existing is not None:
                # as Cinder: a deleted backup's record comes back (the
                # old row's object leaves the session with it)
                db_backups.purge_deleted(session, record['id'])
                session.expunge(existing)
            return db_backups.create(
                session, values, quota.Checker(self.conf, session),
                metadata=record.get('metadata') or None)
        backup = quota.ensuring_rows(lambda: db_api.run_writer(make))
        LOG.info('backup %s: imported as creating (store %s)', backup.id,
                 backup_service)
        try:
            self.rpcapi.import_record(context, backup.id)
        except Exception:
            db_api.run_writer(db_backups.remove, backup.id)
            raise
        return backup


def encode_record(backup, metadata):
    """export_record's ``backup_url``: base64 of a JSON of the backup's
    fields (Cinder's keys), ``driver_info`` included."""
    record = {
        'id': backup.id, 'user_id': backup.user_id,
        'project_id': backup.project_id, 'volume_id': backup.volume_id,
        'host': backup.host, 'availability_zone': backup.availability_zone,
        'container': backup.container, 'parent_id': backup.parent_id,
        'status': backup.status, 'fail_reason': backup.fail_reason,
        'size': backup.size, 'display_name': backup.name,
        'display_description': backup.description,
        'service_metadata': backup.service_metadata,
        'service': backup.service, 'object_count': backup.object_count,
        'num_dependent_backups': backup.num_dependent_backups,
        'snapshot_id': backup.snapshot_id,
        'data_timestamp': _time(backup.data_timestamp),
        'created_at': _time(backup.created_at),
        'updated_at': _time(backup.updated_at),
        'metadata': metadata, 'volume_meta': backup.volume_meta,
        'driver_info': {},
    }
    return base64.b64encode(json.dumps(record).encode()).decode()


def decode_record(backup_url):
    try:
        text = base64.b64decode(backup_url, validate=True).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise exception.InvalidInput(reason="Can't decode backup record.")
    try:
        record = json.loads(text)
    except ValueError:
        raise exception.InvalidInput(reason="Can't parse backup record.")
    if not isinstance(record, dict):
        raise exception.InvalidInput(reason="Can't parse backup record.")
    if not isinstance(record.get('id'), str):
        raise exception.InvalidInput(
            reason='Provided backup record is missing an id')
    try:
        uuid.UUID(record['id'])
    except ValueError:
        raise exception.InvalidInput(
            reason='Provided backup record has an id that is not a UUID')
    if not isinstance(record.get('size'), int) or record['size'] < 1:
        raise exception.InvalidInput(
            reason='Provided backup record is missing size attribute')
    missing = [k for k in RECORD_KEYS if k not in record]
    if missing:
        raise exception.InvalidInput(
            reason='Provided backup record is missing fields (%s).'
            % ', '.join(missing))
    meta = record.get('service_metadata')
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            meta = None
    if not isinstance(meta, dict):
        raise exception.InvalidInput(
            reason='Provided backup record has no service_metadata this '
                   'cloud\'s store can read')
    for key in ('display_name', 'display_description', 'container'):
        if record.get(key) is not None and (
                not isinstance(record[key], str) or len(record[key]) > 255):
            raise exception.InvalidInput(
                reason='Provided backup record has an invalid %s' % key)
    if not isinstance(record.get('object_count'), int):
        raise exception.InvalidInput(
            reason='Provided backup record has an invalid object_count')
    if record.get('metadata') is not None and not isinstance(
            record['metadata'], dict):
        raise exception.InvalidInput(
            reason='Provided backup record has invalid metadata')
    return record


def _time(value):
    return value.isoformat() if value else None


def _parse_time(value):
    if not value:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(str(value).replace(
            'Z', '+00:00'))
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(datetime.timezone.utc).replace(
            tzinfo=None)
    return parsed


def _payload(backup, **changes):
    from cinder_lite.backup import manager
    return manager.payload(backup, **changes)
