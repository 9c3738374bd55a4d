"""Default volume types per project (3.62): /default-types, the type a
volume takes when its create names none, and the delete guard."""
from tests.harness.clients import cinder
from tests.harness.clients import props
from tests.harness.clients import table
from tests.harness import stack as stack_mod

OTHER = stack_mod.OTHER_PROJECT


def test_set_show_list_unset(stack):
    admin = stack.client()
    gold = admin.create_type('gold')
    path = '/default-types/%s' % OTHER
    # before 3.62 the resource is not there
    old = stack.client(version='3.61')
    assert old.get('/default-types').status_code == 404
    assert admin.get(path).status_code == 404
    assert admin.get(path).json()['itemNotFound']['message'] == \
        'Default type for project %s not found.' % OTHER
    # by name, then by id
    resp = admin.put(path, json={'default_type': {'volume_type': 'gold'}})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {'default_type': {
        'project_id': OTHER, 'volume_type_id': gold['id']}}
    resp = admin.put(path, json={'default_type': {
        'volume_type': gold['id']}})
    assert resp.status_code == 200
    assert admin.get(path).json() == resp.json()
    listed = admin.get('/default-types').json()
    assert listed == {'default_types': [
        {'project_id': OTHER, 'volume_type_id': gold['id']}]}
    assert admin.delete(path).status_code == 204
    assert admin.get(path).status_code == 404
    # unsetting what is not set is no error (Cinder's 204)
    assert admin.delete(path).status_code == 204
    assert admin.get('/default-types').json() == {'default_types': []}


def test_bad_requests_change_nothing(stack):
    admin = stack.client()
    path = '/default-types/%s' % OTHER
    resp = admin.put(path, json={'default_type': {'volume_type': 'nope'}})
    assert resp.status_code == 400
    assert 'nope' in resp.json()['badRequest']['message']
    for body in ({}, {'default_type': {}}, {'default_type': 'gold'},
                 {'default_type': {'volume_type': ''}},
                 {'default_type': {'volume_type': 'x', 'extra': 1}},
                 {'default_type': {'volume_type': 7}}):
        assert admin.put(path, json=body).status_code == 400, body
    assert admin.put('/default-types/bad%20project', json={
        'default_type': {'volume_type': '__DEFAULT__'}}).status_code == 400
    assert admin.get('/default-types').json() == {'default_types': []}


def test_members_are_refused(stack):
    admin = stack.client()
    admin.create_type('gold')
    member = stack.client(project=OTHER, roles='member,reader')
    path = '/default-types/%s' % OTHER
    assert member.put(path, json={'default_type': {
        'volume_type': 'gold'}}).status_code == 403
    assert member.get(path).status_code == 403
    assert member.get('/default-types').status_code == 403
    assert member.delete(path).status_code == 403


def test_volume_takes_project_default(stack):
    admin = stack.client()
    gold = admin.create_type('gold', is_public=False)
    member = stack.client(project=OTHER, roles='member,reader')
    before = member.create_volume()
    assert before['volume_type'] == '__DEFAULT__'
    assert admin.put('/default-types/%s' % OTHER, json={
        'default_type': {'volume_type': 'gold'}}).status_code == 200
    vol = member.create_volume()
    assert vol['volume_type'] == 'gold'
    assert member.get('/types/default').json()['volume_type']['name'] \
        == 'gold'
    # a type named in the request still wins; other projects keep theirs
    assert member.create_volume(volume_type='__DEFAULT__')[
        'volume_type'] == '__DEFAULT__'
    assert admin.create_volume()['volume_type'] == '__DEFAULT__'
    # a type that is a project's default cannot be deleted
    member.delete('/volumes/%s' % vol['id'])
    member.wait_deleted(vol['id'])
    resp = admin.delete('/types/%s' % gold['id'])
    assert resp.status_code == 400
    assert resp.json()['badRequest']['message'] == (
        'The volume type %s is a default volume type and cannot be '
        'deleted.' % gold['id'])
    assert admin.delete('/default-types/%s' % OTHER).status_code == 204
    assert admin.delete('/types/%s' % gold['id']).status_code == 202
    assert member.create_volume()['volume_type'] == '__DEFAULT__'


def test_cinder_default_type_commands(stack):
    admin = stack.client()
    gold = admin.create_type('gold')
    shown = props(cinder(stack, 'default-type-set', 'gold', OTHER))
    assert shown == {'project_id': OTHER, 'volume_type_id': gold['id']}
    rows = table(cinder(stack, 'default-type-list'))
    assert rows[1:] == [[gold['id'], OTHER]]
    shown = props(cinder(stack, 'default-type-list', '--project-id', OTHER))
    assert shown['volume_type_id'] == gold['id']
    out = cinder(stack, 'default-type-unset', OTHER)
    assert 'has been unset successfully' in out
    assert table(cinder(stack, 'default-type-list'))[1:] == []
