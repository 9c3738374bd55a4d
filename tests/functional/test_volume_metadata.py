"""Volume metadata as Cinder serves it: /volumes/{id}/metadata and
/metadata/{key}, ``metadata`` in volume create, update and views, the
``metadata`` list filter, and the volume summary (3.12, metadata 3.36)."""
import uuid

import pytest

from tests.harness import stack as stack_mod


def meta_path(vid, key=None):
    return '/volumes/%s/metadata%s' % (vid, '/' + key if key else '')


def metadata(api, vid):
    resp = api.get(meta_path(vid))
    assert resp.status_code == 200, resp.text
    return resp.json()['metadata']


@pytest.fixture
def vol(api):
    return api.create_volume(metadata={'a': '1', 'b': '2'})


def test_crud(api, vol):
    vid = vol['id']
    assert vol['metadata'] == {'a': '1', 'b': '2'}
    assert metadata(api, vid) == {'a': '1', 'b': '2'}
    # POST merges and answers with all of it
    resp = api.post(meta_path(vid), json={'metadata': {
        'b': 'two', 'c': '<value&special_chars>'}})
    assert resp.status_code == 200
    assert resp.json() == {'metadata': {
        'a': '1', 'b': 'two', 'c': '<value&special_chars>'}}
    # PUT replaces all of it
    resp = api.put(meta_path(vid), json={'metadata': {'c': '3', 'd': '4'}})
    assert resp.status_code == 200
    assert resp.json() == {'metadata': {'c': '3', 'd': '4'}}
    assert metadata(api, vid) == {'c': '3', 'd': '4'}
    # one key
    resp = api.get(meta_path(vid, 'c'))
    assert resp.status_code == 200 and resp.json() == {'meta': {'c': '3'}}
    resp = api.put(meta_path(vid, 'c'), json={'meta': {'c': 'three'}})
    assert resp.status_code == 200 and resp.json() == {
        'meta': {'c': 'three'}}
    resp = api.put(meta_path(vid, 'e'), json={'meta': {'e': 'new'}})
    assert resp.status_code == 200
    resp = api.delete(meta_path(vid, 'd'))
    assert resp.status_code == 200 and resp.content == b''
    assert metadata(api, vid) == {'c': 'three', 'e': 'new'}
    # the volume's views show the same
    shown = api.get('/volumes/%s' % vid).json()['volume']
    assert shown['metadata'] == {'c': 'three', 'e': 'new'}
    listed = api.get('/volumes/detail').json()['volumes']
    assert [v['metadata'] for v in listed] == [{'c': 'three', 'e': 'new'}]
    # an empty PUT clears it
    assert api.put(meta_path(vid), json={'metadata': {}}).json() == {
        'metadata': {}}
    assert metadata(api, vid) == {}


def test_missing_key_volume_or_project_is_404(api, vol, stack):
    vid = vol['id']
    for resp in (api.get(meta_path(vid, 'nope')),
                 api.delete(meta_path(vid, 'nope'))):
        assert resp.status_code == 404
        assert 'has no metadata with key nope' in \
            resp.json()['itemNotFound']['message']
    missing = str(uuid.uuid4())
    for method, path, body in (
            ('GET', meta_path(missing), None),
            ('POST', meta_path(missing), {'metadata': {'k': 'v'}}),
            ('PUT', meta_path(missing), {'metadata': {'k': 'v'}}),
            ('GET', meta_path(missing, 'k'), None),
            ('PUT', meta_path(missing, 'k'), {'meta': {'k': 'v'}}),
            ('DELETE', meta_path(missing, 'k'), None)):
        assert api.request(method, path, json=body).status_code == 404
    other = stack.client(project=stack_mod.OTHER_PROJECT, roles='member')
    assert other.get(meta_path(vid)).status_code == 404
    assert other.post(meta_path(vid), json={'metadata': {
        'k': 'v'}}).status_code == 404
    assert metadata(api, vid) == {'a': '1', 'b': '2'}


def test_bad_input_is_400_and_changes_nothing(api, vol):
    vid = vol['id']
    bad_bodies = [
        {}, {'metadata': None}, {'metadata': 'x'}, {'metadata': []},
        {'metadata': {'k': 1}}, {'metadata': {'k': None}},
        {'metadata': {'': 'v'}}, {'metadata': {'k' * 256: 'v'}},
        {'metadata': {'k': 'v' * 256}}, {'metadata': {'k=v': 'v'}},
        {'metadata': {'k': 'v'}, 'extra': 1}, {'meta': {'k': 'v'}}]
    for body in bad_bodies:
        for method in ('POST', 'PUT'):
            resp = api.request(method, meta_path(vid), json=body)
            assert resp.status_code == 400, (method, body, resp.text)
            assert resp.json()['badRequest']['message']
    for body in ({}, {'meta': {}}, {'meta': {'k': 'v', 'k2': 'v'}},
                 {'meta': {'k': 1}}, {'meta': {'k': 'v' * 256}},
                 {'metadata': {'k': 'v'}}):
        resp = api.put(meta_path(vid, 'k'), json=body)
        assert resp.status_code == 400, (body, resp.text)
    resp = api.put(meta_path(vid, 'k'), json={'meta': {'other': 'v'}})
    assert resp.status_code == 400
    assert 'Request body and URI mismatch' in \
        resp.json()['badRequest']['message']
    assert api.post(meta_path(vid), data='{nope').status_code == 400
    # the longest key and value Cinder takes
    longest = {'k' * 255: 'v' * 255}
    assert api.post(meta_path(vid), json={
        'metadata': longest}).status_code == 200
    api.delete(meta_path(vid, 'k' * 255))
    assert metadata(api, vid) == {'a': '1', 'b': '2'}
    # the same limits in volume create and update
    for body in ({'size': 1, 'metadata': {'k': 'v' * 256}},
                 {'size': 1, 'metadata': {'k' * 256: 'v'}},
                 {'size': 1, 'metadata': {'k': 5}}):
        assert api.post('/volumes', json={'volume': body}
                        ).status_code == 400
    resp = api.put('/volumes/%s' % vid, json={'volume': {
        'metadata': {'k': 'v' * 256}}})
    assert resp.status_code == 400
    assert api.get('/volumes').json()['volumes'] == [
        {'id': vid, 'name': None, 'links': vol['links']}]


def test_policy_readers_read_members_write(stack, api, vol):
    vid = vol['id']
    reader = stack.client(roles='reader')
    assert reader.get(meta_path(vid)).json() == {'metadata': {
        'a': '1', 'b': '2'}}
    assert reader.get(meta_path(vid, 'a')).status_code == 200
    for method, path, body in (
            ('POST', meta_path(vid), {'metadata': {'k': 'v'}}),
            ('PUT', meta_path(vid), {'metadata': {'k': 'v'}}),
            ('PUT', meta_path(vid, 'a'), {'meta': {'a': 'x'}}),
            ('DELETE', meta_path(vid, 'a'), None)):
        resp = reader.request(method, path, json=body)
        assert resp.status_code == 403, (method, path)
        assert 'volume:' in resp.json()['forbidden']['message']
    member = stack.client(roles='member')
    assert member.post(meta_path(vid), json={'metadata': {
        'k': 'v'}}).status_code == 200
    assert metadata(api, vid) == {'a': '1', 'b': '2', 'k': 'v'}


def test_update_replaces_metadata(api, vol):
    resp = api.put('/volumes/%s' % vol['id'], json={'volume': {
        'metadata': {'x': 'y'}}})
    assert resp.status_code == 200
    assert resp.json()['volume']['metadata'] == {'x': 'y'}
    assert metadata(api, vol['id']) == {'x': 'y'}
    # name alone leaves it as it is
    api.put('/volumes/%s' % vol['id'], json={'volume': {'name': 'n'}})
    assert metadata(api, vol['id']) == {'x': 'y'}


def test_keys_are_case_sensitive(api, vol):
    api.post(meta_path(vol['id']), json={'metadata': {'A': 'upper'}})
    assert metadata(api, vol['id']) == {'a': '1', 'A': 'upper', 'b': '2'}


def test_etags_from_3_15(api, vol):
    vid = vol['id']
    old = {'OpenStack-API-Version': 'volume 3.14'}
    assert 'ETag' not in api.get(meta_path(vid), headers=old).headers
    resp = api.get(meta_path(vid))
    tag = resp.headers['ETag']
    # unchanged metadata: the same tag
    assert api.get(meta_path(vid)).headers['ETag'] == tag
    resp = api.put(meta_path(vid), json={'metadata': {'a': 'A'}},
                   headers={'If-Match': '"%s"' % tag})
    assert resp.status_code == 200
    # the tag is stale now: the next conditional update is refused
    for method, path, body in (
            ('PUT', meta_path(vid), {'metadata': {'a': 'stale'}}),
            ('PUT', meta_path(vid, 'a'), {'meta': {'a': 'stale'}})):
        resp = api.request(method, path, json=body,
                           headers={'If-Match': '"%s"' % tag})
        assert resp.status_code == 412, resp.text
    assert metadata(api, vid) == {'a': 'A'}
    new = api.get(meta_path(vid)).headers['ETag']
    assert new != tag
    resp = api.put(meta_path(vid, 'a'), json={'meta': {'a': 'fresh'}},
                   headers={'If-Match': '"%s"' % new})
    assert resp.status_code == 200
    # below 3.15 If-Match is not Cinder's: ignored
    resp = api.put(meta_path(vid), json={'metadata': {'z': 'z'}},
                   headers=dict(old, **{'If-Match': '"%s"' % tag}))
    assert resp.status_code == 200


def test_list_filter_by_metadata(api):
    gold = [api.create_volume(metadata={'tier': 'gold', 'zone': str(i)})
            for i in range(3)]
    api.create_volume(metadata={'tier': 'silver'})
    api.create_volume(metadata={'Tier': 'gold'})
    api.create_volume()

    def ids(query):
        resp = api.get('/volumes?' + query)
        assert resp.status_code == 200, resp.text
        return [v['id'] for v in resp.json()['volumes']]
    everyone = sorted(v['id'] for v in gold)
    assert sorted(ids("metadata={'tier': 'gold'}")) == everyone
    # JSON as well as Python literals (Cinder reads both)
    assert sorted(ids('metadata={"tier": "gold"}')) == everyone
    assert ids("metadata={'tier': 'gold', 'zone': '1'}") == [gold[1]['id']]
    assert ids("metadata={'tier': 'bronze'}") == []
    # pages of a filtered list, and its count
    first = api.get("/volumes?metadata={'tier':'gold'}&limit=2"
                    "&sort=created_at:asc&with_count=true").json()
    assert [v['id'] for v in first['volumes']] == [g['id'] for g in gold[:2]]
    assert first['count'] == 3
    rest = ids("metadata={'tier':'gold'}&limit=2&sort=created_at:asc"
               "&marker=%s" % gold[1]['id'])
    assert rest == [gold[2]['id']]
    for bad in ('metadata=gold', "metadata={'tier': 5}", 'metadata=[1]'):
        assert api.get('/volumes?' + bad).status_code == 400


def test_summary(stack, api):
    assert api.get('/volumes/summary', headers={
        'OpenStack-API-Version': 'volume 3.11'}).status_code == 404
    api.create_volume(size=2, metadata={'tier': 'gold', 'k': 'x'})
    api.create_volume(size=3, metadata={'tier': 'silver'})
    gone = api.create_volume(size=5, metadata={'tier': 'deleted'})
    api.delete('/volumes/%s' % gone['id'])
    api.wait_deleted(gone['id'])
    other = stack.client(project=stack_mod.OTHER_PROJECT, roles='member')
    other.create_volume(size=7, metadata={'tier': 'theirs'})
    at_312 = api.get('/volumes/summary', headers={
        'OpenStack-API-Version': 'volume 3.12'})
    assert at_312.status_code == 200
    assert at_312.json() == {'volume-summary': {'total_count': 2,
                                                'total_size': 5}}
    latest = api.get('/volumes/summary').json()['volume-summary']
    assert latest == {'total_count': 2, 'total_size': 5, 'metadata': {
        'k': ['x'], 'tier': ['gold', 'silver']}}
    everyone = api.get('/volumes/summary?all_tenants=1').json()
    assert everyone['volume-summary'] == {
        'total_count': 3, 'total_size': 12,
        'metadata': {'k': ['x'], 'tier': ['gold', 'silver', 'theirs']}}
    assert other.get('/volumes/summary').json()['volume-summary'] == {
        'total_count': 1, 'total_size': 7, 'metadata': {'tier': ['theirs']}}
    assert other.get('/volumes/summary?all_tenants=1').status_code == 403
    reader = stack.client(roles='reader')
    assert reader.get('/volumes/summary').json() == {
        'volume-summary': latest}
    empty = stack.client(project='ab' * 16, roles='member')
    assert empty.get('/volumes/summary').json() == {'volume-summary': {
        'total_count': 0, 'total_size': 0, 'metadata': {}}}
    for bad in ('bogus=1', 'all_tenants=maybe'):
        assert api.get('/volumes/summary?' + bad).status_code == 400


def test_keys_with_every_allowed_character(api, vol):
    """Keys may hold ``-_:. `` (and ``/``, which a URL cannot carry in
    one segment): each is reachable as /metadata/{key}."""
    vid = vol['id']
    keys = ['a.b', 'a:b', 'a b', 'x-y_z', 'v1.json']
    api.post(meta_path(vid), json={'metadata': {k: k for k in keys}})
    for key in keys:
        path = meta_path(vid, key.replace(' ', '%20'))
        assert api.get(path).json() == {'meta': {key: key}}, key
        assert api.put(path, json={'meta': {key: 'new'}}).status_code == 200
        assert api.delete(path).status_code == 200, key
    assert metadata(api, vid) == {'a': '1', 'b': '2'}
    api.post(meta_path(vid), json={'metadata': {'p/q': 'slash'}})
    assert metadata(api, vid)['p/q'] == 'slash'
