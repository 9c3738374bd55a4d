"""Manager-side create: make the storage (empty, or a copy of the
snapshot or volume it is made from), then record the volume available.
If recording fails the storage is removed again; a copy that fails
leaves no file behind (the driver copies to a temporary name)."""
import logging

from taskflow.patterns import linear_flow
from taskflow import task

from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import flows

LOG = logging.getLogger(__name__)


class CreateStorage(task.Task):
    def execute(self, driver, volume):
        if volume.get('snapshot_id'):
            return driver.create_volume_from_snapshot(
                volume, {'id': volume['snapshot_id']})
        if volume.get('source_volid'):
            return driver.create_cloned_volume(
                volume, {'id': volume['source_volid']})
        return driver.create_volume(volume)

    def revert(self, driver, volume, result, **kwargs):
        if result is not True:
            return      # the storage was there before: not ours to remove
        LOG.warning('reverting storage of volume %s', volume['id'])
        driver.delete_volume(volume)


class MarkAvailable(task.Task):
    def execute(self, volume, service_uuid, shared_targets,
                persistent_reservations):
        with db_api.writer() as session:
            db_volumes.transition(
                session, volume['id'], states.AVAILABLE,
                expected=(states.CREATING,),
                values={'service_uuid': service_uuid,
                        'shared_targets': shared_targets,
                        'persistent_reservations': persistent_reservations})
        LOG.info('volume %s: creating -> available', volume['id'])


def build():
    return linear_flow.Flow('volume_create_manager').add(
        CreateStorage(), MarkAvailable())


def run(driver, volume, service_uuid, shared_targets,
        persistent_reservations):
    flows.run('volume_create_manager', build,
              {'driver': driver, 'volume': volume,
               'service_uuid': service_uuid,
               'shared_targets': shared_targets,
               'persistent_reservations': persistent_reservations})
