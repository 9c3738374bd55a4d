"""The service layer for what volumes have to do with Glance images:
finding the image a volume is made from, uploading a volume to a new
image (os-volume_upload_image), and a volume's image metadata (the view's
``volume_image_metadata`` and the os-*_image_metadata actions)."""
import logging

from oslo_utils import excutils
from oslo_utils import uuidutils

from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import image_metadata as db_image_metadata
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import glance
from cinder_lite.volume import image as image_mod
from cinder_lite.volume import snapshot_api

LOG = logging.getLogger(__name__)

# the volume RPC API version that writes images into volumes and copies
# volumes into images
IMAGE_RPC = '1.7'
UPLOAD_RPC = IMAGE_RPC
# ... that writes an image over an existing volume (os-reimage)
REIMAGE_RPC = '1.11'
UNKNOWN_IMAGE = ('Invalid image identifier or unable to access requested '
                 'image.')


def find_image(conf, context, image_ref):
    """The Glance image ``image_ref`` names, as Cinder finds it: the
    last part of a URL (Nova may send one), an id, else a name (several
    images of that name: a conflict).  Anything not found or not
    reachable is an InvalidInput with Cinder's words."""
    ref = image_ref.rsplit('/', 1)[-1]
    try:
        client = glance.GlanceClient(conf, context)
    except exception.ImageServiceError as e:
        raise exception.InvalidInput(reason='%s (%s)' % (UNKNOWN_IMAGE,
                                                         e.message))
    if uuidutils.is_uuid_like(ref):
        try:
            return client.show(ref)
        except (exception.NotFound, exception.NotAuthorized,
                exception.ImageServiceError) as e:
            LOG.info('image %s: %s', ref, e)
    try:
        found = client.find_by_name(image_ref)
    except (exception.NotFound, exception.NotAuthorized,
            exception.ImageServiceError) as e:
        LOG.info('images named %s: %s', image_ref, e)
        found = []
    if len(found) > 1:
        raise exception.Conflict(
            "Multiple matches found for '%s', use an ID to be more "
            "specific." % image_ref)
    if not found:
        raise exception.InvalidInput(reason=UNKNOWN_IMAGE)
    return found[0]


def image_metadata_of(volumes):
    """Volume id -> its image metadata, for the volumes that have some."""
    with db_api.reader() as session:
        return db_image_metadata.for_volumes(session,
                                             [v.id for v in volumes])


def upload_response(volume, volume_type, image):
    """The body of os-volume_upload_image, as Cinder's."""
    body = {
        'id': volume.id,
        'updated_at': volume.updated_at.isoformat()
        if volume.updated_at else None,
        'status': states.UPLOADING,
        'display_description': volume.description,
        'size': volume.size,
        'volume_type': volume_type,
        'image_id': image['id'],
        'container_format': image.get('container_format'),
        'disk_format': image.get('disk_format'),
        'image_name': image.get('name'),
    }
    if 'protected' in image:
        body['protected'] = image['protected']
    if 'visibility' in image:
        body['visibility'] = image['visibility']
    return body


class ImageService:
    """os-volume_upload_image and the image metadata actions."""

    def __init__(self, conf, volume_rpcapi):
        self.conf = conf
        self.volume_rpcapi = volume_rpcapi

    @staticmethod
    def _volume(context, volume_id, rule):
        scope = None if context.is_admin else context.project_id
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id, scope)
        policy.authorize(context, rule, {'project_id': volume.project_id})
        return volume

    # -- upload ------------------------------------------------------------
    def upload(self, context, volume_id, request, force):
        """Start copying a volume into a new Glance image: the volume goes
        ``uploading`` (from ``available``; also from ``in-use`` with
        ``force`` where enable_force_upload allows it), the image is
        made in Glance (``queued``) with the properties the volume keeps
        of its own image, and the volume service is asked to copy the
        data.  If any step fails, the volume's status is given back and
        the image removed.  Returns Cinder's response body."""
        volume = self._volume(context, volume_id, policy.UPLOAD_IMAGE)
        if request.get('visibility') == 'public':
            policy.authorize(context, policy.UPLOAD_PUBLIC,
                             {'project_id': volume.project_id})
        if force and not self.conf.enable_force_upload:
            LOG.info('volume %s: force upload is turned off '
                     '(enable_force_upload); force ignored', volume_id)
            force = False
        self.volume_rpcapi.require(UPLOAD_RPC, 'uploading a volume to an '
                                               'image')
        change = 'force_upload' if force else 'upload'

        def mark(session):
            current = db_volumes.lock(session, volume_id)
            if not current.host:
                raise exception.InvalidVolume(
                    reason='Volume %s has no storage yet.' % volume_id)
            try:
                db_volumes.transition(session, volume_id, change)
            except exception.InvalidTransition:
                raise exception.InvalidVolume(
                    reason='Volume %s status must be %s' % (
                        volume_id, ' or '.join(
                            states.VOLUME.resolve(change)[1]))) from None
            own = db_image_metadata.get(session, volume_id)
            try:
                volume_type = db_types.get(session, current.volume_type_id)
            except exception.NotFound:     # deleted since
                volume_type = None
            return current, own, volume_type
        # (run again from its start on a deadlock: Glance and the volume
        # service are asked once it committed; end_upload gives the
        # status back if they fail)
        current, own, volume_type = db_api.run_writer(mark)
        LOG.info('volume %s: %s -> uploading', volume_id, current.status)
        meta = dict(image_mod.upload_properties(
            own, self.conf.glance_core_properties,
            self.conf.reserved_image_namespaces, given=request))
        meta.update(request)
        image = client = None
        try:
            client = glance.GlanceClient(self.conf, context)
            image = client.create(meta)
            self.volume_rpcapi.copy_volume_to_image(
                context, current.host, volume_id,
                {'id': image['id'], 'disk_format': image['disk_format'],
                 'container_format': image['container_format']})
        except Exception:
            with excutils.save_and_reraise_exception():
                LOG.warning('volume %s: the upload did not start; its '
                            'status is given back', volume_id)
                end_upload(volume_id)
                if image is not None:
                    try:
                        client.delete(image['id'])
                    except exception.CinderLiteError as e:
                        LOG.warning('image %s stays queued in Glance: %s',
                                    image['id'], e)
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id)
        return upload_response(volume, type_view(volume_type), image)

    # -- os-reimage (3.68) -------------------------------------------------
    def reimage(self, context, volume_id, image_id, reimage_reserved):
        """Write the Glance image ``image_id`` over a volume, as Cinder's
        os-reimage: from ``available`` or ``error`` (also ``reserved``
        with ``reimage_reserved``: Nova rebuilding the server booted from
        it), never with more than one attachment; the volume shows
        ``downloading`` meanwhile, then what its attachments make it,
        with the new image's metadata (``error`` with a user message if
        the write fails).  The image must exist, be active and fit
        before anything changes."""
        scope = None if context.is_admin else context.project_id
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id, scope)
        policy.authorize(context, policy.REIMAGE_RESERVED
                         if volume.status == states.RESERVED
                         else policy.REIMAGE,
                         {'project_id': volume.project_id})
        self.volume_rpcapi.require(REIMAGE_RPC, 're-imaging a volume')
        image = glance.GlanceClient(self.conf, context).show(image_id)
        image_mod.check_fits(image, volume.size)
        image_mod.qemu_format(image)
        change = 'reimage_reserved' if reimage_reserved else 'reimage'

        def mark(session):
            current = db_attachments.lock_volume(session, volume_id)
            if len(db_attachments.live_for_volume(session, volume_id)) > 1:
                raise exception.Conflict(
                    'Cannot re-image a volume which is attached to more '
                    'than one server.')
            if not current.host:
                raise exception.InvalidVolume(
                    reason='Volume %s has no storage.' % volume_id)
            snapshot_api.check_backend_up(session, current, self.conf)
            try:
                db_volumes.transition(session, volume_id, change)
            except exception.InvalidTransition:
                raise exception.InvalidVolume(
                    reason='Volume %s status must be %s, but current '
                           'status is %s.' % (
                               volume_id, ' or '.join(
                                   states.VOLUME.resolve(change)[1]),
                               current.status)) from None
            return current
        # (run again from its start on a deadlock: the cast comes after
        # the commit)
        current = db_api.run_writer(mark)
        LOG.info('volume %s: %s -> downloading (re-imaged with image %s)',
                 volume_id, current.status, image_id)
        try:
            self.volume_rpcapi.reimage(context, current.host, volume_id,
                                       image_id)
        except Exception:
            with excutils.save_and_reraise_exception():
                LOG.warning('volume %s: the re-image could not be sent; '
                            'its status is given back', volume_id)
                end_reimage(volume_id, None, failed=False,
                            status=current.status)

    # -- image metadata ----------------------------------------------------
    def show_metadata(self, context, volume_id):
        volume = self._volume(context, volume_id,
                              policy.IMAGE_METADATA_SHOW)
        with db_api.reader() as session:
            return db_image_metadata.get(session, volume.id)

    def set_metadata(self, context, volume_id, metadata):
        volume = self._volume(context, volume_id, policy.IMAGE_METADATA_SET)

        def change(session):
            _check_changeable(db_volumes.lock(session, volume.id))
            return db_image_metadata.update(session, volume.id, metadata)
        return db_api.run_writer(change)

    def unset_metadata(self, context, volume_id, key):
        volume = self._volume(context, volume_id,
                              policy.IMAGE_METADATA_REMOVE)

        def delete_key(session):
            _check_changeable(db_volumes.lock(session, volume.id))
            db_image_metadata.delete_key(session, volume.id, key)
        db_api.run_writer(delete_key)


def _check_changeable(volume):
    if volume.status in states.VOLUME_UNCHANGEABLE_STATUSES:
        raise exception.InvalidVolume(
            reason='The volume metadata cannot be updated during %s.'
                   % volume.status)


def type_view(volume_type):
    """The volume type as os-volume_upload_image shows it (Cinder puts
    the whole type object there)."""
    if volume_type is None:
        return None
    return {
        'id': volume_type['id'],
        'name': volume_type['name'],
        'description': volume_type.get('description'),
        'is_public': volume_type.get('is_public', True),
        'extra_specs': dict(volume_type.get('extra_specs') or {}),
        'qos_specs_id': volume_type.get('qos_specs_id'),
        'created_at': volume_type['created_at'].isoformat()
        if volume_type.get('created_at') else None,
        'updated_at': volume_type['updated_at'].isoformat()
        if volume_type.get('updated_at') else None,
        'deleted': False,
        'deleted_at': None,
    }


def end_upload(volume_id):
    """An upload ended (done or failed): the volume is what its
    attachments make it again (``available`` or ``in-use``).  Returns
    that status, None if it was not uploading."""
    status = db_api.run_writer(_end_upload, volume_id)
    if status is not None:
        LOG.info('volume %s: uploading -> %s', volume_id, status)
    return status


def _end_upload(session, volume_id):
    try:
        db_attachments.lock_volume(session, volume_id,
                                   allowed=(states.UPLOADING,), load=False)
    except (exception.NotFound, exception.Invalid):
        return None
    status = states.derive_volume_status(
        db_attachments.live_statuses(session, volume_id))
    db_volumes.transition(session, volume_id, 'upload_ended', status)
    return status


def end_reimage(volume_id, image, failed, status=None):
    """A re-image ended: the volume leaves ``downloading`` for what its
    attachments make it (``available`` or ``reserved``, or what an
    attachment made meanwhile makes it) with ``image``'s
    metadata (a Glance image) and id, or, ``failed``, for ``error``.
    ``status``: the status to give back instead (the re-image was never
    sent: nothing was written).  Returns the status, None when the volume
    was no longer downloading."""
    ended, status = db_api.run_writer(_end_reimage, volume_id, image,
                                      failed, status)
    if ended:
        LOG.info('volume %s: downloading -> %s (re-imaged with image %s)',
                 volume_id, status, image['id'])
    return status


def _end_reimage(session, volume_id, image, failed, status):
    """(whether the re-image's data came, the status)."""
    try:
        db_attachments.lock_volume(session, volume_id,
                                   allowed=(states.DOWNLOADING,), load=False)
    except (exception.NotFound, exception.Invalid):
        return False, None
    if failed:
        db_volumes.transition(session, volume_id, 'reimage_failed')
        return False, states.ERROR
    if status is not None:
        db_volumes.transition(session, volume_id, 'reimage_unsent', status)
        return False, status
    status = states.derive_volume_status(
        db_attachments.live_statuses(session, volume_id))
    db_volumes.transition(session, volume_id, 'reimaged', status,
                          values={'image_id': image['id']})
    db_image_metadata.purge(session, volume_id)
    db_image_metadata.update(session, volume_id,
                             image_mod.volume_image_metadata(image))
    return True, status
