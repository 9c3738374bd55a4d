"""SQL for snapshot metadata (one row a key, as volume metadata).

Writers change a snapshot's metadata under the snapshot's row lock
(``db.snapshots.lock``).
"""
import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.db import models

M = models.SnapshotMetadata


def get(session, snapshot_id):
    """The metadata of one snapshot as a dict."""
    return dict(session.execute(
        sa.select(M.key, M.value).where(M.snapshot_id == snapshot_id)).all())


def for_snapshots(session, snapshot_ids):
    """Snapshot id -> its metadata, for the views of a page."""
    found = {sid: {} for sid in snapshot_ids}
    ids = list(found)
    # (in chunks: a page is at most osapi_max_limit snapshots, but keep the
    # IN list bounded whatever the caller passes)
    for i in range(0, len(ids), 500):
        for vid, key, value in session.execute(
                sa.select(M.snapshot_id, M.key, M.value)
                .where(M.snapshot_id.in_(ids[i:i + 500]))):
            found[vid][key] = value
    return found


def add(session, snapshot_id, metadata):
    """The metadata of a snapshot made in this transaction."""
    if metadata:
        now = models.utcnow()
        session.execute(sa.insert(M), [
            {'snapshot_id': snapshot_id, 'key': k, 'value': v,
             'created_at': now}
            for k, v in metadata.items()])


def update(session, snapshot_id, metadata, delete=False):
    """Set the keys of ``metadata``; with ``delete`` also drop every other
    key.  Returns the snapshot's metadata after.  The caller holds the
    snapshot's row lock."""
    current = get(session, snapshot_id)
    now = models.utcnow()
    if delete:
        gone = [k for k in current if k not in metadata]
        if gone:
            session.execute(sa.delete(M).where(M.snapshot_id == snapshot_id,
                                               M.key.in_(gone)))
    for key, value in metadata.items():
        if key not in current:
            continue
        if current[key] != value:
            session.execute(
                sa.update(M).where(M.snapshot_id == snapshot_id, M.key == key)
                .values(value=value, updated_at=now)
                .execution_options(synchronize_session=False))
    add(session, snapshot_id, {k: v for k, v in metadata.items()
                             if k not in current})
    if delete:
        return dict(metadata)
    return dict(current, **metadata)


def delete_key(session, snapshot_id, key):
    """Drop one key; SnapshotMetadataNotFound when the snapshot has none."""
    result = session.execute(sa.delete(M).where(M.snapshot_id == snapshot_id,
                                                M.key == key))
    if result.rowcount != 1:
        raise exception.SnapshotMetadataNotFound(snapshot_id=snapshot_id,
                                               key=key)


def purge(session, snapshot_id):
    """Drop all metadata of a snapshot that is gone."""
    session.execute(sa.delete(M).where(M.snapshot_id == snapshot_id))


def matching(metadata):
    """WHERE clauses for a select of snapshots: each key of ``metadata``
    with its value (Cinder's ``metadata`` list filter)."""
    return [sa.exists().where(M.snapshot_id == models.Snapshot.id, M.key == k,
                              M.value == v)
            for k, v in metadata.items()]
