"""QoS specs over HTTP: Cinder's /qos-specs (CRUD, keys, associations
with volume types), ``qos_specs_id`` in type views, the front-end specs
handed to hosts in the connection info, retype of in-use volumes, policy
and bad input."""
import uuid

import pytest

from tests.harness.attach import connector
from tests.harness.clients import cinder
from tests.harness.clients import props
from tests.harness.clients import table
from tests.harness import stack as stack_mod

P = stack_mod.PROJECT


def create(api, name=None, expect=200, **specs):
    resp = api.post('/qos-specs', json={'qos_specs': dict(
        name=name or 'qos-%s' % uuid.uuid4().hex[:8], **specs)})
    assert resp.status_code == expect, resp.text
    return resp.json()['qos_specs'] if expect == 200 else resp


def show(api, qos_id):
    resp = api.get('/qos-specs/%s' % qos_id)
    assert resp.status_code == 200, resp.text
    return resp.json()['qos_specs']


def associations(api, qos_id):
    resp = api.get('/qos-specs/%s/associations' % qos_id)
    assert resp.status_code == 200, resp.text
    return resp.json()['qos_associations']


def associate(api, qos_id, type_id, expect=202, action='associate'):
    resp = api.get('/qos-specs/%s/%s?vol_type_id=%s' % (qos_id, action,
                                                         type_id))
    assert resp.status_code == expect, resp.text
    return resp


def type_qos(api, type_id):
    return api.get('/types/%s' % type_id).json()['volume_type'][
        'qos_specs_id']


def test_create_show_list_delete(api):
    body = api.post('/qos-specs', json={'qos_specs': {
        'name': ' fast ', 'consumer': 'front-end',
        'read_iops_sec': '2000'}})
    assert body.status_code == 200, body.text
    body = body.json()
    assert set(body) == {'qos_specs', 'links'}
    created = body['qos_specs']
    assert created == {'id': created['id'], 'name': 'fast',
                       'consumer': 'front-end',
                       'specs': {'read_iops_sec': '2000'}}
    assert [link['rel'] for link in body['links']] == ['self', 'bookmark']
    assert body['links'][0]['href'].endswith('/v3/%s/qos-specs/%s' % (
        P, created['id']))
    assert api.get('/qos-specs/%s' % created['id']).json() == body
    # the consumer defaults to back-end; any consumer Cinder knows
    default = create(api, 'plain')
    assert default['consumer'] == 'back-end' and default['specs'] == {}
    both = create(api, 'both', consumer='both', total_bytes_sec='1000')
    listed = api.get('/qos-specs').json()
    assert listed == {'qos_specs': [both, default, created]}
    assert api.get('/qos-specs?consumer=front-end').json()[
        'qos_specs'] == [created]
    assert [q['name'] for q in api.get('/qos-specs?sort=name:asc').json()[
        'qos_specs']] == ['both', 'fast', 'plain']
    page = api.get('/qos-specs?limit=1&sort=name:asc').json()
    assert [q['name'] for q in page['qos_specs']] == ['both']
    assert 'marker=%s' % both['id'] in page['qos_specs_links'][0]['href']
    for specs in (created, default, both):
        resp = api.delete('/qos-specs/%s' % specs['id'])
        assert (resp.status_code, resp.text) == (202, '')
        assert api.get('/qos-specs/%s' % specs['id']).status_code == 404
    assert api.get('/qos-specs').json() == {'qos_specs': []}
    # the name is free again
    create(api, 'fast')


def test_set_and_unset_keys(api):
    qos = create(api, consumer='front-end', read_iops_sec='2000')
    resp = api.put('/qos-specs/%s' % qos['id'],
                   json={'qos_specs': {'iops_bytes': '500'}})
    assert resp.status_code == 200
    assert resp.json() == {'qos_specs': {'iops_bytes': '500'}}
    assert show(api, qos['id'])['specs'] == {'read_iops_sec': '2000',
                                             'iops_bytes': '500'}
    # the consumer is set like a key
    api.put('/qos-specs/%s' % qos['id'], json={'qos_specs': {
        'consumer': 'both', 'read_iops_sec': '100'}})
    shown = show(api, qos['id'])
    assert shown['consumer'] == 'both'
    assert shown['specs'] == {'read_iops_sec': '100', 'iops_bytes': '500'}
    resp = api.put('/qos-specs/%s/delete_keys' % qos['id'],
                   json={'keys': ['iops_bytes']})
    assert (resp.status_code, resp.text) == (202, '')
    assert show(api, qos['id'])['specs'] == {'read_iops_sec': '100'}
    # a key it does not have: 404, and nothing is removed
    resp = api.put('/qos-specs/%s/delete_keys' % qos['id'],
                   json={'keys': ['read_iops_sec', 'nope']})
    assert resp.status_code == 404
    assert resp.json()['itemNotFound']['message'] == \
        'QoS spec %s has no spec with key nope.' % qos['id']
    assert show(api, qos['id'])['specs'] == {'read_iops_sec': '100'}
    # null values are kept as null, as in Cinder
    api.put('/qos-specs/%s' % qos['id'], json={'qos_specs': {
        'write_iops_sec': None}})
    assert show(api, qos['id'])['specs'] == {'read_iops_sec': '100',
                                             'write_iops_sec': None}


def test_associations(api):
    qos = create(api, consumer='front-end')
    other = create(api)
    types = [api.create_type('t%d' % i) for i in range(3)]
    for vtype in types:
        associate(api, qos['id'], vtype['id'])
    # again: nothing changes
    associate(api, qos['id'], types[0]['id'])
    assert associations(api, qos['id']) == [
        {'association_type': 'volume_type', 'name': t['name'],
         'id': t['id']} for t in types]
    assert all(type_qos(api, t['id']) == qos['id'] for t in types)
    # a type has one specs at most
    resp = associate(api, other['id'], types[0]['id'], expect=400)
    assert resp.json()['badRequest']['message'] == (
        'Invalid volume type: Type %s is already associated with another '
        'qos specs: %s' % (types[0]['id'], qos['id']))
    associate(api, qos['id'], types[0]['id'], action='disassociate')
    assert [a['id'] for a in associations(api, qos['id'])] == [
        t['id'] for t in types[1:]]
    assert type_qos(api, types[0]['id']) is None
    # disassociating a type from specs it does not have changes nothing
    associate(api, other['id'], types[1]['id'], action='disassociate')
    assert type_qos(api, types[1]['id']) == qos['id']
    resp = api.get('/qos-specs/%s/disassociate_all' % qos['id'])
    assert (resp.status_code, resp.text) == (202, '')
    assert associations(api, qos['id']) == []
    assert all(type_qos(api, t['id']) is None for t in types)
    # associate to a type, then delete: in use, unless forced
    associate(api, qos['id'], types[2]['id'])
    resp = api.delete('/qos-specs/%s' % qos['id'])
    assert resp.status_code == 400
    assert resp.json()['badRequest']['message'] == 'Qos specs still in use.'
    assert show(api, qos['id'])['id'] == qos['id']
    resp = api.delete('/qos-specs/%s?force=True' % qos['id'])
    assert resp.status_code == 202
    assert type_qos(api, types[2]['id']) is None
    # a deleted type does not keep the specs in use
    associate(api, other['id'], types[0]['id'])
    assert api.delete('/types/%s' % types[0]['id']).status_code == 202
    assert associations(api, other['id']) == []
    assert api.delete('/qos-specs/%s' % other['id']).status_code == 202


def test_association_errors(api):
    qos = create(api)
    vtype = api.create_type('assoc')
    missing = str(uuid.uuid4())
    for action in ('associate', 'disassociate'):
        resp = api.get('/qos-specs/%s/%s' % (qos['id'], action))
        assert resp.status_code == 400
        assert resp.json()['badRequest']['message'] == \
            'Volume Type id must not be None.'
        resp = associate(api, qos['id'], missing, expect=404,
                         action=action)
        assert resp.json()['itemNotFound']['message'] == \
            'Volume type %s could not be found.' % missing
        resp = associate(api, missing, vtype['id'], expect=404,
                         action=action)
        assert resp.json()['itemNotFound']['message'] == \
            'No such QoS spec %s.' % missing
    for path in ('', '/associations', '/disassociate_all'):
        assert api.get('/qos-specs/%s%s' % (missing, path)).status_code \
            == 404
    assert api.delete('/qos-specs/%s' % missing).status_code == 404
    assert api.put('/qos-specs/%s' % missing, json={'qos_specs': {
        'a': 'b'}}).status_code == 404
    assert api.put('/qos-specs/%s/delete_keys' % missing,
                   json={'keys': ['a']}).status_code == 404
    assert type_qos(api, vtype['id']) is None


def test_type_views_show_qos_specs_id_as_cinder(stack, api):
    qos = create(api)
    vtype = api.create_type('viewed')
    associate(api, qos['id'], vtype['id'])
    assert type_qos(api, vtype['id']) == qos['id']
    listed = {t['id']: t for t in api.get('/types').json()['volume_types']}
    assert listed[vtype['id']]['qos_specs_id'] == qos['id']
    # not for a project's members, and never in create/update responses
    user = stack.client(user='m', roles='member,reader')
    assert 'qos_specs_id' not in user.get('/types/%s' % vtype['id']).json()[
        'volume_type']
    assert all('qos_specs_id' not in t
               for t in user.get('/types').json()['volume_types'])
    resp = api.put('/types/%s' % vtype['id'], json={'volume_type': {
        'description': 'd'}})
    assert 'qos_specs_id' not in resp.json()['volume_type']
    # the type keeps its specs when renamed
    assert type_qos(api, vtype['id']) == qos['id']


def _attach(api, volume_id, **headers):
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': volume_id, 'instance_uuid': str(uuid.uuid4()),
        'connector': connector()}}, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()['attachment']


@pytest.mark.parametrize('consumer,handed', [
    ('front-end', True), ('both', True), ('back-end', False)])
def test_front_end_specs_in_connection_info(api, consumer, handed):
    qos = create(api, consumer=consumer, total_bytes_sec='1048576',
                 read_iops_sec_per_gb='100', read_iops_sec_max='250',
                 write_iops_sec_per_gb='10', write_iops_sec_per_gb_min='50')
    vtype = api.create_type('q-' + consumer)
    associate(api, qos['id'], vtype['id'])
    vol = api.create_volume(size=3, volume_type=vtype['name'])
    info = _attach(api, vol['id'])['connection_info']
    if handed:
        # per-GiB keys resolved for 3 GiB as Cinder does
        assert info['qos_specs'] == {'total_bytes_sec': '1048576',
                                     'read_iops_sec': 250,
                                     'write_iops_sec': 50}
    else:
        assert info['qos_specs'] is None
    # the legacy call hands the same
    second = api.create_volume(size=3, volume_type=vtype['name'])
    legacy = api.post('/volumes/%s/action' % second['id'], json={
        'os-initialize_connection': {'connector': connector('other')}})
    assert legacy.status_code == 200, legacy.text
    assert legacy.json()['connection_info']['qos_specs'] == \
        info['qos_specs']


def test_no_specs_no_qos_in_connection_info(api):
    vol = api.create_volume()
    assert _attach(api, vol['id'])['connection_info']['qos_specs'] is None


def test_in_use_retype_keeps_front_end_specs(api):
    front = create(api, consumer='front-end', total_iops_sec='500')
    back = create(api, consumer='back-end', total_iops_sec='500')
    plain = api.create_type('plain')
    limited = api.create_type('limited')
    backend_limited = api.create_type('backend-limited')
    associate(api, front['id'], limited['id'])
    associate(api, back['id'], backend_limited['id'])
    vol = api.create_volume(volume_type='plain')
    att = _attach(api, vol['id'])
    resp = api.post('/attachments/%s/action' % att['id'],
                    json={'os-complete': {}})
    assert resp.status_code == 204, resp.text
    resp = api.post('/volumes/%s/action' % vol['id'], json={
        'os-retype': {'new_type': 'limited'}})
    assert resp.status_code == 400
    assert 'front-end qos specs cannot change' in resp.json()[
        'badRequest']['message']
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'volume_type'] == 'plain'
    # back-end specs are the target's business: the retype goes through
    resp = api.post('/volumes/%s/action' % vol['id'], json={
        'os-retype': {'new_type': 'backend-limited'}})
    assert resp.status_code == 202, resp.text
    # an available volume may change its front-end specs
    other = api.create_volume(volume_type='plain')
    resp = api.post('/volumes/%s/action' % other['id'], json={
        'os-retype': {'new_type': 'limited'}})
    assert resp.status_code == 202, resp.text
    assert plain['id'] != limited['id']


def test_policy_admins_only(stack, api):
    qos = create(api)
    vtype = api.create_type('pol')
    user = stack.client(user='m', roles='member,reader')
    qid = qos['id']
    for method, path, body in (
            ('GET', '/qos-specs', None),
            ('POST', '/qos-specs', {'qos_specs': {'name': 'x'}}),
            ('GET', '/qos-specs/%s' % qid, None),
            ('PUT', '/qos-specs/%s' % qid, {'qos_specs': {'a': 'b'}}),
            ('PUT', '/qos-specs/%s/delete_keys' % qid, {'keys': ['a']}),
            ('DELETE', '/qos-specs/%s' % qid, None),
            ('GET', '/qos-specs/%s/associations' % qid, None),
            ('GET', '/qos-specs/%s/associate?vol_type_id=%s' % (
                qid, vtype['id']), None),
            ('GET', '/qos-specs/%s/disassociate?vol_type_id=%s' % (
                qid, vtype['id']), None),
            ('GET', '/qos-specs/%s/disassociate_all' % qid, None)):
        resp = user.request(method, path, json=body)
        assert resp.status_code == 403, (method, path, resp.text)
        assert 'forbidden' in resp.json()
    assert show(api, qid) == qos
    assert type_qos(api, vtype['id']) is None


@pytest.mark.parametrize('body', [
    {},
    {'qos_specs': {}},
    {'qos_specs': {'name': ''}},
    {'qos_specs': {'name': '   '}},
    {'qos_specs': {'name': 'x' * 256}},
    {'qos_specs': {'name': 5}},
    {'qos_specs': {'name': 'n', 'consumer': 'nobody'}},
    {'qos_specs': {'name': 'n', 'read_iops_sec': 2000}},
    {'qos_specs': {'name': 'n', 'k': 'v' * 256}},
    {'qos_specs': {'name': 'n', 'k' * 256: 'v'}},
    {'qos_specs': {'name': 'n', 'k': ['v']}},
    {'qos_specs': {'name': 'n'}, 'other': 1},
    [],
])
def test_bad_create_is_400(api, body):
    resp = api.post('/qos-specs', json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()['badRequest']['message']
    assert api.get('/qos-specs').json() == {'qos_specs': []}


def test_bad_updates_are_400_and_change_nothing(api):
    qos = create(api, 'kept', consumer='front-end', a='1')
    qid = qos['id']
    for body in ({}, {'qos_specs': []}, {'qos_specs': {'a': 1}},
                 {'qos_specs': {'bad key!': 'v'}},
                 {'qos_specs': {'consumer': 'nobody'}},
                 {'qos_specs': {'consumer': None}},
                 {'qos_specs': {'a': 'v' * 256}},
                 {'qos_specs': {}, 'x': 1}):
        resp = api.put('/qos-specs/%s' % qid, json=body)
        assert resp.status_code == 400, (body, resp.text)
    for body in ({}, {'keys': 'a'}, {'keys': ['a', 'a']}, {'keys': ['']},
                 {'keys': [1]}, {'keys': ['a'], 'x': 1}):
        resp = api.put('/qos-specs/%s/delete_keys' % qid, json=body)
        assert resp.status_code == 400, (body, resp.text)
    resp = api.delete('/qos-specs/%s?force=maybe' % qid)
    assert resp.status_code == 400
    for query in ('bogus=1', 'sort=specs', 'limit=x'):
        assert api.get('/qos-specs?' + query).status_code == 400, query
    assert show(api, qid) == qos
    resp = api.post('/qos-specs', json={'qos_specs': {'name': 'kept'}})
    assert resp.status_code == 409
    assert resp.json()['conflictingRequest']['message'] == \
        'QoS Specs kept already exists.'


def test_cinderclient_cli(stack):
    created = props(cinder(stack, 'qos-create', 'cli-qos',
                           'consumer=front-end', 'read_iops_sec=2000'))
    assert created['name'] == 'cli-qos'
    assert created['consumer'] == 'front-end'
    assert created['specs'] == 'read_iops_sec : 2000'
    rows = table(cinder(stack, 'qos-list'))
    assert rows[0] == ['ID', 'Name', 'Consumer', 'specs']
    assert rows[1:] == [[created['id'], 'cli-qos', 'front-end',
                         "{'read_iops_sec': '2000'}"]]
    cinder(stack, 'qos-key', created['id'], 'set', 'write_iops_sec=100')
    cinder(stack, 'qos-key', created['id'], 'unset', 'read_iops_sec')
    shown = props(cinder(stack, 'qos-show', created['id']))
    assert shown['specs'] == 'write_iops_sec : 100'
    cinder(stack, 'type-create', 'cli-qos-type')
    vtype = stack.client().get('/types').json()['volume_types'][-1]
    cinder(stack, 'qos-associate', created['id'], vtype['id'])
    assoc = table(cinder(stack, 'qos-get-association', created['id']))
    assert assoc[1:] == [['volume_type', 'cli-qos-type', vtype['id']]]
    cinder(stack, 'qos-disassociate', created['id'], vtype['id'])
    assert table(cinder(stack, 'qos-get-association', created['id']))[
        1:] == []
    cinder(stack, 'qos-associate', created['id'], vtype['id'])
    cinder(stack, 'qos-disassociate-all', created['id'])
    cinder(stack, 'qos-associate', created['id'], vtype['id'])
    cinder(stack, 'qos-delete', '--force', 'True', created['id'])
    assert table(cinder(stack, 'qos-list'))[1:] == []
