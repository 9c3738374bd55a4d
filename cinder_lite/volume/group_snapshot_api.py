"""The service layer for group snapshots (``/group_snapshots``).

A create locks the group's row and every volume's in it, checks them
there (the group ``available``, each volume in a status a snapshot may
be taken in), and records the group snapshot ``creating`` with one
``creating`` snapshot of each volume (``group_snapshot_id``), each
charging its quota as a single snapshot does, in that transaction.  It
then casts to the group's backend, whose volume service holds the
writers of every volume of the group, takes every snapshot, and lets
them go (doc/source/groups.rst), then records them all ``available`` -- or all
``error``.  A delete marks the group snapshot and its snapshots
``deleting`` in one transaction and casts; the volume service removes
the snapshots and records the group snapshot ``deleted``.
"""
import logging
import uuid

from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import group_snapshots as db_group_snapshots
from cinder_lite.db import group_types as db_group_types
from cinder_lite.db import groups as db_groups
from cinder_lite.db import models
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import group_api
from cinder_lite.volume import group_type_api
from cinder_lite.volume import rpcapi as volume_rpcapi

LOG = logging.getLogger(__name__)


class GroupSnapshotService:

    def __init__(self, conf, volume_rpc=None):
        self.conf = conf
        self.volume_rpcapi = volume_rpc or volume_rpcapi.VolumeAPI(conf)

    @staticmethod
    def _scope(context):
        return None if context.is_admin else context.project_id

    def create(self, context, group_id, name=None, description=None):
        policy.authorize(context, policy.GROUP_SNAPSHOT_CREATE)
        self.volume_rpcapi.require(group_api.GROUP_RPC, 'a group snapshot')
        with db_api.reader() as session:
            # (not found: 404, as Cinder)
            group = db_groups.get(session, group_id, self._scope(context))
            policy.authorize(context, policy.GROUP_SNAPSHOT_CREATE,
                             {'project_id': group.project_id})
            self._check_group(group)
            group_api.check_backend_up(session, group, self.conf)
        now = models.utcnow()
        values = {'id': str(uuid.uuid4()), 'group_id': group.id,
                  'project_id': context.project_id,
                  'user_id': context.user_id, 'name': name,
                  'description': description, 'status': states.CREATING,
                  'group_type_id': group.group_type_id, 'deleted': False,
                  'created_at': now}

        # (run again from its start on a certification failure: the
        # cast comes after the commit)
        def record(session):
            locked = db_groups.lock(session, group.id)
            self._check_group(locked)
            volumes = db_groups.volumes_of(session, [group.id],
                                           lock=True)[group.id]
            if not volumes:
                raise exception.InvalidGroup(
                    reason='Group %s has no volumes; there is nothing '
                           'to snapshot.' % group.id)
            allowed = states.GROUP_SNAPSHOT_VOLUME_STATUSES
            for volume in volumes:
                if volume.status not in allowed:
                    raise exception.InvalidGroup(
                        reason='Volume %s in group %s is %s; a group '
                               'snapshot needs each volume in one of: '
                               '%s.' % (volume.id, group.id,
                                        volume.status,
                                        ', '.join(allowed)))
            snaps = [{'id': str(uuid.uuid4()), 'volume_id': v.id,
                      'project_id': context.project_id,
                      'user_id': context.user_id,
                      'name': 'snapshot-%s' % values['id'],
                      'description': None,
                      'status': states.CREATING, 'progress': '0%',
                      'volume_size': v.size,
                      'volume_type_id': v.volume_type_id,
                      'deleted': False, 'created_at': now}
                     for v in volumes]
            found = db_group_snapshots.create(
                session, values, snaps,
                quota.Checker(self.conf, session))
            return found, self._summary(found, locked, snaps, volumes)
        group_snapshot, summary = quota.ensuring_rows(
            lambda: db_api.run_writer(record))
        LOG.info('group snapshot %s of group %s: recorded as creating (%d '
                 'snapshots)', group_snapshot.id, group.id,
                 len(summary['snapshots']))
        try:
            self.volume_rpcapi.create_group_snapshot(context, group.host,
                                                     summary)
        except Exception:
            LOG.warning('group snapshot %s: removing the record of a '
                        'create that could not be sent', group_snapshot.id)

            def _remove(session):
                for snap in summary['snapshots']:
                    db_snapshots.remove(session, snap['id'])
                db_group_snapshots.transition(session, group_snapshot.id,
                                              'create_failed')
                db_group_snapshots.transition(session, group_snapshot.id,
                                              'delete')
                db_group_snapshots.transition(session, group_snapshot.id,
                                              'deleted')
            db_api.run_writer(_remove)
            raise
        return group_snapshot

    @staticmethod
    def _check_group(group):
        if group.status not in states.GROUP_USABLE_STATUSES or \
                not group.host:
            raise exception.InvalidGroup(
                reason='Group %s status must be available, but current '
                       'status is: %s.' % (group.id, group.status))

    def _summary(self, group_snapshot, group, snaps, volumes):
        """What the volume service needs: the group snapshot, its
        snapshots (as ``db.snapshots.summary`` gives them) and whether
        the group's type demands one point in time."""
        with db_api.reader() as session:
            try:
                specs = db_group_types.get(session,
                                           group.group_type_id)[
                                               'group_specs']
            except exception.NotFound:
                specs = {}
        by_volume = {v.id: v for v in volumes}
        return {'id': group_snapshot.id, 'group_id': group.id,
                'project_id': group_snapshot.project_id,
                'consistent': group_type_api.requires_consistency(specs),
                'snapshots': [dict(s, host=by_volume[s['volume_id']].host,
                                   group_snapshot_id=group_snapshot.id,
                                   created_at=s['created_at'].isoformat())
                              for s in snaps]}

    def get(self, context, group_snapshot_id):
        with db_api.reader() as session:
            found = db_group_snapshots.get(session, group_snapshot_id,
                                           self._scope(context))
        policy.authorize(context, policy.GROUP_SNAPSHOT_GET,
                         {'project_id': found.project_id})
        return found

    def list(self, context, filters, sort_keys, sort_dirs, limit, marker,
             all_tenants=False, with_count=False, offset=0):
        filters = dict(filters)
        project = group_api.list_scope(context,
                                       policy.GROUP_SNAPSHOT_GET_ALL,
                                       filters, all_tenants)
        with db_api.reader() as session:
            rows = db_group_snapshots.list_group_snapshots(
                session, project, filters, sort_keys, sort_dirs, limit,
                marker, offset)
            total = db_group_snapshots.count(session, project, filters) \
                if with_count else None
        return rows, total

    def delete(self, context, group_snapshot_id):
        found = self.get(context, group_snapshot_id)
        policy.authorize(context, policy.GROUP_SNAPSHOT_DELETE,
                         {'project_id': found.project_id})

        # (run again from its start on a certification failure: the cast
        # comes after the commit)
        def _mark(session):
            locked = db_group_snapshots.lock(session, found.id)
            group = db_groups.get(session, locked.group_id)
            snaps = db_group_snapshots.snapshots_of(session, found.id)
            for snap in snaps:
                if db_volumes.creating_from(session, snapshot_id=snap.id):
                    raise exception.InvalidGroupSnapshot(
                        reason='a volume is being made from snapshot %s '
                               'of it' % snap.id)
            try:
                db_group_snapshots.transition(session, found.id, 'delete')
            except exception.InvalidTransition as e:
                raise exception.InvalidGroupSnapshot(
                    reason='Group snapshot status must be available or '
                           'error, and current status is: %s.'
                           % e.kwargs['actual']) from None
            for snap in snaps:
                db_snapshots.transition(session, snap.id, 'force_delete')
            group_api.check_backend_up(session, group, self.conf)
            summary = {'id': found.id, 'group_id': group.id,
                       'project_id': found.project_id,
                       'snapshots': [db_snapshots.summary(s, group.host)
                                     for s in snaps]}
            return locked, group, summary

        locked, group, summary = db_api.run_writer(_mark)
        LOG.info('group snapshot %s: %s -> deleting', found.id,
                 locked.status)
        self.volume_rpcapi.delete_group_snapshot(context, group.host,
                                                 summary)

    def reset_status(self, context, group_snapshot_id, status):
        policy.authorize(context, policy.GROUP_SNAPSHOT_RESET_STATUS)
        if status not in states.GROUP_SNAPSHOT_RESET_STATUSES:
            raise exception.InvalidGroupSnapshot(
                reason='Group snapshot status %s is not one of: %s' % (
                    status, ', '.join(states.GROUP_SNAPSHOT_RESET_STATUSES)))

        def _reset(session):
            found = db_group_snapshots.lock(session, group_snapshot_id)
            db_group_snapshots.transition(session, found.id,
                                          'reset_status', target=status)
            return found
        found = db_api.run_writer(_reset)
        LOG.info('group snapshot %s: %s -> %s (reset_status)',
                 group_snapshot_id, found.status, status)
