"""SQL for metadata kept one row a key (volumes' and snapshots'): the
statements are the same whatever the metadata belongs to, so they are
written once here, for a table that has an owner id column, ``key`` and
``value``.

Writers change an owner's metadata under the owner's row lock, so two
requests merging keys into one owner never insert the same key twice.
"""
import sqlalchemy as sa

from cinder_lite.db import models
from cinder_lite.db import query

# how many owner ids one IN list names at most
CHUNK = 500


class KeyedMetadata:
    """The metadata table ``model`` whose column ``owner`` names the
    owning row of ``owner_model``; ``not_found(owner_id, key)`` is the
    exception for a key the owner does not have."""

    def __init__(self, model, owner, owner_model, not_found):
        self.model = model
        self.owner = getattr(model, owner)
        self.owner_name = owner
        self.owner_model = owner_model
        self.not_found = not_found

    def get(self, session, owner_id):
        """The metadata of one owner as a dict."""
        M = self.model
        return dict(query.core(session).execute(
            query.built(('metadata_of', M.__tablename__), lambda: (
                sa.select(M.key, M.value)
                .where(self.owner == sa.bindparam('owner_id')))),
            {'owner_id': owner_id}).all())

    def for_owners(self, session, owner_ids):
        """Owner id -> its metadata, for the views of a page (the IN
        lists bounded whatever the caller passes)."""
        M = self.model
        found = {oid: {} for oid in owner_ids}
        ids = list(found)
        for i in range(0, len(ids), CHUNK):
            for oid, key, value in session.execute(
                    sa.select(self.owner, M.key, M.value)
                    .where(self.owner.in_(ids[i:i + CHUNK]))):
                found[oid][key] = value
        return found

    def add(self, session, owner_id, metadata):
        """The metadata of an owner made in this transaction."""
        if metadata:
            now = models.utcnow()
            session.execute(sa.insert(self.model), [
                {self.owner_name: owner_id, 'key': k, 'value': v,
                 'created_at': now}
                for k, v in metadata.items()])

    def update(self, session, owner_id, metadata, delete=False):
        """Set the keys of ``metadata``; with ``delete`` also drop every
        other key.  Returns the owner's metadata after.  The caller holds
        the owner's row lock."""
        M = self.model
        current = self.get(session, owner_id)
        now = models.utcnow()
        if delete:
            gone = [k for k in current if k not in metadata]
            if gone:
                session.execute(sa.delete(M).where(self.owner == owner_id,
                                                   M.key.in_(gone)))
        for key, value in metadata.items():
            if key in current and current[key] != value:
                session.execute(
                    sa.update(M).where(self.owner == owner_id, M.key == key)
                    .values(value=value, updated_at=now)
                    .execution_options(synchronize_session=False))
        self.add(session, owner_id, {k: v for k, v in metadata.items()
                                     if k not in current})
        if delete:
            return dict(metadata)
        return dict(current, **metadata)

    def delete_key(self, session, owner_id, key):
        """Drop one key; ``not_found`` when the owner has none."""
        M = self.model
        result = session.execute(sa.delete(M).where(self.owner == owner_id,
                                                    M.key == key))
        if result.rowcount != 1:
            raise self.not_found(owner_id, key)

    def purge(self, session, owner_id):
        """Drop all metadata of an owner that is gone."""
        session.execute(sa.delete(self.model).where(
            self.owner == owner_id))

    def matching(self, metadata):
        """WHERE clauses for a select of owners: each key of ``metadata``
        with its value (Cinder's ``metadata`` list filter)."""
        M = self.model
        return [sa.exists().where(self.owner == self.owner_model.id,
                                  M.key == k, M.value == v)
                for k, v in metadata.items()]
