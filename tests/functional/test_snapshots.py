"""Snapshots as Cinder serves them: /snapshots (create with force and
metadata, list/detail with filters, sort, pages, with_count and
all_tenants, show, update, delete), their metadata, os-reset_status,
os-force_delete and os-update_snapshot_status, DELETE of a volume with
snapshots (refused; cascade=true deletes them), quotas (exact, also
under concurrent creates), user messages on failure, Cinder's policy
defaults, and the file driver's copy next to the volume."""
import concurrent.futures
import os
import uuid

import pytest

from cinder_lite.volume import quota_api
from tests.harness import attach as attach_mod
from tests.harness import notifications
from tests.harness.snapshots import create
from tests.harness.snapshots import snapshot
from tests.harness.snapshots import usage
from tests.harness.snapshots import wait_gone
from tests.harness.snapshots import wait_snapshot
from tests.harness import stack as stack_mod
from tests.harness.volumes import volume_file

P = stack_mod.PROJECT
OTHER = stack_mod.OTHER_PROJECT
DETAIL_KEYS = {'id', 'created_at', 'updated_at', 'name', 'description',
               'volume_id', 'status', 'size', 'metadata'}
EXTENDED = {'os-extended-snapshot-attributes:project_id',
            'os-extended-snapshot-attributes:progress'}


def exact():
    assert quota_api.audit() == []


@pytest.fixture
def vol(api):
    return api.create_volume(size=2)


def test_crud(api, stack, vol):
    before = usage(api)
    snap = create(api, vol['id'], name=' daily ', description='d',
                  metadata={'k': 'v'})
    assert set(snap) == DETAIL_KEYS | {'group_snapshot_id', 'user_id',
                                       'consumes_quota'}
    assert snap['name'] == 'daily' and snap['size'] == 2
    assert snap['metadata'] == {'k': 'v'}
    assert snap['status'] == 'creating'
    shown = wait_snapshot(api, snap['id'])
    assert shown['os-extended-snapshot-attributes:project_id'] == P
    assert shown['os-extended-snapshot-attributes:progress'] == '100%'
    # the copy lives next to the volume, as large as the volume
    assert os.path.getsize(volume_file(stack, snap['id'], 'snapshot')) \
        == 2 * 1024 ** 3
    after = usage(api)
    assert after['snapshots'] == before['snapshots'] + 1
    assert after['gigabytes'] == before['gigabytes'] + 2
    exact()

    # at 3.0 the views are Cinder's v3.0 ones (Tempest's schemas)
    old = stack.client(version=None)
    listed = old.get('/snapshots').json()['snapshots']
    assert [s['id'] for s in listed] == [snap['id']]
    assert set(listed[0]) == DETAIL_KEYS
    detail = old.get('/snapshots/detail').json()['snapshots'][0]
    assert set(detail) == DETAIL_KEYS | EXTENDED

    resp = api.put('/snapshots/%s' % snap['id'],
                   json={'snapshot': {'name': 'weekly',
                                      'display_description': 'w'}})
    assert resp.status_code == 200, resp.text
    assert resp.json()['snapshot']['name'] == 'weekly'
    assert resp.json()['snapshot']['description'] == 'w'
    for body in ({'snapshot': {}}, {'snapshot': {'size': 3}}, {},
                 {'snapshot': {'name': 'x' * 256}}):
        resp = api.put('/snapshots/%s' % snap['id'], json=body)
        assert resp.status_code == 400, (body, resp.text)

    resp = api.delete('/snapshots/%s' % snap['id'])
    assert resp.status_code == 202, resp.text
    wait_gone(api, snap['id'])
    assert not os.path.exists(volume_file(stack, snap['id'], 'snapshot'))
    assert usage(api) == before
    exact()


@pytest.mark.parametrize('body', [
    {}, {'snapshot': {}}, {'snapshot': 'x'},
    {'snapshot': {'volume_id': 'x' * 37}},
    {'snapshot': {'volume_id': None, 'bogus': 1}},
    {'snapshot': {'volume_id': str(uuid.uuid4()), 'force': 'perhaps'}},
    {'snapshot': {'volume_id': str(uuid.uuid4()), 'name': 'x' * 256}},
    {'snapshot': {'volume_id': str(uuid.uuid4()), 'metadata': {'k': 1}}},
])
def test_bad_create_is_400(api, body):
    resp = api.post('/snapshots', json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()['badRequest']['message']
    assert api.get('/snapshots?all_tenants=1').json()['snapshots'] == []


def test_unknown_or_missing_volume_is_404(api):
    for volume_id in (str(uuid.uuid4()), None):
        resp = api.post('/snapshots', json={'snapshot': {
            'volume_id': volume_id}})
        assert resp.status_code == 404, resp.text
    for path in ('/snapshots/%s' % uuid.uuid4(),
                 '/snapshots/%s/metadata' % uuid.uuid4()):
        assert api.get(path).status_code == 404
    assert api.delete('/snapshots/%s' % uuid.uuid4()).status_code == 404


def test_in_use_needs_force_before_3_66(api, stack):
    shared = api.create_type('shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type=shared['name'])
    attach_mod.attach(api, vol['id'], attach_mod.connector('h1'))
    attach_mod.attach(api, vol['id'], attach_mod.connector('h2'))
    assert attach_mod.volume(api, vol['id'])['status'] == 'in-use'
    v365 = stack.client(version='3.65')
    resp = v365.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id']}})
    assert resp.status_code == 400
    assert 'status must be available' in resp.json()['badRequest'][
        'message']
    forced = wait_snapshot(v365, create(v365, vol['id'], force=True)['id'])
    # 3.66: in use without force; force=false is refused, true ignored
    plain = wait_snapshot(api, create(api, vol['id'])['id'])
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id'], 'force': False}})
    assert resp.status_code == 400
    assert '3.66' in resp.json()['badRequest']['message']
    create(api, vol['id'], force='true')
    assert forced['size'] == plain['size'] == 1


def test_volume_states_refused(api, stack):
    vol = api.create_volume()
    api.post('/volumes/%s/action' % vol['id'], json={
        'os-reset_status': {'status': 'error'}})
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id'], 'force': True}})
    assert resp.status_code == 400
    assert 'error status' in resp.text
    api.post('/volumes/%s/action' % vol['id'], json={
        'os-reset_status': {'status': 'detaching'}})
    resp = stack.client(version='3.65').post('/snapshots', json={
        'snapshot': {
            'volume_id': vol['id']}})
    assert resp.status_code == 400 and 'detaching' in resp.text
    assert api.get('/snapshots').json()['snapshots'] == []


def test_delete_volume_with_snapshots_and_cascade(api, stack, vol):
    s1 = snapshot(api, vol['id'])
    s2 = snapshot(api, vol['id'])
    resp = api.delete('/volumes/%s' % vol['id'])
    assert resp.status_code == 400
    assert 'have snapshots' in resp.json()['badRequest']['message']
    # os-force_delete does not cascade either
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-force_delete': {}})
    assert resp.status_code == 400
    assert attach_mod.volume(api, vol['id'])['status'] == 'available'
    # a snapshot in a status cascade may not delete stops the cascade
    api.post('/snapshots/%s/action' % s2['id'],
             json={'os-reset_status': {'status': 'creating'}})
    resp = api.delete('/volumes/%s?cascade=true' % vol['id'])
    assert resp.status_code == 400
    assert attach_mod.volume(api, vol['id'])['status'] == 'available'
    assert wait_snapshot(api, s1['id'])['status'] == 'available'
    api.post('/snapshots/%s/action' % s2['id'],
             json={'os-reset_status': {'status': 'error'}})
    resp = api.delete('/volumes/%s?cascade=true' % vol['id'])
    assert resp.status_code == 202, resp.text
    api.wait_deleted(vol['id'])
    for s in (s1, s2):
        assert api.get('/snapshots/%s' % s['id']).status_code == 404
        assert not os.path.exists(volume_file(stack, s['id'], 'snapshot'))
    assert usage(api)['snapshots'] == 0
    assert usage(api)['gigabytes'] == 0
    exact()


def test_metadata(api, vol):
    snap = snapshot(api, vol['id'], metadata={'a': '1'})
    path = '/snapshots/%s/metadata' % snap['id']
    assert api.get(path).json() == {'metadata': {'a': '1'}}
    resp = api.post(path, json={'metadata': {'b': '2'}})
    assert resp.status_code == 200
    assert resp.json() == {'metadata': {'a': '1', 'b': '2'}}
    resp = api.put(path, json={'metadata': {'c': '3'}})
    assert resp.json() == {'metadata': {'c': '3'}}
    resp = api.put(path + '/c', json={'meta': {'c': '4'}})
    assert resp.status_code == 200 and resp.json() == {'meta': {'c': '4'}}
    assert api.get(path + '/c').json() == {'meta': {'c': '4'}}
    assert api.put(path + '/c', json={'meta': {'d': '4'}}).status_code \
        == 400
    assert api.put(path + '/c', json={'meta': {'c': 4}}).status_code == 400
    assert api.get(path + '/d').status_code == 404
    assert api.delete(path + '/c').status_code == 200
    assert api.delete(path + '/c').status_code == 404
    assert api.get(path).json() == {'metadata': {}}
    shown = api.get('/snapshots/%s' % snap['id']).json()['snapshot']
    assert shown['metadata'] == {}


def test_list_filters_sort_pages(api, stack):
    v1 = api.create_volume()
    v2 = api.create_volume()
    a = snapshot(api, v1['id'], name='a', metadata={'tier': 'gold'})
    b = snapshot(api, v1['id'], name='b')
    c = snapshot(api, v2['id'], name='c', metadata={'tier': 'gold'})

    def ids(query, client=api, key='snapshots'):
        resp = client.get('/snapshots/detail' + query)
        assert resp.status_code == 200, resp.text
        return [s['id'] for s in resp.json()[key]]
    assert ids('') == [c['id'], b['id'], a['id']]       # newest first
    assert ids('?volume_id=%s' % v1['id']) == [b['id'], a['id']]
    assert ids('?name=b') == [b['id']]
    assert ids('?status=available&sort=name:asc') == [
        a['id'], b['id'], c['id']]
    assert ids("?metadata={'tier':'gold'}&sort_key=name&sort_dir=asc") \
        == [a['id'], c['id']]
    assert api.get('/snapshots?metadata=x').status_code == 400
    assert api.get('/snapshots?bogus=1').status_code == 400
    assert api.get('/snapshots?sort=size').status_code == 400
    # as Cinder: an unknown marker is a 404 on snapshot lists
    assert api.get('/snapshots?marker=%s' % uuid.uuid4()).status_code \
        == 404
    # Cinder's column name sorts too, and offset skips after the sort
    assert ids('?sort_key=display_name&sort_dir=desc') == [
        c['id'], b['id'], a['id']]
    assert ids('?sort=name:asc&offset=1&limit=5') == [b['id'], c['id']]
    assert api.get('/snapshots?offset=-1').status_code == 400
    page = api.get('/snapshots?limit=2&sort=name:asc').json()
    assert [s['name'] for s in page['snapshots']] == ['a', 'b']
    nxt = page['snapshots_links'][0]['href']
    assert 'marker=%s' % b['id'] in nxt
    rest = api.get('/snapshots?limit=2&sort=name:asc&marker=%s'
                   % b['id']).json()
    assert [s['name'] for s in rest['snapshots']] == ['c']
    assert 'snapshots_links' not in rest
    counted = api.get('/snapshots?limit=1&with_count=true').json()
    assert counted['count'] == 3 and len(counted['snapshots']) == 1
    assert 'count' not in stack.client(version='3.44').get(
        '/snapshots?with_count=true').json()

    # another project sees none of them; an admin sees all with
    # all_tenants, and may filter by project
    other = stack.client(project=OTHER, user='u', roles='member')
    assert ids('', other) == []
    assert other.get('/snapshots/%s' % a['id']).status_code == 404
    assert other.get('/snapshots?all_tenants=1').status_code == 403
    mine = snapshot(other, other.create_volume()['id'])
    assert ids('?all_tenants=1&project_id=%s' % OTHER) == [mine['id']]
    assert len(ids('?all_tenants=1')) == 4
    assert ids('') == [c['id'], b['id'], a['id']]


def test_policy_defaults(api, stack, vol):
    snap = snapshot(api, vol['id'])
    reader = stack.client(user='r', roles='reader')
    member = stack.client(user='m', roles='member')
    assert reader.get('/snapshots/%s' % snap['id']).status_code == 200
    assert reader.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id']}}).status_code == 403
    assert reader.delete('/snapshots/%s' % snap['id']).status_code == 403
    assert reader.post('/snapshots/%s/metadata' % snap['id'], json={
        'metadata': {'a': 'b'}}).status_code == 403
    for action in ({'os-reset_status': {'status': 'error'}},
                   {'os-force_delete': {}}):
        resp = member.post('/snapshots/%s/action' % snap['id'], json=action)
        assert resp.status_code == 403, resp.text
    resp = member.put('/snapshots/%s' % snap['id'],
                      json={'snapshot': {'name': 'mine'}})
    assert resp.status_code == 200


def test_admin_actions(api, stack, vol):
    snap = snapshot(api, vol['id'])
    path = '/snapshots/%s/action' % snap['id']
    for body in ({'os-reset_status': {'status': 'bogus'}},
                 {'os-reset_status': {'status': 'deleted'}},
                 {'os-reset_status': {}}, {'os-bogus': {}},
                 {'os-reset_status': {'status': 'error'}, 'x': 1}):
        resp = api.post(path, json=body)
        assert resp.status_code == 400, (body, resp.text)
    assert api.post(path, json={'os-reset_status': {
        'status': 'creating'}}).status_code == 202
    # os-update_snapshot_status: Cinder's table of what may be reported
    bad = api.post(path, json={'os-update_snapshot_status': {
        'status': 'deleting'}})
    assert bad.status_code == 400
    assert api.post(path, json={'os-update_snapshot_status': {
        'status': 'creating', 'progress': '101%'}}).status_code == 400
    assert api.post(path, json={'os-update_snapshot_status': {
        'status': 'creating', 'progress': '50%'}}).status_code == 202
    shown = api.get('/snapshots/%s' % snap['id']).json()['snapshot']
    assert shown['os-extended-snapshot-attributes:progress'] == '50%'
    assert api.post(path, json={'os-update_snapshot_status': {
        'status': 'available', 'progress': '100%'}}).status_code == 202
    assert wait_snapshot(api, snap['id'])['status'] == 'available'
    # a plain delete only from available or error; a forced one always
    api.post(path, json={'os-reset_status': {'status': 'creating'}})
    resp = api.delete('/snapshots/%s' % snap['id'])
    assert resp.status_code == 400
    assert 'must be available or error' in resp.text
    assert api.post(path, json={'os-force_delete': {}}).status_code == 202
    wait_gone(api, snap['id'])
    exact()


def test_quota(api, stack):
    vol = api.create_volume(size=2)
    resp = api.put('/os-quota-sets/%s' % P,
                   json={'quota_set': {'snapshots': 1}})
    assert resp.status_code == 200
    s1 = snapshot(api, vol['id'])
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id']}})
    assert resp.status_code == 413, resp.text
    assert resp.json()['overLimit']['message'].startswith(
        'SnapshotLimitExceeded: ')
    api.put('/os-quota-sets/%s' % P, json={'quota_set': {
        'snapshots': 10, 'gigabytes': 5}})
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id']}})
    assert resp.status_code == 413
    assert 'VolumeSizeExceedsAvailableQuota' in resp.text
    # per type
    vtype = attach_mod.volume(api, vol['id'])['volume_type']
    api.put('/os-quota-sets/%s' % P, json={'quota_set': {
        'gigabytes': 100, 'snapshots_%s' % vtype: 1}})
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id']}})
    assert resp.status_code == 413
    assert "quota 'snapshots_%s'" % vtype in resp.text
    shown = usage(api)
    assert shown['snapshots'] == 1 and shown['gigabytes'] == 4
    assert shown['snapshots_%s' % vtype] == 1
    limits = api.get('/limits').json()['limits']['absolute']
    assert limits['totalSnapshotsUsed'] == 1
    assert api.get('/snapshots').json()['snapshots'][0]['id'] == s1['id']
    exact()


def test_concurrent_creates_take_exactly_the_quota(api):
    vol = api.create_volume()
    api.put('/os-quota-sets/%s' % P, json={'quota_set': {'snapshots': 3}})

    def one(_):
        return api.post('/snapshots', json={'snapshot': {
            'volume_id': vol['id']}}).status_code
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(one, range(8)))
    assert codes == [202] * 3 + [413] * 5
    for s in api.get('/snapshots').json()['snapshots']:
        wait_snapshot(api, s['id'])
    assert usage(api)['snapshots'] == 3
    exact()


def test_failed_copy_is_error_with_user_message(api, stack, vol):
    os.unlink(volume_file(stack, vol['id']))
    snap = create(api, vol['id'])
    failed = wait_snapshot(api, snap['id'], 'error')
    assert failed['status'] == 'error'
    assert not os.path.exists(volume_file(stack, snap['id'], 'snapshot')
                              + '.creating')
    msgs = api.get('/messages?resource_uuid=%s' % snap['id']).json()[
        'messages']
    assert [m['event_id'] for m in msgs] == [
        'VOLUME_VOLUME_SNAPSHOT_009_013']
    assert msgs[0]['resource_type'] == 'VOLUME_SNAPSHOT'
    # an error snapshot still counts until it is deleted, as in Cinder
    assert usage(api)['snapshots'] == 1
    assert api.delete('/snapshots/%s' % snap['id']).status_code == 202
    wait_gone(api, snap['id'])
    assert usage(api)['snapshots'] == 0
    exact()


def test_backend_down_is_503_and_records_nothing(api, stack, vol):
    stack.stop_backend('file')
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id']}})
    assert resp.status_code == 503, resp.text
    assert api.get('/snapshots').json()['snapshots'] == []
    exact()


def test_notifications(tmp_path):
    with notifications.listening(tmp_path / 'state', 'cl_snapshots') as (
            s, found):
        api = s.client()
        vol = api.create_volume()
        snap = snapshot(api, vol['id'], name='n')
        api.delete('/snapshots/%s' % snap['id'])
        wait_gone(api, snap['id'])
        found.wait_for('snapshot.create.start', 'snapshot.create.end',
                       'snapshot.delete.start', 'snapshot.delete.end')
        payloads = found.payloads('snapshot.')
        assert payloads['snapshot.create.end']['status'] == 'available'
        assert payloads['snapshot.create.start']['display_name'] == 'n'
        assert payloads['snapshot.delete.end']['snapshot_id'] == snap['id']
        assert payloads['snapshot.delete.end']['volume_id'] == vol['id']
        assert payloads['snapshot.delete.end']['tenant_id'] == P


def test_os_hosts_counts_snapshots(api, vol):
    snapshot(api, vol['id'])
    snapshot(api, vol['id'])
    lines = api.get('/os-hosts/testnode@file').json()['host']
    total = lines[0]['resource']
    assert (total['project'], total['snapshot_count'],
            total['total_snapshot_gb']) == ('(total)', '2', '4')
    assert lines[1]['resource']['snapshot_count'] == '2'


def test_reconcile_rolls_snapshots_forward(api, stack, vol):
    """A snapshot left creating or deleting (its volume service stopped
    in the middle) is made or deleted again by the reconcile of the
    backend that holds its volume."""
    snap = snapshot(api, vol['id'])
    path = '/snapshots/%s/action' % snap['id']
    manager, = stack.volume_service('file').endpoints
    assert api.post(path, json={'os-reset_status': {
        'status': 'creating'}}).status_code == 202
    assert manager.reconcile_now(max_age=0) == [
        'snapshot %s: creating -> available' % snap['id']]
    assert wait_snapshot(api, snap['id'])['status'] == 'available'
    assert api.post(path, json={'os-reset_status': {
        'status': 'deleting'}}).status_code == 202
    assert manager.reconcile_now(max_age=0) == [
        'snapshot %s: deleting -> deleted' % snap['id']]
    wait_gone(api, snap['id'])
    assert manager.reconcile_now(max_age=0) == []
    exact()
