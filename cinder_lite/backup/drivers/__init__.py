"""Backup drivers: ``base`` is the interface, ``posix`` and ``ceph`` the
stores."""
