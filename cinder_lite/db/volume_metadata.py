"""SQL for volume metadata (user metadata: one row a key), written
under the volume's row lock (``db.volumes.lock``); the statements are
``db.keyed_metadata``'s, the summary's ``distinct`` is this module's.
"""
import collections

import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.db import keyed_metadata
from cinder_lite.db import models

M = models.VolumeMetadata

TABLE = keyed_metadata.KeyedMetadata(
    M, 'volume_id', models.Volume,
    lambda volume_id, key: exception.VolumeMetadataNotFound(
        volume_id=volume_id, key=key))

get = TABLE.get
for_volumes = TABLE.for_owners
add = TABLE.add
update = TABLE.update
delete_key = TABLE.delete_key
purge = TABLE.purge
matching = TABLE.matching


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
