"""The interface every backup driver implements.

A backup driver keeps copies of volumes in a store of its own (a
directory, a Ceph pool) and is called by the backup manager only, which
has already opened the volume it reads or writes: the driver gets a
*device* (``read(offset, length)``, ``write(offset, data)``, ``flush()``
and ``size`` in bytes, as ``cinder_lite.connector.devices`` makes them)
and never touches the database or the volume service.

What the driver needs to find a backup again it returns as
``service_metadata`` (a JSON-able dict), which the manager stores with
the backup and hands back at restore, delete and export; an incremental
backup gets its parent's record, and a restore the whole chain from the
full backup to the one restored, oldest first.

Records are dicts with at least ``id``, ``volume_id``, ``size`` (GiB),
``container`` (None: the driver's default) and ``service_metadata``
(None before the backup ran).
"""
import abc


class BackupDriver(metaclass=abc.ABCMeta):

    def __init__(self, conf):
        self.conf = conf

    def check_for_setup_error(self):
        """Raise CinderLiteError when the store cannot keep backups
        (the service then does not start)."""

    def close(self):
        """Let go of what the driver holds open (connections); the
        service is stopping and its copies have ended."""

    @abc.abstractmethod
    def backup(self, backup, device, parent=None, progress=None):
        """Copy ``device`` into the store as ``backup``; ``parent``: the
        record of the backup this one is incremental to (only what
        changed since it is written), None for a full backup.

        ``progress(done_bytes, objects)`` is called as the copy goes on
        (the manager turns it into notifications and the record's
        ``object_count``); it may raise to stop the copy.

        Returns ``{'container': ..., 'service_metadata': {...},
        'object_count': N}``.  A backup that raises leaves nothing of
        itself in the store."""

    @abc.abstractmethod
    def restore(self, chain, device, progress=None):
        """Write the backup ``chain[-1]`` into ``device`` (at least as
        large); ``chain`` holds the records from its full backup to it,
        oldest first."""

    @abc.abstractmethod
    def delete(self, backup):
        """Remove what ``backup`` keeps in the store (its objects only:
        the manager never deletes a backup others are incremental to);
        absent objects are not an error."""

    def source_snapshot(self, backup):
        """The name of the backup snapshot the volume service is asked
        to make of the volume for ``backup`` (a record) and to keep as
        the base of the next backup, for a driver that diffs snapshots
        (None: the driver reads the volume, or a temporary snapshot)."""
        return None

    def source_snapshot_of(self, backup):
        """The backup snapshot of its volume that the finished
        ``backup`` was made from (from its service_metadata; None)."""
        return None

    def verify(self, backup):
        """Raise CinderLiteError when the store does not hold what
        ``backup`` (a record imported with import_record) names."""
