"""The volume manager: one per backend section, serving RPC as
``host@backend``.  Endpoints load the volume, run a flow, record the
outcome."""
import contextlib
import logging
import threading

from oslo_utils import importutils
from oslo_utils import timeutils
import oslo_messaging as messaging

from cinder_lite.backup import rpcapi as backup_rpcapi
from cinder_lite.common import context as cl_context
from cinder_lite.common import credentials
from cinder_lite.common import exception
from cinder_lite.common import notify
from cinder_lite.common import states
from cinder_lite.conf import volume as volume_conf
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import backup_outcomes as records
from cinder_lite.db import messages as db_messages
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volumes as db_volumes
from cinder_lite import service
from cinder_lite.volume import nova
from cinder_lite.volume import flows
from cinder_lite.volume.flows import connect as connect_flow
from cinder_lite.volume.flows import create as create_flow
from cinder_lite.volume.flows import delete as delete_flow
from cinder_lite.volume.flows import disconnect as disconnect_flow
from cinder_lite.volume.flows import promote as promote_flow
from cinder_lite.volume.flows import reimage as reimage_flow
from cinder_lite.volume.flows import revert as revert_flow
from cinder_lite.volume.flows import snapshot as snapshot_flow
from cinder_lite.volume import snapshot_api
from cinder_lite.volume.flows import upload as upload_flow
from cinder_lite.volume import glance
from cinder_lite.volume import manage_manager
from cinder_lite.volume import group_manager
from cinder_lite.volume import image_api
from cinder_lite.volume import migration
from cinder_lite.volume import reconcile as reconcile_mod
from cinder_lite.volume import rpcapi

LOG = logging.getLogger(__name__)

EVENT_CREATE_FAILED = 'VOLUME_VOLUME_002_002'
# Cinder's actions "copy image to volume" and "copy volume to image",
# with "an unknown error occurred" and "failed to upload volume to image"
EVENT_IMAGE_DOWNLOAD_FAILED = 'VOLUME_VOLUME_005_001'
EVENT_IMAGE_UPLOAD_FAILED = 'VOLUME_VOLUME_003_004'
EVENT_DELETE_FAILED = 'VOLUME_VOLUME_003_002'
EVENT_EXTEND_FAILED = 'VOLUME_VOLUME_007_002'
# Cinder's: resource VOLUME_SNAPSHOT, action create/delete snapshot,
# detail "Snapshot failed to create/delete."
EVENT_SNAPSHOT_CREATE_FAILED = 'VOLUME_VOLUME_SNAPSHOT_009_013'
EVENT_SNAPSHOT_DELETE_FAILED = 'VOLUME_VOLUME_SNAPSHOT_010_016'


volume_dict = db_volumes.summary


# what a connect or disconnect that failed (or was given up) leaves its
# attachment in
_RECORDED_FAILED = (states.ERROR_ATTACHING, states.ERROR_DETACHING)


def _failed(what):
    """The error of a connect or disconnect (``what``) the service could
    not do (503)."""
    return (exception.DisconnectFailed if what == 'disconnect'
            else exception.ConnectFailed)


def _refused(what):
    """The error of a connect or disconnect (``what``) that does not apply
    (400)."""
    return (exception.DisconnectRefused if what == 'disconnect'
            else exception.ConnectRefused)


def backup_export_id(backup_id):
    """The id a backup's export and credential go by on the target (an
    attachment's are its own id)."""
    return 'backup-%s' % backup_id


with_qos = flows.with_qos
with_qos_read = flows.with_qos_read


class _RollForward:
    """What reconciliation may run again on a volume service
    (``reconcile.Backend.roll_forward``), as an administrator."""

    def __init__(self, manager, ctxt):
        self._manager = manager
        self._ctxt = ctxt

    def create_volume(self, volume):
        self._manager.create_volume(self._ctxt, volume['id'], volume)

    def delete_volume(self, volume):
        self._manager.delete_volume(self._ctxt, volume['id'])

    def create_snapshot(self, snapshot):
        self._manager.create_snapshot(self._ctxt, snapshot)

    def delete_snapshot(self, snapshot):
        self._manager.delete_snapshot(self._ctxt, snapshot)

    def manage_existing(self, volume):
        self._manager.manage_existing(self._ctxt, volume, None)

    def unmanage_volume(self, volume):
        self._manager.unmanage_volume(self._ctxt, volume['id'])

    def manage_existing_snapshot(self, snapshot):
        self._manager.manage_existing_snapshot(self._ctxt, snapshot, None)

    def unmanage_snapshot(self, snapshot):
        self._manager.unmanage_snapshot(self._ctxt, snapshot)


class VolumeManager(manage_manager.ManageEndpoints,
                    group_manager.GroupEndpoints):

    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def __init__(self, conf, node, section):
        self.conf = conf
        self.section = section
        self.host = '%s@%s' % (node, section)
        # active-active: the members of ``cluster@section`` share the
        # backend, whose volumes live on the cluster; otherwise the
        # backend is this host's
        self.cluster_name = ('%s@%s' % (conf.cluster, section)
                             if conf.cluster else None)
        self.backend_id = self.cluster_name or self.host
        self.backend_conf = volume_conf.BackendConf(conf, section)
        self.backend_name = self.backend_conf.volume_backend_name or section
        driver_cls = importutils.import_class(self.backend_conf.volume_driver)
        self.driver = driver_cls(self.backend_conf, self.backend_name,
                                 self.host)
        self.service_uuid = None
        self.nova = nova.NovaNotifier(conf)
        # ids of volumes and attachments a flow of this process works on:
        # reconciliation leaves them alone
        self._busy = set()
        self._busy_lock = threading.Lock()
        self._takeover_locks = {}
        self._stop = threading.Event()
        self._periodic = None
        self.migrator = migration.Migrator(self)

    @contextlib.contextmanager
    def working_on(self, *ids):
        with self._busy_lock:
            self._busy.update(ids)
        try:
            yield
        finally:
            with self._busy_lock:
                self._busy.difference_update(ids)

    def init_host(self):
        self.driver.do_setup()
        self.driver.check_for_setup_error()
        self.reconcile_exports()

    def join_cluster(self):
        """Move the volumes this service ran alone to its cluster; called
        once the service is up as a member, so the cluster has a
        live member when they get there."""
        if not self.cluster_name:
            return
        moved = db_api.run_writer(db_volumes.join_cluster, self.host,
                                  self.cluster_name)
        if moved:
            LOG.warning('%d volume(s) of %s moved to cluster %s, which '
                        'serves them from now on', len(moved), self.host,
                        self.cluster_name)

    def start_reconciling(self):
        """Reconcile now (in the background) and then every
        ``reconcile_interval`` seconds; called once the service is up.
        """
        self._periodic = threading.Thread(
            target=self._reconcile_loop, daemon=True,
            name='reconcile-%s' % self.host)
        self._periodic.start()

    def _reconcile_loop(self):
        service.run_periodically(self.reconcile_now,
                                 self.conf.reconcile_interval, self._stop,
                                 'reconcile of %s' % self.host)

    def reconcile_now(self, max_age=None):
        """The rules of cinder_lite.volume.reconcile; returns the changes
        made."""
        if max_age is None:
            max_age = self.conf.reconcile_after
        with self._busy_lock:
            busy = set(self._busy)
        return reconcile_mod.run(self._reconcile_backend(), max_age,
                                 busy) + self.reconcile_groups(
                                     self.admin_context(), max_age, busy)

    def _reconcile_backend(self):
        return reconcile_mod.Backend(
            driver=self.driver, host=self.host, backend_id=self.backend_id,
            rpc_timeout=self.conf.volume_rpc_timeout,
            takeover_lock=self.takeover_lock,
            roll_forward=_RollForward(self, self.admin_context()),
            conversion_dir=self.conf.image_conversion_dir)

    @staticmethod
    def admin_context():
        return cl_context.get_admin_context()

    def reconcile_exports(self):
        """Make the backend's exports what the database says: re-create
        the exports of connected attachments that lost theirs, remove the
        exports no live attachment owns."""
        with db_api.reader() as session:
            specs = {}
            wanted = {
                a.id: (with_qos(session, volume_dict(v), specs),
                       a.attach_mode, a.connection_info, a.connector,
                       a.attach_status)
                for a, v in db_attachments.connected_on_host(session,
                                                             self.host)}
        for attachment_id in set(self.driver.list_exports()) - set(wanted):
            LOG.warning('removing export of attachment %s: no live '
                        'attachment owns it', attachment_id)
            self.driver.remove_export(None, None, attachment_id, False)
        for attachment_id, (volume, mode, info, connector, status) in \
                wanted.items():
            if status == states.ATTACH_DETACHING:
                # a disconnect is under way (maybe on a member standing in
                # for this one): its export is kept if there is one, never
                # made again under it
                continue
            try:
                restored = self.driver.ensure_export(
                    volume, attachment_id, mode, info or {}, connector)
            except Exception:
                LOG.exception('restoring the export of attachment %s',
                              attachment_id)
                restored = False
            if not restored:
                LOG.error('could not restore the export of attachment %s '
                          'of volume %s', attachment_id, volume['id'])
        self.driver.prune_exports()

    def cleanup(self):
        """The service stops."""
        self._stop.set()
        if self._periodic is not None:
            self._periodic.join(timeout=30)
        self.driver.stop()

    def capabilities(self):
        return self.driver.get_volume_stats()

    # -- RPC endpoints -----------------------------------------------------
    def create_volume(self, ctxt, volume_id, volume=None):
        """Create the storage of a scheduled volume.  Since 1.2 the
        request carries the volume; from older senders it is read."""
        if volume is None:
            LOG.info('create of volume %s: the request did not carry the '
                     'volume (sender below RPC 1.2); reading it', volume_id)
            try:
                with db_api.reader() as session:
                    volume = volume_dict(db_volumes.get(session, volume_id))
            except exception.VolumeNotFound:
                LOG.warning('create of volume %s: it no longer exists',
                            volume_id)
                return
        # What the volume is made from is recorded on it (``image_id``,
        # ``snapshot_id``, ``source_volid``), never guessed from the image
        # metadata it carries: a clone of a volume from an image carries
        # the image's metadata and is a copy, not a download.
        image_id = volume.get('image_id')
        backup_id = volume.get('backup_id')
        try:
            with self.working_on(volume_id):
                create_flow.run(self.driver, volume, self.service_uuid,
                                self.driver.shares_targets(),
                                self.driver.keeps_reservations(),
                                image_id=image_id, context=ctxt,
                                conf=self.conf)
        except Exception as e:
            LOG.exception('volume %s: create failed -> error', volume_id)
            if image_id is not None:
                event = EVENT_IMAGE_DOWNLOAD_FAILED
                detail = 'create volume from image %s: %s' % (
                    image_id, getattr(e, 'message', None) or e)
            else:
                event = EVENT_CREATE_FAILED
                detail = 'create volume: %s' % e
            self._record_failure(ctxt, volume, 'create_failed', event,
                                 detail)
            return
        if backup_id:
            self._hand_to_backup(ctxt, volume, backup_id)
            return
        notify.info(ctxt, self.host, 'volume.create.end',
                    notify.volume_payload(dict(volume,
                                               status=states.AVAILABLE)))

    def _hand_to_backup(self, ctxt, volume, backup_id):
        """A volume made for a restore exists: a backup service writes
        the backup into it.  If none can be asked, the volume is
        ``error_restoring`` and the backup available again."""
        try:
            backup_rpcapi.BackupAPI(self.conf).restore_backup(
                ctxt, None, backup_id, volume['id'])
        except Exception as e:
            LOG.exception('volume %s: the restore of backup %s could not '
                          'be sent', volume['id'], backup_id)
            records.restore_failed(
                ctxt, backup_id, volume['id'], volume['project_id'],
                'the restore could not be sent to a backup service: %s'
                % e)
            return
        LOG.info('volume %s: made for backup %s, handed to a backup '
                 'service', volume['id'], backup_id)

    # -- migrations (RPC 1.13; cinder_lite.volume.migration) ---------------
    def migrate_volume(self, ctxt, volume_id, dest_host, dest_cluster=None,
                       new_type_id=None):
        self.migrator.migrate(ctxt, volume_id, dest_host, dest_cluster,
                              new_type_id)

    def migrate_finish(self, ctxt, target_id, volume_id):
        self.migrator.finish(ctxt, target_id, volume_id)

    # -- backups --------------------------------------------------------------
    def backup_export(self, ctxt, backup_id, volume_id, snapshot_id,
                      temporary, mode, connector, source_snapshot=None):
        """RPC 1.10 (call): export the volume, or its snapshot
        ``snapshot_id``, for the backup service of ``connector`` (``mode``
        'ro' for a backup, 'rw' for a restore) with a credential of the
        backup's own.  ``temporary``: the snapshot ``snapshot_id`` is made
        now (a backup of a volume in use: its hosts go on writing) and
        removed by ``backup_unexport``.  Returns the connection_info with
        its secrets masked.

        1.11: ``source_snapshot``, a backup snapshot of that name is made
        of the volume now and exported instead, when the backend makes
        them (``data.source_snapshot`` in the answer); it is the point in
        time (no temporary snapshot) and stays after the export, until a
        ``backup_unexport`` no longer keeps it."""
        with db_api.reader() as session:
            volume = volume_dict(db_volumes.get(session, volume_id))
        export_id = backup_export_id(backup_id)
        with self.working_on(volume_id):
            # (a backup of a user's snapshot reads that snapshot)
            wants = bool(source_snapshot) and (temporary or not snapshot_id)
            made = wants and self.driver.create_backup_snapshot(
                volume, source_snapshot)
            if made:
                snapshot_id, temporary = None, False
            elif temporary:
                self.driver.create_snapshot(
                    {'id': snapshot_id, 'volume_id': volume_id,
                     'volume_size': volume['size']})
            try:
                info = self.driver.create_backup_export(
                    volume, snapshot_id, connector, mode, export_id)
                if made:
                    info['data'].update(snapshot_name=source_snapshot,
                                        source_snapshot=source_snapshot)
            except Exception:
                self._drop_backup_export(volume, backup_id, snapshot_id,
                                         temporary)
                if made:
                    self.driver.remove_backup_snapshots(
                        volume, lambda name: name == source_snapshot)
                raise
        LOG.info('volume %s: exported %s(%s) for backup %s', volume_id,
                 'snapshot %s ' % (snapshot_id or source_snapshot)
                 if snapshot_id or made else '', mode, backup_id)
        return dict(info, data=credentials.conceal(info['data']))

    def backup_unexport(self, ctxt, backup_id, volume_id, snapshot_id,
                        temporary, keep_source_snapshots=None):
        """RPC 1.10 (call): undo ``backup_export``.  1.11:
        ``keep_source_snapshots``, the backup snapshots of the volume
        that stay (the others go); None: none is removed."""
        volume = {'id': volume_id}
        try:
            with db_api.reader() as session:
                volume = volume_dict(db_volumes.get(session, volume_id))
        except exception.VolumeNotFound:
            pass
        self._drop_backup_export(volume, backup_id, snapshot_id, temporary)
        if keep_source_snapshots is not None and 'size' in volume:
            keep = set(keep_source_snapshots)
            with self.working_on(volume_id):
                self.driver.remove_backup_snapshots(
                    volume, lambda name: name not in keep)
        LOG.info('volume %s: export for backup %s removed%s', volume_id,
                 backup_id, ' with its temporary snapshot' if temporary
                 else '')

    def _drop_backup_export(self, volume, backup_id, snapshot_id,
                            temporary):
        self.driver.remove_backup_export(volume, snapshot_id,
                                         backup_export_id(backup_id))
        if temporary:
            self.driver.delete_snapshot({'id': snapshot_id,
                                         'volume_id': volume['id']})

    def copy_volume_to_image(self, ctxt, volume_id, image):
        """RPC 1.7: copy an ``uploading`` volume into the queued Glance
        image ``image`` (id, disk_format, container_format); then the
        volume is what its attachments make it again.  On a failure the
        image is removed and the owner gets a message."""
        try:
            with db_api.reader() as session:
                volume = volume_dict(db_volumes.get(session, volume_id))
        except exception.VolumeNotFound:
            return
        try:
            with self.working_on(volume_id), \
                    flows.kept_fresh(volume_id, states.UPLOADING):
                upload_flow.run(self.driver, volume, image, ctxt, self.conf)
        except Exception as e:
            LOG.exception('volume %s: upload to image %s failed', volume_id,
                          image['id'])
            try:
                glance.GlanceClient(self.conf, ctxt).delete(image['id'])
            except Exception as gone:
                LOG.warning('image %s stays in Glance: %s', image['id'],
                            gone)
            db_api.run_writer(
                db_messages.create, volume['project_id'],
                EVENT_IMAGE_UPLOAD_FAILED,
                'upload volume to image %s: %s' % (
                    image['id'], getattr(e, 'message', None) or e),
                resource_type='VOLUME', resource_uuid=volume_id,
                request_id=ctxt.request_id)
        finally:
            image_api.end_upload(volume_id)

    def delete_volume(self, ctxt, volume_id):
        """Remove the volume's snapshots marked ``deleting`` (a delete
        with cascade marked them with the volume), then the volume."""
        try:
            with db_api.reader() as session:
                volume = volume_dict(db_volumes.get(session, volume_id))
                snapshots = [
                    db_snapshots.summary(s, volume['host'])
                    for s in db_snapshots.of_volume(session, volume_id)]
        except exception.VolumeNotFound:
            return
        for snapshot in snapshots:
            if snapshot['status'] != states.DELETING:
                continue
            if not self.delete_snapshot(ctxt, snapshot):
                LOG.error('volume %s: deleting -> error_deleting: its '
                          'snapshot %s could not be deleted', volume_id,
                          snapshot['id'])
                self._record_failure(
                    ctxt, volume, 'delete_failed', EVENT_DELETE_FAILED,
                    'delete volume: its snapshot %s could not be deleted'
                    % snapshot['id'])
                return
        try:
            with self.working_on(volume_id):
                # a migration's temporary volume: what bears the migrated
                # volume's id here and is not its storage goes with it
                migration.drop_old_storage(self.driver, self.backend_id,
                                           volume)
                delete_flow.run(self.driver, volume)
        except Exception as e:
            LOG.exception('volume %s: deleting -> error_deleting', volume_id)
            self._record_failure(ctxt, volume, 'delete_failed',
                                 EVENT_DELETE_FAILED,
                                 'delete volume: %s' % e)
            return
        notify.info(ctxt, self.host, 'volume.delete.end',
                    notify.volume_payload(dict(volume,
                                               status=states.DELETED)))

    def create_snapshot(self, ctxt, snapshot):
        """RPC 1.5: make the copy of a ``creating`` snapshot and record it
        ``available``; on failure ``error`` with a user message (its
        quota stays charged until it is deleted, as in Cinder)."""
        try:
            with self.working_on(snapshot['id']):
                snapshot_flow.create(self.driver, snapshot)
        except Exception as e:
            LOG.exception('snapshot %s: creating -> error', snapshot['id'])
            self._snapshot_failed(ctxt, snapshot, 'create_failed',
                                  EVENT_SNAPSHOT_CREATE_FAILED,
                                  'create snapshot: %s' % e)
            return
        notify.info(ctxt, self.host, 'snapshot.create.end',
                    snapshot_api.payload(snapshot, states.AVAILABLE))

    def delete_snapshot(self, ctxt, snapshot):
        """RPC 1.5: remove the copy of a ``deleting`` snapshot and record
        it ``deleted``; on failure ``error_deleting`` with a user message.
        True when it is gone."""
        try:
            with self.working_on(snapshot['id']):
                snapshot_flow.delete(self.driver, snapshot)
        except exception.SnapshotNotFound:
            return True
        except Exception as e:
            LOG.exception('snapshot %s: deleting -> error_deleting',
                          snapshot['id'])
            self._snapshot_failed(ctxt, snapshot, 'delete_failed',
                                  EVENT_SNAPSHOT_DELETE_FAILED,
                                  'delete snapshot: %s' % e)
            return False
        notify.info(ctxt, self.host, 'snapshot.delete.end',
                    snapshot_api.payload(snapshot, states.DELETED))
        return True

    @staticmethod
    def _snapshot_failed(ctxt, snapshot, change, event, detail):
        def _record(session):
            try:
                db_snapshots.transition(session, snapshot['id'], change)
            except (exception.InvalidTransition, exception.NotFound):
                return
            db_messages.create(session, snapshot['project_id'], event,
                               detail, resource_type='VOLUME_SNAPSHOT',
                               resource_uuid=snapshot['id'],
                               request_id=ctxt.request_id)
        db_api.run_writer(_record)

    def connect(self, ctxt, attachment_id, connector, mode, answer=False,
                volume=None, type_qos=None):
        """Export and initialize the connection of an ``attaching``
        attachment; returns the connection info, or with ``answer``
        (1.8) {'recorded': what was written on the attachment besides its
        status (connection_info, export_host, attach_time in ISO 8601),
        'sharing': the ids of the other attachments sharing its host
        connection}: what the API shows it with.  ``volume`` (1.9): the
        attachment's volume (``volumes.summary``) as the API read it
        under the lock when it started the connect, and ``type_qos`` the
        (id, consumer) of its type's QoS specs (None without), so that
        nothing is read before the export."""
        if volume is None:
            with db_api.reader() as session:
                _, volume, type_qos = db_attachments.with_volume(
                    session, attachment_id)
                volume = with_qos_read(session, volume, type_qos)
        elif type_qos is not None:
            with db_api.reader() as session:
                volume = with_qos_read(session, volume, tuple(type_qos))
        else:
            volume = with_qos_read(None, volume, None)
        with self.working_on(attachment_id):
            connected = self._run_flow(
                lambda: connect_flow.run(self.driver, volume, attachment_id,
                                         connector, mode),
                volume, attachment_id, states.ATTACH_ATTACHING,
                states.ERROR_ATTACHING, 'connect')
        if answer:
            return connected
        return connected['recorded']['connection_info']

    def disconnect(self, ctxt, attachment_id, reason=None, volume=None,
                   connector=None, shared=None):
        """Terminate the connection of a ``detaching`` attachment and
        record it detached (with ``reason``, since 1.4); returns True when
        the host connection is still shared by another attachment.
        ``volume`` (1.9): the attachment's volume (``volumes.summary``)
        and its ``connector`` as the API read them under the lock when it
        started the detach, and ``shared`` when it read that too (None:
        read here)."""
        if volume is None:
            with db_api.reader() as session:
                attachment, volume, _ = db_attachments.with_volume(
                    session, attachment_id)
                shared = db_attachments.shares_host_connection(
                    session, attachment, self.host)
                connector = attachment.connector
        elif shared is None:
            with db_api.reader() as session:
                shared = bool(db_attachments.connections_on_host(
                    session, volume['id'], (connector or {}).get('host'),
                    exclude=attachment_id, export_host=self.host))
        with self.working_on(attachment_id):
            self._run_flow(
                lambda: disconnect_flow.run(self.driver, volume,
                                            attachment_id, connector,
                                            shared, reason),
                volume, attachment_id, states.ATTACH_DETACHING,
                states.ERROR_DETACHING, 'disconnect')
        return shared

    def promote(self, ctxt, attachment_id):
        """RPC 1.4: re-export a read-only attachment that is taking over
        (os-takeover) read-write, once the API has cut the old writer;
        returns the new connection info.  If the read-write export cannot
        be made, the read-only one is made again and the attachment stays
        a reader (``error_attaching`` if even that fails).  The result is
        recorded only while the attachment still carries the takeover
        mark; if someone settled it meanwhile (reconcile, a forced
        detach), the read-write export is undone."""
        with self.takeover_lock(attachment_id), \
                self.working_on(attachment_id):
            with db_api.reader() as session:
                attachment = db_attachments.get(session, attachment_id)
                volume = with_qos(session, volume_dict(db_volumes.get(
                    session, attachment.volume_id)))
                connector = dict(attachment.connector or {})
                shared = db_attachments.shares_host_connection(
                    session, attachment, self.host)
            if attachment.operation != states.TAKING_OVER:
                raise exception.InvalidInput(
                    reason='attachment %s is not taking over (%s)' % (
                        attachment_id, states.shown_reason(
                            attachment.status_reason, attachment.operation)))
            try:
                info = promote_flow.run(self.driver, volume, attachment_id,
                                        connector, shared)
            except promote_flow.Settled as e:
                raise exception.InvalidInput(reason=str(e))
            except Exception as e:
                raise exception.ConnectFailed(
                    reason='the read-write export failed (%s); attachment '
                           '%s stays read-only' % (e, attachment_id))
        LOG.info('attachment %s of volume %s: read-only -> read-write '
                 '(takeover)', attachment_id, volume['id'])
        return info

    @contextlib.contextmanager
    def takeover_lock(self, attachment_id):
        """One promote or restore of an attachment at a time in this
        process (a retried takeover must not interleave with the first)."""
        with self._busy_lock:
            entry = self._takeover_locks.setdefault(
                attachment_id, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._busy_lock:
                entry[1] -= 1
                if not entry[1]:
                    del self._takeover_locks[attachment_id]

    # -- host fences (RPC 1.6) -------------------------------------------
    def cut_host(self, ctxt, volume_id, attachment_ids):
        """Fence: remove the exports of these attachments (of one host,
        on ``volume_id``) and wait for each to drain; returns {attachment
        id: seconds the drain took, or None when it had no export}.
        Raises when a drain cannot be confirmed: the caller must not
        report the host fenced."""
        drained = {}
        # one cut or restore of a volume at a time here; each acts on the
        # marks as they are once it runs, so the last one leaves the
        # exports as the last fence or unfence recorded
        with self.takeover_lock('fence:' + volume_id), \
                self.working_on(*attachment_ids):
            with db_api.reader() as session:
                volume = volume_dict(db_volumes.get(session, volume_id))
                fenced = [a.id for a in db_attachments.fenced_of(
                    session, volume_id, attachment_ids)]
            for attachment_id in fenced:
                try:
                    drained[attachment_id] = self.driver.remove_export(
                        volume, None, attachment_id, False)
                except Exception as e:
                    LOG.exception('fence: attachment %s of volume %s '
                                  'not cut', attachment_id, volume_id)
                    raise exception.DisconnectFailed(
                        reason='attachment %s: %s' % (attachment_id, e))
        LOG.info('volume %s: exports of attachments %s cut off and '
                 'drained (%s)', volume_id, ', '.join(attachment_ids),
                 ', '.join('%.1f ms' % (d * 1000) for d in drained.values()
                           if d is not None) or 'none had one')
        return drained

    def restore_host(self, ctxt, volume_id, attachment_ids):
        """Unfence: make the exports of these connected attachments
        again, as their connection info and mode say; returns the ids
        restored.  Attachments fenced again meanwhile, or no longer
        connected, are left alone."""
        restored = []
        with self.takeover_lock('fence:' + volume_id), \
                self.working_on(*attachment_ids):
            with db_api.reader() as session:
                volume = with_qos(session, volume_dict(db_volumes.get(
                    session, volume_id)))
                # (fenced hosts' attachments are not among them)
                wanted = {a.id: a for a, _v in
                          db_attachments.connected_on_host(session,
                                                           self.host)
                          if a.id in set(attachment_ids)}
            for attachment_id, a in wanted.items():
                try:
                    made = self.driver.ensure_export(
                        volume, attachment_id, a.attach_mode,
                        a.connection_info or {}, a.connector)
                except Exception as e:
                    LOG.exception('unfence: attachment %s of volume %s',
                                  attachment_id, volume_id)
                    raise exception.ConnectFailed(
                        reason='attachment %s: %s' % (attachment_id, e))
                if made:
                    restored.append(attachment_id)
                else:
                    LOG.error('unfence: could not export attachment %s of '
                              'volume %s again', attachment_id, volume_id)
        return restored

    def host_reach(self, ctxt, volume_id, attachment_ids, initiators):
        """What the target itself says of a host on ``volume_id``: the
        exports of its attachments that run, the ACL entries and the
        sessions of its initiators."""
        return self.driver.reach(volume_id, attachment_ids, initiators)

    def extend_volume(self, ctxt, volume_id, new_size):
        # Claim it as reconciliation does: a request that waited in the
        # queue past reconcile_after may find the volume rolled back by
        # another member (or this one), and must then leave the storage
        # alone.  ... or extending again, to another size: that extend's
        # message is the one to serve
        def _claim(session):
            row, claimed = db_volumes.claim_extend(session, volume_id,
                                                   new_size)
            return volume_dict(row), claimed
        volume, claimed = db_api.run_writer(_claim)
        if not claimed:
            LOG.warning('volume %s is no longer extending (%s); extend to '
                        '%d GiB not done', volume_id, volume['status'],
                        new_size)
            return
        try:
            with self.working_on(volume_id):
                self.driver.extend_volume(volume, new_size)
        except Exception as e:
            LOG.exception('volume %s: extend failed', volume_id)
            self._record_failure(ctxt, volume, 'extend_failed',
                                 EVENT_EXTEND_FAILED,
                                 'extend volume: %s' % e,
                                 extending_to=new_size)
            return
        try:
            db_api.run_writer(db_volumes.transition, volume_id, 'extended',
                              values={'size': new_size},
                              extending_to=new_size)
        except (exception.InvalidTransition, exception.VolumeNotFound) as e:
            # rolled back meanwhile (reconcile_after passed): the record
            # keeps its size; the storage is larger
            LOG.warning('volume %s: extend to %d GiB done on the backend '
                        'but not recorded: %s', volume_id, new_size, e)
            return
        LOG.info('volume %s: extending -> available (%d GiB)', volume_id,
                 new_size)

    def reimage(self, ctxt, volume_id, image_id):
        """RPC 1.11: write image ``image_id`` over a ``downloading``
        volume (os-reimage; flows/reimage.py)."""
        with self.working_on(volume_id):
            reimage_flow.run(self.driver, self.nova, volume_id, image_id,
                             ctxt, self.conf)

    def revert_to_snapshot(self, ctxt, volume, snapshot):
        """RPC 1.11: write a ``reverting`` volume back from its
        ``restoring`` snapshot (flows/revert.py)."""
        with self.working_on(volume['id'], snapshot['id']):
            revert_flow.run(self.driver, volume, snapshot, ctxt, self.host)

    def extend_attached_volume(self, ctxt, volume_id, old_size, new_size):
        """Grow a volume that is in use (3.42): no status change.  The
        growth starts by compare-and-swap from the size the API checked
        (``db_volumes.begin_grow``), so two extends racing cannot both
        pass (nor shrink the volume), and a delete after a detach is
        refused until the storage has grown and the size is recorded."""

        def begin(session):
            # the quota is charged (and checked) with the growth; run
            # again from its start on a certification failure
            why = db_volumes.begin_grow(
                session, volume_id, old_size, new_size,
                quota.Checker(self.conf, session, size=new_size))
            if why:
                raise exception.InvalidVolume(
                    reason='Volume %s cannot be extended in use: %s.'
                    % (volume_id, why))
            return volume_dict(db_volumes.get(session, volume_id))
        volume = quota.ensuring_rows(lambda: db_api.run_writer(begin))
        try:
            with self.working_on(volume_id):
                self.driver.extend_volume(volume, new_size)
        except Exception as e:
            LOG.exception('volume %s: extend in use failed', volume_id)
            db_api.run_writer(db_volumes.end_grow, volume_id, new_size,
                              False)
            raise exception.BackendError(reason=str(e))
        recorded = db_api.run_writer(db_volumes.end_grow, volume_id,
                                     new_size, True)
        if not recorded:
            # reconciliation ended the growth meanwhile: the record keeps
            # its size; the storage is larger
            LOG.warning('volume %s: extend in use to %d GiB done on the '
                        'backend but not recorded', volume_id, new_size)
            raise exception.InvalidVolume(
                reason='Volume %s: the extend to %d GiB was given up '
                       'meanwhile; extend again.' % (volume_id, new_size))
        with db_api.reader() as session:
            servers = [a.instance_uuid for a in
                       db_attachments.live_for_volume(session, volume_id)
                       if a.attach_status == states.ATTACHED]
        if servers:
            # the servers' hypervisors resize their disks (Nova's
            # volume-extended event), after this call has answered
            threading.Thread(
                target=self.nova.volume_extended,
                args=(volume_id, servers, getattr(ctxt, 'request_id', None)),
                name='nova-volume-extended', daemon=True).start()

    def _run_flow(self, run, volume, attachment_id, current, failed, what):
        """Run a connect/disconnect flow; on failure record the attachment
        ``failed`` with the reason (also when the caller gave up waiting
        and recorded it failed first: the backend's reason is better) and
        raise ConnectRefused (what was asked cannot be served) or
        ConnectFailed (the backend failed)."""
        try:
            return run()
        except exception.NotFound as e:
            # detached (or its volume deleted) by another request meanwhile:
            # the flow reverted what it made; the caller learns it is gone
            LOG.warning('attachment %s: %s abandoned: %s', attachment_id,
                        what, e)
            raise
        except exception.HostFenced as e:
            # fenced while connecting: the flow removed its export
            LOG.warning('attachment %s: %s -> %s: %s', attachment_id,
                        current, failed, e)
            self._attachment_failed(volume, attachment_id, what,
                                    '%s refused: %s' % (what, e))
            raise
        except exception.Invalid as e:
            LOG.warning('attachment %s: %s -> %s: %s', attachment_id,
                        current, failed, e)
            self._attachment_failed(volume, attachment_id, what,
                                    '%s refused: %s' % (what, e))
            if isinstance(e, exception.InvalidTransition):
                reason = 'attachment %s changed while the %s was under ' \
                    'way: %s' % (attachment_id, what, e)
                if e.kwargs.get('actual') in _RECORDED_FAILED:
                    # an earlier delivery of the same call failed and
                    # recorded it, or reconciliation settled it: nothing
                    # the caller asked was wrong, the service could not
                    # do it
                    raise _failed(what)(reason=reason)
                # another request moved it on (a legacy os-attach of the
                # attachment this connect was making, say): what was asked
                # no longer applies to it
                raise _refused(what)(reason=reason)
            raise _refused(what)(reason=str(e))
        except Exception as e:
            LOG.exception('attachment %s: %s -> %s', attachment_id, current,
                          failed)
            self._attachment_failed(volume, attachment_id, what,
                                    '%s failed: %s' % (what, e))
            raise _failed(what)(reason=str(e))

    def _attachment_failed(self, volume, attachment_id, what, reason):
        """Record the ``what`` ('connect', 'disconnect') of an attachment
        failed, with ``reason``."""
        db_api.run_writer(db_attachments.record_failure, attachment_id,
                          what + '_failed', reason, volume['id'])

    def work_cleanup(self, ctxt, service_host, until, resource_id=None):
        """RPC 1.16 (cast): POST /workers/cleanup, for volume service
        ``service_host`` and what it left in a transition before
        ``until`` (ISO 8601); see ``reconcile.clean_up``."""
        LOG.info('workers cleanup of %s requested (request %s)%s',
                 service_host, ctxt.request_id,
                 ' for %s' % resource_id if resource_id else '')
        with self._busy_lock:
            busy = set(self._busy)
        changes = reconcile_mod.clean_up(
            self._reconcile_backend(), self.cluster_name, service_host,
            timeutils.normalize_time(timeutils.parse_isotime(until)),
            resource_id, busy, self.conf.service_down_time,
            self.conf.reconcile_after)
        LOG.info('workers cleanup of %s done: %d change(s)', service_host,
                 len(changes))
        return changes

    def reconcile(self, ctxt, max_age=None):
        """RPC 1.3: run the reconciliation now; returns its changes."""
        LOG.info('reconcile requested (request %s)', ctxt.request_id)
        changes = self.reconcile_now(max_age)
        return {'host': self.host, 'changes': changes}

    def get_capabilities(self, ctxt):
        caps = self.capabilities()
        caps['host'] = self.host
        return caps

    def _record_failure(self, ctxt, volume, change, event, detail,
                        extending_to=None):
        def _record(session):
            try:
                db_volumes.transition(session, volume['id'], change,
                                      extending_to=extending_to)
            except (exception.InvalidTransition, exception.VolumeNotFound):
                return
            db_messages.create(session, volume['project_id'], event, detail,
                               resource_type='VOLUME',
                               resource_uuid=volume['id'],
                               request_id=ctxt.request_id)
        db_api.run_writer(_record)
