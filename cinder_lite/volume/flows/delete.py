"""Manager-side delete: remove the storage, then the record."""
import logging

from taskflow.patterns import linear_flow
from taskflow import task

from cinder_lite.db import api as db_api
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import flows

LOG = logging.getLogger(__name__)


class DeleteStorage(task.Task):
    def execute(self, driver, volume):
        driver.delete_volume(volume)


class MarkDeleted(task.Task):
    def execute(self, volume):
        # run again when a multi-writer Galera cluster refuses it at
        # commit: the storage is gone already, and a refusal left the
        # volume error_deleting
        db_api.run_writer(db_volumes.transition, volume['id'], 'deleted')
        LOG.info('volume %s: deleting -> deleted', volume['id'])


def build():
    return linear_flow.Flow('volume_delete_manager').add(
        DeleteStorage(), MarkDeleted())


def run(driver, volume):
    flows.run('volume_delete_manager', build,
              {'driver': driver, 'volume': volume})
