"""Volume types, extra specs and type access."""
import uuid


def test_create_show_list_update_delete(api):
    resp = api.post('/types', json={'volume_type': {
        'name': 'gold', 'description': 'fast',
        'extra_specs': {'volume_backend_name': 'file'}}})
    assert resp.status_code == 200
    vtype = resp.json()['volume_type']
    assert vtype['name'] == 'gold' and vtype['is_public'] is True
    assert vtype['os-volume-type-access:is_public'] is True
    assert vtype['extra_specs'] == {'volume_backend_name': 'file'}
    # as Cinder: qos_specs_id only in show and list (admins), never in
    # create and update responses
    assert 'qos_specs_id' not in vtype
    shown = api.get('/types/%s' % vtype['id']).json()['volume_type']
    assert shown == dict(vtype, qos_specs_id=None)
    names = [t['name'] for t in api.get('/types').json()['volume_types']]
    assert names == ['__DEFAULT__', 'gold']
    by_name = api.get('/types?name=gold&is_public=None').json()
    assert [t['id'] for t in by_name['volume_types']] == [vtype['id']]
    resp = api.put('/types/%s' % vtype['id'], json={'volume_type': {
        'name': 'platinum', 'description': 'faster'}})
    assert resp.status_code == 200
    assert resp.json()['volume_type']['name'] == 'platinum'
    assert 'qos_specs_id' not in resp.json()['volume_type']
    assert api.delete('/types/%s' % vtype['id']).status_code == 202
    assert api.get('/types/%s' % vtype['id']).status_code == 404


def test_default_type(api):
    default = api.get('/types/default').json()['volume_type']
    assert default['name'] == '__DEFAULT__'
    resp = api.delete('/types/%s' % default['id'])
    assert resp.status_code == 400
    assert 'Default volume type' in resp.json()['badRequest']['message']


def test_duplicate_name_is_409(api):
    api.create_type('dup')
    resp = api.post('/types', json={'volume_type': {'name': 'dup'}})
    assert resp.status_code == 409
    assert 'already exists' in resp.json()['conflictingRequest']['message']


def test_type_in_use_cannot_be_deleted(api):
    vtype = api.create_type()
    api.create_volume(volume_type=vtype['name'])
    resp = api.delete('/types/%s' % vtype['id'])
    assert resp.status_code == 400
    assert api.get('/types/%s' % vtype['id']).status_code == 200


def test_extra_specs_crud(api):
    vtype = api.create_type()
    base = '/types/%s/extra_specs' % vtype['id']
    resp = api.post(base, json={'extra_specs': {'multiattach': '<is> True',
                                                'k': 'v'}})
    assert resp.status_code == 200
    assert resp.json() == {'extra_specs': {'multiattach': '<is> True',
                                           'k': 'v'}}
    assert api.get(base).json() == {'extra_specs': {
        'multiattach': '<is> True', 'k': 'v'}}
    assert api.get(base + '/k').json() == {'k': 'v'}
    resp = api.put(base + '/k', json={'k': 'w'})
    assert resp.status_code == 200 and resp.json() == {'k': 'w'}
    assert api.delete(base + '/k').status_code == 202
    assert api.get(base + '/k').status_code == 404
    assert api.delete(base + '/k').status_code == 404
    assert api.get(base).json() == {'extra_specs': {
        'multiattach': '<is> True'}}


def test_extra_specs_bad_input(api):
    vtype = api.create_type()
    base = '/types/%s/extra_specs' % vtype['id']
    for body in ({}, {'extra_specs': 'x'}, {'extra_specs': {'k': 1}},
                 {'extra_specs': {'k': 'v' * 256}},
                 {'extra_specs': {'bad key!': 'v'}},
                 {'extra_specs': {'multiattach': '<is> maybe'}},
                 {'extra_specs': {'size': '>= lots'}},
                 {'extra_specs': {'mode': 'WO'}}):
        resp = api.post(base, json=body)
        assert resp.status_code == 400, body
    assert api.put(base + '/k', json={'other': 'v'}).status_code == 400
    assert api.put(base + '/k', json={'k': 'v', 'j': 'w'}).status_code == 400
    assert api.get(base).json() == {'extra_specs': {}}
    missing = '/types/%s/extra_specs' % uuid.uuid4()
    assert api.post(missing, json={'extra_specs': {'k': 'v'}}
                    ).status_code == 404


def test_type_bad_input(api):
    for body in ({}, {'volume_type': {}}, {'volume_type': {'name': ''}},
                 {'volume_type': {'name': 'x' * 256}},
                 {'volume_type': {'name': 5}},
                 {'volume_type': {'name': 'a', 'bogus': 1}},
                 {'volume_type': {'name': 'a',
                                  'os-volume-type-access:is_public': 'x'}},
                 {'volume_type': {'name': ' padded '}}):
        resp = api.post('/types', json=body)
        assert resp.status_code == 400, body
    assert api.post('/types', data='nope').status_code == 400
    assert [t['name'] for t in api.get('/types').json()['volume_types']] \
        == ['__DEFAULT__']


def test_private_type_access(stack):
    admin = stack.client()
    member_project = 'f0' * 16  # hex, as Keystone makes them
    member = stack.client(project=member_project, roles='member')
    vtype = admin.create_type('private', is_public=False)
    assert member.get('/types/%s' % vtype['id']).status_code == 404
    assert 'private' not in [t['name'] for t in member.get(
        '/types').json()['volume_types']]
    action = '/types/%s/action' % vtype['id']
    resp = admin.post(action, json={'addProjectAccess': {
        'project': member_project}})
    assert resp.status_code == 202
    assert admin.post(action, json={'addProjectAccess': {
        'project': member_project}}).status_code == 409
    access = admin.get('/types/%s/os-volume-type-access' % vtype['id'])
    assert access.json() == {'volume_type_access': [
        {'volume_type_id': vtype['id'], 'project_id': member_project}]}
    assert member.get('/types/%s' % vtype['id']).status_code == 200
    vol = member.create_volume(volume_type='private')
    assert vol['volume_type'] == 'private'
    resp = admin.post(action, json={'removeProjectAccess': {
        'project': member_project}})
    assert resp.status_code == 202
    assert member.get('/types/%s' % vtype['id']).status_code == 404
    assert admin.post(action, json={'removeProjectAccess': {
        'project': member_project}}).status_code == 404
    assert admin.post(action, json={'bogus': {}}).status_code == 400


def test_members_cannot_manage_types(stack):
    member = stack.client(roles='member,reader')
    resp = member.post('/types', json={'volume_type': {'name': 'nope'}})
    assert resp.status_code == 403
    assert resp.json()['forbidden']['code'] == 403
    admin = stack.client()
    vtype = admin.create_type()
    assert member.post('/types/%s/extra_specs' % vtype['id'], json={
        'extra_specs': {'k': 'v'}}).status_code == 403
    assert member.delete('/types/%s' % vtype['id']).status_code == 403
    assert member.get('/types/%s' % vtype['id']).status_code == 200


def test_type_access_edges(stack):
    """Cinder's answers on the edges of os-volume-type-access."""
    admin = stack.client()
    public = admin.create_type('public-one')
    project = 'f1' * 16
    for action in ('addProjectAccess', 'removeProjectAccess'):
        resp = admin.post('/types/%s/action' % public['id'],
                          json={action: {'project': project}})
        assert resp.status_code == 400, action
        assert resp.json()['badRequest']['message'] == (
            'Invalid volume type: Type access modification is not '
            'applicable to public volume type.')
    resp = admin.get('/types/%s/os-volume-type-access' % public['id'])
    assert resp.status_code == 404
    assert resp.json()['itemNotFound']['message'] == \
        'Access list not available for public volume types.'
    private = admin.create_type('private-one', is_public=False)
    access = '/types/%s/os-volume-type-access' % private['id']
    assert admin.get(access).json() == {'volume_type_access': []}
    action = '/types/%s/action' % private['id']
    assert admin.post(action, json={'removeProjectAccess': {
        'project': project}}).status_code == 404
    assert admin.post(action, json={'addProjectAccess': {
        'project': project}}).status_code == 202
    resp = admin.post(action, json={'addProjectAccess': {
        'project': project}})
    assert resp.status_code == 409
    assert 'already exists' in resp.json()['conflictingRequest']['message']
    unknown = '/types/%s/action' % ('0' * 8 + '-0000-0000-0000-' + '0' * 12)
    assert admin.post(unknown, json={'addProjectAccess': {
        'project': project}}).status_code == 404
    # non-admins: the private type is seen by the project given access
    # only, and nobody but an admin reads or changes the access list
    member = stack.client(project=project, roles='member,reader')
    stranger = stack.client(project='f2' * 16, roles='member,reader')
    names = [t['name'] for t in member.get('/types').json()['volume_types']]
    assert 'private-one' in names
    names = [t['name'] for t in stranger.get(
        '/types?is_public=false').json()['volume_types']]
    assert 'private-one' not in names
    assert stranger.get('/types/%s' % private['id']).status_code == 404
    assert stranger.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': 'private-one'}}).status_code == 404
    assert member.get(access).status_code == 403
    assert member.post(action, json={'removeProjectAccess': {
        'project': project}}).status_code == 403
    assert admin.get(access).json() == {'volume_type_access': [
        {'volume_type_id': private['id'], 'project_id': project}]}
