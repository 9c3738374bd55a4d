"""The service layer of manage and unmanage: ``/os-volume-manage``,
``/os-snapshot-manage``, ``/manageable_volumes``,
``/manageable_snapshots`` and the ``os-unmanage`` actions (admin only,
as in Cinder).

A manage checks what can be checked here (the backend exists and is up
and holds the type, the reference is not the storage of a live volume),
records the volume ``managing`` with no size (it counts one volume
against the quota) and casts to the backend, which sizes, charges and
adopts the object (``manage_manager``).  The backend is the one named:
no scheduling.  A snapshot is recorded the same way, on its volume's
backend.  An unmanage is a delete that leaves the storage: the same
refusals (attached, snapshots, copies being made, a frozen backend),
then ``unmanaging`` and a cast.
"""
import logging
import uuid

from cinder_lite.common import capabilities
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import notify
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import models
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import services as db_services
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import transfers as db_transfers
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import api as volume_api
from cinder_lite.volume import manageable
from cinder_lite.volume import rpcapi as volume_rpcapi
from cinder_lite.volume import rules
from cinder_lite.volume import snapshot_api
from cinder_lite.volume import types as volume_types

LOG = logging.getLogger(__name__)


class ManageService:

    def __init__(self, conf, volume_rpc=None):
        self.conf = conf
        self.volume_rpcapi = volume_rpc or volume_rpcapi.VolumeAPI(conf)

    # -- where ------------------------------------------------------------
    @staticmethod
    def _members(session, host, cluster):
        """(backend id, its volume services) of ``host``
        (``node@backend[#pool]``) or ``cluster``; InvalidInput naming it
        when no volume service serves it."""
        name = cluster if cluster else host
        backend = volume_rpcapi.backend_host(name)
        members = db_services.backend_members(session, backend,
                                              constants.VOLUME_BINARY)
        if not members:
            raise exception.InvalidInput(
                reason="%s '%s' not found" % (
                    'Cluster' if cluster else 'Host', name))
        clusters = {m.cluster_name for m in members if m.cluster_name}
        if not cluster and clusters and backend not in clusters:
            # a member of a cluster: the cluster owns its volumes
            backend = sorted(clusters)[0]
            members = db_services.backend_members(
                session, backend, constants.VOLUME_BINARY)
        return backend, members

    def _backend(self, session, host, cluster):
        backend, members = self._members(session, host, cluster)
        db_services.check_backend_up(session, backend,
                                     constants.VOLUME_BINARY,
                                     self.conf.service_down_time)
        return backend, members

    # -- volumes ---------------------------------------------------------
    def manage(self, context, request):
        """Record the volume ``managing`` on the backend named and cast
        the adoption to it; returns (volume, type)."""
        policy.authorize(context, policy.VOLUME_MANAGE)
        self.volume_rpcapi.require(volume_rpcapi.MANAGE_RPC,
                                   'managing a volume')
        ref = request['ref']
        manageable.check_ref(ref)
        host, cluster = request.get('host'), request.get('cluster')
        with db_api.reader() as session:
            volume_type = volume_api.resolve_type(session, context, request,
                                                  self.conf)
            if volume_types.is_multiattach(volume_type) and \
                    not self.conf.allow_multiattach:
                raise exception.InvalidVolumeType(
                    reason='multi-attach is turned off in this cloud, so '
                           'type %s cannot be used' % volume_type['name'])
            backend, members = self._backend(session, host, cluster)
            fresh = db_services.freshest(members)
            caps = fresh.capabilities or {}
            if not capabilities.satisfies(caps, volume_type['extra_specs']):
                raise exception.InvalidInput(
                    reason='Volume type %s cannot be held by backend %s.'
                           % (volume_type['name'], backend))
            zone = request.get('availability_zone') or \
                fresh.availability_zone
            if zone != fresh.availability_zone:
                raise exception.InvalidInput(
                    reason='Backend %s is in availability zone %s, not %s.'
                           % (backend, fresh.availability_zone, zone))
            owner = manageable.owner_id(ref)
            if owner is not None and db_volumes.live_ids(session, [owner]):
                raise exception.ManageExistingAlreadyManaged(volume_ref=ref)
        source = host if (host and '#' in host and not cluster) else None
        pool = source or '%s#%s' % (
            backend, caps.get('volume_backend_name')
            or backend.partition('@')[2])
        values = {
            'id': str(uuid.uuid4()),
            'project_id': context.project_id,
            'user_id': context.user_id,
            'name': request.get('name'),
            'description': request.get('description'),
            'size': 0,
            'status': states.MANAGING,
            'volume_type_id': volume_type['id'],
            'availability_zone': zone,
            'multiattach': volume_types.is_multiattach(volume_type),
            'bootable': bool(request.get('bootable')),
            'host': pool,
            'cluster_name': backend if any(
                m.cluster_name == backend for m in members) else None,
            'deleted': False,
            'created_at': models.utcnow(),
        }

        def record(session):
            db_types.lock_live(session, volume_type['id'])
            return db_volumes.create(
                session, values, quota.Checker(self.conf, session),
                metadata=request.get('metadata'))
        # (run again from its start on a deadlock: the cast to the backend
        # comes after the commit)
        volume = quota.ensuring_rows(lambda: db_api.run_writer(record))
        LOG.info('volume %s: recorded as managing %s on %s', volume.id, ref,
                 pool)
        try:
            self.volume_rpcapi.manage_existing(
                context, pool, db_volumes.summary(volume), ref)
        except Exception:
            volume_api.forget_volume(volume)
            raise
        notify.info(context, self.conf.host, 'volume.manage_existing.start',
                    notify.volume_payload(volume))
        return volume, volume_type

    def unmanage(self, context, volume_id):
        """``unmanaging`` and cast: the record goes, the storage stays."""
        scope = None if context.is_admin else context.project_id
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id, scope)
        policy.authorize(context, policy.VOLUME_UNMANAGE,
                         {'project_id': volume.project_id})
        self.volume_rpcapi.require(volume_rpcapi.MANAGE_RPC,
                                   'unmanaging a volume')

        def mark(session):
            db_attachments.lock_volume(session, volume_id, load=False)
            live = db_attachments.live_for_volume(session, volume_id)
            rules.check_not_attached(volume_id, live)
            if live:
                raise exception.InvalidVolume(
                    reason='Volume %s still has attachments (%s); '
                           'delete them first.' % (volume_id, ', '.join(
                               '%s %s' % (a.id, a.attach_status)
                               for a in live)))
            current = db_volumes.get(session, volume_id)
            if not current.host:
                raise exception.InvalidVolume(
                    reason='Volume %s has not been scheduled to any '
                           'host: it has no storage to leave.' % volume_id)
            if current.pending_size is not None:
                raise exception.InvalidVolume(
                    reason='Volume %s is being extended to %d GiB.'
                           % (volume_id, current.pending_size))
            volume_api.VolumeService._check_not_frozen(session, current)
            # (a snapshot create takes this lock too)
            volume_api.VolumeService._mark_snapshots(
                session, context, volume_id, False, False)
            db_volumes.transition(session, volume_id, 'unmanage')
            db_transfers.end_for_volume(session, volume_id)
            return current
        try:
            # (run again from its start on a deadlock: the notification
            # and the cast come after the commit)
            current = db_api.run_writer(mark)
        except exception.InvalidTransition as e:
            raise exception.InvalidVolume(
                reason='Volume status must be available or error or '
                       'error_restoring or error_extending or '
                       'error_managing and must not be migrating, '
                       'attached, belong to a group, have snapshots or be '
                       'disassociated from snapshots after volume '
                       'transfer (it is %s).' % e.kwargs['actual'])
        LOG.info('volume %s: %s -> unmanaging', volume_id, current.status)
        notify.info(context, self.conf.host, 'volume.unmanage.start',
                    notify.volume_payload(current))
        self.volume_rpcapi.unmanage_volume(context, current.host, volume_id)

    def list_manageable_volumes(self, context, host, cluster, marker, limit,
                                offset, sort_keys, sort_dirs):
        policy.authorize(context, policy.VOLUME_LIST_MANAGEABLE)
        return self._list(context, 'get_manageable_volumes', host, cluster,
                          marker, limit, offset, sort_keys, sort_dirs)

    def _list(self, context, method, host, cluster, marker, limit, offset,
              sort_keys, sort_dirs):
        self.volume_rpcapi.require(volume_rpcapi.MANAGE_RPC,
                                   'listing manageable objects')
        with db_api.reader() as session:
            try:
                backend, _members = self._backend(session, host, cluster)
            except exception.InvalidInput:
                raise exception.ServiceNotFound(
                    binary=constants.VOLUME_BINARY,
                    host=cluster or host) from None
        return getattr(self.volume_rpcapi, method)(
            context, backend, marker, limit, offset, sort_keys, sort_dirs)

    # -- snapshots ---------------------------------------------------------
    def manage_snapshot(self, context, request):
        """Record the snapshot ``managing`` (of the volume's size until
        the backend tells) and cast the adoption to the volume's
        backend; returns the snapshot."""
        policy.authorize(context, policy.SNAPSHOT_MANAGE)
        self.volume_rpcapi.require(volume_rpcapi.MANAGE_RPC,
                                   'managing a snapshot')
        ref = request['ref']
        manageable.check_ref(ref)
        with db_api.reader() as session:
            volume = db_volumes.get(session, request['volume_id'])
            # as Cinder: the volume may be in use
            snapshot_api.SnapshotService._check_volume(volume, True)
            snapshot_api.check_backend_up(session, volume, self.conf)
            owner = manageable.owner_id(ref, 'snapshot')
            if owner is not None and db_snapshots.live_ids(session,
                                                           [owner]):
                raise exception.ManageExistingAlreadyManaged(volume_ref=ref)
        values = {
            'id': str(uuid.uuid4()),
            'volume_id': volume.id,
            'project_id': context.project_id,
            'user_id': context.user_id,
            'name': request.get('name'),
            'description': request.get('description'),
            'status': states.MANAGING,
            'progress': '0%',
            'volume_size': volume.size,
            'volume_type_id': volume.volume_type_id,
            'deleted': False,
            'created_at': models.utcnow(),
        }

        def record(session):
            locked = db_volumes.lock(session, volume.id)
            snapshot_api.SnapshotService._check_volume(locked, True)
            values.update(volume_size=locked.size,
                          volume_type_id=locked.volume_type_id)
            snapshot = db_snapshots.create(
                session, values, quota.Checker(self.conf, session),
                metadata=request.get('metadata'))
            return snapshot, db_snapshots.summary(snapshot, locked.host)
        # (run again from its start on a deadlock: the cast to the backend
        # comes after the commit)
        snapshot, summary = quota.ensuring_rows(
            lambda: db_api.run_writer(record))
        LOG.info('snapshot %s of volume %s: recorded as managing %s',
                 snapshot.id, volume.id, ref)
        try:
            self.volume_rpcapi.manage_existing_snapshot(
                context, volume.host, summary, ref)
        except Exception:
            db_api.run_writer(db_snapshots.remove, snapshot.id)
            raise
        notify.info(context, self.conf.host,
                    'snapshot.manage_existing.start',
                    snapshot_api.payload(snapshot))
        return snapshot

    def unmanage_snapshot(self, context, snapshot_id):
        scope = None if context.is_admin else context.project_id
        with db_api.reader() as session:
            snapshot = db_snapshots.get(session, snapshot_id, scope)
            policy.authorize(context, policy.SNAPSHOT_UNMANAGE,
                             {'project_id': snapshot.project_id})
            self.volume_rpcapi.require(volume_rpcapi.MANAGE_RPC,
                                       'unmanaging a snapshot')
            volume = db_volumes.get(session, snapshot.volume_id)
            snapshot_api.check_backend_up(session, volume, self.conf)

        def mark(session):
            db_snapshots.lock(session, snapshot.id)
            making = db_volumes.creating_from(session,
                                              snapshot_id=snapshot.id)
            if making:
                raise exception.InvalidSnapshot(
                    reason='Snapshot %s is being copied to volume(s) %s.'
                           % (snapshot.id, ', '.join(making)))
            try:
                db_snapshots.transition(session, snapshot.id, 'unmanage')
            except exception.InvalidTransition as e:
                raise exception.InvalidSnapshot(
                    reason='Snapshot status must be available or error '
                           'and must not be part of a group (it is %s).'
                           % e.kwargs['actual'])
        # (run again from its start on a deadlock: the cast comes after
        # the commit)
        db_api.run_writer(mark)
        LOG.info('snapshot %s: %s -> unmanaging', snapshot.id,
                 snapshot.status)
        self.volume_rpcapi.unmanage_snapshot(
            context, volume.host, db_snapshots.summary(snapshot,
                                                       volume.host))

    def list_manageable_snapshots(self, context, host, cluster, marker,
                                  limit, offset, sort_keys, sort_dirs):
        policy.authorize(context, policy.SNAPSHOT_LIST_MANAGEABLE)
        return self._list(context, 'get_manageable_snapshots', host,
                          cluster, marker, limit, offset, sort_keys,
                          sort_dirs)
