"""Every bad create request gets a 4xx with Cinder's body and changes
nothing."""
import uuid

import pytest

BAD_CREATE_BODIES = [
    {},
    {'volume': {}},
    {'volume': 'x'},
    {'volume': {'size': 0}},
    {'volume': {'size': -1}},
    {'volume': {'size': '0'}},
    {'volume': {'size': 'abc'}},
    {'volume': {'size': 1.5}},
    {'volume': {'size': True}},
    {'volume': {'size': 2 ** 31}},
    {'volume': {'size': '99999999999999999999'}},
    {'volume': {'size': 1, 'name': 'x' * 256}},
    {'volume': {'size': 1, 'name': 7}},
    {'volume': {'size': 1, 'metadata': 'x'}},
    {'volume': {'size': 1, 'metadata': {'k': 1}}},
    {'volume': {'size': 1, 'multiattach': True}},
    {'volume': {'size': 1, 'multiattach': 'true'}},
    {'volume': {'size': 1, 'multiattach': 'perhaps'}},
    {'volume': {'size': 1, 'snapshot_id': str(uuid.uuid4())}},
    {'volume': {'size': 1, 'source_volid': str(uuid.uuid4())}},
    {'volume': {'size': 1, 'imageRef': 'image'}},
    {'volume': {'size': 1, 'availability_zone': ''}},
    {'volume': {'size': 1}, 'extra': 1},
    {'volume': {'size': 1, 'bogus_key': 1}},  # refused from 3.53
]


@pytest.mark.parametrize('body', BAD_CREATE_BODIES)
def test_bad_create_is_400_and_changes_nothing(api, body):
    resp = api.post('/volumes', json=body)
    assert resp.status_code == 400, resp.text
    fault = resp.json()['badRequest']
    assert fault['code'] == 400 and fault['message']
    assert api.get('/volumes?all_tenants=1').json()['volumes'] == []


def test_bigger_than_any_backend_fails_with_a_message(api):
    """As Cinder: accepted within quota (over it, 413 first:
    test_quotas), then ``error`` with a user message saying why."""
    resp = api.put('/os-quota-sets/%s' % api.project,
                   json={'quota_set': {'gigabytes': -1}})
    assert resp.status_code == 200, resp.text
    resp = api.post('/volumes', json={'volume': {'size': 2 ** 31 - 1}})
    assert resp.status_code == 202, resp.text
    vol = api.wait_volume(resp.json()['volume']['id'], 'error')
    messages = api.get('/messages?resource_uuid=%s' % vol['id'],
                       headers={'OpenStack-API-Version': 'volume 3.3'}
                       ).json()['messages']
    assert len(messages) == 1, messages
    assert 'exceeds the capacity of every backend' in \
        messages[0]['user_message'] or 'No valid backend' in \
        messages[0]['user_message'], messages
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


def test_unknown_keys_accepted_before_3_53(api):
    resp = api.post('/volumes', json={'volume': {'size': 1, 'bogus': 1}},
                    headers={'OpenStack-API-Version': 'volume 3.52'})
    assert resp.status_code == 202


def test_clients_null_fields_are_accepted(api):
    # the body cinderclient sends for `cinder create`
    body = {'volume': {'size': 1, 'consistencygroup_id': None,
                       'snapshot_id': None, 'name': 'c', 'description': None,
                       'volume_type': None, 'availability_zone': None,
                       'metadata': {}, 'imageRef': None,
                       'source_volid': None, 'backup_id': None}}
    resp = api.post('/volumes', json=body)
    assert resp.status_code == 202
    assert api.post('/volumes', json={'volume': {
        'size': '2', 'multiattach': False}}).status_code == 202


@pytest.mark.parametrize('raw', ['{not json', '', '[1, 2', '\xff\xfe'])
def test_malformed_json_is_400(api, raw):
    resp = api.post('/volumes', data=raw.encode('latin-1'))
    assert resp.status_code == 400
    assert 'Malformed request body' in resp.json()['badRequest']['message']


def test_oversized_body_is_413(api):
    resp = api.post('/volumes', data=b'{"volume": {"name": "' +
                    b'x' * (2 * 1024 * 1024) + b'"}}')
    assert resp.status_code == 413
    assert resp.json()['overLimit']['code'] == 413


def test_unknown_type_is_404(api):
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': 'no-such-type'}})
    assert resp.status_code == 404
    assert 'no-such-type' in resp.json()['itemNotFound']['message']
    assert api.get('/volumes').json()['volumes'] == []


def test_unknown_volume_ids_are_404(api):
    missing = str(uuid.uuid4())
    for method in ('GET', 'DELETE'):
        resp = api.request(method, '/volumes/%s' % missing)
        assert resp.status_code == 404
        assert resp.json()['itemNotFound']['message'] == \
            'Volume %s could not be found.' % missing


def test_other_projects_volumes_are_invisible(stack):
    mine = stack.client(project='a' * 32, roles='member')
    theirs = stack.client(project='b' * 32, roles='member')
    vol = mine.create_volume(name='private')
    path = '/volumes/%s' % vol['id']
    assert theirs.get(path).status_code == 404
    assert theirs.delete(path).status_code == 404
    assert theirs.put(path, json={'volume': {'name': 'x'}}).status_code \
        == 404
    assert theirs.get('/volumes').json()['volumes'] == []
    assert theirs.get('/volumes?all_tenants=1').status_code == 403
    assert mine.get(path).json()['volume']['name'] == 'private'
    # members do not see admin-only fields
    assert 'os-vol-host-attr:host' not in mine.get(path).json()['volume']
    admin = stack.client()
    everyone = admin.get('/volumes?all_tenants=1').json()['volumes']
    assert [v['id'] for v in everyone] == [vol['id']]
    only_b = admin.get('/volumes?all_tenants=1&project_id=%s' % ('b' * 32))
    assert only_b.json()['volumes'] == []
