"""What goes wrong on an iSCSI session."""


class IscsiError(OSError):
    """A login the target refused, a SCSI command it failed (``sense_key``,
    ``asc``, ``ascq`` set; errno EROFS for a write-protected LUN) or a
    broken session.  ``login_status``: (class, detail) of a refused
    login (RFC 7143 section 11.13.5)."""

    sense_key = asc = ascq = None
    login_status = None


class ReservationConflict(IscsiError):
    """The target refused a command with RESERVATION CONFLICT: another
    host holds a persistent reservation that excludes this one (errno
    EBADE, as Linux reports it).  The session stays usable."""
