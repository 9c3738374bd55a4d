"""Backups as Cinder serves them, through the embedded stack's real
backup service and POSIX store: /backups (create plain, incremental,
forced of an in-use volume, of a snapshot; list/detail with filters,
sort, pages and with_count; show per microversion; update; delete),
restore into a new or an existing volume (byte for byte, with the
source's metadata), export_record/import_record, os-reset_status,
os-force_delete, POST /volumes with backup_id (3.47), the progress
route, quotas, user messages and notifications, and every refusal
changing nothing."""
import base64
import json
import os
import uuid

import pytest

from cinder_lite.volume import quota_api
from tests.harness import attach as attach_mod
from tests.harness import notifications
from tests.harness import backups as bk
from tests.harness.snapshots import snapshot
from tests.harness.snapshots import usage
from tests.harness.snapshots import wait_snapshot
from tests.harness import stack as stack_mod
from tests.harness.volumes import read
from tests.harness.volumes import volume_file
from tests.harness.volumes import write

P = stack_mod.PROJECT
OTHER = stack_mod.OTHER_PROJECT
GiB = 1024 ** 3
DETAIL_KEYS = {'id', 'status', 'size', 'object_count', 'availability_zone',
               'container', 'created_at', 'updated_at', 'name',
               'description', 'fail_reason', 'volume_id', 'links',
               'is_incremental', 'has_dependent_backups', 'snapshot_id',
               'data_timestamp'}
# data at a few offsets of a 1 GiB volume: the start, across the first
# 32 KiB block boundary, the middle, the last bytes
MARKS = ((0, b'first block'), (32760, b'across a block boundary'),
         (GiB // 2, b'middle' * 1000), (GiB - 7, b'the end'))


def exact():
    assert quota_api.audit() == []


def same(stack, a, b):
    """Volumes ``a`` and ``b`` hold the same bytes (compared where either
    has data: sparse files of 1 GiB are mostly holes)."""
    with open(volume_file(stack, a), 'rb') as fa, \
            open(volume_file(stack, b), 'rb') as fb:
        assert os.fstat(fa.fileno()).st_size <= \
            os.fstat(fb.fileno()).st_size
        while True:
            x, y = fa.read(1 << 22), fb.read(1 << 22)
            assert x == y[:len(x)]
            if not x:
                return True


@pytest.fixture
def vol(api, stack):
    volume = api.create_volume(size=1, metadata={'owner': 'tests'})
    for offset, data in MARKS:
        write(stack, volume['id'], offset, data)
    return volume


def test_create_show_list_update_delete(api, stack, vol):
    before = usage(api)
    created = bk.create(api, vol['id'], name=' nightly ', description='d',
                        metadata={'k': 'v'})
    # the summary (with metadata from 3.43), as Cinder answers a create
    assert set(created) == {'id', 'name', 'links', 'metadata'}
    assert created['name'] == 'nightly'
    assert created['links'][0]['href'].endswith('/v3/%s/backups/%s' % (
        P, created['id']))
    shown = bk.wait_backup(api, created['id'])
    assert set(shown) == DETAIL_KEYS | {
        'os-backup-project-attr:project_id', 'metadata', 'user_id'}
    assert (shown['size'], shown['volume_id'], shown['is_incremental'],
            shown['has_dependent_backups'], shown['metadata']) == (
        1, vol['id'], False, False, {'k': 'v'})
    assert shown['object_count'] >= 1 and shown['data_timestamp']
    # the volume is what it was
    assert attach_mod.volume(api, vol['id'])['status'] == 'available'
    # at 3.0: Cinder's base keys only
    old = stack.client(version=None)
    assert set(bk.show(old, created['id'])) == DETAIL_KEYS
    # a member of the project sees neither project nor user
    member = stack.client(user='u1', roles='member')
    assert set(bk.show(member, created['id'])) == DETAIL_KEYS | {'metadata'}
    after = usage(api)
    assert after['backups'] == before['backups'] + 1
    assert after['backup_gigabytes'] == before['backup_gigabytes'] + 1
    exact()
    # list and detail, filters, with_count
    listed = api.get('/backups').json()
    assert listed == {'backups': [{'id': created['id'], 'name': 'nightly',
                                   'links': created['links']}]}
    detail = api.get('/backups/detail?with_count=true&volume_id=%s'
                     % vol['id']).json()
    assert detail['count'] == 1 and detail['backups'][0]['id'] == \
        created['id']
    assert api.get('/backups/detail?name=other').json()['backups'] == []
    assert api.get('/backups?status=available').json()['backups'][0][
        'id'] == created['id']
    # update: 3.9 and later
    resp = old.put('/backups/%s' % created['id'],
                   json={'backup': {'name': 'x'}})
    assert resp.status_code == 404, resp.text
    resp = api.put('/backups/%s' % created['id'], json={'backup': {
        'name': 'weekly', 'metadata': {'a': 'b'}}})
    assert resp.status_code == 200, resp.text
    assert resp.json()['backup']['metadata'] == {'a': 'b'}
    assert bk.show(api, created['id'])['name'] == 'weekly'
    # delete
    assert api.delete('/backups/%s' % created['id']).status_code == 202
    bk.wait_gone(api, created['id'])
    assert usage(api)['backups'] == before['backups']
    container = os.path.join(stack.state_path, 'backup', shown['container'])
    assert not os.path.exists(container) or os.listdir(container) == []
    exact()


def test_restore_into_new_and_existing_volumes(api, stack, vol):
    backup = bk.backup(api, vol['id'])
    new = bk.restored(api, backup['id'])
    assert new['name'] == 'restore_backup_%s' % backup['id']
    assert new['metadata'] == {'owner': 'tests',
                               'src_backup_id': backup['id']}
    assert same(stack, vol['id'], new['id'])
    # into an existing (larger) volume full of other data: it becomes the
    # backup exactly, the bytes past the backup read as zeros
    # (restore_discard_excess_bytes, on by default as in Cinder)
    target = api.create_volume(size=2)
    write(stack, target['id'], 0, b'x' * (1 << 20))
    write(stack, target['id'], GiB + 5, b'beyond')
    answer = bk.restore(api, backup['id'], volume_id=target['id'])
    assert answer == {'backup_id': backup['id'], 'volume_id': target['id'],
                      'volume_name': ''}
    bk.wait_backup(api, backup['id'])
    api.wait_volume(target['id'], 'available')
    assert same(stack, vol['id'], target['id'])
    assert read(stack, target['id'], GiB + 5, 6) == bytes(6)
    # named
    named = bk.restored(api, backup['id'], name='copy')
    assert named['name'] == 'copy'


def test_incremental_chain_restores_each_point(api, stack, vol):
    # data that does not compress, so that the full backup holds it
    write(stack, vol['id'], 4 << 20, os.urandom(8 << 20))
    points = [bk.backup(api, vol['id'])]
    copies = []
    for n, (offset, data) in enumerate(((100, b'one'), (GiB // 3, b'two'))):
        write(stack, vol['id'], offset, data)
        copies.append(read(stack, vol['id'], 0, 1 << 20))
        points.append(bk.backup(api, vol['id'], incremental=True))
        assert points[-1]['is_incremental']
    assert bk.show(api, points[0]['id'])['has_dependent_backups']
    # each point in time comes back
    last = bk.restored(api, points[-1]['id'])
    assert same(stack, vol['id'], last['id'])
    middle = bk.restored(api, points[1]['id'])
    assert read(stack, middle['id'], 100, 3) == b'one'
    assert read(stack, middle['id'], GiB // 3, 3) == b'\0\0\0'
    first = bk.restored(api, points[0]['id'])
    assert read(stack, first['id'], 100, 3) == b'\0\0\0'
    # the incremental stores about what changed: far less than the full
    full, inc = (bk.show(api, p['id']) for p in points[:2])
    root = os.path.join(stack.state_path, 'backup', full['container'])

    def stored(bid):
        return sum(os.path.getsize(os.path.join(root, name))
                   for name in os.listdir(root)
                   if name.startswith('backup_%s' % bid))
    assert stored(inc['id']) < stored(full['id']) / 10
    # a parent is never deleted while a child lives
    resp = api.delete('/backups/%s' % points[1]['id'])
    assert resp.status_code == 400
    assert resp.json()['badRequest']['message'] == (
        'Invalid backup: Incremental backups exist for this backup.')
    for point in reversed(points):
        assert api.delete('/backups/%s' % point['id']).status_code == 202
        bk.wait_gone(api, point['id'])
    exact()


def test_incremental_needs_a_parent(api, vol):
    before = usage(api)
    resp = api.post('/backups', json={'backup': {
        'volume_id': vol['id'], 'incremental': True}})
    assert resp.status_code == 400
    assert resp.json()['badRequest']['message'] == (
        'Invalid backup: No backups available to do an incremental '
        'backup.')
    assert api.get('/backups').json()['backups'] == []
    assert attach_mod.volume(api, vol['id'])['status'] == 'available'
    assert usage(api) == before


def test_in_use_volume_needs_force_and_keeps_its_hosts(api, stack, vol):
    att = attach_mod.attach(api, vol['id'], attach_mod.connector())
    assert attach_mod.volume(api, vol['id'])['status'] == 'in-use'
    resp = api.post('/backups', json={'backup': {'volume_id': vol['id']}})
    assert resp.status_code == 400
    assert resp.json()['badRequest']['message'] == (
        'Invalid volume: Backing up an in-use volume must use the force '
        'flag.')
    before = read(stack, vol['id'], 0, 1 << 20)
    backup = bk.backup(api, vol['id'], force=True)
    # the host kept its attachment; its writes after the backup are not in
    # it (the temporary snapshot is gone)
    assert attach_mod.volume(api, vol['id'])['status'] == 'in-use'
    write(stack, vol['id'], 0, b'after the backup')
    assert not os.path.exists(volume_file(stack, backup['id'], 'snapshot'))
    new = bk.restored(api, backup['id'])
    assert read(stack, new['id'], 0, 1 << 20) == before
    assert api.get('/attachments/%s' % att['id']).json()['attachment'][
        'status'] == 'attached'


def test_backup_of_a_snapshot(api, stack, vol):
    snap = snapshot(api, vol['id'])
    write(stack, vol['id'], 0, b'after the snapshot')
    backup = bk.backup(api, vol['id'], snapshot_id=snap['id'])
    assert backup['snapshot_id'] == snap['id']
    wait_snapshot(api, snap['id'])
    new = bk.restored(api, backup['id'])
    assert read(stack, new['id'], 0, 11) == b'first block'
    # a snapshot of another volume is refused
    other = api.create_volume()
    resp = api.post('/backups', json={'backup': {
        'volume_id': other['id'], 'snapshot_id': snap['id']}})
    assert resp.status_code == 400
    assert 'does not match with snapshot.volume_id' in resp.text


def test_restore_refusals_change_nothing(api, stack, vol):
    # a member of the project: an admin may restore into any project's
    # volume, as in Cinder
    member = stack.client(user='u1', roles='member')
    backup = bk.backup(api, vol['id'])
    small = api.create_volume(size=1)
    busy = api.create_volume(size=1)
    attach_mod.attach(api, busy['id'], attach_mod.connector())
    other = stack.client(project=OTHER, user='o1', roles='member')
    foreign = other.create_volume(size=1)
    before = usage(api)
    for body, code, words in (
            ({'volume_id': busy['id']}, 400,
             'Volume to be restored to must be available'),
            ({'volume_id': foreign['id']}, 404, 'could not be found'),
            ({'volume_id': str(uuid.uuid4())}, 404, 'could not be found'),
            ({'volume_id': 'not-a-uuid'}, 400, 'volume_id'),
            ({'bogus': 1}, 400, 'Additional properties')):
        resp = member.post('/backups/%s/restore' % backup['id'],
                           json={'restore': body})
        assert resp.status_code == code, (body, resp.text)
        assert words in resp.text
    grown = api.create_volume(size=2)
    big = bk.backup(api, grown['id'])
    resp = api.post('/backups/%s/restore' % big['id'],
                    json={'restore': {'volume_id': small['id']}})
    assert resp.status_code == 400
    assert 'volume size 1 is too small to restore backup of size 2' in \
        resp.text
    for v in (small, busy, foreign):
        assert (other if v is foreign else api).get(
            '/volumes/%s' % v['id']).json()['volume']['status'] in (
                'available', 'in-use')
    assert bk.show(api, backup['id'])['status'] == 'available'
    after = usage(api)
    # (``grown`` and its backup are new; nothing else)
    assert after['volumes'] == before['volumes'] + 1
    assert after['backups'] == before['backups'] + 1
    # another project cannot see, restore or delete it
    assert other.get('/backups/%s' % backup['id']).status_code == 404
    assert other.post('/backups/%s/restore' % backup['id'], json={
        'restore': {}}).status_code == 404
    assert other.delete('/backups/%s' % backup['id']).status_code == 404
    exact()


def test_create_refusals_change_nothing(api, stack, vol):
    before = usage(api)
    attach_mod.attach(api, vol['id'], attach_mod.connector(),
                      complete=False)
    for body, code, words in (
            ({'volume_id': str(uuid.uuid4())}, 404, 'could not be found'),
            ({'volume_id': vol['id'], 'bogus': 1}, 400,
             'Additional properties'),
            ({'volume_id': vol['id'], 'force': 'perhaps'}, 400, 'force'),
            ({'volume_id': vol['id'], 'name': 'x' * 256}, 400, 'name'),
            ({'volume_id': vol['id'], 'snapshot_id': str(uuid.uuid4())},
             404, 'could not be found'),
            ({'volume_id': vol['id'], 'force': True,
              'availability_zone': 'elsewhere'}, 400, 'availability zone')):
        resp = api.post('/backups', json={'backup': body})
        assert resp.status_code == code, (body, resp.text)
        assert words in resp.text, resp.text
    # before 3.43 metadata is an unknown key
    resp = stack.client(version='3.42').post('/backups', json={'backup': {
        'volume_id': vol['id'], 'metadata': {}}})
    assert resp.status_code == 400
    assert api.get('/backups').json()['backups'] == []
    assert usage(api) == before
    # over quota: 413, nothing recorded
    api.put('/os-quota-sets/%s' % P, json={'quota_set': {'backups': 0}})
    resp = api.post('/backups', json={'backup': {'volume_id': vol['id'],
                                                 'force': True}})
    assert resp.status_code == 413, resp.text
    assert api.get('/backups').json()['backups'] == []
    exact()


def test_delete_refusals_and_admin_actions(api, stack, vol):
    backup = bk.backup(api, vol['id'])
    member = stack.client(user='u1', roles='member')
    reader = stack.client(user='u2', roles='reader')
    path = '/backups/%s/action' % backup['id']
    # admin only
    for who in (member, reader):
        assert who.post(path, json={'os-reset_status': {
            'status': 'error'}}).status_code == 403
        assert who.post(path, json={'os-force_delete': {}}).status_code == \
            403
    assert reader.delete('/backups/%s' % backup['id']).status_code == 403
    resp = api.post(path, json={'os-reset_status': {'status': 'creating'}})
    assert resp.status_code == 400
    assert "valid statuses are: ['available', 'error']" in resp.text
    assert api.post(path, json={'os-bogus': {}}).status_code == 400
    assert api.post(path, json={'os-reset_status': {
        'status': 'ERROR'}}).status_code == 202
    assert bk.show(api, backup['id'])['status'] == 'error'
    # an error backup restores nothing and exports nothing
    assert api.post('/backups/%s/restore' % backup['id'], json={
        'restore': {}}).status_code == 400
    assert api.get('/backups/%s/export_record' % backup['id']
                   ).status_code == 400
    # and is deleted as usual (Cinder: available or error)
    assert member.delete('/backups/%s' % backup['id']).status_code == 202
    bk.wait_gone(api, backup['id'])
    # force delete from any status
    second = bk.backup(api, vol['id'])
    api.post('/backups/%s/action' % second['id'],
             json={'os-reset_status': {'status': 'available'}})
    assert api.post('/backups/%s/action' % second['id'],
                    json={'os-force_delete': None}).status_code == 202
    bk.wait_gone(api, second['id'])
    exact()


def test_export_and_import_record(api, stack, vol):
    backup = bk.backup(api, vol['id'], name='exported')
    member = stack.client(user='u1', roles='member')
    assert member.get('/backups/%s/export_record' % backup['id']
                      ).status_code == 403
    record = api.get('/backups/%s/export_record' % backup['id']).json()[
        'backup-record']
    assert set(record) == {'backup_service', 'backup_url'}
    assert record['backup_service'] == \
        'cinder.backup.drivers.posix.PosixBackupDriver'
    decoded = json.loads(base64.b64decode(record['backup_url']))
    assert decoded['id'] == backup['id'] and decoded['size'] == 1
    # the same id again is refused; bad records are refused
    for url, words in ((record['backup_url'], 'already exists'),
                       ('!!!', "Can't decode backup record."),
                       (base64.b64encode(b'[1]').decode(),
                        "Can't parse backup record."),
                       (base64.b64encode(json.dumps(
                           {'size': 1}).encode()).decode(), 'missing an id')):
        resp = api.post('/backups/import_record', json={'backup-record': {
            'backup_service': record['backup_service'],
            'backup_url': url}})
        assert resp.status_code == 400, resp.text
        assert words in resp.text
    resp = api.post('/backups/import_record', json={'backup-record': {
        'backup_service': 'cinder.backup.drivers.swift.SwiftBackupDriver',
        'backup_url': record['backup_url']}})
    assert resp.status_code == 400
    new_id = str(uuid.uuid4())
    decoded['id'] = new_id
    resp = api.post('/backups/import_record', json={'backup-record': {
        'backup_service': record['backup_service'],
        'backup_url': base64.b64encode(json.dumps(decoded).encode()
                                       ).decode()}})
    assert resp.status_code == 201, resp.text
    assert set(resp.json()['backup']) == {'id', 'name', 'links'}
    assert resp.json()['backup']['id'] == new_id
    imported = bk.wait_backup(api, new_id)
    assert imported['name'] == 'exported'
    new = bk.restored(api, new_id)
    assert same(stack, vol['id'], new['id'])
    # both delete on their own: the first leaves the store to the second
    # until it goes too
    for bid in (backup['id'], new_id):
        assert api.delete('/backups/%s' % bid).status_code == 202
        bk.wait_gone(api, bid)
    exact()


def test_import_of_missing_objects_ends_in_error(api, stack, vol):
    backup = bk.backup(api, vol['id'])
    record = api.get('/backups/%s/export_record' % backup['id']).json()[
        'backup-record']
    decoded = json.loads(base64.b64decode(record['backup_url']))
    decoded.update(id=str(uuid.uuid4()), container='nowhere')
    resp = api.post('/backups/import_record', json={'backup-record': {
        'backup_service': record['backup_service'],
        'backup_url': base64.b64encode(json.dumps(decoded).encode()
                                       ).decode()}})
    assert resp.status_code == 201, resp.text
    failed = bk.wait_backup(api, decoded['id'], 'error')
    assert failed['fail_reason'].startswith('import:')


def test_a_failed_backup_says_why_and_gives_the_volume_back(
        api, stack, vol):
    # a container whose path is taken by a file cannot be made
    os.makedirs(os.path.join(stack.state_path, 'backup'), exist_ok=True)
    with open(os.path.join(stack.state_path, 'backup', 'taken'), 'w'):
        pass
    created = bk.create(api, vol['id'], container='taken/inside')
    failed = bk.wait_backup(api, created['id'], 'error')
    assert failed['fail_reason']
    api.wait_volume(vol['id'], 'available')
    messages = stack.client(version='3.3').get('/messages').json()[
        'messages']
    mine = [m for m in messages if m['resource_uuid'] == created['id']]
    assert mine and mine[0]['resource_type'] == 'VOLUME_BACKUP'
    assert mine[0]['event_id'] == 'VOLUME_VOLUME_BACKUP_013_020'
    # the error backup is deleted as usual and gives its quota back
    assert api.delete('/backups/%s' % created['id']).status_code == 202
    bk.wait_gone(api, created['id'])
    exact()


def test_volume_from_backup_at_3_47(api, stack, vol):
    backup = bk.backup(api, vol['id'])
    resp = stack.client(version='3.46').post('/volumes', json={'volume': {
        'backup_id': backup['id']}})
    assert resp.status_code == 400, resp.text
    resp = stack.client(version='3.47').post('/volumes', json={'volume': {
        'backup_id': backup['id'], 'name': 'from-backup', 'size': 2}})
    assert resp.status_code == 202, resp.text
    made = resp.json()['volume']
    assert made['size'] == 2
    bk.wait_backup(api, backup['id'])
    restored = api.wait_volume(made['id'], 'available')
    assert restored['name'] == 'from-backup'
    assert same(stack, vol['id'], made['id'])
    # smaller than the backup, or from two sources: refused
    for body in ({'backup_id': backup['id'], 'size': 0},
                 {'backup_id': backup['id'], 'snapshot_id': str(
                     uuid.uuid4())}):
        assert api.post('/volumes', json={'volume': body}).status_code == \
            400


def test_a_backup_outlives_its_volume(api, stack, vol):
    backup = bk.backup(api, vol['id'])
    keep = read(stack, vol['id'], 0, 1 << 20)
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])
    new = bk.restored(api, backup['id'])
    assert read(stack, new['id'], 0, 1 << 20) == keep
    assert read(stack, new['id'], GiB - 7, 7) == b'the end'


def test_a_volume_being_backed_up_is_not_deleted(api, stack, vol):
    created = bk.create(api, vol['id'])
    resp = api.delete('/volumes/%s' % vol['id'])
    # refused while backing-up, or the backup was already done
    if resp.status_code == 400:
        assert 'backing-up' in resp.text or 'status' in resp.text
    bk.wait_backup(api, created['id'])


def test_progress(api, stack, vol):
    backup = bk.backup(api, vol['id'])
    resp = api.get('/backups/%s/progress' % backup['id'])
    assert resp.status_code == 200, resp.text
    assert resp.json()['progress'] == {
        'backup_id': backup['id'], 'status': 'available',
        'restore_volume_id': None, 'object_count': backup['object_count'],
        'bytes_done': GiB, 'bytes_total': GiB, 'percent': 100.0}
    assert stack.client(project=OTHER, user='o1', roles='member').get(
        '/backups/%s/progress' % backup['id']).status_code == 404
    # a restore starts from nothing, not from the backup's own bytes
    # (into a new volume and into an existing one)
    target = api.create_volume(size=1)
    for body in ({}, {'volume_id': target['id']}):
        answer = bk.restore(api, backup['id'], **body)
        now = api.get('/backups/%s/progress' % backup['id']).json()[
            'progress']
        assert now['status'] == 'available' or (
            now['bytes_done'] < now['bytes_total'] and
            now['restore_volume_id'] == answer['volume_id']), now
        bk.wait_backup(api, backup['id'])
        api.wait_volume(answer['volume_id'], 'available')


def test_backups_reconciled_after_a_stop(api, stack, vol):
    """A backup left creating (its service stopped mid-copy) becomes
    error with the reason, and its volume is given back."""
    created = bk.create(api, vol['id'])
    bk.wait_backup(api, created['id'])
    manager, = stack.backup_services[0].endpoints
    from cinder_lite.db import api as db_api
    from cinder_lite.db import backups as db_backups
    from cinder_lite.db import volumes as db_volumes
    with db_api.writer() as session:
        db_backups.update(session, created['id'], {'status': 'creating'})
        db_volumes.update(session, vol['id'], {'status': 'backing-up'})
    changes = manager.reconcile_now(max_age=0)
    assert changes == ['backup %s: creating -> error (interrupted: the '
                       'backup service testnode stopped while it made the '
                       'backup)' % created['id']]
    assert bk.show(api, created['id'])['status'] == 'error'
    assert attach_mod.volume(api, vol['id'])['status'] == 'available'
    assert manager.reconcile_now(max_age=0) == []


def test_notifications(tmp_path):
    with notifications.listening(tmp_path / 'state', 'cl_backups') as (
            s, found):
        api = s.client()
        vol = api.create_volume()
        backup = bk.backup(api, vol['id'], name='n')
        bk.restored(api, backup['id'])
        api.delete('/backups/%s' % backup['id'])
        bk.wait_gone(api, backup['id'])
        found.wait_for('backup.create.start', 'backup.create.end',
                       'backup.restore.start', 'backup.restore.end',
                       'backup.delete.start', 'backup.delete.end')
        payloads = found.payloads('backup.')
        assert payloads['backup.create.end']['status'] == 'available'
        assert payloads['backup.create.start']['display_name'] == 'n'
        assert payloads['backup.delete.end']['backup_id'] == backup['id']
        assert payloads['backup.create.end']['tenant_id'] == P
