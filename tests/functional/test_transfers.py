"""Volume transfers over HTTP: ``/os-volume-transfer`` and
``/volume-transfers`` with Cinder's views per microversion, the volume's
``awaiting-transfer`` status, accepting into another project with the
quota usage moved in the same transaction (exact under concurrency, 413
over a limit), policy, and bad input."""
import concurrent.futures
import threading
import uuid

import pytest

from cinder_lite.db import api as db_api
from cinder_lite.db import models
from cinder_lite.volume import quota_api
from tests.harness.attach import connector
from tests.harness.clients import cinder
from tests.harness.clients import props
from tests.harness.clients import table
from tests.harness import stack as stack_mod
from tests.harness import util

P = stack_mod.PROJECT
OTHER = stack_mod.OTHER_PROJECT
THIRD = 'abcdef0123456789abcdef0123456789'

PATHS = ('/os-volume-transfer', '/volume-transfers')
# the keys Tempest's schemas allow (additionalProperties false), per view
SUMMARY = {'id', 'volume_id', 'name', 'links'}
DETAIL = {'id', 'created_at', 'name', 'volume_id', 'links'}
DETAIL_355 = DETAIL | {'no_snapshots'}
DETAIL_357 = DETAIL_355 | {'destination_project_id', 'source_project_id',
                           'accepted'}


def member(stack, project=OTHER, user='bob', version='3.71'):
    return stack.client(project=project, user=user, roles='member,reader',
                        version=version)


def offer(api, volume_id, path='/volume-transfers', expect=202, **extra):
    body = {'transfer': dict({'volume_id': volume_id}, **extra)}
    resp = api.post(path, json=body)
    assert resp.status_code == expect, resp.text
    return resp.json()['transfer'] if expect == 202 else resp


def accept(api, transfer, path='/volume-transfers', expect=202, key=None):
    resp = api.post('%s/%s/accept' % (path, transfer['id']), json={
        'accept': {'auth_key': key or transfer['auth_key']}})
    if expect is not None:
        assert resp.status_code == expect, resp.text
    return resp


def status(api, volume_id):
    return api.get('/volumes/%s' % volume_id).json()['volume']['status']


def used(api, project):
    shown = api.get('/os-quota-sets/%s?usage=True' % project).json()[
        'quota_set']
    return {k: v['in_use'] for k, v in shown.items()
            if k != 'id' and v['in_use']}


def exact():
    """Recorded usage equals the volumes, for every project."""
    assert quota_api.audit() == []


def stored(transfer_id):
    with db_api.reader() as session:
        return session.get(models.Transfer, transfer_id)


@pytest.mark.parametrize('path', PATHS)
@pytest.mark.parametrize('version,detail', [('3.0', DETAIL),
                                            ('3.55', DETAIL_355),
                                            ('3.57', DETAIL_357)])
def test_views_per_version(stack, path, version, detail):
    api = stack.client(version=version)
    vol = api.create_volume()
    transfer = offer(api, vol['id'], path, name='  to bob  ')
    assert set(transfer) == detail | {'auth_key'}
    assert transfer['name'] == 'to bob'
    assert transfer['volume_id'] == vol['id']
    assert len(transfer['auth_key']) == 16
    assert [link['rel'] for link in transfer['links']] == ['self',
                                                           'bookmark']
    assert transfer['links'][0]['href'].endswith(
        '/v3/%s/os-volume-transfer/%s' % (P, transfer['id']))
    if version == '3.57':
        assert (transfer['source_project_id'],
                transfer['destination_project_id'],
                transfer['accepted']) == (P, None, False)
    assert status(api, vol['id']) == 'awaiting-transfer'
    # the key itself is never stored, nor shown again
    row = stored(transfer['id'])
    assert transfer['auth_key'] not in (row.salt, row.crypt_hash)
    shown = api.get('%s/%s' % (path, transfer['id'])).json()['transfer']
    assert shown == {k: v for k, v in transfer.items() if k != 'auth_key'}
    listed = api.get(path).json()
    assert listed == {'transfers': [{k: shown[k] for k in SUMMARY}]}
    detailed = api.get(path + '/detail').json()
    assert detailed == {'transfers': [shown]}
    resp = accept(member(stack, version=version), transfer, path)
    taken = resp.json()['transfer']
    assert set(taken) == SUMMARY
    assert {k: taken[k] for k in ('id', 'volume_id', 'name')} == {
        k: shown[k] for k in ('id', 'volume_id', 'name')}
    # links name the caller's project, as Cinder's
    assert taken['links'][0]['href'].endswith(
        '/v3/%s/os-volume-transfer/%s' % (OTHER, transfer['id']))
    assert api.get('%s/%s' % (path, transfer['id'])).status_code == 404


def test_no_snapshots_is_a_volume_transfers_field_from_355(stack):
    vol = stack.client().create_volume()
    for version, path in (('3.54', '/volume-transfers'),
                          ('3.71', '/os-volume-transfer')):
        resp = offer(stack.client(version=version), vol['id'], path,
                     expect=400, no_snapshots=True)
        assert 'no_snapshots' in resp.json()['badRequest']['message']
    transfer = offer(stack.client(version='3.55'), vol['id'],
                     no_snapshots=True)
    assert transfer['no_snapshots'] is True


def test_accept_moves_volume_and_quota(stack):
    api = stack.client()
    gold = api.create_type('gold')
    vol = api.create_volume(size=3, volume_type='gold', name='v')
    api.create_volume(size=1)
    before = used(api, P)
    assert before == {'volumes': 2, 'gigabytes': 4, 'volumes_gold': 1,
                      'gigabytes_gold': 3, 'volumes___DEFAULT__': 1,
                      'gigabytes___DEFAULT__': 1}
    transfer = offer(api, vol['id'])
    # offered, it still counts where it is
    assert used(api, P) == before
    bob = member(stack)
    resp = accept(bob, transfer)
    assert resp.json()['transfer']['id'] == transfer['id']
    taken = bob.get('/volumes/%s' % vol['id']).json()['volume']
    assert (taken['status'], taken['user_id'], taken['name']) == (
        'available', 'bob', 'v')
    # what Tempest checks: the owner's readers see the project, as in
    # Cinder (in show and list views, not in create or update responses)
    assert taken['os-vol-tenant-attr:tenant_id'] == OTHER
    assert [v['os-vol-tenant-attr:tenant_id'] for v in bob.get(
        '/volumes/detail').json()['volumes']] == [OTHER]
    assert 'os-vol-host-attr:host' not in taken
    made = bob.post('/volumes', json={'volume': {'size': 1}}).json()
    assert 'os-vol-tenant-attr:tenant_id' not in made['volume']
    updated = bob.put('/volumes/%s' % vol['id'], json={'volume': {
        'name': 'v'}}).json()
    assert 'os-vol-tenant-attr:tenant_id' not in updated['volume']
    # the old owner no longer sees it; an admin sees the new owner
    assert member(stack, project=P, user='u').get(
        '/volumes/%s' % vol['id']).status_code == 404
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'os-vol-tenant-attr:tenant_id'] == OTHER
    assert used(api, P) == {'volumes': 1, 'gigabytes': 1,
                            'volumes___DEFAULT__': 1,
                            'gigabytes___DEFAULT__': 1}
    assert used(api, OTHER) == {'volumes': 2, 'gigabytes': 4,
                                'volumes_gold': 1, 'gigabytes_gold': 3,
                                'volumes___DEFAULT__': 1,
                                'gigabytes___DEFAULT__': 1}
    exact()
    # 3.57: the history of an accepted transfer is in the database
    row = stored(transfer['id'])
    assert (row.deleted, row.accepted, row.destination_project_id) == (
        True, True, OTHER)
    # the new owner may use it as any of its volumes
    resp = bob.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4()),
        'connector': connector()}})
    assert resp.status_code == 200, resp.text
    assert gold['id'] == taken['volume_type_id']


def test_delete_restores_available(stack):
    api = stack.client()
    vol = api.create_volume()
    for path in PATHS:
        transfer = offer(api, vol['id'], path)
        assert status(api, vol['id']) == 'awaiting-transfer'
        assert api.delete('%s/%s' % (path, transfer['id'])).status_code \
            == 202
        assert status(api, vol['id']) == 'available'
        assert api.get('%s/%s' % (path, transfer['id'])).status_code == 404
        # its key no longer takes the volume
        accept(member(stack), transfer, path, expect=404)
        assert api.delete('%s/%s' % (path, transfer['id'])).status_code \
            == 404
    assert api.get('/volume-transfers').json() == {'transfers': []}
    row = stored(transfer['id'])
    assert (row.deleted, row.accepted) == (True, False)


def test_an_offered_volume_does_nothing_else(stack):
    api = stack.client()
    vol = api.create_volume()
    other_type = api.create_type('other')
    transfer = offer(api, vol['id'])
    vid = vol['id']
    for method, path, body in (
            ('DELETE', '/volumes/%s' % vid, None),
            ('POST', '/attachments', {'attachment': {
                'volume_uuid': vid, 'connector': connector()}}),
            ('POST', '/volumes/%s/action' % vid,
             {'os-extend': {'new_size': 2}}),
            ('POST', '/volumes/%s/action' % vid,
             {'os-retype': {'new_type': other_type['id']}}),
            ('POST', '/volumes/%s/action' % vid, {'os-reserve': {}}),
            ('POST', '/volumes/%s/action' % vid,
             {'os-update_readonly_flag': {'readonly': True}}),
            ('POST', '/volume-transfers', {'transfer': {
                'volume_id': vid}})):
        resp = api.request(method, path, json=body)
        assert resp.status_code == 400, (path, body, resp.text)
        assert status(api, vid) == 'awaiting-transfer'
    assert [t['id'] for t in api.get('/volume-transfers').json()[
        'transfers']] == [transfer['id']]
    assert api.get('/attachments').json()['attachments'] == []
    shown = api.get('/volumes/%s' % vid).json()['volume']
    assert (shown['size'], shown['volume_type']) == (1, '__DEFAULT__')


def test_in_use_volumes_are_refused_multiattach_ones_move(stack):
    api = stack.client()
    api.create_type('shared', specs={'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='shared')
    assert vol['multiattach'] is True
    att = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4()),
        'connector': connector()}}).json()['attachment']
    resp = offer(api, vol['id'], expect=400)
    assert 'status must be available' in resp.json()['badRequest'][
        'message']
    assert status(api, vol['id']) == 'attaching'
    assert api.delete('/attachments/%s' % att['id']).status_code == 200
    transfer = offer(api, vol['id'])
    accept(member(stack), transfer)
    taken = member(stack).get('/volumes/%s' % vol['id']).json()['volume']
    assert (taken['status'], taken['multiattach']) == ('available', True)
    exact()


def test_a_failed_attachment_keeps_the_volume(stack):
    """An available volume may still hold an attachment that failed to
    connect: it belongs to the donor's instance, so the volume is not
    offered until it is deleted."""
    api = stack.client()
    vol = api.create_volume()
    att = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id']}}).json()['attachment']
    with db_api.writer() as session:
        session.execute(models.VolumeAttachment.__table__.update().where(
            models.VolumeAttachment.id == att['id']).values(
            attach_status='error_attaching'))
        session.execute(models.Volume.__table__.update().where(
            models.Volume.id == vol['id']).values(status='available'))
    resp = offer(api, vol['id'], expect=400)
    assert att['id'] in resp.json()['badRequest']['message']
    assert status(api, vol['id']) == 'available'


def test_wrong_key_changes_nothing(stack):
    api = stack.client()
    vol = api.create_volume(size=2)
    transfer = offer(api, vol['id'], '/os-volume-transfer')
    bob = member(stack)
    for key in ('0' * 16, 1234, transfer['auth_key'][:-1]):
        resp = accept(bob, transfer, '/os-volume-transfer', expect=400,
                      key=key)
        assert resp.json()['badRequest']['message'] == (
            'Invalid auth key: Attempt to transfer %s with invalid auth '
            'key.' % transfer['id'])
    assert status(api, vol['id']) == 'awaiting-transfer'
    assert used(api, OTHER) == {}
    accept(bob, transfer, '/os-volume-transfer')


@pytest.mark.parametrize('limits,error', [
    ({'volumes': 0}, 'VolumeLimitExceeded'),
    ({'gigabytes': 2}, 'VolumeSizeExceedsAvailableQuota'),
    ({'per_volume_gigabytes': 2}, 'VolumeSizeExceedsLimit'),
    ({'volumes_gold': 0}, 'VolumeLimitExceeded'),
    ({'gigabytes_gold': 1}, 'VolumeSizeExceedsAvailableQuota'),
])
def test_over_quota_is_413_and_changes_nothing(stack, limits, error):
    api = stack.client()
    api.create_type('gold')
    vol = api.create_volume(size=3, volume_type='gold')
    resp = api.put('/os-quota-sets/%s' % OTHER,
                   json={'quota_set': limits})
    assert resp.status_code == 200, resp.text
    transfer = offer(api, vol['id'])
    resp = accept(member(stack), transfer, expect=413)
    assert resp.headers['Retry-After'] == '0'
    fault = resp.json()['overLimit']
    assert fault['message'].startswith(error + ': '), fault
    assert status(api, vol['id']) == 'awaiting-transfer'
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'os-vol-tenant-attr:tenant_id'] == P
    assert used(api, OTHER) == {}
    assert used(api, P)['gigabytes'] == 3
    assert api.get('/volume-transfers/%s' % transfer['id']).status_code \
        == 200
    exact()
    # once there is room, the same transfer goes through
    assert api.delete('/os-quota-sets/%s' % OTHER).status_code == 200
    accept(member(stack), transfer)
    exact()


def test_accepting_fills_the_quota_exactly(stack):
    """Transfers into a project with room for two: of five accepted at
    once, two succeed, three get 413, and usage is exact."""
    api = stack.client()
    resp = api.put('/os-quota-sets/%s' % OTHER,
                   json={'quota_set': {'volumes': 2}})
    assert resp.status_code == 200, resp.text
    transfers = [offer(api, api.create_volume()['id']) for _ in range(5)]
    bob = member(stack)
    with concurrent.futures.ThreadPoolExecutor(5) as pool:
        codes = sorted(r.status_code for r in pool.map(
            lambda t: accept(bob, t, expect=None), transfers))
    assert codes == [202, 202, 413, 413, 413]
    assert used(api, OTHER) == {'volumes': 2, 'gigabytes': 2,
                                'volumes___DEFAULT__': 2,
                                'gigabytes___DEFAULT__': 2}
    assert len(bob.get('/volumes').json()['volumes']) == 2
    exact()


def test_two_accepts_of_one_transfer_one_wins(stack):
    api = stack.client()
    vol = api.create_volume(size=2)
    transfer = offer(api, vol['id'])
    takers = [member(stack, OTHER, 'bob'), member(stack, THIRD, 'carol')]
    start = threading.Barrier(len(takers))

    def take(client):
        start.wait()
        return client.post('/volume-transfers/%s/accept' % transfer['id'],
                           json={'accept': {
                               'auth_key': transfer['auth_key']}})
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(take, takers))
    codes = sorted(r.status_code for r in answers)
    assert codes == [202, 404], [r.text for r in answers]
    winner = takers[[r.status_code for r in answers].index(202)]
    loser = takers[[r.status_code for r in answers].index(404)]
    assert winner.get('/volumes/%s' % vol['id']).status_code == 200
    assert loser.get('/volumes/%s' % vol['id']).status_code == 404
    assert used(api, winner.project)['gigabytes'] == 2
    assert used(api, loser.project) == {}
    assert used(api, P) == {}
    exact()


def test_accept_and_delete_race_one_wins(stack):
    api = stack.client()
    for _ in range(3):
        vol = api.create_volume()
        transfer = offer(api, vol['id'])
        start = threading.Barrier(2)

        def withdraw():
            start.wait()
            return api.delete('/volume-transfers/%s' % transfer['id'])

        def take():
            start.wait()
            return accept(member(stack), transfer, expect=None)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            deleted, taken = [f.result() for f in (pool.submit(withdraw),
                                                   pool.submit(take))]
        codes = (deleted.status_code, taken.status_code)
        assert codes in ((202, 404), (404, 202)), codes
        owner = P if deleted.status_code == 202 else OTHER
        shown = api.get('/volumes/%s' % vol['id']).json()['volume']
        assert (shown['status'], shown['os-vol-tenant-attr:tenant_id']) \
            == ('available', owner)
    exact()


def test_accepting_ones_own_transfer(stack):
    api = stack.client()
    vol = api.create_volume(size=2)
    transfer = offer(api, vol['id'])
    accept(api, transfer)
    assert status(api, vol['id']) == 'available'
    assert used(api, P)['gigabytes'] == 2
    exact()


def test_policy(stack):
    api = stack.client()
    vol = api.create_volume()
    owner_reader = stack.client(user='r', roles='reader')
    assert offer(owner_reader, vol['id'], expect=403).status_code == 403
    transfer = offer(member(stack, project=P, user='m'), vol['id'])
    # readers of the project see it, other projects do not
    assert owner_reader.get('/volume-transfers/%s' % transfer['id']
                            ).status_code == 200
    assert [t['id'] for t in owner_reader.get(
        '/volume-transfers/detail').json()['transfers']] == [transfer['id']]
    stranger = member(stack)
    assert stranger.get('/volume-transfers/%s' % transfer['id']
                        ).status_code == 404
    assert stranger.delete('/volume-transfers/%s' % transfer['id']
                           ).status_code == 404
    assert stranger.get('/volume-transfers').json() == {'transfers': []}
    assert stranger.get('/volume-transfers?all_tenants=1').json() == {
        'transfers': []}
    assert owner_reader.delete('/volume-transfers/%s' % transfer['id']
                               ).status_code == 403
    # a reader may not accept; a stranger may not offer someone's volume
    accept(stack.client(project=OTHER, user='r2', roles='reader'),
           transfer, expect=403)
    assert offer(stranger, vol['id'], expect=404).status_code == 404
    # admins see every project's with all_tenants
    admin_elsewhere = stack.client(project=THIRD)
    assert admin_elsewhere.get('/volume-transfers').json() == {
        'transfers': []}
    assert [t['id'] for t in admin_elsewhere.get(
        '/volume-transfers?all_tenants=1').json()['transfers']] == [
        transfer['id']]
    assert admin_elsewhere.get('/volume-transfers/%s' % transfer['id']
                               ).status_code == 200
    assert status(api, vol['id']) == 'awaiting-transfer'


@pytest.mark.parametrize('body', [
    {},
    {'transfer': {}},
    {'transfer': {'volume_id': 'not-a-uuid'}},
    {'transfer': {'volume_id': None}},
    {'transfer': {'volume_id': '%s', 'name': ''}},
    {'transfer': {'volume_id': '%s', 'name': '   '}},
    {'transfer': {'volume_id': '%s', 'name': 'x' * 256}},
    {'transfer': {'volume_id': '%s', 'name': 5}},
    {'transfer': {'volume_id': '%s', 'bogus': 1}},
    {'transfer': {'volume_id': '%s', 'no_snapshots': 'maybe'}},
    {'transfer': {'volume_id': '%s'}, 'extra': 1},
    [],
])
def test_bad_create_is_400_and_changes_nothing(stack, body):
    api = stack.client()
    vol = api.create_volume()
    if isinstance(body, dict) and isinstance(body.get('transfer'), dict) \
            and body['transfer'].get('volume_id') == '%s':
        body['transfer']['volume_id'] = vol['id']
    resp = api.post('/volume-transfers', json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()['badRequest']['message']
    assert status(api, vol['id']) == 'available'
    assert api.get('/volume-transfers').json() == {'transfers': []}


def test_not_found_and_bad_requests(stack):
    api = stack.client()
    missing = str(uuid.uuid4())
    resp = api.post('/volume-transfers', json={'transfer': {
        'volume_id': missing}})
    assert resp.status_code == 404
    assert resp.json()['itemNotFound']['message'] == \
        'Volume %s could not be found.' % missing
    for path in PATHS:
        for method in ('GET', 'DELETE'):
            resp = api.request(method, '%s/%s' % (path, missing))
            assert resp.status_code == 404
            assert resp.json()['itemNotFound']['message'] == \
                'Transfer %s could not be found.' % missing
        resp = api.post('%s/%s/accept' % (path, missing),
                        json={'accept': {'auth_key': 'x'}})
        assert resp.status_code == 404
    vol = api.create_volume()
    transfer = offer(api, vol['id'])
    for body in ({}, {'accept': {}}, {'accept': {'auth_key': None}},
                 {'accept': {'auth_key': 'k', 'x': 1}}, {'auth_key': 'k'}):
        resp = api.post('/volume-transfers/%s/accept' % transfer['id'],
                        json=body)
        assert resp.status_code == 400, (body, resp.text)
    resp = api.post('/volume-transfers/%s/accept' % transfer['id'],
                    data='not json', headers={
                        'Content-Type': 'application/json'})
    assert resp.status_code == 400
    for query in ('bogus=1', 'sort=volume_size', 'sort_dir=sideways',
                  'marker=%s' % missing, 'limit=-1', 'all_tenants=maybe'):
        resp = api.get('/volume-transfers?' + query)
        assert resp.status_code == 400, (query, resp.text)
    assert api.put('/volume-transfers/%s' % transfer['id'],
                   json={}).status_code == 405
    assert status(api, vol['id']) == 'awaiting-transfer'


def test_list_filters_order_and_pages(stack):
    api = stack.client()
    made = []
    for name in ('a', 'b', 'c'):
        vol = api.create_volume()
        made.append(offer(api, vol['id'], name=name))
    ids = [t['id'] for t in made]

    def listed(path, query='', version='3.71'):
        resp = stack.client(version=version).get(path + query)
        assert resp.status_code == 200, resp.text
        return resp.json()

    # oldest first on the legacy path and before 3.59; newest first on
    # /volume-transfers from 3.59
    assert [t['id'] for t in listed('/os-volume-transfer')['transfers']] \
        == ids
    assert [t['id'] for t in listed('/volume-transfers', version='3.58')[
        'transfers']] == ids
    assert [t['id'] for t in listed('/volume-transfers')['transfers']] == \
        ids[::-1]
    assert [t['name'] for t in listed('/volume-transfers',
                                      '?sort=name:asc')['transfers']] == \
        ['a', 'b', 'c']
    assert [t['id'] for t in listed('/volume-transfers', '?name=b')[
        'transfers']] == [ids[1]]
    assert [t['id'] for t in listed('/volume-transfers/detail',
                                    '?volume_id=%s' % made[2]['volume_id'])[
        'transfers']] == [ids[2]]
    page = listed('/volume-transfers', '?limit=2&sort=created_at:asc')
    assert [t['id'] for t in page['transfers']] == ids[:2]
    (link,) = page['transfers_links']
    assert link['rel'] == 'next' and 'marker=%s' % ids[1] in link['href']
    rest = listed('/volume-transfers',
                  '?limit=2&sort=created_at:asc&marker=%s' % ids[1])
    assert [t['id'] for t in rest['transfers']] == ids[2:]
    assert 'transfers_links' not in rest


def test_cinderclient_cli(stack):
    vol = stack.client().create_volume(name='cli-vol')
    created = props(cinder(stack, 'transfer-create', '--name', 'cli',
                           vol['id']))
    assert created['volume_id'] == vol['id']
    assert created['name'] == 'cli'
    assert len(created['auth_key']) == 16
    rows = table(cinder(stack, 'transfer-list'))
    assert rows[0] == ['ID', 'Volume ID', 'Name']
    assert rows[1:] == [[created['id'], vol['id'], 'cli']]
    shown = props(cinder(stack, 'transfer-show', created['id']))
    assert shown['source_project_id'] == P and shown['accepted'] == 'False'
    assert 'auth_key' not in shown
    cinder(stack, 'transfer-accept', created['id'], created['auth_key'])
    assert status(stack.client(), vol['id']) == 'available'
    assert table(cinder(stack, 'transfer-list'))[1:] == []
    again = props(cinder(stack, 'transfer-create', vol['id']))
    cinder(stack, 'transfer-delete', again['id'])
    assert status(stack.client(), vol['id']) == 'available'


@pytest.mark.parametrize('how', ['os-force_delete', 'DELETE ?force'])
def test_forced_delete_of_an_offered_volume_withdraws_it(stack, how):
    api = stack.client()
    vol = api.create_volume()
    transfer = offer(api, vol['id'])
    if how == 'os-force_delete':
        resp = api.post('/volumes/%s/action' % vol['id'],
                        json={'os-force_delete': {}})
    else:
        resp = api.delete('/volumes/%s?force=true' % vol['id'])
    assert resp.status_code == 202, resp.text
    api.wait_deleted(vol['id'])
    assert api.get('/volume-transfers/%s' % transfer['id']).status_code \
        == 404
    assert api.get('/volume-transfers').json() == {'transfers': []}
    accept(member(stack), transfer, expect=404)
    exact()


def _snapshot(api, volume_id):
    resp = api.post('/snapshots', json={'snapshot': {'volume_id':
                                                     volume_id}})
    assert resp.status_code == 202, resp.text
    sid = resp.json()['snapshot']['id']
    util.wait_for(lambda: api.get('/snapshots/%s' % sid).json()[
        'snapshot']['status'] == 'available')
    return sid


def test_snapshots_go_with_the_volume_unless_no_snapshots(stack):
    api = stack.client()
    moved = api.create_volume(size=2)
    kept = api.create_volume(size=1)
    s_moved = _snapshot(api, moved['id'])
    s_kept = _snapshot(api, kept['id'])
    # a snapshot that is not available stops a transfer with snapshots
    api.post('/snapshots/%s/action' % s_kept, json={
        'os-reset_status': {'status': 'error'}})
    resp = offer(api, kept['id'], expect=400)
    assert 'must be available' in resp.text
    api.post('/snapshots/%s/action' % s_kept, json={
        'os-reset_status': {'status': 'available'}})
    bob = member(stack)
    # over the new project's snapshot quota: nothing moves
    api.put('/os-quota-sets/%s' % OTHER, json={'quota_set': {
        'snapshots': 0}})
    t1 = offer(api, moved['id'])
    resp = accept(bob, t1, expect=413)
    assert 'SnapshotLimitExceeded' in resp.text
    assert status(api, moved['id']) == 'awaiting-transfer'
    api.put('/os-quota-sets/%s' % OTHER, json={'quota_set': {
        'snapshots': 10}})
    accept(bob, t1)
    assert bob.get('/snapshots/%s' % s_moved).json()['snapshot'][
        'os-extended-snapshot-attributes:project_id'] == OTHER
    # no_snapshots (3.55): the snapshot stays with the old project
    t2 = offer(api, kept['id'], no_snapshots=True)
    accept(bob, t2)
    assert bob.get('/snapshots/%s' % s_kept).status_code == 404
    assert api.get('/snapshots/%s' % s_kept).json()['snapshot'][
        'os-extended-snapshot-attributes:project_id'] == P
    assert used(api, P) == {'snapshots': 1, 'gigabytes': 1,
                            'snapshots___DEFAULT__': 1,
                            'gigabytes___DEFAULT__': 1}
    assert used(api, OTHER)['snapshots'] == 1
    assert used(api, OTHER)['gigabytes'] == 2 + 2 + 1
    exact()
