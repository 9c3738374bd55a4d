"""The backup manager: the RPC server of one backup service
(``cinder-lite-backup``).

Its endpoints are casts that hand the work to a pool of
``backup_max_operations`` threads and return, so that a long copy never
holds the RPC server's own threads.  A backup asks the volume's service
for an export for this host (of a temporary snapshot when the volume is
in use), opens it with the compute-side connector as a host would,
gives the device to the driver, and always asks for the export to be
removed again.  A restore does the same with a read-write export.

What a backup or a restore that this service was running when it
stopped left behind is settled when it starts again (``reconcile``), and
by any backup service once this one has been down for
``service_down_time``: a backup being made becomes ``error``, a restore
leaves its volume ``error_restoring`` and the backup ``available``; the
export is removed either way.
"""
import collections
import concurrent.futures
import contextlib
import datetime
import json
import logging
import threading
import time

from oslo_utils import importutils
from oslo_utils import timeutils
import oslo_messaging as messaging

from cinder_lite.backup import drivers
from cinder_lite.backup import rpcapi
from cinder_lite.common import constants
from cinder_lite.common import context as cl_context
from cinder_lite.common import credentials
from cinder_lite.common import exception
from cinder_lite.common import notify
from cinder_lite.common import states
from cinder_lite.connector import devices
from cinder_lite.connector import host as connector_host
from cinder_lite.db import api as db_api
from cinder_lite.db import backup_outcomes as records
from cinder_lite.db import backups as db_backups
from cinder_lite.db import models
from cinder_lite.db import services as db_services
from cinder_lite.db import volumes as db_volumes
from cinder_lite import service
from cinder_lite.volume import rpcapi as volume_rpcapi

LOG = logging.getLogger(__name__)

# how often a running copy writes its progress into the backup's row
# (which also keeps it fresh for reconciliation)
PROGRESS_EVERY_S = 1.0


class Stopped(exception.CinderLiteError):
    msg_fmt = '%(reason)s'


def payload(backup, **changes):
    """The payload of ``backup.*`` notifications (Cinder's keys)."""
    get = (backup.get if isinstance(backup, dict)
           else lambda k: getattr(backup, k, None))
    created = get('created_at')
    out = {
        'tenant_id': get('project_id'),
        'user_id': get('user_id'),
        'availability_zone': get('availability_zone'),
        'backup_id': get('id'),
        'host': get('host'),
        'display_name': get('name'),
        'created_at': created.isoformat() if hasattr(created, 'isoformat')
        else created,
        'status': get('status'),
        'volume_id': get('volume_id'),
        'size': get('size'),
        'service_metadata': get('service_metadata'),
        'service': get('service'),
        'fail_reason': get('fail_reason'),
    }
    out.update(changes)
    return out


def _same_store(a, b):
    """Whether backups ``a`` and ``b`` name the same objects: the same
    container and service_metadata (the driver's names for them)."""
    def meta(backup):
        try:
            return json.loads(backup.service_metadata or '{}')
        except ValueError:
            return backup.service_metadata
    return a.container == b.container and bool(meta(a)) and \
        meta(a) == meta(b)


class BackupManager:

    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def __init__(self, conf, host):
        self.conf = conf
        self.host = host
        self.driver_name = drivers.service_name(conf.backup_driver)
        self.driver = importutils.import_class(
            drivers.class_path(conf.backup_driver))(conf)
        self.volume_rpcapi = volume_rpcapi.VolumeAPI(conf)
        self.connector = connector_host.get_connector(
            host=host, ip=conf.backup_my_ip)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=conf.backup_max_operations or 64,
            thread_name_prefix='backup')
        # backups this process works on: reconciliation leaves them alone
        self._busy = set()
        # backups whose work waits for a thread of the pool (count a
        # backup id: a restore and a delete of it may both wait)
        self._queued = collections.Counter()
        self._busy_lock = threading.Lock()
        self._stop = threading.Event()
        self._periodic = None

    # -- the service's life -----------------------------------------------
    def init_host(self):
        self.driver.check_for_setup_error()

    def start_reconciling(self):
        self._periodic = threading.Thread(
            target=service.run_periodically,
            args=(self.reconcile_now, self.conf.reconcile_interval,
                  self._stop, 'backup reconcile of %s' % self.host),
            daemon=True, name='backup-reconcile-%s' % self.host)
        self._periodic.start()

    def cleanup(self):
        self._stop.set()
        # queued copies are not started; one under way fails when the
        # driver lets go of its store, and reconciliation settles it
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._periodic is not None:
            self._periodic.join(timeout=30)
        self.driver.close()

    @contextlib.contextmanager
    def _working_on(self, backup_id):
        with self._busy_lock:
            if backup_id in self._busy:
                raise Stopped(reason='backup %s is worked on already'
                              % backup_id)
            self._busy.add(backup_id)
        try:
            yield
        finally:
            with self._busy_lock:
                self._busy.discard(backup_id)

    def _submit(self, work, *args):
        if self._stop.is_set():
            # not taken: the message is lost with the stopping service,
            # and the record is settled by reconciliation
            LOG.warning('backup service %s is stopping: %s not started',
                        self.host, work.__name__)
            return

        backup_id = args[1]
        with self._busy_lock:
            self._queued[backup_id] += 1

        def run():
            try:
                work(*args)
            except Exception:
                LOG.exception('%s%s failed', work.__name__, args[1:])
            finally:
                with self._busy_lock:
                    self._queued[backup_id] -= 1
                    if self._queued[backup_id] <= 0:
                        del self._queued[backup_id]
        self._pool.submit(run)

    # -- endpoints (casts) --------------------------------------------------
    def create_backup(self, ctxt, backup_id):
        # taken now, while the work may still wait for a thread: a backup
        # no service has taken is one whose message was lost
        db_api.run_writer(db_backups.take, backup_id, self.host)
        self._submit(self._create, ctxt, backup_id)

    def restore_backup(self, ctxt, backup_id, volume_id):
        self._submit(self._restore, ctxt, backup_id, volume_id)

    def delete_backup(self, ctxt, backup_id):
        self._submit(self._delete, ctxt, backup_id)

    def import_record(self, ctxt, backup_id):
        self._submit(self._import, ctxt, backup_id)

    # -- a backup -------------------------------------------------------------
    def _create(self, ctxt, backup_id):
        # (run again from its start on a deadlock: the copy comes after
        # the commit)
        def _start(session):
            try:
                backup = db_backups.get(session, backup_id)
            except exception.BackupNotFound:
                return None, None
            if backup.status != states.CREATING:
                return backup.status, None
            # (VolumeNotFound: force-deleted since the API recorded the
            # backup; nothing written)
            volume = db_volumes.get(session, backup.volume_id)
            db_backups.update(session, backup_id,
                              {'host': self.host,
                               'service': self.driver_name})
            backup = db_backups.get(session, backup_id)
            record = db_backups.record(backup)
            parent = (db_backups.record(db_backups.get(session,
                                                       backup.parent_id))
                      if backup.parent_id else None)
            return backup.status, (backup, record, parent, volume.host)
        try:
            status, started = db_api.run_writer(_start)
        except exception.VolumeNotFound:
            self._volume_gone(ctxt, backup_id)
            return
        if started is None:
            if status is not None:
                LOG.info('backup %s is %s: not made again', backup_id,
                         status)
            return
        backup, record, parent, volume_host = started
        with self._working_on(backup_id):
            self._copy(ctxt, backup, record, parent, volume_host)

    def _volume_gone(self, ctxt, backup_id):
        """The volume of a backup this service took was deleted (forced)
        before the backup was begun: the backup is ``error`` now, not
        left ``creating`` until reconciliation."""
        with db_api.reader() as session:
            try:
                backup = db_backups.get(session, backup_id)
            except exception.BackupNotFound:
                return
        reason = ('the volume %s was deleted before the backup was made'
                  % backup.volume_id)
        if not records.backup_failed(backup_id, backup.project_id, reason,
                                     request_id=getattr(ctxt, 'request_id',
                                                        None)):
            return
        # (its snapshot, when it backs one up, is read no more)
        self._end_reading(backup, False)
        notify.info(ctxt, self.host, 'backup.create.error',
                    payload(backup, status=states.ERROR,
                            fail_reason=reason))

    def _copy(self, ctxt, backup, record, parent, volume_host):
        backup_id = backup.id
        # a backup of a snapshot reads it; of a volume in use, a snapshot
        # made now; of an available volume, the volume itself; with a
        # driver that diffs snapshots, a backup snapshot the volume
        # service makes now (when its backend has them) instead of both
        temporary = (not backup.snapshot_id and
                     backup.volume_status != states.AVAILABLE)
        snapshot_id = backup.snapshot_id or (backup_id if temporary
                                             else None)
        wanted = (None if backup.snapshot_id
                  else self.driver.source_snapshot(record))
        made = None
        exported = False
        ended = False
        try:
            info = self._export(ctxt, volume_host, backup_id,
                                backup.volume_id, snapshot_id, temporary,
                                'ro', source_snapshot=wanted)
            exported = True
            made = (info.get('data') or {}).get('source_snapshot')
            if made:
                snapshot_id, temporary = None, False
            taken = models.utcnow()
            if temporary or made:
                # the point in time is the snapshot's: the hosts may go on
                ended = True
                records.end_backing_up(backup.volume_id)
            device = self._open(info, backup_id)
            try:
                progress = _Progress(self, ctxt, backup, device.size)
                result = self.driver.backup(record, device, parent,
                                            progress)
            finally:
                device.close()
            # the volume (or snapshot) is given back before the backup is
            # available: whoever sees the backup done may use the volume
            exported = False
            self._unexport(ctxt, volume_host, backup_id, backup.volume_id,
                           snapshot_id, temporary,
                           keep=self._kept_snapshots(backup, made)
                           if made else None)
            ended = self._end_reading(backup, ended)
            db_api.run_writer(
                db_backups.transition, backup_id, 'created', values={
                    'container': result.get('container'),
                    'service_metadata': json.dumps(
                        result.get('service_metadata') or {}),
                    'object_count': int(result.get('object_count') or 0),
                    'progress_bytes': progress.total,
                    'data_timestamp': (backup.data_timestamp or taken)})
            LOG.info('backup %s of volume %s: creating -> available (%d '
                     'objects%s)', backup_id, backup.volume_id,
                     result.get('object_count') or 0,
                     ', incremental to %s' % parent['id'] if parent else '')
            notify.info(ctxt, self.host, 'backup.create.end',
                        payload(backup, status=states.AVAILABLE,
                                service_metadata=result.get(
                                    'service_metadata')))
        except Exception as e:
            reason = getattr(e, 'message', None) or str(e) or repr(e)
            if isinstance(e, Stopped):
                LOG.warning('backup %s stopped: %s', backup_id, reason)
            else:
                LOG.exception('backup %s of volume %s failed', backup_id,
                              backup.volume_id)
            records.backup_failed(backup_id, backup.project_id, reason,
                                  request_id=getattr(ctxt, 'request_id',
                                                     None))
            notify.info(ctxt, self.host, 'backup.create.error',
                        payload(backup, status=states.ERROR,
                                fail_reason=reason))
        finally:
            if exported:
                # a failed backup's snapshot goes, the others' stay
                self._unexport(ctxt, volume_host, backup_id,
                               backup.volume_id, snapshot_id, temporary,
                               keep=self._kept_snapshots(backup, None)
                               if made else None)
            self._end_reading(backup, ended)

    def _kept_snapshots(self, backup, made):
        """The backup snapshots of ``backup``'s volume that stay once it
        is done: ``made`` (its own, when it succeeded; None when it
        failed), and what the volume's other backups still need: the
        snapshot each one being made reads and the one it diffs from,
        and, after a failure, the ones the finished backups were made
        from (the next backup diffs from the newest: a success keeps
        only its own, as Cinder's driver keeps one)."""
        keep = {made} if made else set()
        with db_api.reader() as session:
            others = [db_backups.record(b) for b in
                      db_backups.of_volume(session, backup.volume_id)
                      if b.id != backup.id]
        by_id = {b['id']: b for b in others}
        for other in others:
            if other['status'] == states.CREATING:
                keep.add(self.driver.source_snapshot(other))
                parent = by_id.get(other['parent_id'])
                if parent is not None:
                    keep.add(self.driver.source_snapshot_of(parent))
            elif not made:
                keep.add(self.driver.source_snapshot_of(other))
        keep.discard(None)
        return sorted(keep)

    @staticmethod
    def _end_reading(backup, ended):
        """The snapshot or volume ``backup`` read is what it was before
        (once); True."""
        if ended:
            return True
        if backup.snapshot_id:
            records.end_snapshot_backup(backup.snapshot_id)
        else:
            records.end_backing_up(backup.volume_id)
        return True

    def _export(self, ctxt, volume_host, backup_id, volume_id, snapshot_id,
                temporary, mode, source_snapshot=None):
        return self.volume_rpcapi.backup_export(
            ctxt, volume_host, backup_id, volume_id, snapshot_id, temporary,
            mode, self.connector, timeout=self.conf.backup_rpc_timeout,
            source_snapshot=source_snapshot)

    def _unexport(self, ctxt, volume_host, backup_id, volume_id,
                  snapshot_id, temporary, keep=None):
        try:
            self.volume_rpcapi.backup_unexport(
                ctxt, volume_host, backup_id, volume_id, snapshot_id,
                temporary, timeout=self.conf.backup_rpc_timeout,
                keep_source_snapshots=keep)
        except Exception:
            # the volume service removes it at its next start (no
            # attachment owns it); a temporary snapshot is removed by
            # this service's reconciliation
            LOG.exception('backup %s: the export of volume %s could not be '
                          'removed now', backup_id, volume_id)

    def _open(self, info, backup_id):
        data = credentials.keyring(self.conf).reveal(
            info['data'], 'backup-%s' % backup_id)
        return devices.connect(
            dict(data, driver_volume_type=info['driver_volume_type']),
            source_address=self.conf.backup_my_ip,
            initiator=self.connector['initiator'])

    # -- a restore --------------------------------------------------------
    def _restore(self, ctxt, backup_id, volume_id):
        with db_api.reader() as session:
            try:
                backup = db_backups.get(session, backup_id)
            except exception.BackupNotFound as e:
                LOG.warning('restore of backup %s into %s: %s', backup_id,
                            volume_id, e)
                return
            try:
                volume = db_volumes.get(session, volume_id)
            except exception.VolumeNotFound as e:
                LOG.warning('restore of backup %s into %s: %s', backup_id,
                            volume_id, e)
                volume = None
            if volume is not None:
                if backup.status != states.RESTORING or \
                        backup.restore_volume_id != volume_id or \
                        volume.status != states.RESTORING_BACKUP:
                    LOG.info('restore of backup %s into volume %s: not '
                             'under way (backup %s, volume %s)', backup_id,
                             volume_id, backup.status, volume.status)
                    return
                chain = [db_backups.record(b)
                         for b in db_backups.chain(session, backup)]
                volume_host, project_id = volume.host, volume.project_id
        if volume is None:
            if backup.status == states.RESTORING and \
                    backup.restore_volume_id == volume_id:
                # force-deleted before the restore was begun: the backup
                # is available again now, not restoring until
                # reconciliation
                records.restore_failed(
                    ctxt, backup_id, volume_id, backup.project_id,
                    'the volume %s was deleted before the restore was '
                    'made' % volume_id)
            return
        db_api.run_writer(db_backups.update, backup_id,
                          {'progress_bytes': 0})
        notify.info(ctxt, self.host, 'backup.restore.start',
                    payload(backup, status=states.RESTORING,
                            volume_id=volume_id))
        with self._working_on(backup_id):
            exported = False
            try:
                info = self._export(ctxt, volume_host, backup_id, volume_id,
                                    None, False, 'rw')
                exported = True
                device = self._open(info, backup_id)
                try:
                    if device.size < backup.size * 1024 ** 3:
                        raise exception.InvalidVolume(
                            reason='volume %s (%d bytes) is smaller than '
                                   'backup %s (%d GiB)' % (
                                       volume_id, device.size, backup_id,
                                       backup.size))
                    progress = _Progress(self, ctxt, backup, device.size,
                                         restoring=True)
                    self.driver.restore(chain, device, progress)
                    device.flush()
                finally:
                    device.close()
                exported = False
                self._unexport(ctxt, volume_host, backup_id, volume_id,
                               None, False)
                records.restored(backup_id, volume_id)
                notify.info(ctxt, self.host, 'backup.restore.end',
                            payload(backup, status=states.AVAILABLE,
                                    volume_id=volume_id))
            except Exception as e:
                reason = getattr(e, 'message', None) or str(e) or repr(e)
                LOG.exception('restore of backup %s into volume %s failed',
                              backup_id, volume_id)
                records.restore_failed(ctxt, backup_id, volume_id,
                                       project_id, reason)
                notify.info(ctxt, self.host, 'backup.restore.error',
                            payload(backup, status=states.AVAILABLE,
                                    volume_id=volume_id,
                                    fail_reason=reason))
            finally:
                if exported:
                    self._unexport(ctxt, volume_host, backup_id, volume_id,
                                   None, False)

    # -- a delete -------------------------------------------------------------
    def _delete(self, ctxt, backup_id):
        with db_api.reader() as session:
            try:
                backup = db_backups.get(session, backup_id)
            except exception.BackupNotFound:
                return
        if backup.status != states.DELETING:
            return
        # a backup being made that was force-deleted: its copy stops at
        # its next progress report and removes what it wrote; wait
        for _ in range(600):
            with self._busy_lock:
                if backup_id not in self._busy:
                    break
            time.sleep(0.1)
        record = db_backups.record(backup)
        with db_api.reader() as session:
            sharers = [b.id for b in db_backups.others_in_container(
                session, backup) if _same_store(b, backup)]
        try:
            if sharers:
                LOG.info('backup %s: its objects stay, backup %s (imported '
                         'from the same record) uses them', backup_id,
                         sharers[0])
            else:
                # also a backup cut short: the driver finds what it wrote
                self.driver.delete(record)
        except Exception as e:
            reason = getattr(e, 'message', None) or str(e)
            LOG.exception('backup %s: delete failed', backup_id)

            def _failed(session):
                try:
                    db_backups.transition(session, backup_id,
                                          'delete_failed',
                                          values={'fail_reason':
                                                  reason[:255]})
                except (exception.BackupNotFound,
                        exception.InvalidTransition):
                    return
                records.message_delete_failed(session, backup, reason)
            db_api.run_writer(_failed)
            return
        try:
            db_api.run_writer(db_backups.transition, backup_id, 'deleted')
        except (exception.BackupNotFound, exception.InvalidTransition):
            return
        LOG.info('backup %s: deleting -> deleted', backup_id)
        notify.info(ctxt, self.host, 'backup.delete.end',
                    payload(backup, status=states.DELETED))

    # -- import -------------------------------------------------------------
    def _import(self, ctxt, backup_id):
        with db_api.reader() as session:
            try:
                backup = db_backups.get(session, backup_id)
            except exception.BackupNotFound:
                return
        if backup.status != states.CREATING:
            return
        try:
            self.driver.verify(db_backups.record(backup))
        except Exception as e:
            reason = getattr(e, 'message', None) or str(e)
            records.backup_failed(backup_id, backup.project_id,
                                  'import: %s' % reason)
            return
        try:
            db_api.run_writer(db_backups.transition, backup_id, 'created',
                              values={'host': self.host})
        except (exception.BackupNotFound, exception.InvalidTransition):
            return
        LOG.info('backup %s imported: creating -> available', backup_id)

    # -- reconciliation ---------------------------------------------------
    def reconcile_now(self, max_age=None):
        """Settle the backups and restores that a backup service (this
        one before a restart, or another one that is down) left in
        ``creating`` or ``restoring``; returns the changes made."""
        if max_age is None:
            max_age = self.conf.reconcile_after
        return self._settle_stale(
            models.utcnow() - datetime.timedelta(seconds=max_age))

    def work_cleanup(self, ctxt, service_host, until, resource_id=None):
        """RPC 1.1 (cast): POST /workers/cleanup.  Settle what backup
        service ``service_host`` (this one, or another that is down) left
        ``creating`` or ``restoring`` before ``until`` (ISO 8601)."""
        LOG.info('workers cleanup of %s requested (request %s)',
                 service_host, ctxt.request_id)
        changes = self._settle_stale(
            timeutils.normalize_time(timeutils.parse_isotime(until)),
            service_host, resource_id)
        LOG.info('workers cleanup of %s done: %d change(s)', service_host,
                 len(changes))
        return changes

    def _settle_stale(self, cutoff, host=None, only=None):
        with db_api.reader() as session:
            found = db_backups.stale(session, (states.CREATING,
                                               states.RESTORING), cutoff,
                                     host)
            up = {s.host for s in db_services.liveness(
                session, constants.BACKUP_BINARY)
                if db_services.is_up(s.heartbeat_at,
                                     self.conf.service_down_time)}
        with self._busy_lock:
            busy = set(self._busy) | set(self._queued)
        changes = []
        for backup in found:
            if backup.id in busy or only not in (None, backup.id):
                continue
            # another live service's work is its own (it may be slow);
            # this host's is not running here, so it was cut short
            if backup.host and backup.host != self.host and \
                    backup.host in up:
                continue
            if not db_api.run_writer(db_backups.claim_stale, backup.id,
                                     backup.status, backup.updated_at):
                continue
            change = self._settle(backup)
            if change:
                LOG.warning('reconcile: %s', change)
                changes.append(change)
        return changes

    def _settle(self, backup):
        ctxt = cl_context.get_admin_context()
        volume_host = None
        with db_api.reader() as session:
            try:
                volume_host = db_volumes.get(session, backup.volume_id).host
            except exception.VolumeNotFound:
                pass
        if backup.status == states.CREATING:
            temporary = (not backup.snapshot_id and
                         backup.volume_status != states.AVAILABLE)
            snapshot_id = backup.snapshot_id or (backup.id if temporary
                                                 else None)
            if volume_host:
                # (with the backup snapshot it may have had made)
                record = db_backups.record(backup)
                self._unexport(ctxt, volume_host, backup.id,
                               backup.volume_id, snapshot_id, temporary,
                               keep=self._kept_snapshots(backup, None)
                               if self.driver.source_snapshot(record)
                               else None)
            reason = ('interrupted: the backup service %s stopped while it '
                      'made the backup' % (backup.host or 'that took it'))
            if not records.backup_failed(backup.id, backup.project_id,
                                         reason,
                                         event='create_interrupted'):
                return None
            # (the driver removes a partial backup's objects at a delete)
            if backup.snapshot_id:
                records.end_snapshot_backup(backup.snapshot_id)
            else:
                records.end_backing_up(backup.volume_id)
            return 'backup %s: creating -> error (%s)' % (backup.id, reason)
        volume_id = backup.restore_volume_id
        if volume_id is None:
            return None
        with db_api.reader() as session:
            try:
                status = db_volumes.get(session, volume_id).status
            except exception.VolumeNotFound:
                status = None
        if status == states.CREATING:
            # the volume made for it is not there yet: its volume
            # service's reconciliation finishes the create first
            return None
        if volume_host and status == states.RESTORING_BACKUP:
            self._unexport(ctxt, volume_host, backup.id, volume_id, None,
                           False)
        records.restore_failed(
            ctxt, backup.id, volume_id, backup.project_id,
            'interrupted: the backup service stopped while it restored '
            'the backup; the volume holds part of it (restore again or '
            'delete it)')
        return 'backup %s: restoring -> available, volume %s -> %s' % (
            backup.id, volume_id, states.ERROR_RESTORING
            if status == states.RESTORING_BACKUP else status)


class _Progress:
    """The ``progress`` a driver reports to: the backup's row gets the
    bytes done and objects written at most every PROGRESS_EVERY_S
    seconds, ``backup.createprogress`` is sent every
    ``backup_object_number_per_notification`` objects and (with the
    timer on) every ``backup_timer_interval`` seconds; a backup that is
    no longer ``creating`` (force-deleted) stops the copy."""

    def __init__(self, manager, ctxt, backup, size, restoring=False):
        self.manager = manager
        self.ctxt = ctxt
        self.backup = backup
        self.size = size
        self.restoring = restoring
        self.total = 0
        self.objects = 0
        self._written = time.monotonic()
        self._notified = time.monotonic()
        self._notified_objects = 0

    def __call__(self, done, objects=0):
        self.total = done
        self.objects = objects
        now = time.monotonic()
        conf = self.manager.conf
        if now - self._written >= PROGRESS_EVERY_S:
            self._written = now
            self._record()
        if self.restoring:
            return
        due = (objects - self._notified_objects >=
               conf.backup_object_number_per_notification) or (
            conf.backup_enable_progress_timer and
            now - self._notified >= conf.backup_timer_interval)
        if due:
            self._notified = now
            self._notified_objects = objects
            notify.info(self.ctxt, self.manager.host,
                        'backup.createprogress',
                        payload(self.backup, status=states.CREATING,
                                backup_size=self.size, object_count=objects,
                                progress_bytes=done))

    def _record(self):
        values = {'progress_bytes': self.total}
        if not self.restoring:
            values['object_count'] = self.objects

        def _write(session):
            status = session.execute(
                db_backups.status_of(self.backup.id)).scalar_one_or_none()
            if status != (states.RESTORING if self.restoring
                          else states.CREATING):
                raise Stopped(reason='backup %s is %s now' % (
                    self.backup.id, status or 'deleted'))
            db_backups.update(session, self.backup.id, values)
        db_api.run_writer(_write)
