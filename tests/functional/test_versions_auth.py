"""Version discovery, microversion negotiation and noauth."""
import requests

from tests import stack as stack_mod


def test_root_lists_versions_without_token(stack):
    resp = requests.get(stack.url + '/')
    assert resp.status_code == 300
    (doc,) = resp.json()['versions']
    assert doc['id'] == 'v3.0'
    assert doc['min_version'] == '3.0'
    assert doc['version'] == '3.71'
    assert doc['links'][0]['href'].endswith('/v3/')


def test_v3_document_with_and_without_slash_and_token(stack):
    for path in ('/v3', '/v3/'):
        resp = requests.get(stack.url + path)
        assert resp.status_code == 200, path
        assert resp.json()['versions'][0]['version'] == '3.71'


def test_microversion_echoed(api):
    resp = api.get('/volumes', headers={
        'OpenStack-API-Version': 'volume 3.48'})
    assert resp.status_code == 200
    assert resp.headers['OpenStack-API-Version'] == 'volume 3.48'
    assert 'OpenStack-API-Version' in resp.headers['Vary']


def test_no_version_header_means_3_0(stack):
    client = stack.client(version=None)
    resp = client.get('/volumes')
    assert resp.headers['OpenStack-API-Version'] == 'volume 3.0'


def test_latest_and_legacy_header(stack):
    client = stack.client(version=None)
    resp = client.get('/volumes', headers={
        'OpenStack-API-Version': 'volume latest'})
    assert resp.headers['OpenStack-API-Version'] == 'volume 3.71'
    resp = client.get('/volumes', headers={
        'OpenStack-Volume-microversion': '3.27'})
    assert resp.headers['OpenStack-API-Version'] == 'volume 3.27'


def test_version_out_of_range_is_406(stack):
    client = stack.client(version=None)
    for bad in ('3.72', '2.9', '4.0'):
        resp = client.get('/volumes', headers={
            'OpenStack-API-Version': 'volume %s' % bad})
        assert resp.status_code == 406, bad
        fault = resp.json()['computeFault']
        assert fault['code'] == 406
        assert 'Minimum is 3.0 and maximum is 3.71' in fault['message']


def test_malformed_version_is_400(stack):
    client = stack.client(version=None)
    resp = client.get('/volumes', headers={
        'OpenStack-API-Version': 'volume three'})
    assert resp.status_code == 400
    assert 'invalid format' in resp.json()['badRequest']['message']


def test_missing_token_is_401(stack):
    resp = requests.get(stack.url + '/v3/%s/volumes' % stack_mod.PROJECT)
    assert resp.status_code == 401
    assert resp.json()['unauthorized']['code'] == 401


def test_project_in_url_must_match_token(stack):
    client = stack.client()
    resp = client.get('/v3/%s/volumes' % stack_mod.OTHER_PROJECT,
                      raw_path=True)
    assert resp.status_code == 400
    assert resp.json() == {'badRequest': {
        'code': 400, 'message': "Malformed request url: the project in "
        "the URL (%s) is not the token's project (%s)." % (
            stack_mod.OTHER_PROJECT, stack_mod.PROJECT)}}


def test_project_less_urls(stack):
    client = stack.client(project_in_url=False)
    vol = client.create_volume(name='projectless')
    assert client.get('/volumes/%s' % vol['id']).status_code == 200
    listed = client.get('/volumes').json()['volumes']
    assert [v['id'] for v in listed] == [vol['id']]


def test_token_without_colon_means_project_equals_user(stack):
    resp = requests.get(stack.url + '/v3/%s/volumes' % stack_mod.PROJECT,
                        headers={'X-Auth-Token': stack_mod.PROJECT})
    assert resp.status_code == 200


def test_unknown_path_404_and_wrong_method_405(api):
    resp = api.get('/nothing-here')
    assert resp.status_code == 404
    assert resp.json()['itemNotFound']['code'] == 404
    resp = api.request('PATCH', '/volumes')
    assert resp.status_code == 405
    assert resp.headers['Allow'] == 'GET, POST'
    assert resp.json()['badMethod']['code'] == 405
