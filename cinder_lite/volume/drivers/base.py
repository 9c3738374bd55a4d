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
"""
import abc


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
        """Create the storage of ``volume`` (a dict with id and size)."""

    @abc.abstractmethod
    def delete_volume(self, volume):
        """Remove the storage of ``volume``; absent storage is not an
        error."""

    @abc.abstractmethod
    def extend_volume(self, volume, new_size):
        """Grow the storage of ``volume`` to ``new_size`` GiB."""

    @abc.abstractmethod
    def get_volume_stats(self):
        """The capability dict described in the module docstring."""

    def shares_targets(self):
        """True when attachments of one volume on one host share a target
        connection (consumers then serialise their connects)."""
        return True

    def create_export(self, volume, connector, mode):
        """Make ``volume`` reachable for ``connector``; default: nothing to
        do."""

    def remove_export(self, volume, connector):
        """Undo ``create_export``."""

    def initialize_connection(self, volume, connector, mode):
        """Connection info for ``connector``."""
        raise NotImplementedError()

    def terminate_connection(self, volume, connector):
        """Drop the connection; returns True while the host connection is
        still shared by another attachment."""
        raise NotImplementedError()
