"""Every status string and every legal status change, in one place.

Other modules refer to the names below, never to literal strings.  A status
change is a compare-and-swap in the database (``WHERE status IN
(allowed sources)``); ``sources_for`` gives that list from the table.
"""

# -- volume ------------------------------------------------------------------
CREATING = 'creating'
AVAILABLE = 'available'
ERROR = 'error'
RESERVED = 'reserved'
ATTACHING = 'attaching'
IN_USE = 'in-use'
DETACHING = 'detaching'
DELETING = 'deleting'
ERROR_DELETING = 'error_deleting'
EXTENDING = 'extending'
ERROR_EXTENDING = 'error_extending'
RETYPING = 'retyping'
# offered to another project (a volume transfer); nothing else may happen
# to it until the transfer is accepted or deleted
AWAITING_TRANSFER = 'awaiting-transfer'
# made from a Glance image: the storage exists, the image is being
# written into it
DOWNLOADING = 'downloading'
# being copied into a Glance image (os-volume_upload_image); afterwards
# its attachments say what it is again
UPLOADING = 'uploading'
DELETED = 'deleted'

# Set only by an operator (os-reset_status): the volume is being worked
# on outside cinder_lite.  As in Cinder, its metadata and its fields do
# not change meanwhile.
MAINTENANCE = 'maintenance'

VOLUME_STATUSES = frozenset([
    CREATING, AVAILABLE, ERROR, RESERVED, ATTACHING, IN_USE, DETACHING,
    DELETING, ERROR_DELETING, EXTENDING, ERROR_EXTENDING, RETYPING,
    AWAITING_TRANSFER, DOWNLOADING, UPLOADING, MAINTENANCE, DELETED])

# target -> statuses a volume may be in when it moves there
VOLUME_TRANSITIONS = {
    # (from awaiting-transfer: the transfer was accepted or deleted)
    # (from downloading: the image is written; from uploading: the copy
    # is done and no attachment is attached)
    AVAILABLE: (CREATING, RESERVED, ATTACHING, DETACHING, IN_USE, EXTENDING,
                RETYPING, AWAITING_TRANSFER, DOWNLOADING, UPLOADING),
    ERROR: (CREATING, DOWNLOADING),
    DOWNLOADING: (CREATING,),
    # an in-use volume only with os-volume_upload_image's force
    UPLOADING: (AVAILABLE, IN_USE),
    ERROR_EXTENDING: (EXTENDING,),
    RESERVED: (AVAILABLE, RESERVED, ATTACHING, IN_USE, DETACHING),
    ATTACHING: (RESERVED, ATTACHING, IN_USE, DETACHING),
    IN_USE: (ATTACHING, RESERVED, IN_USE, DETACHING, UPLOADING),
    DETACHING: (IN_USE, DETACHING),
    DELETING: (AVAILABLE, ERROR, ERROR_DELETING, ERROR_EXTENDING),
    ERROR_DELETING: (DELETING,),
    EXTENDING: (AVAILABLE, ERROR_EXTENDING),
    RETYPING: (AVAILABLE,),
    AWAITING_TRANSFER: (AVAILABLE,),
    DELETED: (DELETING,),
}

# Statuses a volume service's operation owns while it runs (os-reset_status
# leaves them alone while that service is up).
VOLUME_BUSY_STATUSES = frozenset([CREATING, DELETING, EXTENDING,
                                  DOWNLOADING, UPLOADING])

VOLUME_UNCHANGEABLE_STATUSES = frozenset([MAINTENANCE])

# Statuses a forced delete (os-force_delete) starts from: any, as in
# Cinder (a delete already under way is sent again).
VOLUME_FORCE_DELETE_STATUSES = tuple(sorted(
    VOLUME_STATUSES - {DELETED}))

# Statuses an operator may force with os-reset_status (Cinder's list:
# ``creating`` and ``maintenance`` included).
VOLUME_RESET_STATUSES = frozenset([
    AVAILABLE, ERROR, RESERVED, ATTACHING, IN_USE, DETACHING, ERROR_DELETING,
    CREATING, MAINTENANCE])

# -- attachment ----------------------------------------------------------------
ATTACH_RESERVED = 'reserved'
ATTACH_ATTACHING = 'attaching'
ATTACHED = 'attached'
ATTACH_DETACHING = 'detaching'
DETACHED = 'detached'
ERROR_ATTACHING = 'error_attaching'
ERROR_DETACHING = 'error_detaching'

ATTACHMENT_STATUSES = frozenset([
    ATTACH_RESERVED, ATTACH_ATTACHING, ATTACHED, ATTACH_DETACHING, DETACHED,
    ERROR_ATTACHING, ERROR_DETACHING])

ATTACHMENT_TRANSITIONS = {
    ATTACH_ATTACHING: (ATTACH_RESERVED, ERROR_ATTACHING),
    ATTACHED: (ATTACH_ATTACHING, ATTACH_RESERVED, ATTACH_DETACHING),
    # detaching -> detaching: os-begin_detaching marked it, os-detach or a
    # delete now disconnects it.
    ATTACH_DETACHING: (ATTACHED, ATTACH_ATTACHING, ATTACH_DETACHING,
                       ERROR_ATTACHING, ERROR_DETACHING),
    DETACHED: (ATTACH_DETACHING, ATTACH_RESERVED, ATTACH_ATTACHING,
               ATTACHED, ERROR_ATTACHING, ERROR_DETACHING),
    ERROR_ATTACHING: (ATTACH_RESERVED, ATTACH_ATTACHING),
    ERROR_DETACHING: (ATTACH_DETACHING,),
}

# Not stored: how ``derive_volume_status`` names a reservation that
# Cinder's legacy os-reserve made (an ``reserved`` attachment marked so),
# which shows its volume ``attaching`` as Cinder's legacy flow does; the
# attachments API's reservations show it ``reserved``.
ATTACH_LEGACY_RESERVED = 'reserved (os-reserve)'

# -- snapshot ------------------------------------------------------------------
# (the names are the volume's where Cinder's strings are the same)
SNAPSHOT_STATUSES = frozenset([CREATING, AVAILABLE, ERROR, DELETING,
                               ERROR_DELETING, DELETED])

# target -> statuses a snapshot may be in when it moves there
SNAPSHOT_TRANSITIONS = {
    AVAILABLE: (CREATING,),
    ERROR: (CREATING,),
    # a delete already under way may be sent again (a forced delete, a
    # cascade after a lost message)
    DELETING: (AVAILABLE, ERROR, ERROR_DELETING),
    ERROR_DELETING: (DELETING,),
    DELETED: (DELETING,),
}

# Statuses a volume's snapshots may be in for a delete of the volume with
# cascade=true (Cinder's; forced: any)
SNAPSHOT_CASCADE_STATUSES = (AVAILABLE, ERROR, DELETING)

# Statuses a volume may be snapshotted in with ``force`` (or from 3.66),
# and cloned in: Cinder's ``available`` and ``in-use``, and, since the
# storage of a shared volume is the same whichever of its attachments is
# coming or going, the statuses a multiattach volume passes through
# while its hosts attach and detach
VOLUME_COPY_STATUSES = (AVAILABLE, IN_USE, RESERVED, ATTACHING, DETACHING)
CLONE_SOURCE_STATUSES = VOLUME_COPY_STATUSES
SNAPSHOT_SOURCE_STATUSES = (AVAILABLE,)

# os-update_snapshot_status: current status -> statuses it may be set to
# (Cinder's table, for a driver outside that reports its progress)
SNAPSHOT_UPDATE_STATUS = {
    CREATING: (CREATING, AVAILABLE, ERROR),
    DELETING: (DELETING, ERROR_DELETING),
}

# Statuses an operator may set with os-reset_status (Cinder's list of
# snapshot statuses, but for ``deleted``, which only a delete reaches)
SNAPSHOT_RESET_STATUSES = ('available', 'backing-up', 'creating',
                           'deleting', 'error', 'error_deleting',
                           'restoring', 'unmanaging', 'updating')

# Statuses a forced delete (os-force_delete) starts from: any live one,
# as in Cinder
SNAPSHOT_FORCE_DELETE_STATUSES = tuple(sorted(
    (SNAPSHOT_STATUSES | set(SNAPSHOT_RESET_STATUSES)) - {DELETED}))

# -- service -----------------------------------------------------------------
SERVICE_UP = 'up'
SERVICE_DOWN = 'down'
SERVICE_ENABLED = 'enabled'
SERVICE_DISABLED = 'disabled'


def sources_for(target, table=VOLUME_TRANSITIONS):
    """The statuses from which ``target`` may be reached."""
    return table[target]


def derive_volume_status(attach_statuses):
    """Volume status implied by the statuses of its live attachments.

    ``error_*`` attachments neither hide the others nor keep a volume busy
    on their own; they stay visible until deleted or reconciled.
    """
    present = set(attach_statuses)
    for attach_status, volume_status in ((ATTACHED, IN_USE),
                                         (ATTACH_ATTACHING, ATTACHING),
                                         (ATTACH_DETACHING, DETACHING),
                                         (ATTACH_LEGACY_RESERVED, ATTACHING),
                                         (ATTACH_RESERVED, RESERVED)):
        if attach_status in present:
            return volume_status
    return AVAILABLE
