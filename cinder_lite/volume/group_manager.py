"""The volume manager's endpoints for generic volume groups (RPC 1.14),
a mixin of ``VolumeManager``: deleting a group with its volumes, and
taking and deleting group snapshots (flows/group_snapshot.py).

A group lives on one backend; in a cluster its group snapshot is cast
to one member, which holds the writers of the exports it serves.  A
read-write attachment exported by another member cannot be held from
here: a group snapshot that must be one point in time is then refused
(the group snapshot ``error``, with a user message saying which
attachment), as is one on a backend that cannot hold writers at all.
"""
import datetime
import logging

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import group_snapshots as db_group_snapshots
from cinder_lite.db import groups as db_groups
from cinder_lite.db import messages as db_messages
from cinder_lite.db import models
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.volume.flows import group_snapshot as group_snapshot_flow

LOG = logging.getLogger(__name__)

# Cinder's resource and actions: create/delete group snapshot, delete
# group
EVENT_GROUP_SNAPSHOT_CREATE_FAILED = 'VOLUME_GROUP_SNAPSHOT_016_001'
EVENT_GROUP_SNAPSHOT_DELETE_FAILED = 'VOLUME_GROUP_SNAPSHOT_017_001'
EVENT_GROUP_DELETE_FAILED = 'VOLUME_GROUP_015_001'


class GroupEndpoints:
    """Needs the manager's ``host``, ``backend_id``, ``driver``,
    ``working_on``, ``create_volume`` and ``delete_volume``."""

    def delete_group(self, ctxt, group_id):
        """RPC 1.14: delete the group's volumes marked ``deleting``, then
        record the group ``deleted`` (``error_deleting`` when a volume
        is left)."""
        with db_api.reader() as session:
            try:
                group = db_groups.get(session, group_id)
            except exception.GroupNotFound:
                return
            project_id = group.project_id
            deleting = [v.id for v in db_groups.volumes_of(
                session, [group_id])[group_id]
                if v.status == states.DELETING]
        for volume_id in deleting:
            self.delete_volume(ctxt, volume_id)

        def _record(session):
            # (the group's quota goes back with 'deleted': the row that
            # volume services and the API change at once)
            left = [v.id for v in db_groups.volumes_of(
                session, [group_id])[group_id]]
            try:
                if left:
                    db_groups.transition(session, group_id, 'delete_failed')
                    db_messages.create(
                        session, project_id, EVENT_GROUP_DELETE_FAILED,
                        'delete group: volume(s) %s could not be deleted'
                        % ', '.join(left),
                        resource_type='VOLUME_GROUP',
                        resource_uuid=group_id, request_id=ctxt.request_id)
                else:
                    db_groups.transition(session, group_id, 'deleted')
            except (exception.InvalidTransition, exception.GroupNotFound):
                return None
            return left

        left = db_api.run_writer(_record)
        if left is None:
            return
        LOG.info('group %s: deleting -> %s', group_id,
                 'error_deleting' if left else 'deleted')

    def create_group_from_src(self, ctxt, group_id, volumes):
        """RPC 1.14: make the volumes of a group created from a group
        snapshot or a group (each copied from its snapshot or volume as
        any such volume is), then record the group ``available``, or
        ``error`` when one of them failed."""
        for volume in volumes:
            self.create_volume(ctxt, volume['id'], volume)
        self.settle_group_from_src(group_id)

    @staticmethod
    def settle_group_from_src(group_id):
        """``available`` once no volume of the group is ``creating``
        (``error`` if one is in error); False while some still are."""
        def _settle(session):
            volumes = db_groups.volumes_of(session, [group_id])[group_id]
            if any(v.status == states.CREATING for v in volumes):
                return False, None
            failed = [v.id for v in volumes if v.status != states.AVAILABLE]
            try:
                db_groups.transition(session, group_id,
                                     'create_failed' if failed
                                     else 'created')
            except (exception.InvalidTransition, exception.GroupNotFound):
                return True, None
            return True, failed

        settled, failed = db_api.run_writer(_settle)
        if failed is None:
            return settled
        LOG.info('group %s: creating -> %s%s', group_id,
                 'error' if failed else 'available',
                 ' (volumes %s failed)' % ', '.join(failed) if failed
                 else '')
        return True

    def create_group_snapshot(self, ctxt, group_snapshot):
        """RPC 1.14: take every snapshot of a ``creating`` group snapshot
        with the group's writers held; ``available``, or ``error`` (its
        snapshots too) with a user message."""
        ids = [s['id'] for s in group_snapshot['snapshots']]
        volume_ids = sorted({s['volume_id']
                             for s in group_snapshot['snapshots']})
        try:
            with self.working_on(group_snapshot['id'], *ids):
                with db_api.reader() as session:
                    writers = db_attachments.writers_of(session, volume_ids)
                self._check_writers_here(group_snapshot, writers)
                group_snapshot_flow.create(self.driver, group_snapshot,
                                           bool(writers))
        except Exception as e:
            LOG.exception('group snapshot %s: creating -> error',
                          group_snapshot['id'])
            self._group_snapshot_failed(
                ctxt, group_snapshot, 'create_failed',
                EVENT_GROUP_SNAPSHOT_CREATE_FAILED,
                'create group snapshot: %s' % getattr(e, 'message', e))

    def _check_writers_here(self, group_snapshot, writers):
        """Refuse a consistent group snapshot whose volumes are written
        through exports of another volume service (a cluster's other
        member): this one cannot hold them."""
        if not group_snapshot.get('consistent'):
            return
        elsewhere = [(a, v, h) for a, v, h in writers
                     if h is not None and h != self.host]
        if elsewhere:
            attachment_id, volume_id, export_host = elsewhere[0]
            raise exception.CannotHoldWrites(
                volume_id=volume_id,
                reason='attachment %s is exported by volume service %s, '
                       'not by %s, which takes the group snapshot; a '
                       'consistent group snapshot needs every writer of '
                       'the group on one service' % (
                           attachment_id, export_host, self.host))

    def delete_group_snapshot(self, ctxt, group_snapshot):
        """RPC 1.14: remove every snapshot of a ``deleting`` group
        snapshot, then record it ``deleted``; ``error_deleting`` with a
        user message on failure."""
        ids = [s['id'] for s in group_snapshot['snapshots']]
        try:
            with self.working_on(group_snapshot['id'], *ids):
                group_snapshot_flow.delete(self.driver, group_snapshot)
        except Exception as e:
            LOG.exception('group snapshot %s: deleting -> error_deleting',
                          group_snapshot['id'])
            self._group_snapshot_failed(
                ctxt, group_snapshot, 'delete_failed',
                EVENT_GROUP_SNAPSHOT_DELETE_FAILED,
                'delete group snapshot: %s' % getattr(e, 'message', e))

    def reconcile_groups(self, ctxt, max_age, busy=()):
        """Settle what a service that stopped left of this backend's
        groups: a group snapshot left ``creating`` becomes ``error`` (its
        snapshots too: the writers it held were let go when the target
        restarted, and its copies go with its delete); one left
        ``deleting``, and a group left ``deleting``, are deleted again; a
        group made from a source and left ``creating`` is settled by its
        volumes.  Returns the changes."""
        cutoff = models.utcnow() - datetime.timedelta(seconds=max_age)
        changes = []
        with db_api.reader() as session:
            snaps = [(g, [db_snapshots.summary(s, self.host) for s in
                          db_group_snapshots.snapshots_of(session, g.id)])
                     for g in db_group_snapshots.stale(
                         session, self.backend_id,
                         (states.CREATING, states.DELETING), cutoff)
                     if g.id not in busy]
            groups = [(g.id, g.status) for g in db_groups.stale(
                session, self.backend_id,
                (states.CREATING, states.DELETING), cutoff)
                if g.id not in busy]
        for found, members in snaps:
            summary = {'id': found.id, 'group_id': found.group_id,
                       'project_id': found.project_id,
                       'snapshots': members}
            if found.status == states.CREATING:
                if not db_api.run_writer(_create_interrupted, found.id):
                    continue
                change = 'group snapshot %s: creating -> error' % found.id
            else:
                self.delete_group_snapshot(ctxt, summary)
                change = 'group snapshot %s: deleting rolled forward' % (
                    found.id)
            LOG.warning('reconcile: %s', change)
            changes.append(change)
        for group_id, status in groups:
            if status == states.DELETING:
                self.delete_group(ctxt, group_id)
            elif not self.settle_group_from_src(group_id):
                continue
            change = 'group %s: %s settled' % (group_id, status)
            LOG.warning('reconcile: %s', change)
            changes.append(change)
        return changes

    @staticmethod
    def _group_snapshot_failed(ctxt, group_snapshot, event, message_id,
                               detail):
        def _record(session):
            try:
                db_group_snapshots.transition(session, group_snapshot['id'],
                                              event)
            except (exception.InvalidTransition, exception.NotFound):
                return
            db_group_snapshots.mark_snapshots(session, group_snapshot['id'],
                                              event)
            db_messages.create(session, group_snapshot['project_id'],
                               message_id, detail,
                               resource_type='VOLUME_GROUP_SNAPSHOT',
                               resource_uuid=group_snapshot['id'],
                               request_id=ctxt.request_id)

        db_api.run_writer(_record)


def _create_interrupted(session, group_snapshot_id):
    """A group snapshot left ``creating``: ``error``, its snapshots too;
    False when it moved on meanwhile."""
    try:
        db_group_snapshots.transition(session, group_snapshot_id,
                                      'create_interrupted')
    except exception.InvalidTransition:
        return False
    db_group_snapshots.mark_snapshots(session, group_snapshot_id,
                                      'create_interrupted')
    return True
