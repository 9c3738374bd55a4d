"""The service layer for snapshots: what ``/snapshots`` and its metadata
and actions call.

A create locks the volume's row, checks its status there and records
the snapshot with its quota in that transaction (a delete of the volume
takes the same lock and finds the snapshot), then casts to the volume's
backend, which copies the volume and records the snapshot
``available`` (or ``error`` with a user message).  If the cast fails the
record is removed again, so a refused or failed request leaves nothing
behind.  A delete moves the snapshot to ``deleting`` by compare-and-swap
and casts; the backend removes the copy and records it ``deleted``,
which gives its quota back.
"""
import logging
import uuid

from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import notify
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import models
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import services as db_services
from cinder_lite.db import snapshot_metadata as db_metadata
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import rpcapi as volume_rpcapi

LOG = logging.getLogger(__name__)


def payload(snapshot, status=None):
    """The payload of ``snapshot.*`` notifications (Cinder's keys)."""
    get = (snapshot.get if isinstance(snapshot, dict)
           else lambda k: getattr(snapshot, k, None))
    created = get('created_at')
    return {
        'tenant_id': get('project_id'),
        'user_id': get('user_id'),
        'snapshot_id': get('id'),
        'display_name': get('name'),
        'volume_id': get('volume_id'),
        'volume_size': get('volume_size'),
        'status': status or get('status'),
        'created_at': created.isoformat() if hasattr(created, 'isoformat')
        else created,
    }


def check_backend_up(session, volume, conf):
    """ServiceUnavailable (503, at once) when no service of the volume's
    backend is up: a request cast to it would wait for nobody."""
    db_services.check_backend_up(
        session, volume_rpcapi.backend_host(volume.host),
        constants.VOLUME_BINARY, conf.service_down_time)


class SnapshotService:

    def __init__(self, conf, volume_rpc=None):
        self.conf = conf
        self.volume_rpcapi = volume_rpc or volume_rpcapi.VolumeAPI(conf)

    @staticmethod
    def _scope(context):
        return None if context.is_admin else context.project_id

    # -- create ---------------------------------------------------------------
    def create(self, context, volume_id, name=None, description=None,
               metadata=None, force=False):
        """Record a snapshot of ``volume_id`` (``creating``) and hand it
        to the volume's backend; returns the snapshot."""
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id,
                                    self._scope(context))
            policy.authorize(context, policy.SNAPSHOT_CREATE,
                             {'project_id': volume.project_id})
            self._check_volume(volume, force)
            check_backend_up(session, volume, self.conf)
        values = {
            'id': str(uuid.uuid4()),
            'volume_id': volume.id,
            'project_id': context.project_id,
            'user_id': context.user_id,
            'name': name,
            'description': description,
            'status': states.CREATING,
            'progress': '0%',
            'volume_size': volume.size,
            'volume_type_id': volume.volume_type_id,
            'deleted': False,
            'created_at': models.utcnow(),
        }

        # (run again from its start on a deadlock, as a volume delete
        # through another Galera node makes it: the cast comes after the
        # commit)
        def _record(session):
            locked = db_volumes.lock(session, volume.id)
            self._check_volume(locked, force)
            # the size and type now, under the lock
            values.update(volume_size=locked.size,
                          volume_type_id=locked.volume_type_id)
            snapshot = db_snapshots.create(
                session, values, quota.Checker(self.conf, session),
                metadata=metadata)
            return snapshot, db_snapshots.summary(snapshot, locked.host)
        snapshot, summary = quota.ensuring_rows(
            lambda: db_api.run_writer(_record))
        LOG.info('snapshot %s of volume %s: recorded as creating%s',
                 snapshot.id, volume.id, ' (forced)' if force else '')
        notify.info(context, self.conf.host, 'snapshot.create.start',
                    payload(snapshot))
        try:
            self.volume_rpcapi.create_snapshot(context, volume.host,
                                               summary)
        except Exception:
            LOG.warning('snapshot %s: removing the record of a create '
                        'that could not be sent', snapshot.id)
            db_api.run_writer(db_snapshots.remove, snapshot.id)
            raise
        return snapshot

    @staticmethod
    def _check_volume(volume, force):
        if not volume.host:
            raise exception.InvalidVolume(
                reason='The snapshot cannot be created because volume has '
                       'not been scheduled to any host.')
        if volume.status == states.MAINTENANCE:
            raise exception.InvalidVolume(
                reason='The snapshot cannot be created when the volume is '
                       'in maintenance mode.')
        if volume.status == states.ERROR:
            raise exception.InvalidVolume(
                reason='The snapshot cannot be created when the volume is '
                       'in error status.')
        allowed = states.VOLUME_COPY_STATUSES if force else (states.AVAILABLE,)
        if volume.status not in allowed:
            raise exception.InvalidVolume(
                reason='Volume %s status must be %s, but current status '
                       'is: %s.' % (volume.id, ', '.join(allowed),
                                    volume.status))

    # -- read -----------------------------------------------------------------
    def get(self, context, snapshot_id, rule=policy.SNAPSHOT_GET):
        with db_api.reader() as session:
            snapshot = db_snapshots.get(session, snapshot_id,
                                        self._scope(context))
            policy.authorize(context, rule,
                             {'project_id': snapshot.project_id})
            return snapshot

    def list(self, context, filters, sort_keys, sort_dirs, limit, marker,
             all_tenants=False, with_count=False, offset=None):
        project = policy.list_scope(context, policy.SNAPSHOT_GET_ALL,
                                    policy.VOLUME_ALL_TENANTS, filters,
                                    all_tenants)
        with db_api.reader() as session:
            rows = db_snapshots.list_snapshots(
                session, project, filters, sort_keys, sort_dirs, limit,
                marker, offset)
            total = (db_snapshots.count(session, project, filters)
                     if with_count else None)
        return rows, total

    def metadata_of(self, snapshots):
        with db_api.reader() as session:
            return db_metadata.for_snapshots(session,
                                             [s.id for s in snapshots])

    # -- update ---------------------------------------------------------------
    def update(self, context, snapshot_id, values):
        snapshot = self.get(context, snapshot_id, policy.SNAPSHOT_UPDATE)
        notify.info(context, self.conf.host, 'snapshot.update.start',
                    payload(snapshot))
        db_api.run_writer(db_snapshots.update, snapshot.id, values)
        snapshot = self.get(context, snapshot_id)
        notify.info(context, self.conf.host, 'snapshot.update.end',
                    payload(snapshot))
        return snapshot

    # -- delete ---------------------------------------------------------------
    def delete(self, context, snapshot_id, force=False):
        """``deleting`` from ``available`` or ``error`` (``force``: from
        any status, the caller checked the force-delete policy), then the
        backend removes it."""
        with db_api.reader() as session:
            snapshot = db_snapshots.get(session, snapshot_id,
                                        self._scope(context))
            policy.authorize(context, policy.SNAPSHOT_DELETE,
                             {'project_id': snapshot.project_id})
            if snapshot.group_snapshot_id:
                # Cinder's rule: it goes with its group snapshot
                raise exception.InvalidSnapshot(
                    reason='Snapshot %s is part of group snapshot %s; '
                           'delete the group snapshot instead.' % (
                               snapshot.id, snapshot.group_snapshot_id))
            volume = db_volumes.get(session, snapshot.volume_id)
            check_backend_up(session, volume, self.conf)

        # (run again from its start on a deadlock: the cast comes after
        # the commit)
        def _mark(session):
            # the lock a create of a volume from it takes
            db_snapshots.lock(session, snapshot.id)
            making = db_volumes.creating_from(session,
                                              snapshot_id=snapshot.id)
            if making:
                raise exception.InvalidSnapshot(
                    reason='Snapshot %s is being copied to volume(s) %s; '
                           'delete it once they are made.' % (
                               snapshot.id, ', '.join(making)))
            try:
                db_snapshots.transition(
                    session, snapshot.id,
                    'force_delete' if force else 'delete')
            except exception.InvalidTransition as e:
                raise exception.InvalidSnapshot(
                    reason='Snapshot status must be available or error '
                           'and must not be part of a group (it is %s).'
                           % e.kwargs['actual'])
        db_api.run_writer(_mark)
        self._cast_delete(context, snapshot, volume.host)

    def _cast_delete(self, context, snapshot, host):
        notify.info(context, self.conf.host, 'snapshot.delete.start',
                    payload(snapshot, states.DELETING))
        LOG.info('snapshot %s: %s -> deleting', snapshot.id,
                 snapshot.status)
        self.volume_rpcapi.delete_snapshot(
            context, host, db_snapshots.summary(snapshot, host))

    # -- actions --------------------------------------------------------------
    def reset_status(self, context, snapshot_id, status):
        snapshot = self.get(context, snapshot_id,
                            policy.SNAPSHOT_RESET_STATUS)
        notify.info(context, self.conf.host, 'snapshot.reset_status.start',
                    payload(snapshot))
        db_api.run_writer(db_snapshots.transition, snapshot.id,
                          'reset_status', status)
        LOG.warning('snapshot %s: %s -> %s (os-reset_status by %s)',
                    snapshot.id, snapshot.status, status,
                    context.user_id)
        notify.info(context, self.conf.host, 'snapshot.reset_status.end',
                    payload(snapshot, status))

    def update_status(self, context, snapshot_id, status, progress=None):
        """os-update_snapshot_status: Cinder's table of what a snapshot
        being made or deleted may report."""
        snapshot = self.get(context, snapshot_id,
                            policy.SNAPSHOT_UPDATE_STATUS)
        allowed = states.SNAPSHOT_UPDATE_STATUS.get(snapshot.status)
        if allowed is None:
            raise exception.InvalidInput(
                reason='Snapshot status %s not allowed for '
                       'update_snapshot_status' % snapshot.status)
        if status not in allowed:
            raise exception.InvalidInput(
                reason='Provided snapshot status %s not allowed for '
                       'snapshot with status %s.' % (status,
                                                     snapshot.status))
        values = {'progress': progress} if progress else {}

        def _report(session):
            if status == snapshot.status:
                db_snapshots.update(session, snapshot.id, values)
            else:
                db_snapshots.transition(session, snapshot.id,
                                        'update_status', status,
                                        values=values)
        db_api.run_writer(_report)
        LOG.info('snapshot %s: status %s, progress %s reported',
                 snapshot.id, status, progress)

    # -- metadata -------------------------------------------------------------
    def get_metadata(self, context, snapshot_id):
        with db_api.reader() as session:
            snapshot = db_snapshots.get(session, snapshot_id,
                                        self._scope(context))
            policy.authorize(context, policy.SNAPSHOT_METADATA_GET,
                             {'project_id': snapshot.project_id})
            return db_metadata.get(session, snapshot.id)

    def update_metadata(self, context, snapshot_id, metadata,
                        delete=False):

        def _set(session):
            snapshot = db_snapshots.lock(session, snapshot_id,
                                         self._scope(context))
            policy.authorize(context, policy.SNAPSHOT_METADATA_UPDATE,
                             {'project_id': snapshot.project_id})
            return db_metadata.update(session, snapshot.id, metadata,
                                      delete)
        after = db_api.run_writer(_set)
        LOG.info('snapshot %s: metadata %s %s', snapshot_id,
                 'replaced by' if delete else 'set', sorted(metadata))
        return after

    def delete_metadata_key(self, context, snapshot_id, key):

        def _delete_key(session):
            snapshot = db_snapshots.lock(session, snapshot_id,
                                         self._scope(context))
            policy.authorize(context, policy.SNAPSHOT_METADATA_DELETE,
                             {'project_id': snapshot.project_id})
            db_metadata.delete_key(session, snapshot.id, key)
        db_api.run_writer(_delete_key)
        LOG.info('snapshot %s: metadata key %s deleted', snapshot_id, key)
