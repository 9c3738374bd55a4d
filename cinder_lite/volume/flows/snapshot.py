"""Manager-side snapshot flows: make the copy, then record the snapshot
``available`` (a copy whose record cannot be made is removed again);
remove the copy, then record the snapshot ``deleted`` (which gives its
quota back)."""
import logging

from taskflow.patterns import linear_flow
from taskflow import task

from cinder_lite.db import api as db_api
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.volume import flows

LOG = logging.getLogger(__name__)


class MakeCopy(task.Task):
    def execute(self, driver, snapshot):
        return driver.create_snapshot(snapshot)

    def revert(self, driver, snapshot, result, **kwargs):
        if result is not True:
            return      # there before: not ours to remove
        LOG.warning('reverting the copy of snapshot %s', snapshot['id'])
        driver.delete_snapshot(snapshot)


class MarkAvailable(task.Task):
    def execute(self, snapshot):
        db_api.run_writer(db_snapshots.transition, snapshot['id'],
                          'created', values={'progress': '100%'})
        LOG.info('snapshot %s: creating -> available', snapshot['id'])


class RemoveCopy(task.Task):
    def execute(self, driver, snapshot):
        driver.delete_snapshot(snapshot)


class MarkDeleted(task.Task):
    def execute(self, snapshot):
        db_api.run_writer(db_snapshots.transition, snapshot['id'],
                          'deleted')
        LOG.info('snapshot %s: deleting -> deleted', snapshot['id'])


def build_create():
    return linear_flow.Flow('snapshot_create_manager').add(
        MakeCopy(), MarkAvailable())


def build_delete():
    return linear_flow.Flow('snapshot_delete_manager').add(
        RemoveCopy(), MarkDeleted())


def create(driver, snapshot):
    flows.run('snapshot_create_manager', build_create,
              {'driver': driver, 'snapshot': snapshot})


def delete(driver, snapshot):
    flows.run('snapshot_delete_manager', build_delete,
              {'driver': driver, 'snapshot': snapshot})
