"""The service layer for generic volume groups (``/groups``).

A create records the group ``creating`` with its volume types and its
quota (``groups``) and casts to the scheduler, which picks one backend
that can hold every one of its volume types (and its group type's
specs) and records it there, ``available``: a group lives on one
backend (one host, or one cluster of volume services), as in Cinder,
and so does every volume in it.  Volumes join a group when they are
created in it (``group_id`` in ``POST /volumes``: made on the group's
backend, without the scheduler) or through an update
(``add_volumes``), which checks each volume under its row lock and the
group's; both are refused for a volume on another backend, of a type
the group does not hold, in another group or in the wrong status, with
Cinder's words.  A delete with ``delete-volumes`` marks the group and
its volumes ``deleting`` in one transaction and the group's volume
service removes the volumes, then records the group ``deleted``.
"""
import logging
import uuid

from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import group_snapshots as db_group_snapshots
from cinder_lite.db import group_types as db_group_types
from cinder_lite.db import groups as db_groups
from cinder_lite.db import models
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import services as db_services
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.scheduler import rpcapi as scheduler_rpcapi
from cinder_lite.volume import rpcapi as volume_rpcapi

LOG = logging.getLogger(__name__)

GROUP_RPC = '1.14'


def same_backend(host_a, host_b):
    """True when two ``node@backend#pool`` hosts name one backend."""
    return bool(host_a and host_b) and \
        volume_rpcapi.backend_host(host_a) == \
        volume_rpcapi.backend_host(host_b)


def check_backend_up(session, group, conf):
    """ServiceUnavailable (503, at once) when no volume service of the
    group's backend is up."""
    db_services.check_backend_up(
        session, volume_rpcapi.backend_host(group.host),
        constants.VOLUME_BINARY, conf.service_down_time)


def list_scope(context, rule, filters, all_tenants):
    """The project a list covers (None: all): an admin's with
    ``all_tenants`` (then a ``project_id`` filter counts), as Cinder's
    group lists."""
    policy.authorize(context, rule)
    project_filter = filters.pop('project_id', None)
    if all_tenants and context.is_admin:
        return project_filter
    return context.project_id


class GroupService:

    def __init__(self, conf, volume_rpc=None, scheduler_rpc=None):
        self.conf = conf
        self.volume_rpcapi = volume_rpc or volume_rpcapi.VolumeAPI(conf)
        self.scheduler_rpcapi = (scheduler_rpc or
                                 scheduler_rpcapi.SchedulerAPI(conf))

    @staticmethod
    def _scope(context):
        return None if context.is_admin else context.project_id

    # -- create ---------------------------------------------------------------
    def create(self, context, name, description, group_type, volume_types,
               availability_zone=None):
        """Record a group (``creating``) and hand it to the scheduler."""
        policy.authorize(context, policy.GROUP_CREATE)
        self.volume_rpcapi.require(GROUP_RPC, 'a group')
        scope = self._scope(context)
        with db_api.reader() as session:
            gtype = db_group_types.get_by_name_or_id(session, group_type,
                                                     scope)
            vtypes = []
            for ident in volume_types:
                vtype = db_types.get_by_name_or_id(session, ident, scope)
                if vtype['id'] not in [t['id'] for t in vtypes]:
                    vtypes.append(vtype)
            quota.Checker(self.conf, session).now(
                context.project_id, {'groups': (1, 0)})
        # as a volume's: the zone asked for, else the default one
        values = self._values(context, name, description, gtype,
                              availability_zone
                              or self.conf.default_availability_zone
                              or self.conf.storage_availability_zone)

        # (run again from its start on a deadlock, as another create of
        # the project through another Galera node makes it: the cast
        # comes after the commit)
        def _record(session):
            # a type deleted meanwhile is a 404; a delete waits for this
            # group and then finds it
            db_group_types.lock_live(session, gtype['id'])
            for vtype in vtypes:
                db_types.lock_live(session, vtype['id'])
            return db_groups.create(
                session, values, [t['id'] for t in vtypes],
                quota.Checker(self.conf, session))
        group = quota.ensuring_rows(lambda: db_api.run_writer(_record))
        LOG.info('group %s: recorded as creating (type %s, volume types '
                 '%s)', group.id, gtype['id'],
                 ', '.join(t['id'] for t in vtypes))
        try:
            self.scheduler_rpcapi.create_group(
                context, group.id,
                db_groups.request_spec(group, vtypes, gtype['group_specs']))
        except Exception:
            self._forget(group.id)
            raise
        return group

    @staticmethod
    def _values(context, name, description, gtype, availability_zone,
                **more):
        values = {'id': str(uuid.uuid4()), 'project_id': context.project_id,
                  'user_id': context.user_id, 'name': name,
                  'description': description, 'status': states.CREATING,
                  'group_type_id': gtype['id'],
                  'availability_zone': availability_zone, 'deleted': False,
                  'created_at': models.utcnow()}
        values.update(more)
        return values

    @staticmethod
    def _forget(group_id):
        LOG.warning('group %s: removing the record of a create that could '
                    'not be sent', group_id)
        db_api.run_writer(db_groups.transition, group_id,
                          'deleted_unscheduled')

    # -- create from a group snapshot or a group (3.14) -----------------------
    def create_from_src(self, context, name, description,
                        group_snapshot_id=None, source_group_id=None):
        """A new group (``creating``) of the source's type and volume
        types on the source's backend, with a volume made from each
        snapshot of the group snapshot (or cloned from each volume of the
        source group), all recorded in one transaction with their quota;
        the backend makes the volumes and then records the group
        ``available`` (``error`` when a volume failed)."""
        policy.authorize(context, policy.GROUP_CREATE)
        self.volume_rpcapi.require(GROUP_RPC, 'a group from a source')
        scope = self._scope(context)
        with db_api.reader() as session:
            # (not found: 404, as Cinder)
            if group_snapshot_id:
                source_snap = db_group_snapshots.get(
                    session, group_snapshot_id, scope)
                source = db_groups.get(session, source_snap.group_id)
            else:
                source = db_groups.get(session, source_group_id, scope)
            policy.authorize(context, policy.GROUP_GET,
                             {'project_id': source.project_id})
            if not source.host:
                raise exception.InvalidGroup(
                    reason='Source group %s has not been scheduled to any '
                           'host.' % source.id)
            gtype = db_group_types.get(session, source.group_type_id)
            type_ids = db_groups.volume_types_of(session, [source.id])[
                source.id]
            check_backend_up(session, source, self.conf)
        values = self._values(
            context, name, description, gtype, source.availability_zone,
            host=source.host, cluster_name=source.cluster_name,
            group_snapshot_id=group_snapshot_id,
            source_group_id=source_group_id)

        # (run again from its start on a deadlock: the cast comes after
        # the commit)
        def _record(session):
            copies = self._source_copies(session, group_snapshot_id, source)
            db_group_types.lock_live(session, gtype['id'])
            check = quota.Checker(self.conf, session)
            group = db_groups.create(session, values, type_ids, check)
            volumes = []
            for copy in copies:
                volume = db_volumes.create(session, dict(
                    copy, id=str(uuid.uuid4()),
                    project_id=context.project_id,
                    user_id=context.user_id, status=states.CREATING,
                    group_id=group.id, host=source.host,
                    cluster_name=source.cluster_name,
                    availability_zone=source.availability_zone,
                    bootable=copy.get('bootable', False),
                    deleted=False, created_at=models.utcnow()), check)
                volumes.append(db_volumes.summary(volume))
            return group, volumes
        group, volumes = quota.ensuring_rows(
            lambda: db_api.run_writer(_record))
        LOG.info('group %s: recorded as creating from %s %s, with %d '
                 'volumes', group.id,
                 'group snapshot' if group_snapshot_id else 'group',
                 group_snapshot_id or source_group_id, len(volumes))
        try:
            self.volume_rpcapi.create_group_from_src(context, group.host,
                                                     group.id, volumes)
        except Exception:
            LOG.warning('group %s: removing the record of a create that '
                        'could not be sent', group.id)
            db_api.run_writer(self._remove_unsent, group.id,
                              [v['id'] for v in volumes])
            raise
        return group

    @staticmethod
    def _remove_unsent(session, group_id, volume_ids):
        for volume_id in volume_ids:
            db_volumes.remove(session, volume_id)
        db_groups.transition(session, group_id, 'create_failed')
        db_groups.transition(session, group_id, 'deleted_unscheduled')

    @staticmethod
    def _source_copies(session, group_snapshot_id, source):
        """Under the sources' locks, the values of each new volume: from
        each snapshot of the group snapshot, or cloned from each volume of
        the source group (each in a status it may be copied in)."""
        copies = []
        if group_snapshot_id:
            found = db_group_snapshots.lock(session, group_snapshot_id)
            if found.status != states.AVAILABLE:
                raise exception.InvalidGroupSnapshot(
                    reason='Group snapshot status must be available, but '
                           'current status is: %s.' % found.status)
            for snap in db_group_snapshots.snapshots_of(session, found.id):
                snap = db_snapshots.lock(session, snap.id)
                if snap.status != states.AVAILABLE:
                    raise exception.InvalidGroupSnapshot(
                        reason='Snapshot %s of it is %s, not available.'
                               % (snap.id, snap.status))
                copies.append({'size': snap.volume_size,
                               'volume_type_id': snap.volume_type_id,
                               'multiattach': db_volumes.get(
                                   session, snap.volume_id).multiattach,
                               'snapshot_id': snap.id,
                               'name': None, 'description': None})
        else:
            group = db_groups.lock(session, source.id)
            if group.status not in states.GROUP_USABLE_STATUSES:
                raise exception.InvalidGroup(
                    reason='Source group status must be available, but '
                           'current status is: %s.' % group.status)
            for volume in db_groups.volumes_of(session, [group.id],
                                               lock=True)[group.id]:
                if volume.status not in states.CLONE_SOURCE_STATUSES:
                    raise exception.InvalidGroup(
                        reason='Volume %s of the source group is %s; it '
                               'can be cloned in: %s.' % (
                                   volume.id, volume.status, ', '.join(
                                       states.CLONE_SOURCE_STATUSES)))
                copies.append({'size': volume.size,
                               'volume_type_id': volume.volume_type_id,
                               'multiattach': volume.multiattach,
                               'source_volid': volume.id,
                               'bootable': bool(volume.bootable),
                               'name': None, 'description': None})
        if not copies:
            raise exception.InvalidGroup(
                reason='The source has no volumes to make the group from.')
        return copies

    # -- read -----------------------------------------------------------------
    def get(self, context, group_id):
        with db_api.reader() as session:
            group = db_groups.get(session, group_id, self._scope(context))
        policy.authorize(context, policy.GROUP_GET,
                         {'project_id': group.project_id})
        return group

    def details_of(self, groups):
        """(group id -> volume type ids, group id -> volume ids)."""
        ids = [g.id for g in groups]
        with db_api.reader() as session:
            types = db_groups.volume_types_of(session, ids)
            volumes = {g: [v.id for v in vs] for g, vs in
                       db_groups.volumes_of(session, ids).items()}
        return types, volumes

    def list(self, context, filters, sort_keys, sort_dirs, limit, marker,
             all_tenants=False, with_count=False, offset=0):
        filters = dict(filters)
        project = list_scope(context, policy.GROUP_GET_ALL, filters,
                             all_tenants)
        with db_api.reader() as session:
            rows = db_groups.list_groups(session, project, filters,
                                         sort_keys, sort_dirs, limit,
                                         marker, offset)
            total = db_groups.count(session, project, filters) \
                if with_count else None
        return rows, total

    # -- update ---------------------------------------------------------------
    def update(self, context, group_id, name=None, description=None,
               add_volumes=(), remove_volumes=(), fields=()):
        """Rename a group and move volumes into or out of it (Cinder's
        checks, each under the rows' locks)."""
        group = self.get(context, group_id)
        policy.authorize(context, policy.GROUP_UPDATE,
                         {'project_id': group.project_id})
        if not fields and not add_volumes and not remove_volumes:
            raise exception.InvalidInput(
                reason='Name, description, add_volumes, and '
                       'remove_volumes can not be all empty in the request '
                       'body.')
        both = sorted(set(add_volumes) & set(remove_volumes))
        if both:
            raise exception.InvalidVolume(
                reason='UUID %s is in both add and remove volume list.'
                       % both[0])

        # (run again from its start on a deadlock: nothing in it leaves
        # the database)
        def _change(session):
            group = db_groups.lock(session, group_id)
            if group.status not in states.GROUP_USABLE_STATUSES:
                raise exception.InvalidGroup(
                    reason='Group status must be available, but current '
                           'status is: %s.' % group.status)
            type_ids = db_groups.volume_types_of(session, [group.id])[
                group.id]
            adding = [self._check_add(session, context, group, type_ids,
                                      volume_id)
                      for volume_id in sorted(set(add_volumes))]
            removing = [self._check_remove(session, group, volume_id)
                        for volume_id in sorted(set(remove_volumes))]
            db_groups.set_volumes_group(session, [v.id for v in adding],
                                        group.id, None)
            db_groups.set_volumes_group(session, [v.id for v in removing],
                                        None, group.id)
            values = {k: v for k, v in (('name', name),
                                        ('description', description))
                      if k in fields}
            if values:
                db_groups.update(session, group.id, values)
            return values, adding, removing
        values, adding, removing = db_api.run_writer(_change)
        LOG.info('group %s updated: %s; volumes added %s, removed %s',
                 group_id, sorted(values) or 'no fields',
                 [v.id for v in adding] or 'none',
                 [v.id for v in removing] or 'none')

    def _check_add(self, session, context, group, type_ids, volume_id):
        try:
            volume = db_volumes.lock(session, volume_id,
                                     self._scope(context))
        except exception.VolumeNotFound:
            raise exception.InvalidVolume(
                reason='Cannot add volume %s to group %s because volume '
                       'cannot be found.' % (volume_id, group.id)) from None
        why = None
        if volume.group_id:
            why = 'it is already in group %s' % volume.group_id
        elif volume.volume_type_id not in type_ids:
            why = ('volume type %s is not supported by the group'
                   % volume.volume_type_id)
        elif volume.status not in states.GROUP_ADD_VOLUME_STATUSES:
            why = ('volume is in an invalid state: %s. Valid states are: '
                   '%s' % (volume.status,
                           ', '.join(states.GROUP_ADD_VOLUME_STATUSES)))
        elif not volume.host:
            why = 'volume has not been scheduled to any host'
        elif not same_backend(volume.host, group.host):
            why = ('volume is on backend %s and the group on %s (a group '
                   'lives on one backend)' % (
                       volume_rpcapi.backend_host(volume.host),
                       volume_rpcapi.backend_host(group.host)))
        if why:
            raise exception.InvalidVolume(
                reason='Cannot add volume %s to group %s because %s.' % (
                    volume_id, group.id, why))
        return volume

    @staticmethod
    def _check_remove(session, group, volume_id):
        try:
            volume = db_volumes.lock(session, volume_id)
        except exception.VolumeNotFound:
            volume = None
        if volume is None or volume.group_id != group.id:
            raise exception.InvalidVolume(
                reason='Cannot remove volume %s from group %s because it '
                       'is not in the group.' % (volume_id, group.id))
        if volume.status not in states.GROUP_REMOVE_VOLUME_STATUSES:
            raise exception.InvalidVolume(
                reason='Cannot remove volume %s from group %s because '
                       'volume is in an invalid state: %s. Valid states '
                       'are: %s.' % (volume_id, group.id, volume.status,
                                     ', '.join(
                                         states.GROUP_REMOVE_VOLUME_STATUSES)))
        return volume

    # -- delete ---------------------------------------------------------------
    def delete(self, context, group_id, delete_volumes=False):
        group = self.get(context, group_id)
        policy.authorize(context, policy.GROUP_DELETE,
                         {'project_id': group.project_id})

        # (run again from its start on a deadlock: the cast comes after
        # the commit)
        def _mark(session):
            group = db_groups.lock(session, group_id)
            if not group.host and group.status in (states.CREATING,
                                                   states.ERROR):
                # never placed: nothing on any backend
                db_groups.transition(session, group.id,
                                     'deleted_unscheduled')
                return group, None
            volumes = db_groups.volumes_of(session, [group.id],
                                           lock=True)[group.id]
            if volumes and not delete_volumes:
                raise exception.InvalidGroup(
                    reason='Group %s still contains volumes. The '
                           'delete-volumes flag is required to delete it.'
                           % group.id)
            snaps = db_group_snapshots.of_group(session, group.id)
            if snaps:
                raise exception.InvalidGroup(
                    reason='Cannot delete group %s. group_snapshot %s is '
                           'present. It must be deleted before deleting '
                           'the group.' % (group.id, snaps[0].id))
            try:
                db_groups.transition(session, group.id, 'delete')
            except exception.InvalidTransition:
                raise exception.InvalidGroup(
                    reason='Group status must be available or error, but '
                           'current status is: %s' % group.status) from None
            for volume in volumes:
                self._mark_volume(session, group, volume)
            check_backend_up(session, group, self.conf)
            return group, volumes
        group, volumes = db_api.run_writer(_mark)
        if volumes is None:
            LOG.info('group %s: deleted (never scheduled)', group.id)
            return
        LOG.info('group %s: %s -> deleting (%d volumes)', group.id,
                 group.status, len(volumes))
        self.volume_rpcapi.delete_group(context, group.host, group.id)

    @staticmethod
    def _mark_volume(session, group, volume):
        if db_attachments.live_for_volume(session, volume.id):
            raise exception.InvalidVolume(
                reason='Volume in group %s is attached. Need to detach '
                       'first.' % group.id)
        if db_snapshots.of_volume(session, volume.id):
            raise exception.InvalidVolume(
                reason='Volume in group still has dependent snapshots.')
        try:
            db_volumes.transition(session, volume.id, 'delete')
        except exception.InvalidTransition as e:
            raise exception.InvalidVolume(
                reason='Volume %s in group %s is %s: it can be deleted only '
                       'when available or error.' % (
                           volume.id, group.id, e.kwargs['actual'])
            ) from None

    # -- admin ---------------------------------------------------------------
    def reset_status(self, context, group_id, status):
        policy.authorize(context, policy.GROUP_RESET_STATUS)
        if status not in states.GROUP_RESET_STATUSES:
            raise exception.InvalidGroup(
                reason='Group status %s is not one of: %s' % (
                    status, ', '.join(states.GROUP_RESET_STATUSES)))

        def _reset(session):
            group = db_groups.lock(session, group_id)
            db_groups.transition(session, group.id, 'reset_status',
                                 target=status)
            return group
        group = db_api.run_writer(_reset)
        LOG.info('group %s: %s -> %s (reset_status)', group_id,
                 group.status, status)


# -- volumes created in a group (POST /volumes with group_id) ---------------
def group_for_volume(session, context, group_id, volume_type, conf):
    """The group a new volume of ``volume_type`` is created in, checked:
    the caller's (any, for an admin), available, placed, holding that
    type, its backend up.  Checked again under its lock by
    ``lock_for_volume``."""
    scope = None if context.is_admin else context.project_id
    # (not found: 404, as Cinder)
    group = db_groups.get(session, group_id, scope)
    policy.authorize(context, policy.GROUP_UPDATE,
                     {'project_id': group.project_id})
    _check_for_volume(session, group, volume_type)
    check_backend_up(session, group, conf)
    return group


def _check_for_volume(session, group, volume_type):
    if group.status not in states.GROUP_USABLE_STATUSES or not group.host:
        raise exception.InvalidGroup(
            reason='Group %s status must be available, but current status '
                   'is: %s.' % (group.id, group.status))
    if volume_type['id'] not in db_groups.volume_types_of(
            session, [group.id])[group.id]:
        raise exception.InvalidInput(
            reason='Invalid volume_type provided: %s (requested type is '
                   'not compatible with group %s).' % (volume_type['name'],
                                                       group.id))


def lock_for_volume(session, group_id, volume_type):
    """Under the group's row lock: still there and usable (a delete
    takes the same lock, and then finds the new volume)."""
    group = db_groups.lock(session, group_id)
    _check_for_volume(session, group, volume_type)
    return group


def volume_values(group):
    """What a volume created in ``group`` takes from it."""
    return {'group_id': group.id, 'host': group.host,
            'cluster_name': group.cluster_name,
            'availability_zone': group.availability_zone}
