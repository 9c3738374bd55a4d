"""The interface every volume driver implements.

A driver manages the storage of one backend section.  It is called by the
volume manager only, from flows, and never touches the database.

Capability keys ``get_volume_stats`` reports (the scheduler matches volume
type extra specs against them):

``volume_backend_name``  name operators put in types to pin a backend
``vendor_name``, ``driver_version``, ``storage_protocol``
``total_capacity_gb``, ``free_capacity_gb``, ``reserved_percentage``
``multiattach``          the backend can attach one volume to many hosts
``shared_targets``       attachments of one volume on one host share a
                         connection
``thin_provisioning_support``, ``thick_provisioning_support``
``persistent_reservations``  every host attached to a volume shares one
                         SCSI persistent-reservation state (registrations,
                         the reservation), so a cluster can fence a node
``consistent_group_snapshot_enabled``  the backend can hold every writer
                         of several volumes at once (``hold_writes``), so
                         a group snapshot is one point in time
"""
import abc

from cinder_lite.common import exception


class VolumeDriver(metaclass=abc.ABCMeta):

    def __init__(self, backend_conf, backend_name, host):
        self.conf = backend_conf
        self.backend_name = backend_name
        self.host = host

    @abc.abstractmethod
    def do_setup(self):
        """Prepare the backend (directories, connections)."""

    @abc.abstractmethod
    def check_for_setup_error(self):
        """Raise if the backend cannot serve requests."""

    @abc.abstractmethod
    def create_volume(self, volume):
        """Create the storage of ``volume`` (a dict with id and size);
        True when it made it, False when it already existed (a create
        rolled forward after a crash must not wipe it)."""

    @abc.abstractmethod
    def delete_volume(self, volume):
        """Remove the storage of ``volume``; absent storage is not an
        error."""

    def rename_volume(self, volume, new_id):
        """Make the storage of ``volume`` (a dict with ``id``) the
        storage of volume ``new_id`` on this backend: the last step of a
        migration here, where the new storage takes the migrated volume's
        id.  Done already (no storage of ``volume``, storage of
        ``new_id``) is no error."""
        raise exception.InvalidVolume(
            reason='backend %s cannot receive migrated volumes'
            % self.backend_name)

    @abc.abstractmethod
    def extend_volume(self, volume, new_size):
        """Grow the storage of ``volume`` to ``new_size`` GiB."""

    def create_snapshot(self, snapshot):
        """Keep a point-in-time copy of the volume ``snapshot['volume_id']``
        as snapshot ``snapshot['id']`` (``volume_size`` GiB), next to it on
        this backend, while its attachments may keep writing; True when
        it made it, False when it existed already.  What the copy holds
        of writes made meanwhile is the driver's to document
        (doc/source/snapshots.rst)."""
        raise NotImplementedError()

    def delete_snapshot(self, snapshot):
        """Remove the copy of ``snapshot``; an absent one is not an
        error."""
        raise NotImplementedError()

    def revert_to_snapshot(self, volume, snapshot):
        """Make the storage of ``volume`` hold what its snapshot
        ``snapshot`` holds (same size: the API refuses otherwise); the
        volume has no attachment meanwhile.  The snapshot stays."""
        raise NotImplementedError(
            'this backend cannot revert volumes to snapshots')

    def create_volume_from_snapshot(self, volume, snapshot):
        """Create ``volume`` (``size`` GiB, at least the snapshot's) with
        the snapshot's bytes; True/False as ``create_volume``."""
        raise NotImplementedError()

    def create_cloned_volume(self, volume, source):
        """Create ``volume`` with the bytes the volume ``source`` (a dict
        with ``id``) holds now; True/False as ``create_volume``."""
        raise NotImplementedError()

    @abc.abstractmethod
    def get_volume_stats(self):
        """The capability dict described in the module docstring."""

    def copy_image_to_volume(self, volume, image_path, image_format):
        """Write the image file at ``image_path`` (qemu-img format
        ``image_format``, checked by the caller) into the storage of
        ``volume``, converted to raw."""
        raise NotImplementedError(
            'this backend cannot make volumes from images')

    def raw_image_destination(self, volume):
        """Where a raw image may be written straight into ``volume``: the
        path, on this host, of a file (or device) holding the volume's
        data, made to read as zeros everywhere (blocks of zeros in the
        image are not written to it); None where the backend has no such
        path (the image is then downloaded to a file of its own and
        written with ``copy_image_to_volume``)."""
        return None

    def clear_volume(self, volume):
        """Make the whole storage of ``volume`` read as zeros (before an
        image is written over it: os-reimage), its size kept."""
        raise NotImplementedError(
            'this backend cannot write images over volumes')

    def sync_volume(self, volume):
        """Make what was written to the storage of ``volume`` durable
        (on disk when this returns)."""
        raise NotImplementedError(
            'this backend cannot make volumes from images')

    def copy_volume_to_image(self, volume, image_path, image_format):
        """Write the data of ``volume`` to a new file at ``image_path`` in
        qemu-img format ``image_format``."""
        raise NotImplementedError(
            'this backend cannot upload volumes to images')

    def can_hold_writes(self):
        """True when ``hold_writes`` can pause the hosts' writes."""
        return False

    def hold_writes(self, volume_ids):
        """A context manager in which no host's write reaches ``volume_ids``:
        every write acknowledged before it was entered is in the storage,
        and none lands until it is left.  CannotHoldWrites when the
        backend cannot pause its hosts."""
        raise exception.CannotHoldWrites(
            volume_id=', '.join(sorted(volume_ids)),
            reason='backend %s cannot pause the hosts writing its volumes'
                   % self.backend_name)

    def shares_targets(self):
        """True when attachments of one volume on one host share a target
        connection (consumers then serialise their connects)."""
        return True

    def keeps_reservations(self):
        """True when the hosts of a volume share one SCSI persistent
        reservation state (the ``persistent_reservations`` capability)."""
        return False

    def create_export(self, volume, connector, mode, attachment_id):
        """Make ``volume`` reachable for ``connector`` with ``mode`` for
        one attachment.  ``volume['qos_specs']``: the back-end QoS specs of
        its type (per-GiB keys resolved; None without), which the export
        applies as far as the backend can (doc/source/qos.rst)."""

    def remove_export(self, volume, connector, attachment_id, shared):
        """Undo ``create_export``.  ``shared`` is True while other
        attachments of the volume are connected from the same host (a
        per-host export must then stay).

        A cut-off drains before it returns: once this returns, nothing
        the host had in flight through this export can land any more.
        Returns the seconds the drain took (None when nothing was cut);
        raises when the target could not confirm the drain in time."""

    def list_exports(self):
        """Ids of the attachments this backend exports now."""
        return []

    def export_mode(self, attachment_id):
        """The mode ('rw' or 'ro') the attachment is exported with now,
        None when it has no export (or the backend does not know)."""
        return None

    def ensure_export(self, volume, attachment_id, mode, connection_info,
                      connector):
        """Re-create a missing export so ``connection_info`` works again
        for ``connector``; False when it cannot."""
        return True

    def reach(self, volume_id, attachment_ids, initiators):
        """What the target says of a host on ``volume_id``: ``exports``
        (those of ``attachment_ids`` that run now), ``acl`` (entries
        naming one of ``initiators``), ``sessions`` (their sessions) and
        ``reachable`` (whether the host may still do I/O through the
        target; None when the target cannot tell)."""
        return {'exports': [], 'acl': [], 'sessions': 0,
                'reachable': None}

    def prune_exports(self):
        """Remove what the backend exports beyond ``list_exports`` (target
        state no attachment accounts for)."""

    def stop(self):
        """The service stops: release what the backend runs, except what
        attached hosts still use."""

    def create_backup_export(self, volume, snapshot_id, connector, mode,
                             export_id):
        """Make ``volume`` (with ``snapshot_id``: that snapshot of it)
        reachable for the backup service of ``connector``, read-only
        (``mode`` 'ro', a backup) or read-write ('rw', a restore), with a
        credential of ``export_id``'s own; returns its connection_info
        (``{'driver_volume_type': ..., 'data': {...}}``).  Removed by
        ``remove_backup_export``, or at the next start of the service
        (no attachment owns it)."""
        raise exception.InvalidVolume(
            reason='backend %s cannot be backed up' % self.backend_name)

    def remove_backup_export(self, volume, snapshot_id, export_id):
        """Undo ``create_backup_export`` (nothing there is no error)."""
        self.remove_export(volume, None, export_id, False)

    def create_backup_snapshot(self, volume, name):
        """Make the backup snapshot ``name`` of ``volume`` for a
        differential backup (kept after the backup, the base of the next
        one); True when made, False when the backend has none (the
        backup reads the volume or a temporary snapshot instead)."""
        return False

    def remove_backup_snapshots(self, volume, unwanted):
        """Remove the backup snapshots of ``volume`` whose name
        ``unwanted(name)`` is true (none there is no error)."""

    def initialize_connection(self, volume, connector, mode, attachment_id):
        """Connection info for ``connector``:
        ``{'driver_volume_type': ..., 'data': {...}}``."""
        raise NotImplementedError()

    def terminate_connection(self, volume, connector, attachment_id):
        """Drop the attachment's connection (sessions, ACLs)."""
        raise NotImplementedError()

    # -- manage and unmanage (os-volume-manage, os-snapshot-manage) ---------
    def manage_existing_get_size(self, volume, ref):
        """The size in GiB (rounded up) of the storage object ``ref``
        (a dict: ``source-name`` or ``source-id``) that ``volume`` is to
        adopt; ManageExistingInvalidReference when there is none such,
        ManageExistingAlreadyManaged when another volume owns it."""
        raise exception.InvalidInput(
            reason='backend %s cannot manage existing volumes'
                   % self.backend_name)

    def manage_existing(self, volume, ref):
        """Make the storage object ``ref`` the storage of ``volume`` (a
        call again after a crash, with ``ref`` naming the volume's own
        storage, is no error)."""
        raise exception.InvalidInput(
            reason='backend %s cannot manage existing volumes'
                   % self.backend_name)

    def unmanage(self, volume):
        """Let go of the storage of ``volume``, which stays in place under
        the reference ``list_manageable_volumes`` then shows."""

    def list_manageable_volumes(self):
        """What the backend holds that could be a volume: a list of dicts
        with ``reference`` (the ref to manage it by), ``size`` (GiB),
        ``volume_id`` (the volume id its name says it belongs to, or
        None) and ``extra_info`` (a string or None)."""
        return []

    def manage_existing_snapshot_get_size(self, snapshot, ref):
        """As ``manage_existing_get_size``, for a copy that is to become
        ``snapshot`` of the volume ``snapshot['volume_id']``."""
        raise exception.InvalidInput(
            reason='backend %s cannot manage existing snapshots'
                   % self.backend_name)

    def manage_existing_snapshot(self, snapshot, ref):
        """Make the copy ``ref`` the copy of ``snapshot``."""
        raise exception.InvalidInput(
            reason='backend %s cannot manage existing snapshots'
                   % self.backend_name)

    def unmanage_snapshot(self, snapshot):
        """Let go of the copy of ``snapshot``, which stays in place."""

    def list_manageable_snapshots(self):
        """As ``list_manageable_volumes``, with ``snapshot_id`` instead of
        ``volume_id`` and ``source_reference``: the reference of the volume
        it is a copy of (None when the backend cannot tell)."""
        return []
