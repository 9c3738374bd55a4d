"""The state machines of common/states.py: every (status, event) pair
either names its target or is refused with InvalidTransition; callers
outside cinder_lite/db name events, never the statuses a change may
start from."""
import ast
import inspect
import os

import pytest

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volumes as db_volumes

MACHINES = [states.VOLUME, states.ATTACHMENT, states.SNAPSHOT, states.BACKUP,
            states.GROUP, states.GROUP_SNAPSHOT]

R, AT, OK, DE, GONE, EA, ED = (
    states.ATTACH_RESERVED, states.ATTACH_ATTACHING, states.ATTACHED,
    states.ATTACH_DETACHING, states.DETACHED, states.ERROR_ATTACHING,
    states.ERROR_DETACHING)

# Every event of an attachment: source -> target; any other source is
# refused.
ATTACHMENT_EVENTS = {
    'connect': {R: AT, EA: AT},
    'connect_completed': {OK: AT},
    'connected': {AT: AT},
    'complete': {R: OK, AT: OK},
    'legacy_attach': {R: OK, AT: OK, OK: OK},
    'connect_failed': {AT: EA, EA: EA},
    'connect_lost': {AT: EA},
    'reconcile_complete': {AT: OK},
    'reconcile_abandon': {AT: EA},
    'start_disconnect': {OK: DE, AT: DE, DE: DE, EA: DE, ED: DE},
    'detach': {DE: GONE, R: GONE, AT: GONE, OK: GONE, EA: GONE, ED: GONE},
    'disconnected': {DE: GONE},
    'disconnect_failed': {DE: ED, ED: ED},
    'disconnect_lost': {DE: ED},
    'disconnect_retried': {DE: GONE, ED: GONE},
    'disconnect_retry_failed': {DE: ED, ED: ED},
    'begin_detaching': {OK: DE},
    'roll_detaching': {DE: OK},
    'promote': {OK: OK},
    'takeover_undone': {OK: OK},
    'takeover_failed': {OK: EA},
}

V = states
VOLUME_EVENTS = {
    'created': {V.CREATING: V.AVAILABLE},
    'start_download': {V.CREATING: V.DOWNLOADING},
    'downloaded': {V.DOWNLOADING: V.AVAILABLE},
    'create_failed': {V.CREATING: V.ERROR, V.DOWNLOADING: V.ERROR},
    'schedule_failed': {V.CREATING: V.ERROR},
    'download_interrupted': {V.DOWNLOADING: V.ERROR},
    'delete': {s: V.DELETING for s in (V.AVAILABLE, V.ERROR,
                                       V.ERROR_DELETING,
                                       V.ERROR_EXTENDING,
                                       V.ERROR_RESTORING,
                                       V.ERROR_MANAGING)},
    'force_delete': {s: V.DELETING
                     for s in V.VOLUME_STATUSES - {V.DELETED}},
    'deleted': {V.DELETING: V.DELETED},
    # os-volume-manage, os-unmanage
    'managed': {V.MANAGING: V.AVAILABLE},
    'manage_failed': {V.MANAGING: V.ERROR_MANAGING},
    'unmanage': {s: V.UNMANAGING for s in (
        V.AVAILABLE, V.ERROR, V.ERROR_EXTENDING, V.ERROR_MANAGING,
        V.ERROR_RESTORING, V.ERROR_UNMANAGING)},
    'unmanaged': {V.UNMANAGING: V.DELETED},
    'unmanage_failed': {V.UNMANAGING: V.ERROR_UNMANAGING},
    'delete_failed': {V.DELETING: V.ERROR_DELETING},
    'extend': {V.AVAILABLE: V.EXTENDING, V.ERROR_EXTENDING: V.EXTENDING},
    'extended': {V.EXTENDING: V.AVAILABLE},
    'extend_failed': {V.EXTENDING: V.ERROR_EXTENDING},
    'extend_interrupted': {V.EXTENDING: V.AVAILABLE},
    'upload': {V.AVAILABLE: V.UPLOADING},
    'force_upload': {V.AVAILABLE: V.UPLOADING, V.IN_USE: V.UPLOADING},
    'offer': {V.AVAILABLE: V.AWAITING_TRANSFER},
    'transfer_ended': {V.AWAITING_TRANSFER: V.AVAILABLE},
    'begin_detaching': {V.IN_USE: V.DETACHING},
    'backup': {V.AVAILABLE: V.BACKING_UP},
    'force_backup': {s: V.BACKING_UP for s in V.VOLUME_COPY_STATUSES},
    'restore': {V.AVAILABLE: V.RESTORING_BACKUP},
    'restore_on_create': {V.CREATING: V.RESTORING_BACKUP},
    'restored': {V.RESTORING_BACKUP: V.AVAILABLE},
    'restore_failed': {V.RESTORING_BACKUP: V.ERROR_RESTORING},
    'reimage': {V.AVAILABLE: V.DOWNLOADING, V.ERROR: V.DOWNLOADING},
    'reimage_reserved': {V.AVAILABLE: V.DOWNLOADING, V.ERROR: V.DOWNLOADING,
                         V.RESERVED: V.DOWNLOADING},
    'reimage_failed': {V.DOWNLOADING: V.ERROR},
    'revert': {V.AVAILABLE: V.REVERTING},
    'reverted': {V.REVERTING: V.AVAILABLE},
    'revert_unsent': {V.REVERTING: V.AVAILABLE},
    'revert_failed': {V.REVERTING: V.ERROR},
    'revert_interrupted': {V.REVERTING: V.ERROR},
    # a migration (lock_volume, or a retype that moves the volume)
    'migrate_lock': {V.AVAILABLE: V.MAINTENANCE},
    'migrate_unlock': {V.MAINTENANCE: V.AVAILABLE},
    'retype_migrate': {V.AVAILABLE: V.RETYPING},
    'retype_migrated': {V.RETYPING: V.AVAILABLE},
}
# events whose target the caller names: event -> (sources, targets)
DERIVED = (V.AVAILABLE, V.IN_USE, V.ATTACHING, V.DETACHING, V.RESERVED)
VOLUME_CHOSEN = {
    'upload_ended': ({V.UPLOADING}, DERIVED),
    'reimaged': ({V.DOWNLOADING}, DERIVED),
    'reimage_unsent': ({V.DOWNLOADING}, (V.AVAILABLE, V.ERROR, V.RESERVED)),
    'backup_ended': ({V.BACKING_UP}, DERIVED),
    'force_detached': ({V.ERROR}, DERIVED),
    'reset_status': (V.VOLUME_STATUSES - {V.DELETED},
                     V.VOLUME_RESET_STATUSES),
    'reset_status_served': (
        V.VOLUME_STATUSES - {V.DELETED} - V.VOLUME_BUSY_STATUSES,
        V.VOLUME_RESET_STATUSES),
}
SNAPSHOT_EVENTS = {
    'created': {V.CREATING: V.AVAILABLE},
    'create_failed': {V.CREATING: V.ERROR},
    # a group snapshot's, left creating by a service that stopped
    'create_interrupted': {V.CREATING: V.ERROR},
    'delete': {V.AVAILABLE: V.DELETING, V.ERROR: V.DELETING},
    'force_delete': {s: V.DELETING
                     for s in V.SNAPSHOT_FORCE_DELETE_STATUSES},
    'deleted': {V.DELETING: V.DELETED},
    # os-snapshot-manage, os-unmanage
    'managed': {V.MANAGING: V.AVAILABLE},
    'manage_failed': {V.MANAGING: V.ERROR},
    'unmanage': {s: V.UNMANAGING for s in (V.AVAILABLE, V.ERROR,
                                           V.ERROR_UNMANAGING)},
    'unmanaged': {V.UNMANAGING: V.DELETED},
    'unmanage_failed': {V.UNMANAGING: V.ERROR_UNMANAGING},
    'delete_failed': {V.DELETING: V.ERROR_DELETING},
    'backup': {V.AVAILABLE: 'backing-up'},
    'backup_ended': {'backing-up': V.AVAILABLE},
    'revert': {V.AVAILABLE: V.RESTORING},
    'revert_ended': {V.RESTORING: V.AVAILABLE},
}
SNAPSHOT_CHOSEN = {
    'reset_status': (set(V.SNAPSHOT_FORCE_DELETE_STATUSES)
                     | set(V.SNAPSHOT_RESET_STATUSES),
                     V.SNAPSHOT_RESET_STATUSES),
}


def _check_every_pair(machine, events, chosen):
    assert set(machine.events) == set(events) | set(chosen), (
        machine.resource)
    for status in sorted(machine.statuses):
        for event, table in events.items():
            if status in table:
                assert machine.process_event(status, event) == \
                    table[status], (status, event)
            else:
                with pytest.raises(exception.InvalidTransition):
                    machine.process_event(status, event)
        for event, (sources, targets) in chosen.items():
            for target in targets:
                if status in sources:
                    assert machine.process_event(
                        status, event, target) == target
                else:
                    with pytest.raises(exception.InvalidTransition):
                        machine.process_event(status, event, target)


def test_every_attachment_status_and_event():
    _check_every_pair(states.ATTACHMENT, ATTACHMENT_EVENTS, {})


BACKUP_EVENTS = {
    'created': {V.CREATING: V.AVAILABLE},
    'create_failed': {V.CREATING: V.ERROR},
    'create_interrupted': {V.CREATING: V.ERROR},
    'restore': {V.AVAILABLE: V.RESTORING},
    'restored': {V.RESTORING: V.AVAILABLE},
    'restore_failed': {V.RESTORING: V.AVAILABLE},
    'delete': {V.AVAILABLE: V.DELETING, V.ERROR: V.DELETING,
               V.ERROR_DELETING: V.DELETING},
    'force_delete': {s: V.DELETING
                     for s in V.BACKUP_STATUSES - {V.DELETED}},
    'deleted': {V.DELETING: V.DELETED},
    'delete_failed': {V.DELETING: V.ERROR_DELETING},
}


def test_every_backup_status_and_event():
    _check_every_pair(states.BACKUP, BACKUP_EVENTS, {
        'reset_status': (V.BACKUP_STATUSES - {V.DELETED},
                         V.BACKUP_RESET_STATUSES),
        # back to what it was: the delete could not be sent
        'delete_not_sent': ({V.DELETING}, V.BACKUP_STATUSES - {
            V.DELETED, V.DELETING})})


GROUP_EVENTS = {
    'created': {V.CREATING: V.AVAILABLE},
    'create_failed': {V.CREATING: V.ERROR},
    'delete': {V.AVAILABLE: V.DELETING, V.ERROR: V.DELETING,
               V.ERROR_DELETING: V.DELETING},
    'deleted': {V.DELETING: V.DELETED},
    'delete_failed': {V.DELETING: V.ERROR_DELETING},
    'deleted_unscheduled': {V.ERROR: V.DELETED, V.CREATING: V.DELETED},
}
GROUP_SNAPSHOT_EVENTS = {
    'created': {V.CREATING: V.AVAILABLE},
    'create_failed': {V.CREATING: V.ERROR},
    'create_interrupted': {V.CREATING: V.ERROR},
    'delete': {V.AVAILABLE: V.DELETING, V.ERROR: V.DELETING,
               V.ERROR_DELETING: V.DELETING},
    'deleted': {V.DELETING: V.DELETED},
    'delete_failed': {V.DELETING: V.ERROR_DELETING},
}


def test_every_group_status_and_event():
    _check_every_pair(states.GROUP, GROUP_EVENTS, {
        'reset_status': (V.GROUP_STATUSES - {V.DELETED},
                         V.GROUP_RESET_STATUSES)})


def test_every_group_snapshot_status_and_event():
    _check_every_pair(states.GROUP_SNAPSHOT, GROUP_SNAPSHOT_EVENTS, {
        'reset_status': (V.GROUP_SNAPSHOT_STATUSES - {V.DELETED},
                         V.GROUP_SNAPSHOT_RESET_STATUSES)})


def test_every_volume_status_and_event():
    _check_every_pair(states.VOLUME, VOLUME_EVENTS, VOLUME_CHOSEN)


def test_every_snapshot_status_and_event():
    update = {}
    for source, targets in V.SNAPSHOT_UPDATE_STATUS.items():
        for target in targets:
            if target != source:
                update[target] = source
    # os-update_snapshot_status: each target from exactly one status
    for target, source in update.items():
        assert states.SNAPSHOT.resolve('update_status', target) == (
            target, (source,))
    _check_every_pair(states.SNAPSHOT, SNAPSHOT_EVENTS, dict(
        SNAPSHOT_CHOSEN, update_status=(set(), ())))


def test_statuses_are_known_and_events_named():
    for machine in MACHINES:
        for event in machine.events:
            for target in machine.targets(event):
                assert target in machine.statuses
                assert set(machine.resolve(event, target)[1]) <= \
                    machine.statuses


def test_an_event_with_several_targets_needs_one_named():
    with pytest.raises(ValueError):
        states.VOLUME.resolve('reset_status')
    with pytest.raises(ValueError):
        states.VOLUME.resolve('created', states.ERROR)
    with pytest.raises(ValueError):
        states.ATTACHMENT.resolve('no such event')
    with pytest.raises(ValueError):
        states.ATTACHMENT.add_transition(OK, 'nowhere', 'detach')


def test_refusal_names_what_the_event_allows():
    with pytest.raises(exception.InvalidTransition) as e:
        states.ATTACHMENT.process_event(R, 'disconnected', id='a1')
    assert e.value.kwargs['actual'] == R
    assert e.value.kwargs['allowed'] == DE
    assert e.value.kwargs['target'] == GONE


@pytest.mark.parametrize('function', [db_volumes.transition,
                                      db_attachments.transition,
                                      db_snapshots.transition])
def test_the_database_takes_an_event_not_sources(function):
    params = list(inspect.signature(function).parameters)
    assert params[2] == 'event'
    assert 'expected' not in params


# -- callers name events ------------------------------------------------------
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, 'cinder_lite')
DB = os.path.join(PACKAGE, 'db')
RECEIVERS = {'db_volumes': states.VOLUME,
             'db_attachments': states.ATTACHMENT,
             'db_snapshots': states.SNAPSHOT}


def _modules_outside_db():
    for top, dirs, files in os.walk(PACKAGE):
        if top == DB or top.startswith(DB + os.sep):
            continue
        for name in files:
            if name.endswith('.py'):
                path = os.path.join(top, name)
                with open(path) as f:
                    yield os.path.relpath(path, ROOT), ast.parse(f.read())


def _literals(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _literals(node.body) + _literals(node.orelse)
    return []


def find_hand_passed_sources(modules):
    """Every call outside cinder_lite/db that passes ``expected=``, and
    every status change (``<db module>.transition``, or
    ``transition_and_read``) given a collection of statuses or an event
    its machine does not have."""
    found = []
    for path, tree in modules:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            where = '%s:%d' % (path, node.lineno)
            if any(k.arg == 'expected' for k in node.keywords):
                found.append('%s: expected=' % where)
            func = node.func
            if not (isinstance(func, ast.Attribute) and
                    func.attr in ('transition', 'transition_and_read')):
                continue
            for arg in list(node.args) + [k.value for k in node.keywords]:
                if isinstance(arg, (ast.Tuple, ast.List, ast.Set)) or (
                        isinstance(arg, ast.Attribute)
                        and arg.attr.endswith('STATUSES')):
                    found.append('%s: a set of statuses' % where)
            machine = RECEIVERS.get(getattr(func.value, 'id', None))
            if machine is not None and len(node.args) >= 3:
                for event in _literals(node.args[2]):
                    if event not in machine.events:
                        found.append('%s: no %s event %r' % (
                            where, machine.resource, event))
    return found


def test_no_caller_outside_db_names_allowed_sources():
    assert find_hand_passed_sources(_modules_outside_db()) == []


@pytest.mark.parametrize('code', [
    "db_volumes.transition(s, v, states.ERROR, expected=(states.CREATING,))",
    "db_attachments.transition(s, a, 'connect', sources=(states.ATTACHED,))",
    "db_attachments.transition(s, a, 'no_such_event')",
    "db_attachments.transition_and_read(s, a, 'detach' if c else 'nope', r)",
    "db_volumes.transition(s, v, 'reset_status' if x else 'nope', t)",
    "whatever(s, expected=allowed)",
    "db_snapshots.transition(s, i, states.SNAPSHOT_FORCE_DELETE_STATUSES)",
])
def test_the_guard_finds_hand_passed_sources(code):
    assert find_hand_passed_sources([('m.py', ast.parse(code))])


def test_the_guard_passes_named_events():
    code = ("db_volumes.transition(s, v, 'force_delete' if f else 'delete')\n"
            "db_attachments.transition(s, a, change, values={'x': 1})\n")
    assert find_hand_passed_sources([('m.py', ast.parse(code))]) == []


def test_the_migration_machine():
    """A migration starts from none, success or error, runs starting ->
    migrating -> completing -> success, and fails from any running
    step (volume_migrations.move applies these by compare-and-swap)."""
    m = V.MIGRATION
    assert set(m.events) == {'start', 'copy', 'complete', 'completed',
                             'fail'}
    for status in (None, V.MIGRATION_SUCCESS, V.MIGRATION_ERROR):
        assert m.process_event(status, 'start') == V.MIGRATION_STARTING
    for status in V.MIGRATION_RUNNING:
        assert m.process_event(status, 'fail') == V.MIGRATION_ERROR
        with pytest.raises(exception.InvalidTransition):
            m.process_event(status, 'start')
    assert m.process_event(V.MIGRATION_STARTING, 'copy') == \
        V.MIGRATION_MIGRATING
    assert m.process_event(V.MIGRATION_MIGRATING, 'complete') == \
        V.MIGRATION_COMPLETING
    assert m.process_event(V.MIGRATION_COMPLETING, 'completed') == \
        V.MIGRATION_SUCCESS
