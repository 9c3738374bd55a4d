"""Backups through the clients people use, unchanged: python-cinderclient's
CLI (backup-create with --incremental, --force, --snapshot-id,
--container, --name, --description; backup-list and its filters;
backup-show; backup-update; backup-restore into a new volume, by --name
and with --volume into an existing one; backup-export and backup-import;
backup-reset-state; backup-delete and --force; quota-show and quota-usage)
and python-openstackclient's ``volume backup`` commands (create, list,
show, set, restore, delete, record export), run in this process against
the embedded stack with its real backup service and POSIX store.  What
the user sees is asserted, and each restore is compared byte for byte
with what the source held when it was backed up."""
import base64
import json
import os
import uuid

from cinder_lite.db import api as db_api
from cinder_lite.db import backups as db_backups
from tests.harness import attach as attach_mod
from tests.harness import backups as bk
from tests.harness.clients import cinder
from tests.harness.clients import cinder_fails
from tests.harness.clients import openstack
from tests.harness.clients import props
from tests.harness.clients import run_openstack
from tests.harness.clients import table
from tests.harness.snapshots import usage
from tests.harness.snapshots import wait_snapshot
from tests.harness import stack as stack_mod
from tests.harness.volumes import data_extents
from tests.harness.volumes import read
from tests.harness.volumes import volume_file
from tests.harness.volumes import write

P = stack_mod.PROJECT
GiB = 1024 ** 3
POSIX = 'cinder.backup.drivers.posix.PosixBackupDriver'
# data at a few offsets of a 1 GiB volume: the start, across a block
# boundary, the middle, the last bytes
MARKS = ((0, b'first block'), (32760, b'across a block boundary'),
         (GiB // 2, b'middle' * 1000), (GiB - 7, b'the end'))


CHUNK = 1 << 16


def image(stack, vid):
    """Volume ``vid``'s bytes as {offset: bytes} of its 64 KiB chunks that
    are not all zeros, read where the file backend's sparse file holds
    data (its holes read as zeros): two volumes of one size hold the
    same bytes exactly when their images are equal."""
    found = {}
    path = volume_file(stack, vid)
    with open(path, 'rb') as f:
        for start, end in data_extents(path):
            offset = start - start % CHUNK
            while offset < end:
                f.seek(offset)
                data = f.read(CHUNK)
                if data.strip(b'\0'):
                    found[offset] = data
                offset += CHUNK
    return found


def same_bytes(stack, vid, expected):
    """Volume ``vid`` holds exactly the bytes of image ``expected``."""
    got = image(stack, vid)
    assert sorted(got) == sorted(expected)
    assert got == expected
    return True


def marked(api, stack, name):
    volume = api.create_volume(size=1, name=name)
    for offset, data in MARKS:
        write(stack, volume['id'], offset, data)
    return volume


def quota_usage(stack):
    """{resource: [in_use, reserved, limit, allocated]} of quota-usage."""
    return {row[0]: row[1:4]
            for row in table(cinder(stack, 'quota-usage', P))[1:]}


def test_cinder_cli_backups(stack):
    api = stack.client()
    src = marked(api, stack, 'cl-src')
    at_full = image(stack, src['id'])
    quotas = props(cinder(stack, 'quota-show', P))
    assert (quotas['backups'], quotas['backup_gigabytes']) == ('10', '1000')
    assert quota_usage(stack)['backups'] == ['0', '0', '10']

    # a full backup, named and described, into a container of its own
    created = props(cinder(stack, 'backup-create', '--name', 'cl-full',
                           '--description', 'the first',
                           '--container', 'cl-box', 'cl-src'))
    assert set(created) == {'id', 'name', 'volume_id', 'metadata'}
    assert (created['name'], created['volume_id']) == ('cl-full', src['id'])
    full = created['id']
    bk.wait_backup(api, full)
    shown = props(cinder(stack, 'backup-show', 'cl-full'))
    assert (shown['id'], shown['status'], shown['size'], shown['container'],
            shown['description'], shown['is_incremental'],
            shown['volume_id'], shown['snapshot_id']) == (
        full, 'available', '1', 'cl-box', 'the first', 'False', src['id'],
        'None')
    assert int(shown['object_count']) >= 1
    assert shown['os-backup-project-attr:project_id'] == P
    assert shown['user_id'] == 'admin'
    assert os.listdir(os.path.join(stack.state_path, 'backup', 'cl-box'))

    # incremental, after a change
    write(stack, src['id'], 100, b'second point')
    at_inc = image(stack, src['id'])
    inc = props(cinder(stack, 'backup-create', '--incremental', '--name',
                       'cl-inc', '--container', 'cl-box', 'cl-src'))['id']
    bk.wait_backup(api, inc)
    assert props(cinder(stack, 'backup-show', inc))['is_incremental'] == \
        'True'
    assert props(cinder(stack, 'backup-show', full))[
        'has_dependent_backups'] == 'True'

    # of a snapshot: the snapshot's data, not the volume's since
    snap = props(cinder(stack, 'snapshot-create', '--name', 'cl-snap',
                        'cl-src'))['id']
    api.wait_volume(src['id'], 'available')
    wait_snapshot(api, snap)
    write(stack, src['id'], 0, b'after the snapshot')
    of_snap = props(cinder(stack, 'backup-create', '--snapshot-id', snap,
                           '--name', 'cl-of-snap', 'cl-src'))['id']
    bk.wait_backup(api, of_snap)
    assert props(cinder(stack, 'backup-show', of_snap))['snapshot_id'] == \
        snap

    # in use: refused without --force, taken with it
    attach_mod.attach(api, src['id'], attach_mod.connector())
    err = cinder_fails(stack, 'backup-create', 'cl-src')
    assert 'Backing up an in-use volume must use the force flag' in err
    assert 'HTTP 400' in err
    forced = props(cinder(stack, 'backup-create', '--force', '--name',
                          'cl-forced', 'cl-src'))['id']
    bk.wait_backup(api, forced)
    api.wait_volume(src['id'], 'in-use')

    # the list: columns, filters, sort, limit, count
    listed = table(cinder(stack, 'backup-list'))
    assert listed[0] == ['ID', 'Volume ID', 'Status', 'Name', 'Size',
                         'Object Count', 'Container', 'User ID']
    rows = {r[3]: r for r in listed[1:]}
    assert sorted(rows) == ['cl-forced', 'cl-full', 'cl-inc', 'cl-of-snap']
    assert rows['cl-full'][:3] == [full, src['id'], 'available']
    assert rows['cl-full'][4] == '1' and rows['cl-full'][6] == 'cl-box'
    assert rows['cl-full'][7] == 'admin'
    # no --container: the POSIX driver's own, from the volume id
    vid = src['id']
    assert rows['cl-forced'][6] == '%s/%s/%s' % (vid[:2], vid[2:4], vid)
    by_name = table(cinder(stack, 'backup-list', '--name', 'cl-inc'))
    assert [r[0] for r in by_name[1:]] == [inc]
    by_status = table(cinder(stack, 'backup-list', '--status', 'error'))
    assert by_status[1:] == []
    by_volume = table(cinder(stack, 'backup-list', '--volume-id',
                             src['id']))
    assert len(by_volume) == 5
    assert table(cinder(stack, 'backup-list', '--volume-id',
                        str(uuid.uuid4())))[1:] == []
    filtered = table(cinder(stack, 'backup-list', '--filters',
                            'name=cl-of-snap'))
    assert [r[0] for r in filtered[1:]] == [of_snap]
    by_container = table(cinder(stack, 'backup-list', '--filters',
                                'container=cl-box'))
    assert sorted(r[0] for r in by_container[1:]) == sorted([full, inc])
    in_order = table(cinder(stack, 'backup-list', '--sort', 'name:desc'))
    assert [r[3] for r in in_order[1:]] == [
        'cl-of-snap', 'cl-inc', 'cl-full', 'cl-forced']
    out = cinder(stack, 'backup-list', '--sort', 'name:asc', '--limit', '2',
                 '--with-count')
    assert [r[3] for r in table(out)[1:]] == ['cl-forced', 'cl-full']
    assert 'Backup in total: 4' in out
    after_first = table(cinder(stack, 'backup-list', '--sort', 'name:asc',
                               '--marker', forced))
    assert [r[3] for r in after_first[1:]] == [
        'cl-full', 'cl-inc', 'cl-of-snap']

    # update
    out = cinder(stack, 'backup-update', '--name', 'cl-full2',
                 '--description', 'renamed', '--metadata', 'tier=gold',
                 'cl-full')
    assert "Request to update backup 'cl-full' has been accepted." in out
    shown = props(cinder(stack, 'backup-show', 'cl-full2'))
    assert (shown['id'], shown['description'], shown['metadata']) == (
        full, 'renamed', "{'tier': 'gold'}")

    # quotas count them
    used = quota_usage(stack)
    assert used['backups'] == ['4', '0', '10']
    assert used['backup_gigabytes'] == ['4', '0', '1000']

    # restore into a new volume, default name and --name
    answer = props(cinder(stack, 'backup-restore', 'cl-full2'))
    assert answer['backup_id'] == full
    assert answer['volume_name'] == 'restore_backup_%s' % full
    bk.wait_backup(api, full)
    api.wait_volume(answer['volume_id'], 'available')
    assert same_bytes(stack, answer['volume_id'], at_full)
    answer = props(cinder(stack, 'backup-restore', '--name', 'cl-at-inc',
                          inc))
    assert (answer['backup_id'], answer['volume_name']) == (inc, 'cl-at-inc')
    bk.wait_backup(api, inc)
    restored = api.wait_volume(answer['volume_id'], 'available')
    assert restored['name'] == 'cl-at-inc'
    assert same_bytes(stack, restored['id'], at_inc)
    # the snapshot's point in time
    answer = props(cinder(stack, 'backup-restore', of_snap))
    bk.wait_backup(api, of_snap)
    api.wait_volume(answer['volume_id'], 'available')
    assert same_bytes(stack, answer['volume_id'], at_inc)

    # into an existing volume with --volume (which --name gives way to)
    target = api.create_volume(size=1, name='cl-target')
    write(stack, target['id'], 0, b'x' * (1 << 20))
    out = cinder(stack, 'backup-restore', '--volume', 'cl-target',
                 '--name', 'ignored', 'cl-full2')
    assert 'The volume option takes priority.' in out
    answer = props(out)
    assert answer == {'backup_id': full, 'volume_id': target['id'],
                      'volume_name': 'cl-target'}
    bk.wait_backup(api, full)
    api.wait_volume(target['id'], 'available')
    assert same_bytes(stack, target['id'], at_full)
    # an in-use target is refused
    err = cinder_fails(stack, 'backup-restore', '--volume', 'cl-src',
                       'cl-full2')
    assert 'Volume to be restored to must be available' in err

    # export and import: the record names the driver and restores
    record = props(cinder(stack, 'backup-export', full))
    assert set(record) == {'backup_service', 'backup_url'}
    assert record['backup_service'] == POSIX
    err = cinder_fails(stack, 'backup-import', record['backup_service'],
                       record['backup_url'])
    assert 'already exists' in err
    decoded = json.loads(base64.b64decode(record['backup_url']))
    assert (decoded['id'], decoded['container']) == (full, 'cl-box')
    decoded['id'] = new_id = str(uuid.uuid4())
    imported = props(cinder(
        stack, 'backup-import', record['backup_service'],
        base64.b64encode(json.dumps(decoded).encode()).decode()))
    assert imported == {'id': new_id, 'name': 'cl-full2'}
    bk.wait_backup(api, new_id)
    shown = props(cinder(stack, 'backup-show', new_id))
    assert (shown['status'], shown['size'], shown['container']) == (
        'available', '1', 'cl-box')
    answer = props(cinder(stack, 'backup-restore', new_id))
    bk.wait_backup(api, new_id)
    api.wait_volume(answer['volume_id'], 'available')
    assert same_bytes(stack, answer['volume_id'], at_full)
    assert quota_usage(stack)['backups'][0] == '5'

    # reset-state: error, and back
    out = cinder(stack, 'backup-reset-state', '--state', 'error', forced)
    assert "Request to update backup '%s' has been accepted." % forced in out
    assert props(cinder(stack, 'backup-show', forced))['status'] == 'error'
    err = cinder_fails(stack, 'backup-restore', forced)
    assert 'Backup status must be available' in err
    err = cinder_fails(stack, 'backup-reset-state', '--state', 'creating',
                       forced)
    assert "valid statuses are: ['available', 'error']" in err
    cinder(stack, 'backup-reset-state', forced)
    assert props(cinder(stack, 'backup-show', forced))['status'] == \
        'available'

    # delete: a parent waits for its incremental; --force takes a backup
    # its service left creating
    result = cinder_fails(stack, 'backup-delete', full)
    assert 'Unable to delete any of the specified backups.' in result
    out = cinder(stack, 'backup-delete', inc)
    assert 'Request to delete backup %s has been accepted.' % inc in out
    bk.wait_gone(api, inc)
    with db_api.writer() as session:
        db_backups.update(session, forced, {'status': 'creating'})
    err = cinder_fails(stack, 'backup-delete', forced)
    assert 'Unable to delete any of the specified backups.' in err
    assert props(cinder(stack, 'backup-show', forced))['status'] == \
        'creating'
    out = cinder(stack, 'backup-delete', '--force', forced)
    assert 'Request to delete backup %s has been accepted.' % forced in out
    bk.wait_gone(api, forced)
    # the imported backup took the name too: the name is ambiguous
    out = cinder(stack, 'backup-delete', 'cl-full2', of_snap, new_id)
    assert 'Delete for backup cl-full2 failed' in out
    assert 'Request to delete backup %s has been accepted.' % new_id in out
    bk.wait_gone(api, new_id)
    cinder(stack, 'backup-delete', 'cl-full2')
    for bid in (full, of_snap, new_id):
        bk.wait_gone(api, bid)
    assert table(cinder(stack, 'backup-list'))[1:] == []
    used = quota_usage(stack)
    assert used['backups'] == ['0', '0', '10']
    assert used['backup_gigabytes'] == ['0', '0', '1000']
    box = os.path.join(stack.state_path, 'backup', 'cl-box')
    assert not os.path.exists(box) or os.listdir(box) == []


def as_json(stack, *args):
    return json.loads(openstack(stack, *args, '-f', 'json'))


def test_openstack_cli_backups(stack):
    api = stack.client()
    src = marked(api, stack, 'osc-src')
    at_full = image(stack, src['id'])
    created = as_json(stack, 'volume', 'backup', 'create', '--name',
                      'osc-full', '--description', 'nightly', '--container',
                      'osc-box', '--property', 'k=v', 'osc-src')
    assert created['name'] == 'osc-full'
    assert created['volume_id'] == src['id']
    full = created['id']
    bk.wait_backup(api, full)
    shown = as_json(stack, 'volume', 'backup', 'show', 'osc-full')
    assert {k: shown[k] for k in (
        'id', 'status', 'size', 'container', 'description', 'is_incremental',
        'volume_id', 'metadata', 'project_id', 'user_id', 'snapshot_id',
        'fail_reason')} == {
            'id': full, 'status': 'available', 'size': 1,
            'container': 'osc-box', 'description': 'nightly',
            'is_incremental': False, 'volume_id': src['id'],
            'metadata': {'k': 'v'}, 'project_id': P, 'user_id': 'admin',
            'snapshot_id': None, 'fail_reason': None}
    assert shown['object_count'] >= 1 and shown['data_timestamp']

    write(stack, src['id'], 100, b'second point')
    at_inc = image(stack, src['id'])
    inc = as_json(stack, 'volume', 'backup', 'create', '--incremental',
                  '--name', 'osc-inc', '--container', 'osc-box',
                  'osc-src')['id']
    bk.wait_backup(api, inc)
    assert as_json(stack, 'volume', 'backup', 'show', inc)[
        'is_incremental'] is True
    assert as_json(stack, 'volume', 'backup', 'show', full)[
        'has_dependent_backups'] is True

    snap = as_json(stack, 'volume', 'snapshot', 'create', '--volume',
                   'osc-src', 'osc-snap')['id']
    wait_snapshot(api, snap)
    api.wait_volume(src['id'], 'available')
    write(stack, src['id'], 0, b'after the snapshot')
    of_snap = as_json(stack, 'volume', 'backup', 'create', '--snapshot',
                      'osc-snap', '--name', 'osc-of-snap', 'osc-src')['id']
    bk.wait_backup(api, of_snap)
    assert as_json(stack, 'volume', 'backup', 'show', of_snap)[
        'snapshot_id'] == snap

    attach_mod.attach(api, src['id'], attach_mod.connector())
    result = run_openstack(stack, 'volume', 'backup', 'create', 'osc-src')
    assert result.returncode == 1
    assert 'Backing up an in-use volume must use the force flag' in \
        result.stderr
    forced = as_json(stack, 'volume', 'backup', 'create', '--force',
                     '--name', 'osc-forced', 'osc-src')['id']
    bk.wait_backup(api, forced)

    # list, --long, filters
    listed = table(openstack(stack, 'volume', 'backup', 'list'))
    assert listed[0] == ['ID', 'Name', 'Description', 'Status', 'Size',
                         'Incremental', 'Created At']
    rows = {r[1]: r for r in listed[1:]}
    assert sorted(rows) == ['osc-forced', 'osc-full', 'osc-inc',
                            'osc-of-snap']
    assert rows['osc-full'][:6] == [full, 'osc-full', 'nightly',
                                    'available', '1', 'False']
    assert rows['osc-inc'][5] == 'True'
    long = as_json(stack, 'volume', 'backup', 'list', '--long')
    by_id = {r['ID']: r for r in long}
    assert (by_id[full]['Volume'], by_id[full]['Container'],
            by_id[full]['Availability Zone']) == (src['id'], 'osc-box',
                                                  'nova')
    # in a table the volume column shows the volume's name
    long = table(openstack(stack, 'volume', 'backup', 'list', '--long'))
    assert long[0][7:] == ['Availability Zone', 'Volume', 'Container']
    assert {r[0]: r[8] for r in long[1:]}[full] == 'osc-src'
    assert [r['ID'] for r in as_json(stack, 'volume', 'backup', 'list',
                                     '--name', 'osc-inc')] == [inc]
    assert as_json(stack, 'volume', 'backup', 'list', '--status',
                   'error') == []
    assert len(as_json(stack, 'volume', 'backup', 'list', '--volume',
                       'osc-src')) == 4
    # --limit is the page size: the SDK follows the next links
    assert sorted(r['ID'] for r in as_json(
        stack, 'volume', 'backup', 'list', '--limit', '1')) == sorted(
            [full, inc, of_snap, forced])
    assert len(as_json(stack, 'volume', 'backup', 'list', '--limit', '1',
                       '--max-items', '2')) == 2

    # set and unset
    openstack(stack, 'volume', 'backup', 'set', '--name', 'osc-full2',
              '--description', 'renamed', '--property', 'tier=gold',
              'osc-full')
    shown = as_json(stack, 'volume', 'backup', 'show', 'osc-full2')
    assert (shown['id'], shown['description'], shown['metadata']) == (
        full, 'renamed', {'k': 'v', 'tier': 'gold'})
    # --no-property with --property replaces them all
    openstack(stack, 'volume', 'backup', 'set', '--no-property',
              '--property', 'tier=silver', 'osc-full2')
    assert as_json(stack, 'volume', 'backup', 'show', full)['metadata'] == {
        'tier': 'silver'}
    openstack(stack, 'volume', 'backup', 'set', '--state', 'error', forced)
    assert as_json(stack, 'volume', 'backup', 'show', forced)['status'] == \
        'error'
    openstack(stack, 'volume', 'backup', 'set', '--state', 'available',
              forced)
    assert as_json(stack, 'volume', 'backup', 'show', forced)['status'] == \
        'available'

    # restore: a new volume by name, an existing one with --force
    answer = as_json(stack, 'volume', 'backup', 'restore', 'osc-full2',
                     'osc-new')
    assert (answer['id'], answer['volume_name']) == (full, 'osc-new')
    bk.wait_backup(api, full)
    new = api.wait_volume(answer['volume_id'], 'available')
    assert new['name'] == 'osc-new'
    assert same_bytes(stack, new['id'], at_full)
    # (the SDK wants a name or a volume)
    answer = as_json(stack, 'volume', 'backup', 'restore', inc, 'osc-inc')
    bk.wait_backup(api, inc)
    api.wait_volume(answer['volume_id'], 'available')
    assert same_bytes(stack, answer['volume_id'], at_inc)
    target = api.create_volume(size=1, name='osc-target')
    write(stack, target['id'], 0, b'x' * (1 << 20))
    result = run_openstack(stack, 'volume', 'backup', 'restore', inc,
                           'osc-target')
    assert result.returncode == 1
    assert "Volume 'osc-target' already exists" in result.stderr
    answer = as_json(stack, 'volume', 'backup', 'restore', '--force', inc,
                     'osc-target')
    assert answer == {'id': inc, 'volume_id': target['id'],
                      'volume_name': 'osc-target'}
    bk.wait_backup(api, inc)
    api.wait_volume(target['id'], 'available')
    assert same_bytes(stack, target['id'], at_inc)

    # record export and import
    shown = table(openstack(stack, 'volume', 'backup', 'record', 'export',
                            'osc-full2'))
    assert [r[0] for r in shown[1:]] == ['Backup Service', 'Metadata']
    record = as_json(stack, 'volume', 'backup', 'record', 'export', full)
    assert set(record) == {'backup_service', 'backup_url'}
    assert record['backup_service'] == POSIX
    decoded = json.loads(base64.b64decode(record['backup_url']))
    decoded['id'] = new_id = str(uuid.uuid4())
    # (openstacksdk's import_record posts to /backups/export_record, a
    # route Cinder does not have: the import is cinderclient's)
    imported = props(cinder(stack, 'backup-import', record['backup_service'],
                            base64.b64encode(json.dumps(decoded).encode()
                                             ).decode()))
    assert imported == {'id': new_id, 'name': 'osc-full2'}
    bk.wait_backup(api, new_id)
    answer = as_json(stack, 'volume', 'backup', 'restore', new_id,
                     'osc-imported')
    bk.wait_backup(api, new_id)
    api.wait_volume(answer['volume_id'], 'available')
    assert same_bytes(stack, answer['volume_id'], at_full)
    assert usage(api)['backups'] == 5

    # delete: the parent waits for its child; --force; several at once
    result = run_openstack(stack, 'volume', 'backup', 'delete', full)
    assert result.returncode == 1
    assert 'Incremental backups exist for this backup' in result.stderr
    assert '1 of 1 backups failed to delete.' in result.stderr
    with db_api.writer() as session:
        db_backups.update(session, forced, {'status': 'creating'})
    result = run_openstack(stack, 'volume', 'backup', 'delete', forced)
    assert result.returncode == 1
    openstack(stack, 'volume', 'backup', 'delete', '--force', forced)
    bk.wait_gone(api, forced)
    openstack(stack, 'volume', 'backup', 'delete', inc, of_snap, new_id)
    for bid in (inc, of_snap, new_id):
        bk.wait_gone(api, bid)
    openstack(stack, 'volume', 'backup', 'delete', 'osc-full2')
    bk.wait_gone(api, full)
    assert as_json(stack, 'volume', 'backup', 'list') == []
    assert usage(api)['backups'] == 0
    assert read(stack, src['id'], GiB - 7, 7) == b'the end'
