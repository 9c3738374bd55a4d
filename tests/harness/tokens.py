"""Token scope and roles driving policy, for any cinder_lite in keystone
mode: tests/functional/test_keystone_tokens.py runs the scenario with
keystonemiddleware's token fixture, tests/integration/test_nova.py with a
real Keystone."""
import uuid

import requests

from tests.harness import util


def call(s, who, method, project, path, body=None):
    return requests.request(
        method, '%s/v3/%s%s' % (s.url, project, path), json=body,
        headers={'X-Auth-Token': s.tokens[who],
                 'OpenStack-API-Version': 'volume 3.71'}, timeout=30)


def token_scope_and_roles(s, P, Q):
    """The scenario, for any ``s`` with ``url``, ``tokens`` and
    ``user_ids`` of p-member, p-reader (project P), q-member and q-admin
    (project Q); tests/integration/test_nova.py runs it with a real
    Keystone."""
    resp = call(s, 'p-member', 'POST', P, '/volumes',
                {'volume': {'size': 1, 'name': 'from-a-token'}})
    assert resp.status_code == 202, resp.text
    vol = resp.json()['volume']
    assert vol['user_id'] == s.user_ids['p-member']
    util.wait_for(lambda: call(s, 'p-member', 'GET', P, '/volumes/%s'
                               % vol['id']).json()['volume'][
        'status'] == 'available', what='volume available')
    # a reader of the project sees it and cannot write
    assert call(s, 'p-reader', 'GET', P, '/volumes/%s' % vol['id']
                ).status_code == 200
    resp = call(s, 'p-reader', 'POST', P, '/volumes',
                {'volume': {'size': 1}})
    assert resp.status_code == 403, resp.text
    assert resp.json()['forbidden']['code'] == 403
    resp = call(s, 'p-reader', 'DELETE', P, '/volumes/%s' % vol['id'])
    assert resp.status_code == 403, resp.text
    # another project's member neither sees it nor reaches it through a
    # URL naming the owner's project
    assert call(s, 'q-member', 'GET', Q, '/volumes/%s' % vol['id']
                ).status_code == 404
    assert call(s, 'q-member', 'GET', P, '/volumes/%s' % vol['id']
                ).status_code == 400
    assert vol['id'] not in [v['id'] for v in call(
        s, 'q-member', 'GET', Q, '/volumes').json()['volumes']]
    # listing every project takes the admin role; errors keep Cinder's
    # JSON body behind keystonemiddleware
    resp = call(s, 'q-member', 'GET', Q, '/volumes?all_tenants=1')
    assert resp.status_code == 403
    assert 'volume:get_all_tenants' in resp.json()['forbidden']['message']
    # an admin of another project lists every project's volumes
    listed = call(s, 'q-admin', 'GET', Q, '/volumes/detail?all_tenants=1')
    assert vol['id'] in [v['id'] for v in listed.json()['volumes']]
    # tokens the identity server does not know are refused
    resp = requests.get('%s/v3/%s/volumes' % (s.url, P),
                        headers={'X-Auth-Token': uuid.uuid4().hex})
    assert resp.status_code == 401
    assert call(s, 'p-member', 'DELETE', P, '/volumes/%s' % vol['id']
                ).status_code == 202
