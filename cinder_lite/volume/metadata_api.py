"""The service layer behind ``/volumes/{id}/metadata``: a volume's user
metadata, read and changed under Cinder's policies and rules.

Every change happens under the volume's row lock, and an ``If-Match``
ETag (3.15) is compared under that lock too, so a client that read the
metadata and sends it back changed never overwrites a change made in
between.
"""
import hashlib
import json
import logging

from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import volume_metadata as db_metadata
from cinder_lite.db import volumes as db_volumes

LOG = logging.getLogger(__name__)


def etag(metadata):
    """The ETag of a volume's metadata as ``GET …/metadata`` serves it."""
    body = json.dumps({'metadata': metadata}, sort_keys=True)
    return hashlib.md5(body.encode(), usedforsecurity=False).hexdigest()


class MetadataService:

    def __init__(self, conf):
        self.conf = conf

    @staticmethod
    def _scope(context):
        return None if context.is_admin else context.project_id

    def get(self, context, volume_id):
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id,
                                    self._scope(context))
            policy.authorize(context, policy.METADATA_GET,
                             {'project_id': volume.project_id})
            return db_metadata.get(session, volume.id)

    def update(self, context, volume_id, metadata, delete=False,
               rule=policy.METADATA_UPDATE, if_match=None):
        """Set the keys of ``metadata`` (with ``delete``: replace all of
        it); returns the metadata after.  ``if_match``: ETags, one of
        which the current metadata must have (MetadataChanged)."""

        # (run again from its start on a deadlock, as a change of the
        # volume through another Galera node makes it: the ETag is
        # compared again with what is there then)
        def _update(session):
            volume = db_volumes.lock(session, volume_id,
                                     self._scope(context))
            policy.authorize(context, rule,
                             {'project_id': volume.project_id})
            self._check_status(volume, 'Updating')
            if if_match is not None and etag(db_metadata.get(
                    session, volume.id)) not in if_match:
                raise exception.MetadataChanged(volume_id=volume.id)
            return db_metadata.update(session, volume.id, metadata, delete)
        after = db_api.run_writer(_update)
        LOG.info('volume %s: metadata %s %s', volume_id,
                 'replaced by' if delete else 'set', sorted(metadata))
        return after

    def delete_key(self, context, volume_id, key):

        def _delete(session):
            volume = db_volumes.lock(session, volume_id,
                                     self._scope(context))
            policy.authorize(context, policy.METADATA_DELETE,
                             {'project_id': volume.project_id})
            self._check_status(volume, 'Deleting')
            db_metadata.delete_key(session, volume.id, key)
        db_api.run_writer(_delete)
        LOG.info('volume %s: metadata key %s deleted', volume_id, key)

    @staticmethod
    def _check_status(volume, doing):
        if volume.status in states.VOLUME_UNCHANGEABLE_STATUSES:
            raise exception.InvalidVolume(
                reason='%s volume metadata is not allowed for volumes in '
                       '%s status.' % (doing, volume.status))
