"""iSCSI on the wire, for both ends of cinder_lite that speak it as an
initiator: the compute side's connector (read, write and flush a LUN) and
the iSCSI target's fencer (remove a departed host's reservation key).

- ``pdu``: RFC 7143 framing -- opcodes, basic header segments, login keys;
- ``scsi``: the SCSI commands a block device needs, status and sense;
- ``pr``: persistent reservations and the key of an attachment;
- ``session``: one logged-in session that runs them;
- ``errors``: what goes wrong.

The names most callers need are here too.
"""
from cinder_lite.iscsi.errors import IscsiError  # noqa: F401
from cinder_lite.iscsi.errors import ReservationConflict  # noqa: F401
from cinder_lite.iscsi.pr import attachment_key  # noqa: F401
from cinder_lite.iscsi.pr import PR_EXCLUSIVE_ACCESS  # noqa: F401
from cinder_lite.iscsi.pr import PR_EXCLUSIVE_ACCESS_ALL_REGISTRANTS  # noqa
from cinder_lite.iscsi.pr import PR_EXCLUSIVE_ACCESS_REGISTRANTS_ONLY  # noqa
from cinder_lite.iscsi.pr import PR_WRITE_EXCLUSIVE  # noqa: F401
from cinder_lite.iscsi.pr import PR_WRITE_EXCLUSIVE_ALL_REGISTRANTS  # noqa
from cinder_lite.iscsi.pr import PR_WRITE_EXCLUSIVE_REGISTRANTS_ONLY  # noqa
from cinder_lite.iscsi.scsi import SENSE_DATA_PROTECT  # noqa: F401
from cinder_lite.iscsi.scsi import SENSE_UNIT_ATTENTION  # noqa: F401
from cinder_lite.iscsi.scsi import settled  # noqa: F401
from cinder_lite.iscsi.session import IscsiSession  # noqa: F401
