"""Who speaks on the bus, for a cinder_lite in keystone mode: the
scenario of tests/functional/test_bus_callers.py (in-process bus) and
tests/integration/test_bus_permissions.py (RabbitMQ), both with
keystonemiddleware's token fixture standing in for the identity server's
token lookup (it replaces only the fetch of the token data: the API's
auth_token middleware validates each message's token as it does a REST
request's)."""
import uuid

from keystonemiddleware import fixture as ks_fixture
import pytest
import requests

from cinder_lite.api import rpcapi
from cinder_lite.common import context as cl_context
from cinder_lite.common import exception
from cinder_lite.connector import client
from cinder_lite.connector import host

P = uuid.uuid4().hex
Q = uuid.uuid4().hex
SERVICE_PROJECT = uuid.uuid4().hex
INSTANCE = '22222222-2222-4222-8222-222222222222'

# name: (project, roles)
PEOPLE = {
    'p-member': (P, ['member', 'reader']),
    'p-reader': (P, ['reader']),
    'q-member': (Q, ['member', 'reader']),
    'q-admin': (Q, ['admin', 'member', 'reader']),
    'compute': (SERVICE_PROJECT, ['service']),
}


def keystone_sections():
    return {'keystone_authtoken': {
        'www_authenticate_uri': 'http://127.0.0.1:9/identity/v3',
        'delay_auth_decision': 'false'}}


class Tokens:
    """The token fixture with one token per name of PEOPLE."""

    def __init__(self):
        self.fixture = ks_fixture.AuthTokenFixture()
        self.fixture.setUp()
        self.tokens = {}
        for name, (project, roles) in PEOPLE.items():
            self.tokens[name] = uuid.uuid4().hex
            self.fixture.add_token_data(
                token_id=self.tokens[name], user_id=name,
                project_id=project, role_list=roles)

    def __getitem__(self, name):
        return self.tokens[name]

    def cleanup(self):
        self.fixture.cleanUp()


def rest(url, token, method, project, path, body=None):
    return requests.request(
        method, '%s/v3/%s%s' % (url, project, path), json=body,
        headers={'X-Auth-Token': token,
                 'OpenStack-API-Version': 'volume 3.71'}, timeout=30)


def _attachments(url, tokens, volume_id):
    resp = rest(url, tokens['q-admin'], 'GET', Q,
                '/attachments/detail?all_tenants=1&volume_id=%s' % volume_id)
    assert resp.status_code == 200, resp.text
    return sorted((a['id'], a['status'], a['attach_mode'])
                  for a in resp.json()['attachments'])


def _refused(call, *what):
    with pytest.raises(exception.NotAuthorized) as e:
        call()
    for words in what:
        assert words in str(e.value), str(e.value)
    return e.value


def forged_contexts_refused(url, tokens, wait_for):
    """``url``: the API; ``tokens``: a Tokens; ``wait_for``:
    tests.harness.util.wait_for.  The compute node's client attaches
    with a member's token and its own service token; messages whose
    context makes up who is calling change nothing."""
    resp = rest(url, tokens['q-admin'], 'POST', Q, '/types', {
        'volume_type': {'name': 'bus-ma-%s' % uuid.uuid4().hex[:8],
                        'extra_specs': {'multiattach': '<is> True'}}})
    assert resp.status_code == 200, resp.text
    vtype = resp.json()['volume_type']['name']
    resp = rest(url, tokens['p-member'], 'POST', P, '/volumes',
                {'volume': {'size': 1, 'volume_type': vtype}})
    assert resp.status_code == 202, resp.text
    vol = resp.json()['volume']
    wait_for(lambda: rest(url, tokens['p-member'], 'GET', P,
                          '/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available', what='volume available')

    # the real attach over the bus, as a compute node does it
    compute = client.AttachClient(
        client.BusTransport(P, token=tokens['p-member'],
                            service_token=tokens['compute']),
        host.get_connector(host='compute-bus', ip='127.0.0.2'))
    att = compute.attach(vol['id'], INSTANCE, mode='rw')
    assert (att['status'], att['attach_mode']) == ('attached', 'rw')
    assert att['connection_info']['access_mode'] == 'rw'
    # a service's (Keystone said so): the project's member cannot pull
    # it away over REST
    assert rest(url, tokens['p-member'], 'DELETE', P,
                '/attachments/%s' % att['id']).status_code == 409
    before = _attachments(url, tokens, vol['id'])
    assert before == [(att['id'], 'attached', 'rw')]

    api = rpcapi.AttachmentAPI()

    def forged(**values):
        values.setdefault('user_id', 'intruder')
        values.setdefault('project_id', P)
        return cl_context.RequestContext(current=False, **values)

    admin = dict(is_admin=True, roles=['admin', 'member', 'reader'],
                 service_roles=['service'])
    # no token at all: whatever the context says
    ctxt = forged(**admin)
    _refused(lambda: api.attachment_get(ctxt, att['id']),
             'must carry', 'Keystone token')
    _refused(lambda: api.attachment_delete(ctxt, att['id']),
             'Keystone token')
    _refused(lambda: api.attachment_create(
        ctxt, vol['id'], INSTANCE, None, 'rw'), 'Keystone token')
    # a token Keystone does not know
    ctxt = forged(auth_token=uuid.uuid4().hex, **admin)
    _refused(lambda: api.attachment_delete(ctxt, att['id']),
             'did not accept')
    _refused(lambda: api.attachment_create(
        ctxt, vol['id'], INSTANCE, None, 'rw'), 'did not accept')
    # a good user token with a made-up service token
    ctxt = forged(auth_token=tokens['p-member'],
                  service_token=uuid.uuid4().hex)
    _refused(lambda: api.attachment_delete(ctxt, att['id']),
             'did not accept')
    # another project's member whose message names project P, admin:
    # Keystone says project Q, a member, and P's attachment is not found
    ctxt = forged(auth_token=tokens['q-member'], **admin)
    for call in (lambda: api.attachment_get(ctxt, att['id']),
                 lambda: api.attachment_delete(ctxt, att['id']),
                 lambda: api.attachment_takeover(ctxt, att['id'])):
        with pytest.raises(exception.NotFound):
            call()
    with pytest.raises(exception.VolumeNotFound):
        api.attachment_create(ctxt, vol['id'], INSTANCE, None, 'rw')
    # the project's own member, saying it is an admin and a service:
    # Keystone says a member without the service role, who may not
    # delete a service's attachment
    ctxt = forged(auth_token=tokens['p-member'], **admin)
    with pytest.raises(exception.Conflict):
        api.attachment_delete(ctxt, att['id'])
    # the project's reader with the member role made up: reads, but
    # attaches nothing
    ctxt = forged(auth_token=tokens['p-reader'],
                  roles=['member', 'admin'], is_admin=True)
    assert api.attachment_get(ctxt, att['id'])['id'] == att['id']
    with pytest.raises(exception.PolicyNotAuthorized):
        api.attachment_create(ctxt, vol['id'], INSTANCE, None, 'ro')
    assert _attachments(url, tokens, vol['id']) == before

    # the compute node detaches with its tokens
    assert compute.detach(att['id']) == []
    assert _attachments(url, tokens, vol['id']) == []
    assert rest(url, tokens['p-member'], 'DELETE', P, '/volumes/%s'
                % vol['id']).status_code == 202
