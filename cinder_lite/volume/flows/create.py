"""Manager-side create: make the storage (empty, or a copy of the
snapshot or volume it is made from), then record the volume available.
If recording fails the storage is removed again; a copy that fails
leaves no file behind (the driver copies to a temporary name).

From an image: the storage is made, the volume goes ``downloading``, the
image is downloaded from Glance into the conversion directory, checked
(what qemu-img finds must be what Glance says, without a backing file,
fitting the volume) and written into the storage, and the volume is
recorded ``available`` and bootable.  A raw image goes straight into
the storage where the driver gives a path to it, and is checked there.
A failure anywhere removes the storage (the manager records ``error``),
and the downloaded file is always removed.
os-reimage writes an image over an existing volume with ``CopyImage``
too (flows/reimage.py).
"""
import logging
import os

from taskflow.patterns import linear_flow
from taskflow import task

from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import flows
from cinder_lite.volume import glance
from cinder_lite.volume import image as image_mod

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
        db_api.run_writer(
            db_volumes.transition, volume['id'], 'created',
            values={'service_uuid': service_uuid,
                    'shared_targets': shared_targets,
                    'persistent_reservations': persistent_reservations})
        LOG.info('volume %s: creating -> available', volume['id'])


class MarkRestoring(task.Task):
    """A volume made for a restore: its storage exists, a backup service
    writes the backup into it next (``restoring-backup``)."""

    def execute(self, volume, service_uuid, shared_targets,
                persistent_reservations):
        db_api.run_writer(
            db_volumes.transition, volume['id'], 'restore_on_create',
            values={'service_uuid': service_uuid,
                    'shared_targets': shared_targets,
                    'persistent_reservations': persistent_reservations})
        LOG.info('volume %s: creating -> restoring-backup (backup %s)',
                 volume['id'], volume['backup_id'])


class StartDownload(task.Task):
    def execute(self, volume):
        db_api.run_writer(db_volumes.transition, volume['id'],
                          'start_download')
        LOG.info('volume %s: creating -> downloading', volume['id'])


class CopyImage(task.Task):
    """Download, check and write the image; returns the image."""

    def execute(self, driver, volume, image_id, context, conf):
        client = glance.GlanceClient(conf, context)
        image = client.show(image_id)
        image_mod.check_fits(image, volume['size'])
        fmt = image_mod.qemu_format(image)
        with flows.kept_fresh(volume['id'], states.DOWNLOADING):
            dest = driver.raw_image_destination(volume) \
                if fmt == 'raw' else None
            if dest is not None:
                size = self._into_volume(client, image, volume, dest)
            else:
                size = self._through_file(client, image, volume, driver,
                                          conf)
            # neither the download nor qemu-img (its output cache mode
            # ignores flushes) syncs: the data must be on disk before
            # the volume is available, as a copy's is
            driver.sync_volume(volume)
        LOG.info('volume %s: image %s (%s, %d bytes) written %s',
                 volume['id'], image_id, image.get('disk_format'), size,
                 'in place' if dest is not None else 'by qemu-img')
        return image

    @staticmethod
    def _into_volume(client, image, volume, dest):
        """A raw image straight into the volume's data: no file of its
        own and no conversion.  Checked as the file would be (a raw
        image that is really qcow2 is refused); it cannot have more
        bytes than the volume.  On any failure the storage is removed
        (CreateStorage's revert), so nothing half-made stays."""
        size = client.download(image, dest, existing=True,
                               limit=volume['size'] * image_mod.GiB)
        image_mod.check_image_file(dest, image, volume['size'])
        return size

    @staticmethod
    def _through_file(client, image, volume, driver, conf):
        os.makedirs(conf.image_conversion_dir, exist_ok=True)
        path = image_mod.conversion_path(conf.image_conversion_dir,
                                         image_mod.DOWNLOAD, volume['id'])
        try:
            size = client.download(image, path)
            fmt = image_mod.check_image_file(path, image, volume['size'])
            driver.copy_image_to_volume(volume, path, fmt)
        finally:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        return size


class MarkDownloaded(task.Task):
    def execute(self, volume, service_uuid, shared_targets,
                persistent_reservations):
        db_api.run_writer(
            db_volumes.transition, volume['id'], 'downloaded',
            values={'service_uuid': service_uuid,
                    'shared_targets': shared_targets,
                    'persistent_reservations': persistent_reservations,
                    'bootable': True})
        LOG.info('volume %s: downloading -> available (bootable)',
                 volume['id'])


def build():
    return linear_flow.Flow('volume_create_manager').add(
        CreateStorage(), MarkAvailable())


def build_for_restore():
    return linear_flow.Flow('volume_create_for_restore').add(
        CreateStorage(), MarkRestoring())


def build_from_image():
    return linear_flow.Flow('volume_create_from_image').add(
        CreateStorage(), StartDownload(), CopyImage(), MarkDownloaded())


def run(driver, volume, service_uuid, shared_targets,
        persistent_reservations, image_id=None, context=None, conf=None):
    store = {'driver': driver, 'volume': volume,
             'service_uuid': service_uuid,
             'shared_targets': shared_targets,
             'persistent_reservations': persistent_reservations}
    if volume.get('backup_id'):
        flows.run('volume_create_for_restore', build_for_restore, store)
    elif image_id is None:
        flows.run('volume_create_manager', build, store)
    else:
        store.update(image_id=image_id, context=context, conf=conf)
        flows.run('volume_create_from_image', build_from_image, store)
