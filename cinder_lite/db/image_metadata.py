"""SQL for volume image metadata (``volume_image_metadata``: what a volume
made from a Glance image carries of it; one row a key).

Writers hold the volume's row lock (``db.volumes.lock``), as for user
metadata.
"""
import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.db import models
from cinder_lite.db import query

M = models.VolumeImageMetadata


def get(session, volume_id):
    """The image metadata of one volume as a dict ({} without)."""
    return dict(query.core(session).execute(
        query.built('image_metadata_of', lambda: (
            sa.select(M.key, M.value)
            .where(M.volume_id == sa.bindparam('volume_id')))),
        {'volume_id': volume_id}).all())


def for_volumes(session, volume_ids):
    """Volume id -> its image metadata, only for volumes that have some
    (the view shows ``volume_image_metadata`` only then)."""
    found = {}
    ids = list(volume_ids)
    for i in range(0, len(ids), 500):
        for vid, key, value in session.execute(
                sa.select(M.volume_id, M.key, M.value)
                .where(M.volume_id.in_(ids[i:i + 500]))):
            found.setdefault(vid, {})[key] = value
    return found


def update(session, volume_id, metadata):
    """Set the keys of ``metadata`` (others stay); returns the volume's
    image metadata after."""
    current = get(session, volume_id)
    now = models.utcnow()
    for key, value in metadata.items():
        if key in current and current[key] != value:
            session.execute(
                sa.update(M).where(M.volume_id == volume_id, M.key == key)
                .values(value=value, updated_at=now)
                .execution_options(synchronize_session=False))
    new = [{'volume_id': volume_id, 'key': k, 'value': v, 'created_at': now}
           for k, v in metadata.items() if k not in current]
    if new:
        session.execute(sa.insert(M), new)
    return dict(current, **metadata)


def delete_key(session, volume_id, key):
    """Drop one key; VolumeImageMetadataNotFound when it is not there."""
    result = session.execute(sa.delete(M).where(M.volume_id == volume_id,
                                                M.key == key))
    if result.rowcount != 1:
        raise exception.VolumeImageMetadataNotFound(volume_id=volume_id,
                                                    key=key)


def purge(session, volume_id):
    """Drop all image metadata of a volume that is gone."""
    session.execute(sa.delete(M).where(M.volume_id == volume_id))


def matching(metadata):
    """WHERE clauses for a select of volumes: each key of ``metadata``
    with its value (Cinder's ``glance_metadata`` list filter)."""
    return [sa.exists().where(M.volume_id == models.Volume.id, M.key == k,
                              M.value == v)
            for k, v in metadata.items()]
