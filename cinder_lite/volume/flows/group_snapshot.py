"""Manager-side group snapshot flows.

Create: hold the writers of every volume of the group (the driver
pauses the hosts' writes at the target: every write acknowledged before
is in the volumes, none lands meanwhile), make the copy of each
snapshot, let the writers go, then record every snapshot and the group
snapshot ``available`` in one transaction.  A copy that fails removes
the copies made before it.  Delete: remove each copy and record its
snapshot ``deleted`` (which gives its quota back), then the group
snapshot.
"""
import contextlib
import logging
import time

from taskflow.patterns import linear_flow
from taskflow import task

from cinder_lite.common import exception
from cinder_lite.db import api as db_api
from cinder_lite.db import group_snapshots as db_group_snapshots
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.volume import flows

LOG = logging.getLogger(__name__)


def _held(driver, group_snapshot, volume_ids, writers):
    """The context the copies are made in: the writers held when the
    backend can; otherwise, when nothing may write the volumes or the
    group's type does not ask for one point in time, none (with a
    warning when hosts may be writing); else CannotHoldWrites."""
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(driver.hold_writes(volume_ids))
    except exception.CannotHoldWrites as e:
        if writers and group_snapshot['consistent']:
            raise
        if writers:
            LOG.warning('group snapshot %s: %s; the snapshots are taken '
                        'one after another (the group type does not ask '
                        'for consistent_group_snapshot_enabled)',
                        group_snapshot['id'], e.message)
    return stack


class MakeCopies(task.Task):
    def execute(self, driver, group_snapshot, writers):
        snapshots = group_snapshot['snapshots']
        made = []
        volume_ids = sorted({s['volume_id'] for s in snapshots})
        start = time.monotonic()
        try:
            with _held(driver, group_snapshot, volume_ids, writers):
                held = time.monotonic()
                for snapshot in snapshots:
                    if driver.create_snapshot(snapshot) is True:
                        made.append(snapshot['id'])
                copied = time.monotonic()
        except Exception:
            self._remove(driver, snapshots, made)
            raise
        LOG.info('group snapshot %s: %d snapshots taken (writers held '
                 'after %.1f ms, for %.1f ms)', group_snapshot['id'],
                 len(snapshots), (held - start) * 1000,
                 (copied - held) * 1000)
        return made

    @staticmethod
    def _remove(driver, snapshots, made):
        for snapshot in snapshots:
            if snapshot['id'] in made:
                try:
                    driver.delete_snapshot(snapshot)
                except Exception:
                    LOG.exception('removing the copy of snapshot %s',
                                  snapshot['id'])

    def revert(self, driver, group_snapshot, result, **kwargs):
        if isinstance(result, list):
            LOG.warning('reverting the copies of group snapshot %s',
                        group_snapshot['id'])
            self._remove(driver, group_snapshot['snapshots'], result)


class MarkAvailable(task.Task):
    def execute(self, group_snapshot):
        def _mark(session):
            for snapshot in group_snapshot['snapshots']:
                db_snapshots.transition(session, snapshot['id'], 'created',
                                        values={'progress': '100%'})
            db_group_snapshots.transition(session, group_snapshot['id'],
                                          'created')
        db_api.run_writer(_mark)
        LOG.info('group snapshot %s: creating -> available',
                 group_snapshot['id'])


class RemoveCopies(task.Task):
    def execute(self, driver, group_snapshot):
        for snapshot in group_snapshot['snapshots']:
            try:
                driver.delete_snapshot(snapshot)
            except exception.SnapshotNotFound:
                pass
            try:
                db_api.run_writer(db_snapshots.transition, snapshot['id'],
                                  'deleted')
            except exception.SnapshotNotFound:
                pass


class MarkDeleted(task.Task):
    def execute(self, group_snapshot):
        db_api.run_writer(db_group_snapshots.transition,
                          group_snapshot['id'], 'deleted')
        LOG.info('group snapshot %s: deleting -> deleted',
                 group_snapshot['id'])


def build_create():
    return linear_flow.Flow('group_snapshot_create_manager').add(
        MakeCopies(), MarkAvailable())


def build_delete():
    return linear_flow.Flow('group_snapshot_delete_manager').add(
        RemoveCopies(), MarkDeleted())


def create(driver, group_snapshot, writers):
    flows.run('group_snapshot_create_manager', build_create,
              {'driver': driver, 'group_snapshot': group_snapshot,
               'writers': writers})


def delete(driver, group_snapshot):
    flows.run('group_snapshot_delete_manager', build_delete,
              {'driver': driver, 'group_snapshot': group_snapshot})
