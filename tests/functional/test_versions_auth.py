"""Version discovery, microversion negotiation and noauth."""
from importlib import metadata

import pytest
import requests

from tests.harness import stack as stack_mod


def test_root_lists_versions_without_token(stack):
    resp = requests.get(stack.url + '/')
    assert resp.status_code == 300
    (doc,) = resp.json()['versions']
    assert doc['id'] == 'v3.0'
    assert doc['min_version'] == '3.0'
    assert doc['version'] == '3.71'
    assert doc['links'][0]['href'].endswith('/v3/')
    # Cinder's fields, and the build that answers: the installed
    # distribution's version (from git)
    assert set(doc) == {'id', 'status', 'version', 'min_version', 'updated',
                        'links', 'media-types', 'build'}
    assert doc['build'] == metadata.version('cinder-lite')


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


@pytest.mark.parametrize('token', ['admin:', ':' + stack_mod.PROJECT, ':'])
def test_an_empty_user_or_project_is_401(stack, token):
    """As a missing token: nobody may own volumes of project ''."""
    for path in ('/v3/volumes', '/v3/%s/volumes' % stack_mod.PROJECT):
        resp = requests.get(stack.url + path,
                            headers={'X-Auth-Token': token})
        assert resp.status_code == 401, resp.text
        assert 'neither part empty' in resp.json()['unauthorized'][
            'message']
    created = requests.post(stack.url + '/v3/volumes',
                            headers={'X-Auth-Token': token},
                            json={'volume': {'size': 1}})
    assert created.status_code == 401
    assert stack.client().get('/volumes?all_tenants=1').json()[
        'volumes'] == []


def test_a_project_segment_must_look_like_a_project_id(stack):
    """Cinder's project_id_regex: /v3/admin/volumes is no project's URL
    (404), even for a token whose project is 'admin'."""
    for token in ('admin', 'admin:admin'):
        resp = requests.get(stack.url + '/v3/admin/volumes',
                            headers={'X-Auth-Token': token})
        assert resp.status_code == 404, resp.text
        assert resp.json()['itemNotFound']['code'] == 404
    # a hex project id with dashes is one
    dashed = '01234567-89ab-cdef-0123-456789abcdef'
    resp = requests.get(stack.url + '/v3/%s/volumes' % dashed,
                        headers={'X-Auth-Token': 'u:' + dashed})
    assert resp.status_code == 200


def test_project_id_regex_is_an_option(tmp_path):
    s = stack_mod.Stack(tmp_path / 'st',
                        extra={'project_id_regex': '[a-z0-9-]+'})
    s.start()
    try:
        resp = requests.get(s.url + '/v3/demo/volumes',
                            headers={'X-Auth-Token': 'admin:demo'})
        assert resp.status_code == 200
    finally:
        s.stop()


def test_unknown_path_404_and_wrong_method_405(api):
    resp = api.get('/nothing-here')
    assert resp.status_code == 404
    assert resp.json()['itemNotFound']['code'] == 404
    resp = api.request('PATCH', '/volumes')
    assert resp.status_code == 405
    assert resp.headers['Allow'] == 'GET, POST'
    assert resp.json()['badMethod']['code'] == 405
