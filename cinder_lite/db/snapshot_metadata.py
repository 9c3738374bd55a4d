"""SQL for snapshot metadata (one row a key, as volume metadata),
written under the snapshot's row lock (``db.snapshots.lock``); the
statements are ``db.keyed_metadata``'s.
"""
from cinder_lite.common import exception
from cinder_lite.db import keyed_metadata
from cinder_lite.db import models

TABLE = keyed_metadata.KeyedMetadata(
    models.SnapshotMetadata, 'snapshot_id', models.Snapshot,
    lambda snapshot_id, key: exception.SnapshotMetadataNotFound(
        snapshot_id=snapshot_id, key=key))

get = TABLE.get
for_snapshots = TABLE.for_owners
add = TABLE.add
update = TABLE.update
delete_key = TABLE.delete_key
purge = TABLE.purge
matching = TABLE.matching
