"""SQL for volume metadata (user metadata: one row a key).

Writers change a volume's metadata under the volume's row lock
(``db.volumes.lock``), so two requests merging keys into one volume never
insert the same key twice.
"""
import collections

import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.db import models

M = models.VolumeMetadata


def get(session, volume_id):
    """The metadata of one volume as a dict."""
    return dict(session.execute(
        sa.select(M.key, M.value).where(M.volume_id == volume_id)).all())


def for_volumes(session, volume_ids):
    """Volume id -> its metadata, for the views of a page of volumes."""
    found = {vid: {} for vid in volume_ids}
    ids = list(found)
    # (in chunks: a page is at most osapi_max_limit volumes, but keep the
    # IN list bounded whatever the caller passes)
    for i in range(0, len(ids), 500):
        for vid, key, value in session.execute(
                sa.select(M.volume_id, M.key, M.value)
                .where(M.volume_id.in_(ids[i:i + 500]))):
            found[vid][key] = value
    return found


def add(session, volume_id, metadata):
    """The metadata of a volume made in this transaction."""
    if metadata:
        now = models.utcnow()
        session.execute(sa.insert(M), [
            {'volume_id': volume_id, 'key': k, 'value': v, 'created_at': now}
            for k, v in metadata.items()])


def update(session, volume_id, metadata, delete=False):
    """Set the keys of ``metadata``; with ``delete`` also drop every other
    key.  Returns the volume's metadata after.  The caller holds the
    volume's row lock."""
    current = get(session, volume_id)
    now = models.utcnow()
    if delete:
        gone = [k for k in current if k not in metadata]
        if gone:
            session.execute(sa.delete(M).where(M.volume_id == volume_id,
                                               M.key.in_(gone)))
    for key, value in metadata.items():
        if key not in current:
            continue
        if current[key] != value:
            session.execute(
                sa.update(M).where(M.volume_id == volume_id, M.key == key)
                .values(value=value, updated_at=now)
                .execution_options(synchronize_session=False))
    add(session, volume_id, {k: v for k, v in metadata.items()
                             if k not in current})
    if delete:
        return dict(metadata)
    return dict(current, **metadata)


def delete_key(session, volume_id, key):
    """Drop one key; VolumeMetadataNotFound when the volume has none."""
    result = session.execute(sa.delete(M).where(M.volume_id == volume_id,
                                                M.key == key))
    if result.rowcount != 1:
        raise exception.VolumeMetadataNotFound(volume_id=volume_id,
                                               key=key)


def purge(session, volume_id):
    """Drop all metadata of a volume that is gone."""
    session.execute(sa.delete(M).where(M.volume_id == volume_id))


def matching(metadata):
    """WHERE clauses for a select of volumes: each key of ``metadata``
    with its value (Cinder's ``metadata`` list filter)."""
    return [sa.exists().where(M.volume_id == models.Volume.id, M.key == k,
                              M.value == v)
            for k, v in metadata.items()]


def distinct(session, project_id=None):
    """Every key of the live volumes (of ``project_id``; None: all) with
    its distinct values, sorted: the volume summary's ``metadata``."""
    V = models.Volume
    stmt = (sa.select(M.key, M.value).distinct()
            .join(V, V.id == M.volume_id)
            .where(V.deleted == sa.false())
            .order_by(M.key, M.value))
    if project_id is not None:
        stmt = stmt.where(V.project_id == project_id)
    found = collections.OrderedDict()
    for key, value in session.execute(stmt):
        found.setdefault(key, []).append(value)
    return dict(found)
