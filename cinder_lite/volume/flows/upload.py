"""Manager-side upload of a volume to a Glance image: the driver copies
the volume into a file of the image's disk format in the conversion
directory, the file is sent to Glance, and the file is removed whatever
happens.  The manager then gives the volume its status back (and on a
failure removes the image and tells the owner)."""
import logging
import os

from taskflow.patterns import linear_flow
from taskflow import task

from cinder_lite.volume import flows
from cinder_lite.volume import glance
from cinder_lite.volume import image as image_mod

LOG = logging.getLogger(__name__)


class CopyToFile(task.Task):
    """Returns the path of the image file."""

    def execute(self, driver, volume, image, conf):
        os.makedirs(conf.image_conversion_dir, exist_ok=True)
        path = image_mod.conversion_path(conf.image_conversion_dir,
                                         image_mod.UPLOAD, volume['id'])
        try:
            driver.copy_volume_to_image(
                volume, path, image_mod.QEMU_FORMAT[image['disk_format']])
        except Exception:
            _remove(path)
            raise
        return path

    def revert(self, result, **kwargs):
        if isinstance(result, str):
            _remove(result)


class SendToGlance(task.Task):
    def execute(self, image, path, context, conf):
        glance.GlanceClient(conf, context).upload(image['id'], path)
        _remove(path)


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def build():
    return linear_flow.Flow('volume_upload').add(
        CopyToFile(provides='path'), SendToGlance())


def run(driver, volume, image, context, conf):
    flows.run('volume_upload', build,
              {'driver': driver, 'volume': volume, 'image': image,
               'context': context, 'conf': conf})
    LOG.info('volume %s: copied to image %s (%s)', volume['id'],
             image['id'], image['disk_format'])
