"""The service layer of migrations to another backend: os-migrate_volume,
os-migrate_volume_completion and the retype that moves a volume
(``migration_policy=on-demand``).  The work runs on the volume services
(``cinder_lite.volume.migration``); here the request is checked, the
volume marked ``starting`` by compare-and-swap and the source's service
asked.

A detached volume's data is copied by the volume services.  An in-use
volume with one attachment to one server migrates through Nova, as in
Cinder: the source's service makes the temporary volume and asks Nova
to swap the server's disk to it; Nova copies the data on its host,
moves the server's attachment to the temporary volume and calls
``os-migrate_volume_completion`` back (``complete`` here).  A
multiattach volume in use is refused (400): Nova swaps no volume with
several read-write attachments, and cinder_lite does not start what
would stop there.  A retype with migration moves detached volumes only.
"""
import logging

from cinder_lite.common import capabilities
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import services as db_services
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volume_migrations as db_migrations
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import nova
from cinder_lite.volume import rpcapi as volume_rpcapi

LOG = logging.getLogger(__name__)

# Cinder's refusal when the volume cannot start a migration
CANNOT_START = ('Volume %s status must be available or in-use, must not be '
                'migrating, have snapshots, be replicated, be part of a '
                'group and destination host must be different than the '
                'current host')
IN_USE_STATUSES = (states.IN_USE, states.ATTACHING, states.DETACHING,
                   states.RESERVED)


class Destination:
    """Where a volume goes: ``host`` (``node@backend#pool``, or the
    cluster's ``cluster@backend#pool``), ``cluster_name`` (that, when the
    backend is a cluster's), ``backend`` (its RPC server name) and the
    capabilities it reported last."""

    def __init__(self, host, cluster_name, backend, caps):
        self.host = host
        self.cluster_name = cluster_name
        self.backend = backend
        self.caps = caps or {}


class MigrationService:

    def __init__(self, conf, volume_rpcapi_client):
        self.conf = conf
        self.volume_rpcapi = volume_rpcapi_client
        self.nova = nova.NovaNotifier(conf)

    # -- os-migrate_volume ----------------------------------------------------
    def migrate(self, context, volume_id, host=None, cluster=None,
                force_host_copy=False, lock_volume=False):
        """``force_host_copy``: the copy is always the volume services'
        here (no backend migrates on its own), so it changes nothing."""
        policy.authorize(context, policy.MIGRATE, {})
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id)
            dest = self._destination(session, host, cluster)
            vtype = db_types.get(session, volume.volume_type_id)
        self.check_movable(volume, dest, host or cluster, swap=True)
        if dest.caps and not capabilities.satisfies(
                dest.caps, vtype['extra_specs']):
            # what Cinder's scheduler filters refuse (No valid host)
            raise exception.InvalidHost(
                reason='%s cannot hold volume %s: its type %s asks for '
                       'capabilities that backend does not report.' % (
                           host or cluster, volume.id, vtype['name']))
        # (as Cinder, lock_volume makes only an available volume
        # ``maintenance``)
        self.start(context, volume, dest,
                   lock_event='migrate_lock' if lock_volume and
                   volume.status == states.AVAILABLE else None,
                   swap=True)

    def _destination(self, session, host, cluster):
        """The backend named by ``host`` or ``cluster``, if one of its
        services is enabled and up; InvalidHost otherwise."""
        name = cluster or host
        backend = volume_rpcapi.backend_host(name)
        members = [m for m in db_services.backend_members(
            session, backend, constants.VOLUME_BINARY)
            if not m.disabled and db_services.is_up(
                m.heartbeat_at, self.conf.service_down_time)]
        if cluster is None:
            # a host of a cluster: the volume goes to its cluster
            members = [m for m in members if m.host == backend]
        else:
            # as Cinder, a cluster is named by its cluster name only (not
            # by the host of a service that is in none)
            members = [m for m in members if m.cluster_name == backend]
        if not members:
            raise exception.InvalidHost(
                reason="No available service named '%s'" % name)
        member = db_services.freshest(members)
        caps = member.capabilities or {}
        owner = member.cluster_name or member.host
        pool = name.partition('#')[2] or caps.get(
            'volume_backend_name') or owner.partition('@')[2]
        dest_host = '%s#%s' % (owner, pool)
        return Destination(dest_host,
                           dest_host if member.cluster_name else None,
                           owner, caps)

    def check_movable(self, volume, dest, named, swap=False):
        """Refuse (InvalidHost, InvalidVolume) a move the destination
        cannot take, or of an in-use volume that cannot move: a
        multiattach one, or any when ``swap`` is false (a retype) or no
        Nova is configured to swap its disk."""
        if volume.host and volume_rpcapi.backend_host(volume.host) == \
                dest.backend:
            raise exception.InvalidHost(
                reason='Destination host must be different than the '
                       'current host.')
        if volume.status in IN_USE_STATUSES:
            if volume.multiattach:
                raise exception.InvalidVolume(
                    reason='Volume %s is a multiattach volume in use: '
                           'swapping multi-attach volumes with more than '
                           'one read/write attachment is not supported by '
                           'Nova, so it cannot be migrated while it is '
                           'attached; detach it first.' % volume.id)
            if not swap:
                raise exception.InvalidVolume(
                    reason='Volume %s is in use: a retype with migration '
                           'moves detached volumes only; detach it first.'
                           % volume.id)
            if not self.nova.configured:
                raise exception.InvalidVolume(
                    reason='Volume %s is in use: no Nova is configured '
                           '([nova] auth_type) to swap the attached disk; '
                           'detach it first.' % volume.id)
        if dest.caps and \
                volume.size > capabilities.capacity_limit(dest.caps):
            raise exception.InvalidHost(
                reason='%s cannot hold volume %s (%d GiB).' % (
                    named, volume.id, volume.size))

    def start(self, context, volume, dest, lock_event=None,
              new_type_id=None, swap=False):
        """Mark the migration ``starting`` (and the volume
        ``lock_event``'s status) under the volume's lock, then ask the
        source's service.  Refused with Cinder's message when the volume
        is not available (or, given ``swap``, in-use with one attachment
        to one server), migrates already, has snapshots or other
        attachments, or is in a group."""
        # the source's service copies: it must be up
        with db_api.reader() as session:
            db_services.check_backend_up(
                session, volume_rpcapi.backend_host(volume.host or ''),
                constants.VOLUME_BINARY, self.conf.service_down_time)
        refusal = exception.InvalidVolume(reason=CANNOT_START % volume.id)

        def mark(session):
            vol = db_volumes.lock(session, volume.id)
            live = db_attachments.live_for_volume(session, vol.id)
            if vol.status == states.AVAILABLE:
                movable = not live
            else:
                movable = swap and vol.status == states.IN_USE and \
                    not vol.multiattach and len(live) == 1 and \
                    live[0].attach_status == states.ATTACHED and \
                    bool(live[0].instance_uuid)
            if not movable or vol.group_id or \
                    db_migrations.target_of(vol.migration_status) or \
                    vol.migration_status in states.MIGRATION_RUNNING or \
                    db_snapshots.of_volume(session, vol.id):
                raise refusal
            try:
                db_migrations.move(session, vol.id, 'start')
            except exception.InvalidTransition:
                raise refusal
            if lock_event:
                db_volumes.transition(session, vol.id, lock_event)

        def unmark(session):
            db_migrations.move(session, volume.id, 'fail')
            if lock_event:
                db_volumes.transition(
                    session, volume.id,
                    {'migrate_lock': 'migrate_unlock',
                     'retype_migrate': 'retype_migrated'}[lock_event])
        # (both run again from their start on a deadlock: the source's
        # service is asked once the mark committed)
        db_api.run_writer(mark)
        LOG.info('volume %s: migration -> starting, from %s to %s%s',
                 volume.id, volume.host, dest.host,
                 ' (retype)' if new_type_id else '')
        try:
            self.volume_rpcapi.migrate_volume(
                context, volume.host, volume.id, dest.host,
                dest.cluster_name, new_type_id)
        except Exception:
            LOG.exception('volume %s: the migration could not be sent',
                          volume.id)
            db_api.run_writer(unmark)
            raise

    # -- retype with migration ---------------------------------------------
    def destination_for_type(self, session, volume, extra_specs):
        """The backend (enabled, up, in the volume's availability zone,
        room for it) whose capabilities satisfy ``extra_specs``, the one
        with the most free space; None when there is none."""
        best = None
        for service in db_services.list_services(
                session, binary=constants.VOLUME_BINARY):
            caps = service.capabilities or {}
            owner = service.cluster_name or service.host
            if service.disabled or not db_services.is_up(
                    service.heartbeat_at, self.conf.service_down_time) or \
                    service.availability_zone != volume.availability_zone \
                    or owner == volume_rpcapi.backend_host(
                        volume.host or '') or \
                    not capabilities.satisfies(caps, extra_specs) or \
                    capabilities.capacity_limit(caps) < volume.size:
                continue
            free = float(caps.get('free_capacity_gb') or 0)
            if best is None or free > best[0]:
                best = (free, service)
        if best is None:
            return None
        return self._destination(session, best[1].cluster_name or
                                 best[1].host, best[1].cluster_name)

    # -- os-migrate_volume_completion -----------------------------------
    def complete(self, context, volume_id, new_volume_id, error):
        """Cinder's completion, which Nova calls once it swapped an
        attached volume's disk for the temporary volume ``new_volume_id``
        (``error``: the swap failed).  Returns the id the server's disk
        keeps: the volume's.

        A detached volume's migration is completed by its volume service:
        a completion of one is refused while its copy runs; ``error`` of
        one that stopped (``error`` already) is accepted."""
        policy.authorize(context, policy.MIGRATE_COMPLETE, {})
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id)
            new = db_volumes.get(session, new_volume_id)
            swapping = bool(db_attachments.live_for_volume(session, new.id)
                            or db_attachments.live_for_volume(session,
                                                              volume.id))
        # Cinder's refusals (with the ids)
        if not new.migration_status:
            raise exception.InvalidVolume(
                reason='Destination volume %s not mid-migration.' % new.id)
        if not volume.migration_status:
            raise exception.InvalidVolume(
                reason='Source volume %s not mid-migration.' % volume.id)
        expected = db_migrations.target_marker(volume.id)
        if new.migration_status != expected:
            raise exception.InvalidVolume(
                reason='Destination has migration_status %s, expected %s.'
                % (new.migration_status, expected))
        if volume.migration_status == states.MIGRATION_MIGRATING and \
                swapping:
            if error:
                return self._swap_failed(context, volume, new)
            return self._swap_done(context, volume, new)
        if volume.migration_status == states.MIGRATION_COMPLETING and \
                not error:
            # a completion cut short after the rename: run the rest
            return self._swap_done(context, volume, new)
        if volume.migration_status in states.MIGRATION_RUNNING:
            raise exception.InvalidVolume(
                reason='Volume %s is being migrated by its volume service, '
                       'which completes the migration itself.' % volume.id)
        if not error:
            raise exception.InvalidVolume(
                reason='Source volume %s not mid-migration.' % volume.id)
        # the migration failed: its temporary volume goes
        self._drop(context, new.id)
        return volume.id

    def _drop(self, context, target_id):
        """The temporary volume is deleted by its service (with what it
        holds)."""
        def mark(session):
            try:
                db_volumes.transition(session, target_id, 'force_delete')
            except exception.InvalidTransition:
                return False, None
            return True, db_volumes.get(session, target_id).host
        marked, host = db_api.run_writer(mark)
        if marked:
            self.volume_rpcapi.delete_volume(context, host, target_id)

    def _swap_failed(self, context, volume, new):
        """Nova could not swap: the volume stays where it is, attached
        as it was; the temporary volume goes."""
        try:
            db_api.run_writer(db_migrations.move, volume.id, 'fail')
        except exception.InvalidTransition:
            raise exception.InvalidVolume(
                reason='Source volume %s not mid-migration.' % volume.id)
        LOG.error('volume %s: migration -> error: Nova could not swap the '
                  'disk to %s', volume.id, new.id)
        self._drop(context, new.id)
        return volume.id

    def _swap_done(self, context, volume, new):
        """Nova swapped the server's disk to the temporary volume: its
        storage takes the volume's id on the destination, then one
        transaction swaps the two rows (the volume on the destination,
        with the attachment Nova made; the temporary row on the source,
        ``deleting``) and the source's service deletes the old storage.
        A rename that fails leaves the migration ``completing`` and
        both volumes as they are: the completion may be sent again."""
        def check_moved(session):
            db_volumes.lock(session, volume.id)
            if db_attachments.live_for_volume(session, volume.id):
                raise exception.InvalidVolume(
                    reason='Volume %s is still attached: the server has '
                           'not moved to %s.' % (volume.id, new.id))
            attached = [a for a in db_attachments.live_for_volume(
                session, new.id) if a.attach_status == states.ATTACHED]
            if len(attached) != 1:
                raise exception.InvalidVolume(
                    reason='Destination volume %s is not attached to the '
                           'server.' % new.id)
            if volume.migration_status == states.MIGRATION_MIGRATING:
                db_migrations.move(session, volume.id, 'complete')

        def swap(session):
            db_migrations.swap_attached(session, volume.id, new.id)
            try:
                db_volumes.transition(session, volume.id, 'migrate_unlock')
            except exception.InvalidTransition:
                pass
        # (each run again from its start on a deadlock: the rename and
        # the delete are asked once they committed)
        db_api.run_writer(check_moved)
        LOG.info('volume %s: migration migrating -> completing (Nova '
                 'swapped the disk to %s)', volume.id, new.id)
        self.volume_rpcapi.migrate_finish(context, new.host, new.id,
                                          volume.id)
        db_api.run_writer(swap)
        LOG.info('volume %s: migration completing -> success, now on %s '
                 '(attached)', volume.id, new.host)
        try:
            self.volume_rpcapi.delete_volume(context, volume.host, new.id)
        except Exception:
            # it stays ``deleting``: its service rolls the delete forward
            LOG.exception('temporary volume %s: delete not sent', new.id)
        return volume.id
