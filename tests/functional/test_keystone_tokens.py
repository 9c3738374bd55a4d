"""auth_strategy = keystone with real token handling: keystonemiddleware's
auth_token validates every request, with its own test fixture standing in
for the identity server's token lookup (AuthTokenFixture replaces only the
fetch of the token data).  Roles and project scope of the token feed
oslo.policy."""
import uuid

from keystonemiddleware import fixture as ks_fixture
import pytest

from tests.harness import stack as stack_mod
from tests.harness import tokens

P = uuid.uuid4().hex
Q = uuid.uuid4().hex


@pytest.fixture
def keystone(tmp_path):
    tokens = ks_fixture.AuthTokenFixture()
    tokens.setUp()
    s = stack_mod.Stack(tmp_path / 'st', extra={
        'auth_strategy': 'keystone'}, sections={'keystone_authtoken': {
            'www_authenticate_uri': 'http://127.0.0.1:9/identity/v3',
            'delay_auth_decision': 'false'}}).start()
    s.tokens = {}
    s.user_ids = {}
    for name, project, roles in (
        ('p-member', P, ['member', 'reader']),
        ('p-reader', P, ['reader']),
        ('q-member', Q, ['member', 'reader']),
            ('q-admin', Q, ['admin', 'member', 'reader'])):
        # add_token_data does not return the id it made: choose it here
        s.tokens[name] = uuid.uuid4().hex
        s.user_ids[name] = name
        tokens.add_token_data(token_id=s.tokens[name], user_id=name,
                              project_id=project, role_list=roles)
    yield s
    s.stop()
    tokens.cleanUp()


def test_token_scope_and_roles_drive_policy(keystone):
    tokens.token_scope_and_roles(keystone, P, Q)
