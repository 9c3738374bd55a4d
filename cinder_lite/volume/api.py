"""The service layer for volumes: what the REST handlers (and later the
bus) call.  It checks policy and ownership, runs the flows and talks to
the scheduler and volume services.

A create resolves the type, checks policy and that some live backend can
hold it (``admission``), records the volume and hands it to the
scheduler; if the cast fails the recorded volume is removed again, so a
refused or failed request leaves nothing behind.  These steps run as
plain calls, not on a taskflow engine: only the record has a side effect
to undo, and an engine costs about 10 ms per run here (compile, atom
uuids, storage locks) -- a third of the latency budget of a create.  The
manager-side flows, where the driver's side effects live, run on taskflow
engines.
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
from cinder_lite.db import backups as db_backups
from cinder_lite.db import image_metadata as db_image_metadata
from cinder_lite.db import models
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import quotas as db_quotas
from cinder_lite.db import services as db_services
from cinder_lite.db import snapshot_image_metadata as \
    db_snapshot_image_metadata
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import default_types as db_defaults
from cinder_lite.db import transfers as db_transfers
from cinder_lite.db import volume_metadata as db_metadata
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.scheduler import rpcapi as scheduler_rpcapi
from cinder_lite.volume import admission
from cinder_lite.volume import group_api
from cinder_lite.volume import image as image_mod
from cinder_lite.volume import image_api
from cinder_lite.volume import rpcapi as volume_rpcapi
from cinder_lite.volume import rules
from cinder_lite.volume import snapshot_api
from cinder_lite.volume import types as volume_types

LOG = logging.getLogger(__name__)


def resolve_type(session, context, request, conf):
    """The type the request names, else the project's default type
    (3.62), else ``[DEFAULT] default_volume_type``."""
    name_or_id = request.get('volume_type')
    if not name_or_id:
        default_id = db_defaults.type_id_of(session, context.project_id)
        if default_id is not None:
            # an administrator chose it for this project: it needs no
            # access grant of its own
            return db_types.get(session, default_id)
        name_or_id = conf.default_volume_type
    project = None if context.is_admin else context.project_id
    return db_types.get_by_name_or_id(session, name_or_id, project)


def check_policy(context, volume_type, conf):
    policy.authorize(context, policy.VOLUME_CREATE)
    if volume_types.is_multiattach(volume_type):
        if not conf.allow_multiattach:
            raise exception.InvalidVolumeType(
                reason='multi-attach is turned off in this cloud, so type '
                       '%s cannot be used' % volume_type['name'])
        policy.authorize(context, policy.MULTIATTACH)


def record_volume(context, request, volume_type, availability_zone, conf,
                  source=None, image=None, backup=None, group=None):
    """Record a new volume (``creating``) and charge its quota.
    ``source``: the ``Source`` it is made from, locked and checked in the
    same transaction (the volume then lives on the source's backend; it
    keeps the source's image metadata); ``image``: the Glance image it is
    made from (recorded as its ``image_id``; it keeps the image's
    metadata); ``backup``: the backup a backup service writes into it once
    its storage exists (the backup goes ``restoring`` in the same
    transaction)."""
    values = {
        'id': str(uuid.uuid4()),
        'project_id': context.project_id,
        'user_id': context.user_id,
        'name': request.get('name'),
        'description': request.get('description'),
        'size': request['size'],
        'status': states.CREATING,
        'volume_type_id': volume_type['id'],
        'availability_zone': availability_zone,
        'multiattach': volume_types.is_multiattach(volume_type),
        'bootable': False,
        'deleted': False,
        'created_at': models.utcnow(),
    }
    image_metadata = None
    if source is not None:
        values.update(source.values())
    if image is not None:
        values['image_id'] = image['id']
        image_metadata = image_mod.volume_image_metadata(image)
    if backup is not None:
        values['backup_id'] = backup.id
    if group is not None:
        # made on the group's backend (``group_api``); a copy of a source
        # (which is on that backend: ``Source.check_group``) stays in the
        # source's pool
        values.update(group_api.volume_values(group) if source is None
                      else {'group_id': group.id})

    def record():
        # (run again from its start on a deadlock: the scheduler's cast
        # comes after the commit)
        return db_api.run_writer(_record)

    def _record(session):
        metadata_of_image = image_metadata
        if group is not None:
            # (the group's lock before its volumes', as its update and
            # delete take them: a source may be one of them)
            group_api.lock_for_volume(session, group.id, volume_type)
        if source is not None:
            source.lock_and_check(session)
            metadata_of_image = source.image_metadata(session)
        if backup is not None:
            if db_backups.lock(session, backup.id).status != \
                    states.AVAILABLE:
                raise exception.InvalidBackup(
                    reason='Backup status must be available')
            db_backups.transition(session, backup.id, 'restore',
                                  values={'restore_volume_id':
                                          values['id'],
                                          'progress_bytes': 0})
        # a type deleted since it was resolved answers 404; one being
        # deleted now waits for this volume and is then refused as in
        # use
        db_types.lock_live(session, volume_type['id'])
        return db_volumes.create(session, values, quota.Checker(
            conf, session, size=values['size']),
            metadata=request.get('metadata'),
            image_metadata=metadata_of_image)

    volume = quota.ensuring_rows(record)
    LOG.info('volume %s: recorded as creating', volume.id)
    return volume


def forget_volume(volume):
    """Undo ``record_volume``."""
    LOG.warning('volume %s: removing the record of a failed create',
                volume.id)
    db_api.run_writer(db_volumes.remove, volume.id)


def cast_to_scheduler(context, scheduler, volume, volume_type,
                      availability_zone):
    # (the summary names the image to write into it: ``image_id``)
    summary = db_volumes.summary(volume)
    scheduler.create_volume(context, volume.id, {
        'size': volume.size,
        'availability_zone': availability_zone,
        'volume_type_id': volume_type['id'],
        'extra_specs': volume_type['extra_specs'],
        'multiattach': volume.multiattach,
        # passed on to the volume service (RPC 1.2), which then need not
        # read it back; older schedulers ignore it
        'volume': summary,
    })


def _by_volume(attachments):
    """Volume id -> its attachments (rows with ``volume_id``)."""
    found = {}
    for att in attachments:
        found.setdefault(att.volume_id, []).append(att)
    return found


class Source:
    """What a volume is made from: a snapshot (``snapshot_id``) or a
    volume (``source_volid``); ``volume`` is the volume whose backend
    holds it."""

    def __init__(self, session, context, request):
        scope = None if context.is_admin else context.project_id
        self.snapshot = self.volume = None
        if request.get('snapshot_id'):
            self.snapshot = db_snapshots.get(session, request['snapshot_id'],
                                             scope)
            policy.authorize(context, policy.SNAPSHOT_GET,
                             {'project_id': self.snapshot.project_id})
            self.volume = db_volumes.get(session, self.snapshot.volume_id)
            self._check(self.snapshot.status)
            self.size = self.snapshot.volume_size
            self.type_id = self.snapshot.volume_type_id
            self.what = 'snapshot'
        else:
            self.volume = db_volumes.get(session, request['source_volid'],
                                         scope)
            policy.authorize(context, policy.VOLUME_GET,
                             {'project_id': self.volume.project_id})
            self._check(self.volume.status)
            self.size = self.volume.size
            self.type_id = self.volume.volume_type_id
            self.what = 'source volume'
        if not self.volume.host:
            raise exception.InvalidVolume(
                reason='Volume %s has not been scheduled to any host.'
                       % self.volume.id)

    def _check(self, status):
        allowed = (states.SNAPSHOT_SOURCE_STATUSES if self.snapshot
                   else states.CLONE_SOURCE_STATUSES)
        if status not in allowed:
            error = (exception.InvalidSnapshot if self.snapshot
                     else exception.InvalidVolume)
            raise error(reason="Originating %s status must be one of "
                               "'%s' values" % (
                                   'snapshot' if self.snapshot
                                   else 'source volume',
                                   ', '.join(allowed)))

    def check_size(self, size):
        """The size of the new volume: the source's when none is given,
        never smaller."""
        if size is None:
            return self.size
        if size < self.size:
            raise exception.InvalidInput(
                reason="Volume size '%d'GB cannot be smaller than the %s "
                       "size %dGB. They must be >= original %s size." % (
                           size, self.what, self.size, self.what))
        return size

    def check_backend(self, session, volume_type, availability_zone, conf):
        """The new volume is made by the source's backend (a copy within
        it), so that backend must hold its type, in the zone asked."""
        if availability_zone and \
                availability_zone != self.volume.availability_zone:
            raise exception.InvalidInput(
                reason='Volume must be in the same availability zone as '
                       'the %s (%s).' % (self.what,
                                         self.volume.availability_zone))
        backend = volume_rpcapi.backend_host(self.volume.host)
        members = [m for m in db_services.backend_members(
            session, backend, constants.VOLUME_BINARY) if m.capabilities]
        caps = db_services.freshest(members).capabilities if members \
            else {}
        if not capabilities.satisfies(caps, volume_type['extra_specs']):
            raise exception.InvalidInput(
                reason='Volume type %s cannot be held by backend %s, which '
                       'holds the %s: a volume made from a snapshot or a '
                       'volume is copied within its backend, and copies '
                       'between backends are not supported.' % (
                           volume_type['name'], backend, self.what))
        snapshot_api.check_backend_up(session, self.volume, conf)

    def check_group(self, group):
        """A copy joining ``group`` is made by the source's backend, and
        a group's volumes live on the group's backend: the two must be
        one."""
        backend = volume_rpcapi.backend_host(self.volume.host)
        if volume_rpcapi.backend_host(group.host) != backend:
            raise exception.InvalidInput(
                reason='The %s is on backend %s and group %s on %s: a '
                       'volume made from a snapshot or a volume is copied '
                       'within its backend, and a group lives on one '
                       'backend.' % (self.what, backend, group.id,
                                     volume_rpcapi.backend_host(
                                         group.host)))

    def values(self):
        return {'host': self.volume.host,
                'cluster_name': self.volume.cluster_name,
                'availability_zone': self.volume.availability_zone,
                'snapshot_id': self.snapshot.id if self.snapshot else None,
                'source_volid': None if self.snapshot else self.volume.id,
                # a copy, whatever image metadata it takes along
                'image_id': None,
                # as Cinder: a copy of a bootable volume boots too
                'bootable': bool(self.volume.bootable)}

    def image_metadata(self, session):
        """The image metadata the new volume takes, as Cinder: the
        snapshot's (its volume's when it was taken), or the source
        volume's as it is now.  Read under the source's lock."""
        if self.snapshot is not None:
            return db_snapshot_image_metadata.get(session, self.snapshot.id)
        return db_image_metadata.get(session, self.volume.id)

    def lock_and_check(self, session):
        """Under the lock of the source's row: it is still there and in a
        status to be copied (a delete of it takes the same lock and
        refuses while a volume is being made from it)."""
        if self.snapshot is not None:
            self._check(db_snapshots.lock(session, self.snapshot.id).status)
        else:
            self._check(db_volumes.lock(session, self.volume.id).status)


class VolumeService:

    def __init__(self, conf):
        self.conf = conf
        self.scheduler_rpcapi = scheduler_rpcapi.SchedulerAPI(conf)
        self.volume_rpcapi = volume_rpcapi.VolumeAPI(conf)

    def _scope(self, context):
        """The project whose volumes ``context`` sees; None = all."""
        return None if context.is_admin else context.project_id

    def create(self, context, request):
        """Returns the new volume (``creating``) and its type.  With
        ``image_ref`` the image is looked up and checked first (it must
        be active and fit), and the volume service writes it into the
        volume; with ``snapshot_id`` or ``source_volid`` the source's
        backend copies it."""
        sources = [k for k in ('snapshot_id', 'source_volid', 'backup_id')
                   if request.get(k)]
        if len(sources) + (request.get('image_ref') is not None) > 1:
            raise exception.InvalidInput(
                reason='A volume is made from one source: an image, a '
                       'snapshot, a volume or a backup, not several.')
        if request.get('group_id') and (
                request.get('backup_id') or
                request.get('image_ref') is not None):
            raise exception.InvalidInput(
                reason='A volume is created in a group (group_id) empty, '
                       'or from a snapshot or a volume: not from an image '
                       'or a backup.')
        if request.get('snapshot_id') or request.get('source_volid'):
            # (with ``group_id`` too: as Cinder, the copy joins the group)
            return self._create_from(context, request)
        if request.get('group_id'):
            return self._create_in_group(context, request)
        conf = self.conf
        image = None
        backup = None
        if request.get('backup_id'):
            backup = self._backup_source(context, request)
        if request.get('image_ref') is not None:
            self.volume_rpcapi.require(image_api.IMAGE_RPC,
                                       'a volume from an image')
            image = image_api.find_image(conf, context, request['image_ref'])
            image_mod.check_fits(image, request['size'])
            if not request.get('volume_type') and \
                    image.get(image_mod.VOLUME_TYPE_PROPERTY):
                # as Cinder: the image names the type of the volumes made
                # from it when the request names none (a type that is not
                # there, or not this project's, answers 404)
                request = dict(request, volume_type=image_mod.as_text(
                    image[image_mod.VOLUME_TYPE_PROPERTY]))
        with db_api.reader() as session:
            volume_type = resolve_type(session, context, request, conf)
            check_policy(context, volume_type, conf)
            try:
                az = admission.check_backends(session, request, volume_type,
                                              conf)
            except exception.Invalid:
                # over quota is told first, as Cinder checks it before it
                # asks the backends
                quota.Checker(conf, session).now(
                    context.project_id,
                    db_quotas.footprint(volume_type['id'], request['size']),
                    size=request['size'])
                raise
        volume = record_volume(context, request, volume_type, az, conf,
                               image=image, backup=backup)
        try:
            cast_to_scheduler(context, self.scheduler_rpcapi, volume,
                              volume_type, az)
        except Exception:
            forget_volume(volume)
            raise
        notify.info(context, conf.host, 'volume.create.start',
                    notify.volume_payload(volume))
        return volume, volume_type

    def _backup_source(self, context, request):
        """The backup a new volume is restored from (3.47): available,
        of the caller's project (any, for an admin); the volume is the
        backup's size unless a larger one is asked."""
        self.volume_rpcapi.require(volume_rpcapi.BACKUP_RPC, 'a volume '
                                   'from a backup')
        with db_api.reader() as session:
            backup = db_backups.get(session, request['backup_id'],
                                    self._scope(context))
            policy.authorize(context, policy.BACKUP_RESTORE,
                             {'project_id': backup.project_id})
            db_services.check_any_up(session, constants.BACKUP_BINARY,
                                     self.conf.service_down_time,
                                     'backup service')
        if backup.status != states.AVAILABLE:
            raise exception.InvalidBackup(
                reason='Backup status must be available')
        if request.get('size') is None:
            request['size'] = backup.size
        elif request['size'] < backup.size:
            raise exception.InvalidInput(
                reason="Volume size '%d'GB cannot be smaller than the "
                       "backup size %dGB." % (request['size'], backup.size))
        return backup

    def _create_in_group(self, context, request):
        """A volume created in a group (3.13): recorded on the group's
        backend under the group's row lock and cast to it (a group lives
        on one backend; no scheduling)."""
        conf = self.conf
        with db_api.reader() as session:
            volume_type = resolve_type(session, context, request, conf)
            check_policy(context, volume_type, conf)
            group = group_api.group_for_volume(
                session, context, request['group_id'], volume_type, conf)
            if request.get('availability_zone') and \
                    request['availability_zone'] != group.availability_zone:
                raise exception.InvalidInput(
                    reason='Volume must be in the same availability zone as '
                           'its group (%s).' % group.availability_zone)
            quota.Checker(conf, session).now(
                context.project_id,
                db_quotas.footprint(volume_type['id'], request['size']),
                size=request['size'])
        volume = record_volume(context, request, volume_type,
                               group.availability_zone, conf, group=group)
        try:
            self.volume_rpcapi.create_volume(
                context, volume.host, volume.id,
                volume=db_volumes.summary(volume))
        except Exception:
            forget_volume(volume)
            raise
        LOG.info('volume %s: to be made in group %s on %s', volume.id,
                 group.id, volume.host)
        notify.info(context, conf.host, 'volume.create.start',
                    notify.volume_payload(volume))
        return volume, volume_type

    def _create_from(self, context, request):
        """A volume made from a snapshot or a volume: recorded on the
        source's backend and cast to it (no scheduling: the copy is
        made within that backend)."""
        conf = self.conf
        self.volume_rpcapi.require('1.5', 'a volume from a snapshot or a '
                                   'volume')
        with db_api.reader() as session:
            source = Source(session, context, request)
            request['size'] = source.check_size(request['size'])
            if request.get('volume_type'):
                volume_type = resolve_type(session, context, request, conf)
            else:
                # the source's type, as Cinder
                try:
                    volume_type = db_types.get(session, source.type_id)
                except exception.NotFound:
                    volume_type = resolve_type(session, context, request,
                                               conf)
            check_policy(context, volume_type, conf)
            group = None
            if request.get('group_id'):
                group = group_api.group_for_volume(
                    session, context, request['group_id'], volume_type,
                    conf)
                source.check_group(group)
            quota.Checker(conf, session).now(
                context.project_id,
                db_quotas.footprint(volume_type['id'], request['size']),
                size=request['size'])
            source.check_backend(session, volume_type,
                                 request.get('availability_zone'), conf)
        volume = record_volume(context, request, volume_type,
                               source.volume.availability_zone, conf,
                               source=source, group=group)
        try:
            self.volume_rpcapi.create_volume(
                context, volume.host, volume.id,
                volume=db_volumes.summary(volume))
        except Exception:
            forget_volume(volume)
            raise
        LOG.info('volume %s: to be made from %s %s on %s%s', volume.id,
                 source.what, (source.snapshot or source.volume).id,
                 volume.host, ', in group %s' % group.id if group else '')
        notify.info(context, conf.host, 'volume.create.start',
                    notify.volume_payload(volume))
        return volume, volume_type

    def get(self, context, volume_id):
        """The volume, once the caller may see it."""
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id,
                                    self._scope(context))
        policy.authorize(context, policy.VOLUME_GET,
                         {'project_id': volume.project_id})
        return volume

    def show(self, context, volume_id):
        """The volume (a ``db_volumes.Record``) with what its view needs
        (type name, attached attachments, metadata, image metadata), read
        in one transaction, one statement each, as views take them
        (dicts by volume id)."""
        with db_api.reader() as session:
            volume, type_name = db_volumes.get_shown(
                session, volume_id, self._scope(context))
            policy.authorize(context, policy.VOLUME_GET,
                             {'project_id': volume.project_id})
            attached = db_attachments.attached_to(session, volume.id)
            metadata = db_metadata.get(session, volume.id)
            image_metadata = db_image_metadata.get(session, volume.id)
        return (volume, {volume.volume_type_id: type_name},
                {volume.id: attached}, {volume.id: metadata},
                {volume.id: image_metadata} if image_metadata else {})

    def list(self, context, filters, sort_keys, sort_dirs, limit, marker,
             all_tenants=False, with_count=False, shown=False):
        """(The page of volumes, their total count or None, with
        ``shown`` what their detailed views need besides, else None: (type
        names, attached attachments, metadata, image metadata) as ``show``
        gives them, by volume id, read in the same transaction)."""
        project = policy.list_scope(context, policy.VOLUME_GET_ALL,
                                    policy.VOLUME_ALL_TENANTS, filters,
                                    all_tenants)
        if not context.is_admin:
            # as Cinder: the temporary volume of a migration is for
            # admins' eyes only
            filters = dict(filters or {}, no_migration_targets=True)
        with db_api.reader() as session:
            rows = db_volumes.list_volumes(session, project, filters,
                                           sort_keys, sort_dirs, limit,
                                           marker)
            total = (db_volumes.count(session, project, filters)
                     if with_count else None)
            if not shown:
                return rows, total, None
            ids = [v.id for v in rows]
            return rows, total, (
                db_types.names(session, {v.volume_type_id for v in rows}),
                _by_volume(db_attachments.for_volumes(
                    session, ids, (states.ATTACHED,))),
                db_metadata.for_volumes(session, ids),
                db_image_metadata.for_volumes(session, ids))

    def update(self, context, volume_id, values):
        """Name, description and (replacing all of it) metadata."""
        volume = self.get(context, volume_id)
        policy.authorize(context, policy.VOLUME_UPDATE,
                         {'project_id': volume.project_id})
        metadata = values.pop('metadata', None)

        def _update(session):
            locked = db_volumes.lock(session, volume_id)
            if locked.status in states.VOLUME_UNCHANGEABLE_STATUSES:
                raise exception.InvalidVolume(
                    reason='The volume cannot be updated during %s.'
                           % locked.status)
            if values:
                db_volumes.update(session, volume_id, values)
            if metadata is not None:
                db_metadata.update(session, volume_id, metadata,
                                   delete=True)
        db_api.run_writer(_update)
        return self.get(context, volume_id)

    def delete(self, context, volume_id, force=False, cascade=False):
        """Delete a volume (``available``, ``error``, ``error_deleting``,
        ``error_extending``, no attachments, no snapshots).  ``force``
        (the caller checked the force-delete policy and detached what it
        may, see ``VolumeActions.force_delete``): whatever its status, as
        in Cinder, but not while it is attached.  ``cascade``: its
        snapshots are deleted with it (each ``available``, ``error`` or
        ``deleting`` and, unless the caller is an admin, of the caller's
        project; any status with ``force``); they are marked
        ``deleting`` in the transaction that marks the volume, and the
        volume service removes them before the volume.  Never on a
        frozen backend."""
        volume = self.get(context, volume_id)
        policy.authorize(context, policy.VOLUME_DELETE,
                         {'project_id': volume.project_id})

        # (run again from its start on a deadlock: the notification and
        # the volume service's delete come after the commit)
        def _mark(session):
            # the volume's row lock: no reservation slips in between
            # the check and the status change
            db_attachments.lock_volume(session, volume_id, load=False)
            live = db_attachments.live_for_volume(session, volume_id)
            if force:
                # Cinder's rule, forced or not
                rules.check_not_attached(volume_id, live)
            if live:
                raise exception.InvalidVolume(
                    reason='Volume %s still has attachments (%s); '
                           'delete them first.' % (volume_id, ', '.join(
                               '%s %s' % (a.id, a.attach_status)
                               for a in live)))
            current = db_volumes.get(session, volume_id)
            if current.pending_size is not None and \
                    current.status != states.EXTENDING:
                # extended while in use and detached since: the
                # storage grows under the volume service now
                raise exception.InvalidVolume(
                    reason='Volume %s is being extended to %d GiB; '
                           'delete it once the extend has finished.'
                    % (volume_id, current.pending_size))
            if current.migration_status not in (
                    None, states.MIGRATION_ERROR, states.MIGRATION_SUCCESS):
                # Cinder's refusal: migrating, or the temporary volume of
                # a migration (its service deletes it)
                raise exception.InvalidVolume(
                    reason='Volume cannot be deleted while migrating')
            self._check_not_frozen(session, current)
            self._mark_snapshots(session, context, volume_id, force,
                                 cascade)
            db_volumes.transition(
                session, volume_id,
                'force_delete' if force else 'delete')
            # a forced delete of a volume on offer withdraws the offer
            db_transfers.end_for_volume(session, volume_id)
            if not current.host:
                # never scheduled: no storage to remove
                db_volumes.transition(session, volume_id, 'deleted')
            return current

        try:
            current = db_api.run_writer(_mark)
        except exception.InvalidTransition as e:
            raise exception.InvalidVolume(
                reason='Volume status must be available or error or '
                       'error_deleting or error_extending, but current '
                       'status is: %s.'
                       % e.kwargs['actual'])
        volume = current
        payload = notify.volume_payload(volume)
        payload['status'] = states.DELETING
        notify.info(context, self.conf.host, 'volume.delete.start', payload)
        if volume.host:
            self.volume_rpcapi.delete_volume(context, volume.host,
                                             volume_id)
        else:
            payload['status'] = states.DELETED
            notify.info(context, self.conf.host, 'volume.delete.end',
                        payload)
        LOG.info('volume %s: %s -> deleting', volume_id, volume.status)

    @staticmethod
    def _mark_snapshots(session, context, volume_id, force, cascade):
        """Refuse a volume with snapshots, or (``cascade``) mark them all
        ``deleting``; the caller holds the volume's row lock, which a
        snapshot create takes too."""
        making = db_volumes.creating_from(session, source_volid=volume_id)
        if making:
            raise exception.InvalidVolume(
                reason='Volume %s is being copied to volume(s) %s; delete '
                       'it once they are made.' % (volume_id,
                                                   ', '.join(making)))
        snapshots = db_snapshots.of_volume(session, volume_id)
        if not snapshots:
            return
        refusal = exception.InvalidVolume(
            reason='Volume %s must not be migrating, attached, belong to '
                   'a group, have snapshots, awaiting a transfer, or be '
                   'disassociated from snapshots after volume transfer '
                   '(snapshots: %s).' % (
                       volume_id, ', '.join('%s %s' % (s.id, s.status)
                                            for s in snapshots)))
        if not cascade:
            raise refusal
        for snapshot in snapshots:
            if not force and (
                    snapshot.status not in states.SNAPSHOT_CASCADE_STATUSES
                    or (not context.is_admin
                        and snapshot.project_id != context.project_id)):
                raise refusal
            making = db_volumes.creating_from(session,
                                              snapshot_id=snapshot.id)
            if making:
                raise exception.InvalidVolume(
                    reason='Snapshot %s of volume %s is being copied to '
                           'volume(s) %s.' % (snapshot.id, volume_id,
                                              ', '.join(making)))
            if snapshot.status != states.DELETING:
                db_snapshots.transition(session, snapshot.id,
                                        'force_delete')
            LOG.info('snapshot %s: %s -> deleting (cascade from volume '
                     '%s)', snapshot.id, snapshot.status, volume_id)

    @staticmethod
    def _check_not_frozen(session, volume):
        """As Cinder: no volume of a frozen backend is deleted."""
        if not volume.host:
            return
        backend = volume_rpcapi.backend_host(volume.host)
        if db_services.backend_frozen(session, backend,
                                      constants.VOLUME_BINARY):
            raise exception.BackendFrozen(backend=backend)

    def check_not_frozen(self, volume):
        with db_api.reader() as session:
            self._check_not_frozen(session, volume)

    def metadata_of(self, volumes):
        """Volume id -> its metadata, for the views."""
        with db_api.reader() as session:
            return db_metadata.for_volumes(session, [v.id for v in volumes])

    def summary(self, context, all_tenants=False):
        """(count, GiB, key -> distinct values) of the caller's live
        volumes (of every project: admins with ``all_tenants``)."""
        project = policy.list_scope(context, policy.VOLUME_GET_ALL,
                                    policy.VOLUME_ALL_TENANTS, {},
                                    all_tenants)
        with db_api.reader() as session:
            count, size = db_volumes.totals(session, project)
            metadata = db_metadata.distinct(session, project)
        return count, size, metadata

    def attachments_of(self, volumes):
        """Volume id -> its attached attachments, for the views."""
        with db_api.reader() as session:
            return _by_volume(db_attachments.for_volumes(
                session, [v.id for v in volumes], (states.ATTACHED,)))

    def type_id_of(self, context, name_or_id):
        """The id of the type named (or with that id) that the caller
        may see; the value itself when there is none (a filter then
        matches nothing)."""
        scope = None if context.is_admin else context.project_id
        with db_api.reader() as session:
            try:
                return db_types.get_by_name_or_id(session, name_or_id,
                                                  scope)['id']
            except exception.NotFound:
                return name_or_id

    def type_names(self, volumes):
        """Type id -> name for the views."""
        with db_api.reader() as session:
            return db_types.names(session,
                                  {v.volume_type_id for v in volumes})
