"""SQL for backup metadata (3.43; one row a key, as volume metadata),
written under the backup's row lock (``db.backups.lock``); the statements
are ``db.keyed_metadata``'s.
"""
from cinder_lite.common import exception
from cinder_lite.db import keyed_metadata
from cinder_lite.db import models

TABLE = keyed_metadata.KeyedMetadata(
    models.BackupMetadata, 'backup_id', models.Backup,
    lambda backup_id, key: exception.BackupMetadataNotFound(
        backup_id=backup_id, key=key))

get = TABLE.get
for_backups = TABLE.for_owners
add = TABLE.add
update = TABLE.update
purge = TABLE.purge
matching = TABLE.matching
