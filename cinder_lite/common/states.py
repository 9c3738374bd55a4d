"""Every status string and every legal status change, in one place.

Other modules refer to the names below, never to literal strings.  Every
status change is an event with a name (as in Ironic's state machine:
``add_transition(source, target, event)``): a caller says what happened
(``'complete'``, ``'extend_failed'``) and the machine of its resource
says from which statuses that event leads where.  In the database the
change is a compare-and-swap (``WHERE status IN (the event's sources)``)
that only ``cinder_lite/db`` writes; nobody outside it names the allowed
sources (tests/unit/test_state_machine.py fails on an ``expected=``).
"""
from cinder_lite.common import exception

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
# written back from its latest snapshot (the revert action, 3.40)
REVERTING = 'reverting'
# offered to another project (a volume transfer); nothing else may happen
# to it until the transfer is accepted or deleted
AWAITING_TRANSFER = 'awaiting-transfer'
# made from a Glance image: the storage exists, the image is being
# written into it
DOWNLOADING = 'downloading'
# being copied into a Glance image (os-volume_upload_image); afterwards
# its attachments say what it is again
UPLOADING = 'uploading'
# read by a backup service (cinder-lite-backup); afterwards its
# attachments say what it is again
BACKING_UP = 'backing-up'
# written by a backup service from a backup, and what a restore that
# failed half-way leaves
RESTORING_BACKUP = 'restoring-backup'
ERROR_RESTORING = 'error_restoring'
DELETED = 'deleted'
# manage (os-volume-manage): the volume service adopts a storage object
# that exists already; shown as ``creating`` and ``error``, as Cinder
# shows them
MANAGING = 'managing'
ERROR_MANAGING = 'error_managing'
# unmanage (os-unmanage): the record goes, the storage stays
UNMANAGING = 'unmanaging'
ERROR_UNMANAGING = 'error_unmanaging'

# Set only by an operator (os-reset_status): the volume is being worked
# on outside cinder_lite.  As in Cinder, its metadata and its fields do
# not change meanwhile.
MAINTENANCE = 'maintenance'

VOLUME_STATUSES = frozenset([
    CREATING, AVAILABLE, ERROR, RESERVED, ATTACHING, IN_USE, DETACHING,
    DELETING, ERROR_DELETING, EXTENDING, ERROR_EXTENDING, RETYPING,
    REVERTING, AWAITING_TRANSFER, DOWNLOADING, UPLOADING, BACKING_UP,
    RESTORING_BACKUP, ERROR_RESTORING, MAINTENANCE, MANAGING,
    ERROR_MANAGING, UNMANAGING, ERROR_UNMANAGING, DELETED])

# What the views show of statuses Cinder keeps to itself
SHOWN_STATUS = {MANAGING: CREATING, ERROR_MANAGING: ERROR}

# Statuses a volume service's operation owns while it runs (os-reset_status
# leaves them alone while that service is up).
VOLUME_BUSY_STATUSES = frozenset([CREATING, DELETING, EXTENDING,
                                  DOWNLOADING, UPLOADING, REVERTING,
                                  MANAGING, UNMANAGING])

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

# -- attachment ---------------------------------------------------------------
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

# the statuses of an attachment that holds (or is making) a connection
ATTACH_CONNECTED_STATUSES = (ATTACH_ATTACHING, ATTACHED, ATTACH_DETACHING,
                             ERROR_DETACHING)

# What is under way on an attachment besides its status (its
# ``operation`` column; null when nothing is): set by the change that
# starts it, cleared by the one that ends it.
# - a read-only attachment becoming its volume's writer (os-takeover): it
#   counts as the writer from the moment it is marked
TAKING_OVER = 'taking_over'
# - its disconnect is under way (on a ``detaching`` attachment)
DISCONNECTING = 'disconnecting'
# - a reservation the legacy os-reserve made: its volume shows
#   ``attaching`` (as Cinder's os-reserve) until it is connected, attached
#   or dropped
LEGACY_RESERVE = 'os-reserve'
# how each shows as the attachment's status_reason while it has no other
# (the words that marked it before the column, migration 0016)
OPERATION_REASONS = {TAKING_OVER: 'taking over',
                     DISCONNECTING: 'disconnecting',
                     LEGACY_RESERVE: 'reserved by os-reserve'}

# (status, operation) of a reservation os-reserve made, as
# ``derive_volume_status`` is given it: it shows its volume ``attaching``
# as Cinder's legacy flow does; the attachments API's reservations show it
# ``reserved``.
ATTACH_LEGACY_RESERVED = (ATTACH_RESERVED, LEGACY_RESERVE)


def shown_reason(status_reason, operation):
    """The status_reason a client sees: the row's, else the words of
    the operation under way."""
    return status_reason or OPERATION_REASONS.get(operation)


# -- snapshot -----------------------------------------------------------------
# (the names are the volume's where Cinder's strings are the same)
SNAPSHOT_STATUSES = frozenset([CREATING, AVAILABLE, ERROR, DELETING,
                               ERROR_DELETING, DELETED, MANAGING,
                               UNMANAGING, ERROR_UNMANAGING])

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

# -- backup ------------------------------------------------------------------
RESTORING = 'restoring'
BACKUP_STATUSES = frozenset([CREATING, AVAILABLE, ERROR, DELETING,
                             ERROR_DELETING, RESTORING, DELETED])
# os-reset_status of a backup: Cinder's two
BACKUP_RESET_STATUSES = (AVAILABLE, ERROR)
BACKUP_FORCE_DELETE_STATUSES = tuple(sorted(BACKUP_STATUSES - {DELETED}))
# a volume may be backed up in these (an in-use one only with force,
# through a temporary snapshot), restored into only when available
BACKUP_SOURCE_STATUSES = (AVAILABLE,)
BACKUP_FORCE_SOURCE_STATUSES = VOLUME_COPY_STATUSES

# -- migration of a volume to another backend (its ``migration_status``) ------
# None: it never migrated.  Cinder's words; on the temporary volume a
# migration makes on the destination: MIGRATION_TARGET + the volume's id.
MIGRATION_STARTING = 'starting'
MIGRATION_MIGRATING = 'migrating'
MIGRATION_COMPLETING = 'completing'
MIGRATION_SUCCESS = 'success'
MIGRATION_ERROR = 'error'
MIGRATION_TARGET = 'target:'
MIGRATION_STATUSES = frozenset([None, MIGRATION_STARTING,
                                MIGRATION_MIGRATING, MIGRATION_COMPLETING,
                                MIGRATION_SUCCESS, MIGRATION_ERROR])
# a migration runs: no other may start
MIGRATION_RUNNING = (MIGRATION_STARTING, MIGRATION_MIGRATING,
                     MIGRATION_COMPLETING)
# -- generic volume group and group snapshot ---------------------------------
UPDATING = 'updating'
GROUP_STATUSES = frozenset([CREATING, AVAILABLE, ERROR, DELETING,
                            ERROR_DELETING, UPDATING, IN_USE, DELETED])
GROUP_SNAPSHOT_STATUSES = frozenset([CREATING, AVAILABLE, ERROR, DELETING,
                                     ERROR_DELETING, UPDATING, DELETED])
# os-reset_status of a group (3.20) and of a group snapshot (3.19):
# Cinder's lists (every status but ``deleted``)
GROUP_RESET_STATUSES = tuple(sorted(GROUP_STATUSES - {DELETED}))
GROUP_SNAPSHOT_RESET_STATUSES = tuple(sorted(GROUP_SNAPSHOT_STATUSES
                                             - {DELETED}))
# a group is changed (update, snapshot, volume created in it) only while
# available, as Cinder
GROUP_USABLE_STATUSES = (AVAILABLE,)
# statuses of a volume that may be added to a group, and removed from one
# (Cinder's lists)
GROUP_ADD_VOLUME_STATUSES = (AVAILABLE, IN_USE)
GROUP_REMOVE_VOLUME_STATUSES = (AVAILABLE, IN_USE, ERROR, ERROR_DELETING)
# statuses of the volumes of a group that a group snapshot may be taken of
GROUP_SNAPSHOT_VOLUME_STATUSES = VOLUME_COPY_STATUSES

# -- service -----------------------------------------------------------------
SERVICE_UP = 'up'
SERVICE_DOWN = 'down'
SERVICE_ENABLED = 'enabled'
SERVICE_DISABLED = 'disabled'


def derive_volume_status(attach_statuses):
    """Volume status implied by the statuses of its live attachments
    (and ``ATTACH_LEGACY_RESERVED`` for an os-reserve reservation).

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


# -- the machines -------------------------------------------------------------
class StateMachine(object):
    """The events of one kind of resource: ``(source, event) -> targets``.

    Most events lead from a source to one target.  A few name a change
    whose target the caller decides from what it knows (an operator's
    os-reset_status, the status a volume's attachments make it): they
    lead to several, and the caller names which.
    """

    def __init__(self, resource, statuses):
        self.resource = resource
        self.statuses = frozenset(statuses)
        self._events = {}           # event -> {target: {source: None}}

    def add_transition(self, source, target, event):
        for status in (source, target):
            if status not in self.statuses:
                raise ValueError('%s: unknown status %r' % (self.resource,
                                                            status))
        self._events.setdefault(event, {}).setdefault(
            target, {})[source] = None

    @property
    def events(self):
        return tuple(self._events)

    def targets(self, event):
        """Where ``event`` may lead, from any source."""
        return tuple(self._table(event))

    def _table(self, event):
        try:
            return self._events[event]
        except KeyError:
            raise ValueError('%s: no event %r' % (self.resource,
                                                  event)) from None

    def resolve(self, event, target=None):
        """(target, sources) of ``event``: the target it names (the
        caller's must be one of the event's), and the statuses from which
        the event leads there -- what a compare-and-swap allows."""
        table = self._table(event)
        if target is None:
            if len(table) != 1:
                raise ValueError('%s: event %r leads to %s; name the '
                                 'target' % (self.resource, event,
                                             ', '.join(table)))
            target = next(iter(table))
        elif target not in table:
            raise ValueError('%s: event %r does not lead to %r' % (
                self.resource, event, target))
        return target, tuple(table[target])

    def process_event(self, current, event, target=None, id=None):
        """The status ``event`` moves a resource in ``current`` to (the
        ``target`` named, for an event that leads to several); raises
        InvalidTransition when it does not apply to ``current``."""
        target, sources = self.resolve(event, target)
        if current not in sources:
            raise exception.InvalidTransition(
                resource=self.resource, id=id, target=target,
                actual=current, allowed=', '.join(map(str, sources)))
        return target


def _add_all(machine, sources, targets, event):
    for source in sources:
        for target in targets:
            machine.add_transition(source, target, event)


VOLUME = StateMachine('volume', VOLUME_STATUSES)
_v = VOLUME.add_transition
# making it
_v(CREATING, AVAILABLE, 'created')
_v(CREATING, DOWNLOADING, 'start_download')
_v(DOWNLOADING, AVAILABLE, 'downloaded')
_v(CREATING, ERROR, 'create_failed')
_v(DOWNLOADING, ERROR, 'create_failed')
# the scheduler found no backend for it
_v(CREATING, ERROR, 'schedule_failed')
# the service stopped while the image was written (reconcile)
_v(DOWNLOADING, ERROR, 'download_interrupted')
# os-reimage (3.68): an image written over the volume's data; a
# reserved volume (Nova rebuilding its server) only with
# reimage_reserved.  Then what its attachments make it again.
for _s in (AVAILABLE, ERROR):
    _v(_s, DOWNLOADING, 'reimage')
for _s in (AVAILABLE, ERROR, RESERVED):
    _v(_s, DOWNLOADING, 'reimage_reserved')
_add_all(VOLUME, [DOWNLOADING],
         [AVAILABLE, IN_USE, ATTACHING, DETACHING, RESERVED], 'reimaged')
_v(DOWNLOADING, ERROR, 'reimage_failed')
# (the re-image could not be sent: the status it had)
_add_all(VOLUME, [DOWNLOADING], [AVAILABLE, ERROR, RESERVED],
         'reimage_unsent')
# adopting storage that exists (os-volume-manage)
_v(MANAGING, AVAILABLE, 'managed')
_v(MANAGING, ERROR_MANAGING, 'manage_failed')
# deleting it
for _s in (AVAILABLE, ERROR, ERROR_DELETING, ERROR_EXTENDING,
           ERROR_MANAGING):
    _v(_s, DELETING, 'delete')
# unmanaging it (os-unmanage): from where a delete may start, as Cinder
for _s in (AVAILABLE, ERROR, ERROR_EXTENDING, ERROR_MANAGING,
           ERROR_RESTORING, ERROR_UNMANAGING):
    _v(_s, UNMANAGING, 'unmanage')
_v(UNMANAGING, DELETED, 'unmanaged')
_v(UNMANAGING, ERROR_UNMANAGING, 'unmanage_failed')
# os-force_delete: from any status, as in Cinder (a delete under way is
# sent again)
_add_all(VOLUME, VOLUME_FORCE_DELETE_STATUSES, [DELETING],
         'force_delete')
_v(DELETING, DELETED, 'deleted')
_v(DELETING, ERROR_DELETING, 'delete_failed')
# extending it (an in-use volume's extend swaps the size, not the status)
_v(AVAILABLE, EXTENDING, 'extend')
_v(ERROR_EXTENDING, EXTENDING, 'extend')
_v(EXTENDING, AVAILABLE, 'extended')
_v(EXTENDING, ERROR_EXTENDING, 'extend_failed')
# the service stopped during the extend (reconcile): the old size stays
_v(EXTENDING, AVAILABLE, 'extend_interrupted')
# os-volume_upload_image (an in-use volume only with its force); when the
# copy ends, the volume is what its attachments make it
_v(AVAILABLE, UPLOADING, 'upload')
_v(AVAILABLE, UPLOADING, 'force_upload')
_v(IN_USE, UPLOADING, 'force_upload')
_add_all(VOLUME, [UPLOADING],
         [AVAILABLE, IN_USE, ATTACHING, DETACHING, RESERVED], 'upload_ended')
# a backup: the volume is read (an in-use one through a temporary
# snapshot, only while the snapshot is made); then what its attachments
# make it
_v(AVAILABLE, BACKING_UP, 'backup')
for _s in VOLUME_COPY_STATUSES:
    _v(_s, BACKING_UP, 'force_backup')
_add_all(VOLUME, [BACKING_UP],
         [AVAILABLE, IN_USE, ATTACHING, DETACHING, RESERVED], 'backup_ended')
# a restore writes an available volume, or one made for it
_v(AVAILABLE, RESTORING_BACKUP, 'restore')
_v(CREATING, RESTORING_BACKUP, 'restore_on_create')
_v(RESTORING_BACKUP, AVAILABLE, 'restored')
_v(RESTORING_BACKUP, ERROR_RESTORING, 'restore_failed')
for _s in (ERROR_RESTORING,):
    _v(_s, DELETING, 'delete')
# reverted to its latest snapshot (3.40): only an available volume;
# the revert could not be sent (back as it was), failed on the backend,
# or was interrupted by a stop of its volume service (reconcile): what
# the storage holds is not known then
_v(AVAILABLE, REVERTING, 'revert')
_v(REVERTING, AVAILABLE, 'reverted')
_v(REVERTING, AVAILABLE, 'revert_unsent')
_v(REVERTING, ERROR, 'revert_failed')
_v(REVERTING, ERROR, 'revert_interrupted')
# transfers
_v(AVAILABLE, AWAITING_TRANSFER, 'offer')
_v(AWAITING_TRANSFER, AVAILABLE, 'transfer_ended')
# os-begin_detaching of a volume with several attachments: the detach
# names its attachment
_v(IN_USE, DETACHING, 'begin_detaching')
# os-force_detach of a volume an operator reset to error: what its
# remaining attachments make it
_add_all(VOLUME, [ERROR],
         [AVAILABLE, IN_USE, ATTACHING, DETACHING, RESERVED],
         'force_detached')
# os-reset_status: the operator names the target; while the volume
# service is up (``reset_status_served``) not from a status one of its
# operations owns
_add_all(VOLUME, VOLUME_FORCE_DELETE_STATUSES,
         sorted(VOLUME_RESET_STATUSES), 'reset_status')
_add_all(VOLUME, sorted(VOLUME_STATUSES - {DELETED} - VOLUME_BUSY_STATUSES),
         sorted(VOLUME_RESET_STATUSES), 'reset_status_served')

# a migration (os-migrate_volume with lock_volume, and a retype that
# moves the volume to another backend): nothing else happens to it
# meanwhile; then it is available again
_v(AVAILABLE, MAINTENANCE, 'migrate_lock')
_v(MAINTENANCE, AVAILABLE, 'migrate_unlock')
_v(AVAILABLE, RETYPING, 'retype_migrate')
_v(RETYPING, AVAILABLE, 'retype_migrated')

ATTACHMENT = StateMachine('attachment', ATTACHMENT_STATUSES)
_a = ATTACHMENT.add_transition
# connecting: the API marks it, the volume service records the connection
# info it made (attaching -> attaching), os-complete ends it
_a(ATTACH_RESERVED, ATTACH_ATTACHING, 'connect')
_a(ERROR_ATTACHING, ATTACH_ATTACHING, 'connect')
# completed before it was connected (Nova's order for some volumes)
_a(ATTACHED, ATTACH_ATTACHING, 'connect_completed')
_a(ATTACH_ATTACHING, ATTACH_ATTACHING, 'connected')
_a(ATTACH_RESERVED, ATTACHED, 'complete')
_a(ATTACH_ATTACHING, ATTACHED, 'complete')
# the legacy os-attach (again for the same server: no change but its
# fields)
for _s in (ATTACH_RESERVED, ATTACH_ATTACHING, ATTACHED):
    _a(_s, ATTACHED, 'legacy_attach')
# the connect failed on the volume service (recorded there, also over a
# failure the API recorded first: the backend's reason is better) or its
# answer was lost (recorded by the API)
_a(ATTACH_ATTACHING, ERROR_ATTACHING, 'connect_failed')
_a(ERROR_ATTACHING, ERROR_ATTACHING, 'connect_failed')
_a(ATTACH_ATTACHING, ERROR_ATTACHING, 'connect_lost')
# reconcile: connected and never completed, or never connected
_a(ATTACH_ATTACHING, ATTACHED, 'reconcile_complete')
_a(ATTACH_ATTACHING, ERROR_ATTACHING, 'reconcile_abandon')
# detaching: ``start_disconnect`` when an export is to be removed, else
# straight to ``detach``
for _s in (ATTACHED, ATTACH_ATTACHING, ATTACH_DETACHING, ERROR_ATTACHING,
           ERROR_DETACHING):
    # (detaching -> detaching: os-begin_detaching marked it, os-detach or
    # a delete now disconnects it)
    _a(_s, ATTACH_DETACHING, 'start_disconnect')
for _s in (ATTACH_DETACHING, ATTACH_RESERVED, ATTACH_ATTACHING, ATTACHED,
           ERROR_ATTACHING, ERROR_DETACHING):
    _a(_s, DETACHED, 'detach')
_a(ATTACH_DETACHING, DETACHED, 'disconnected')
_a(ATTACH_DETACHING, ERROR_DETACHING, 'disconnect_failed')
_a(ERROR_DETACHING, ERROR_DETACHING, 'disconnect_failed')
_a(ATTACH_DETACHING, ERROR_DETACHING, 'disconnect_lost')
# reconcile retries a disconnect
_a(ATTACH_DETACHING, DETACHED, 'disconnect_retried')
_a(ERROR_DETACHING, DETACHED, 'disconnect_retried')
_a(ATTACH_DETACHING, ERROR_DETACHING, 'disconnect_retry_failed')
_a(ERROR_DETACHING, ERROR_DETACHING, 'disconnect_retry_failed')
# os-begin_detaching and os-roll_detaching
_a(ATTACHED, ATTACH_DETACHING, 'begin_detaching')
_a(ATTACH_DETACHING, ATTACHED, 'roll_detaching')
# a takeover: the new writer's read-write export is recorded (promote),
# or, when it did not finish, its old export is made again (or could not
# be: a read-write export may be left)
_a(ATTACHED, ATTACHED, 'promote')
_a(ATTACHED, ATTACHED, 'takeover_undone')
_a(ATTACHED, ERROR_ATTACHING, 'takeover_failed')

SNAPSHOT = StateMachine('snapshot', SNAPSHOT_STATUSES |
                        set(SNAPSHOT_RESET_STATUSES))
_s_ = SNAPSHOT.add_transition
_s_(CREATING, AVAILABLE, 'created')
_s_(CREATING, ERROR, 'create_failed')
_s_(AVAILABLE, DELETING, 'delete')
_s_(ERROR, DELETING, 'delete')
# os-force_delete, and a cascade from its volume: from any live status
_add_all(SNAPSHOT, SNAPSHOT_FORCE_DELETE_STATUSES, [DELETING],
         'force_delete')
_s_(DELETING, DELETED, 'deleted')
_s_(DELETING, ERROR_DELETING, 'delete_failed')
# its volume is reverted to it; then it is available again, whatever
# became of the volume
_s_(AVAILABLE, RESTORING, 'revert')
_s_(RESTORING, AVAILABLE, 'revert_ended')
# os-snapshot-manage and os-unmanage
_s_(MANAGING, AVAILABLE, 'managed')
_s_(MANAGING, ERROR, 'manage_failed')
for _s in (AVAILABLE, ERROR, ERROR_UNMANAGING):
    _s_(_s, UNMANAGING, 'unmanage')
_s_(UNMANAGING, DELETED, 'unmanaged')
_s_(UNMANAGING, ERROR_UNMANAGING, 'unmanage_failed')
# a backup of the snapshot reads it (not deleted meanwhile)
_s_(AVAILABLE, 'backing-up', 'backup')
_s_('backing-up', AVAILABLE, 'backup_ended')
# os-reset_status: the operator names the target
_add_all(SNAPSHOT, SNAPSHOT_FORCE_DELETE_STATUSES, SNAPSHOT_RESET_STATUSES,
         'reset_status')
# os-update_snapshot_status (a driver outside reporting its progress);
# the same status again changes only the progress
for _s, _targets in SNAPSHOT_UPDATE_STATUS.items():
    _add_all(SNAPSHOT, [_s], [t for t in _targets if t != _s],
             'update_status')
BACKUP = StateMachine('backup', BACKUP_STATUSES)
_b = BACKUP.add_transition
_b(CREATING, AVAILABLE, 'created')
_b(CREATING, ERROR, 'create_failed')
# the backup service stopped while it copied (reconcile)
_b(CREATING, ERROR, 'create_interrupted')
_b(AVAILABLE, RESTORING, 'restore')
_b(RESTORING, AVAILABLE, 'restored')
# a restore that failed (or was interrupted) leaves the backup as it was;
# the volume says what happened to it
_b(RESTORING, AVAILABLE, 'restore_failed')
_b(AVAILABLE, DELETING, 'delete')
_b(ERROR, DELETING, 'delete')
_add_all(BACKUP, BACKUP_FORCE_DELETE_STATUSES, [DELETING], 'force_delete')
_b(DELETING, DELETED, 'deleted')
# the delete could not be sent to a backup service (the bus out of
# reach): the backup is as it was (a late send finds it not deleting)
_add_all(BACKUP, [DELETING], [s for s in BACKUP_FORCE_DELETE_STATUSES
                              if s != DELETING], 'delete_not_sent')
_b(DELETING, ERROR_DELETING, 'delete_failed')
_b(ERROR_DELETING, DELETING, 'delete')
_add_all(BACKUP, BACKUP_FORCE_DELETE_STATUSES, BACKUP_RESET_STATUSES,
         'reset_status')

MIGRATION = StateMachine('migration', MIGRATION_STATUSES)
_m = MIGRATION.add_transition
# os-migrate_volume (or a retype with migration) starts one, unless one
# runs
for _s in (None, MIGRATION_SUCCESS, MIGRATION_ERROR):
    _m(_s, MIGRATION_STARTING, 'start')
# the source volume service took it and copies the data
_m(MIGRATION_STARTING, MIGRATION_MIGRATING, 'copy')
# the data is on the destination: the volumes swap
_m(MIGRATION_MIGRATING, MIGRATION_COMPLETING, 'complete')
_m(MIGRATION_COMPLETING, MIGRATION_SUCCESS, 'completed')
# it failed (or a service stopped in it: reconcile); the volume stays
# where it was
for _s in MIGRATION_RUNNING:
    _m(_s, MIGRATION_ERROR, 'fail')
GROUP = StateMachine('group', GROUP_STATUSES)
_g = GROUP.add_transition
# the scheduler chose its backend (or none); a group made from a group
# snapshot or a source group: available once its volumes are, error when
# one of them failed
_g(CREATING, AVAILABLE, 'created')
_g(CREATING, ERROR, 'create_failed')
# DELETE (POST /groups/{id}/action {"delete": ...}): from Cinder's
# statuses; the volume service removes its volumes, then the group
for _s in (AVAILABLE, ERROR, ERROR_DELETING):
    _g(_s, DELETING, 'delete')
_g(DELETING, DELETED, 'deleted')
_g(DELETING, ERROR_DELETING, 'delete_failed')
# a group that never reached a backend is deleted at once
_g(ERROR, DELETED, 'deleted_unscheduled')
_g(CREATING, DELETED, 'deleted_unscheduled')
# reset_status (3.20): the operator names the target
_add_all(GROUP, sorted(GROUP_STATUSES - {DELETED}), GROUP_RESET_STATUSES,
         'reset_status')

GROUP_SNAPSHOT = StateMachine('group snapshot', GROUP_SNAPSHOT_STATUSES)
_gs = GROUP_SNAPSHOT.add_transition
_gs(CREATING, AVAILABLE, 'created')
_gs(CREATING, ERROR, 'create_failed')
# the volume service stopped while it took the snapshots (reconcile)
_gs(CREATING, ERROR, 'create_interrupted')
_gs(AVAILABLE, DELETING, 'delete')
_gs(ERROR, DELETING, 'delete')
_gs(ERROR_DELETING, DELETING, 'delete')
_gs(DELETING, DELETED, 'deleted')
_gs(DELETING, ERROR_DELETING, 'delete_failed')
# reset_status (3.19): the operator names the target
_add_all(GROUP_SNAPSHOT, sorted(GROUP_SNAPSHOT_STATUSES - {DELETED}),
         GROUP_SNAPSHOT_RESET_STATUSES, 'reset_status')
# a snapshot taken by a group snapshot whose service stopped (reconcile)
SNAPSHOT.add_transition(CREATING, ERROR, 'create_interrupted')
del _v, _a, _s_, _b, _s, _targets, _m, _g, _gs
