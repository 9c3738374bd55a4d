"""SQL for the image metadata of snapshots: what a snapshot keeps of its
volume's image metadata (``db.image_metadata``) as it was when the
snapshot was taken, for the volumes made from it.  Written once, when
the snapshot is recorded (under its volume's row lock), and dropped with
the snapshot; the statements are ``db.keyed_metadata``'s.
"""
from cinder_lite.db import keyed_metadata
from cinder_lite.db import models

TABLE = keyed_metadata.KeyedMetadata(
    models.SnapshotImageMetadata, 'snapshot_id', models.Snapshot,
    # nothing deletes one key of it
    None)

get = TABLE.get
add = TABLE.add
purge = TABLE.purge
