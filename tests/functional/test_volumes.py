"""Volumes: create, list, show, update, delete, filters, sort, paging."""
import uuid


def test_create_shows_creating_then_available(api):
    resp = api.post('/volumes', json={'volume': {'size': 2, 'name': 'a',
                                                 'description': 'd',
                                                 'metadata': {'k': 'v'}}})
    assert resp.status_code == 202
    vol = resp.json()['volume']
    assert vol['status'] == 'creating'
    assert vol['size'] == 2
    assert vol['volume_type'] == '__DEFAULT__'
    assert vol['multiattach'] is False
    vol = api.wait_volume(vol['id'], 'available')
    assert vol['os-vol-host-attr:host'] == 'testnode@file#file'
    assert vol['os-vol-tenant-attr:tenant_id'] == api.project
    assert vol['metadata'] == {'k': 'v'}
    assert vol['description'] == 'd'
    assert vol['attachments'] == []
    assert vol['shared_targets'] is False
    assert vol['service_uuid']
    assert vol['volume_type_id']


def test_view_follows_microversion(api):
    vol = api.create_volume()
    old = api.get('/volumes/%s' % vol['id'], headers={
        'OpenStack-API-Version': 'volume 3.0'}).json()['volume']
    assert 'service_uuid' not in old and 'group_id' not in old
    assert 'volume_type_id' not in old
    new = api.get('/volumes/%s' % vol['id']).json()['volume']
    assert 'service_uuid' in new and 'group_id' in new
    assert new['consumes_quota'] is True


def test_list_summary_and_detail(api):
    vol = api.create_volume(name='listed')
    summary = api.get('/volumes').json()['volumes']
    assert summary == [{'id': vol['id'], 'name': 'listed',
                        'links': vol['links']}]
    detail = api.get('/volumes/detail').json()['volumes']
    assert detail[0]['status'] == 'available'


def test_filters(api):
    a = api.create_volume(name='alpha', metadata={'tier': 'gold'})
    b = api.create_volume(name='beta', size=2)
    ids = lambda resp: sorted(v['id'] for v in resp.json()['volumes'])
    assert ids(api.get('/volumes?name=alpha')) == [a['id']]
    assert ids(api.get('/volumes?size=2')) == [b['id']]
    assert ids(api.get('/volumes?status=available')) == sorted(
        [a['id'], b['id']])
    assert ids(api.get("/volumes?metadata={'tier':'gold'}")) == [a['id']]
    assert ids(api.get('/volumes?name~=lph')) == [a['id']]
    assert ids(api.get('/volumes?bootable=false')) == sorted(
        [a['id'], b['id']])


def test_bad_filters_and_params_are_400(api):
    for query in ('bogus=1', 'name~=x&x=1', 'limit=-1', 'limit=abc',
                  'sort=name:sideways', 'sort=nosuchkey',
                  'metadata=notadict', 'bootable=maybe',
                  'sort=name&sort_key=size'):
        resp = api.get('/volumes?' + query)
        assert resp.status_code == 400, query
        assert resp.json()['badRequest']['message'], query
    resp = api.get('/volumes?name~=x', headers={
        'OpenStack-API-Version': 'volume 3.33'})
    assert resp.status_code == 400


def test_sort_limit_marker_and_next_link(api):
    names = ['v%d' % i for i in range(5)]
    for name in reversed(names):
        api.create_volume(name=name)
    page = api.get('/volumes?sort=name:asc&limit=2').json()
    assert [v['name'] for v in page['volumes']] == ['v0', 'v1']
    nxt = page['volumes_links'][0]
    assert nxt['rel'] == 'next'
    marker = page['volumes'][-1]['id']
    assert 'marker=%s' % marker in nxt['href']
    page2 = api.get('/volumes?sort=name:asc&limit=2&marker=%s'
                    % marker).json()
    assert [v['name'] for v in page2['volumes']] == ['v2', 'v3']
    page3 = api.get('/volumes?sort_key=name&sort_dir=asc&limit=2&marker=%s'
                    % page2['volumes'][-1]['id']).json()
    assert [v['name'] for v in page3['volumes']] == ['v4']
    assert 'volumes_links' not in page3
    desc = api.get('/volumes?sort=name:desc').json()['volumes']
    assert [v['name'] for v in desc] == list(reversed(names))
    resp = api.get('/volumes?marker=%s' % uuid.uuid4())
    assert resp.status_code == 400


def test_with_count(api):
    api.create_volume()
    api.create_volume()
    body = api.get('/volumes?with_count=true&limit=1').json()
    assert body['count'] == 2 and len(body['volumes']) == 1


def test_update(api):
    vol = api.create_volume(name='old')
    resp = api.put('/volumes/%s' % vol['id'], json={'volume': {
        'name': 'new', 'description': 'desc', 'metadata': {'a': 'b'}}})
    assert resp.status_code == 200
    body = resp.json()['volume']
    assert (body['name'], body['description'], body['metadata']) == (
        'new', 'desc', {'a': 'b'})
    shown = api.get('/volumes/%s' % vol['id']).json()['volume']
    assert shown['name'] == 'new'


def test_update_bad_input(api):
    vol = api.create_volume(name='keep')
    path = '/volumes/%s' % vol['id']
    for body in ({}, {'volume': {}}, {'volume': {'name': 5}},
                 {'volume': {'name': 'x' * 256}},
                 {'volume': {'size': 3}}, {'volume': 'x'}):
        resp = api.put(path, json=body)
        assert resp.status_code == 400, body
    resp = api.put(path, data='{not json')
    assert resp.status_code == 400
    assert api.get(path).json()['volume']['name'] == 'keep'
    resp = api.put('/volumes/%s' % uuid.uuid4(), json={'volume': {
        'name': 'x'}})
    assert resp.status_code == 404


def test_delete_then_gone(api):
    vol = api.create_volume()
    resp = api.delete('/volumes/%s' % vol['id'])
    assert resp.status_code == 202
    api.wait_deleted(vol['id'])
    assert api.get('/volumes').json()['volumes'] == []
    resp = api.delete('/volumes/%s' % vol['id'])
    assert resp.status_code == 404
    assert 'could not be found' in resp.json()['itemNotFound']['message']


def test_delete_twice_while_deleting_is_400(api, stack):
    vol = api.create_volume()
    # Stop the backend so the delete stays in 'deleting'.
    svc = stack.volume_service('file')
    server, = svc._servers
    server.stop()
    server.wait()
    try:
        assert api.delete('/volumes/%s' % vol['id']).status_code == 202
        resp = api.delete('/volumes/%s' % vol['id'])
        assert resp.status_code == 400
        assert 'deleting' in resp.json()['badRequest']['message']
    finally:
        server.start()
    api.wait_deleted(vol['id'])


def test_file_backend_makes_and_removes_sparse_file(api, stack):
    import os
    vol = api.create_volume(size=3)
    path = os.path.join(stack.state_path, 'volumes', 'file',
                        'volume-%s' % vol['id'])
    st = os.stat(path)
    assert st.st_size == 3 * 1024 ** 3
    assert st.st_blocks == 0  # sparse
    api.delete('/volumes/%s' % vol['id'])
    api.wait_deleted(vol['id'])
    assert not os.path.exists(path)
