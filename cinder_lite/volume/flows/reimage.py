"""Manager-side os-reimage (3.68): an image written over an existing
volume, which the API marked ``downloading``.

Its storage is made (empty) when a failed create left none, else cleared
(so nothing of the old data stays past the image's end), and the image
is downloaded, checked and written as for a volume made from it
(``create.CopyImage``).  The volume is then what its attachments make
it, with the new image's metadata (``image_api.end_reimage``), and, when
it is reserved for a server Nova rebuilds, Nova is sent
``volume-reimaged``.  A failure leaves it ``error`` with a user message
(storage made here is removed again; the old data is gone already).
A cast that arrives after reconciliation settled the volume does
nothing.
"""
import logging

from taskflow.patterns import linear_flow
from taskflow import task

from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import messages as db_messages
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import flows
from cinder_lite.volume.flows import create as create_flow
from cinder_lite.volume import image_api

LOG = logging.getLogger(__name__)

# Cinder's action "reimage volume", detail "an unknown error occurred"
EVENT_REIMAGE_FAILED = 'VOLUME_VOLUME_016_001'


class EnsureStorage(task.Task):
    def execute(self, driver, volume):
        made = driver.create_volume(volume)
        if not made:
            driver.clear_volume(volume)
        return made

    def revert(self, driver, volume, result, **kwargs):
        if result is True:
            LOG.warning('removing the storage made to re-image volume %s',
                        volume['id'])
            driver.delete_volume(volume)


def build():
    return linear_flow.Flow('volume_reimage').add(
        EnsureStorage(), create_flow.CopyImage(provides='image'))


def run(driver, nova, volume_id, image_id, ctxt, conf):
    with db_api.reader() as session:
        volume = db_volumes.summary(db_volumes.get(session, volume_id))
    if volume['status'] != states.DOWNLOADING:
        LOG.warning('volume %s is %s, no longer downloading: re-image with '
                    'image %s not done', volume_id, volume['status'],
                    image_id)
        return
    try:
        storage = flows.run('volume_reimage', build, {
            'driver': driver, 'volume': volume, 'image_id': image_id,
            'context': ctxt, 'conf': conf})
    except Exception as e:
        LOG.exception('volume %s: re-image with image %s failed -> error',
                      volume_id, image_id)
        if image_api.end_reimage(volume_id, None, failed=True):
            db_api.run_writer(
                db_messages.create, volume['project_id'],
                EVENT_REIMAGE_FAILED,
                're-image volume with image %s: %s' % (
                    image_id, getattr(e, 'message', None) or e),
                resource_type='VOLUME', resource_uuid=volume_id,
                request_id=getattr(ctxt, 'request_id', None))
        return
    status = image_api.end_reimage(volume_id, storage.fetch('image'),
                                   failed=False)
    if status == states.RESERVED:
        with db_api.reader() as session:
            servers = [a.instance_uuid for a in
                       db_attachments.live_for_volume(session, volume_id)]
        nova.volume_reimaged(volume_id, servers,
                             getattr(ctxt, 'request_id', None))
