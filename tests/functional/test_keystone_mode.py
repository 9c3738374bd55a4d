"""auth_strategy = keystone: keystonemiddleware guards the API, version
discovery stays open."""
import requests

from tests.harness import stack as stack_mod


def test_keystone_mode_requires_a_token_but_not_for_discovery(tmp_path):
    # No Keystone runs here: a request without a token is refused before
    # the middleware would ask one.
    s = stack_mod.Stack(tmp_path / 'st', extra={
        'auth_strategy': 'keystone'}, sections={'keystone_authtoken': {
            'www_authenticate_uri': 'http://127.0.0.1:9/identity/v3',
            'delay_auth_decision': 'false'}}).start()
    try:
        assert requests.get(s.url + '/').status_code == 300
        assert requests.get(s.url + '/v3/').status_code == 200
        # the dashboard's files too: it asks for a token itself
        assert requests.get(s.url + '/dashboard/').status_code == 200
        health = requests.get(s.url + '/healthcheck')
        assert (health.status_code, health.text) == (200,
                                                     'database reachable')
        resp = requests.get(s.url + '/v3/%s/volumes' % stack_mod.PROJECT)
        assert resp.status_code == 401
        assert 'Keystone uri=' in resp.headers['WWW-Authenticate']
        # headers a client forges are not an identity
        resp = requests.get(
            s.url + '/v3/%s/volumes' % stack_mod.PROJECT,
            headers={'X-Identity-Status': 'Confirmed',
                     'X-Project-Id': stack_mod.PROJECT, 'X-Roles': 'admin'})
        assert resp.status_code == 401
    finally:
        s.stop()
