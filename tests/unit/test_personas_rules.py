"""The persona rules of cinder_lite.common.policy asked directly: who is
given an attachment's secrets (``volume:attachment_secrets``), and that
every rule is for project-scoped tokens only."""
from oslo_config import cfg
import pytest

from cinder_lite.common import context
from cinder_lite.common import policy


@pytest.fixture
def enforcer():
    conf = cfg.ConfigOpts()
    conf([], project='cinder_lite_personas_test', default_config_files=[])
    enforcer = policy.Enforcer(conf)
    enforcer.register_defaults(policy.list_rules())
    enforcer.load_rules()
    return enforcer


def _creds(project='p1', roles=(), service_roles=(), **kw):
    return context.RequestContext(
        user_id='u1', project_id=project, roles=list(roles),
        is_admin='admin' in roles, service_roles=list(service_roles),
        **kw).to_policy_values()


@pytest.mark.parametrize('who,creds,sees', [
    ('admin of another project', _creds('p2', ['admin']), True),
    ('member of the owner', _creds(roles=['member']), True),
    ('member and reader of the owner', _creds(roles=['member', 'reader']),
     True),
    ('service user', _creds('service', ['service']), True),
    ('reader with a service token', _creds(roles=['reader'],
                                           service_roles=['service']), True),
    ('reader of the owner', _creds(roles=['reader']), False),
    ('member of another project', _creds('p2', ['member', 'reader']), False),
    ('made-up role', _creds(roles=['foo']), False),
])
def test_who_sees_attachment_secrets(enforcer, who, creds, sees):
    assert enforcer.authorize(policy.ATTACHMENT_SECRETS,
                              {'project_id': 'p1'}, creds) is sees, who


def test_every_rule_is_for_project_scope():
    assert {tuple(r.scope_types or ()) for r in policy.list_rules()} == {
        ('project',)}


def test_a_system_scoped_token_is_refused(enforcer):
    creds = _creds(None, ['admin', 'member', 'reader'], system_scope='all')
    assert not enforcer.authorize(policy.VOLUME_GET_ALL,
                                  {'project_id': 'p1'}, creds)
    assert enforcer.authorize(policy.VOLUME_GET_ALL, {'project_id': 'p1'},
                              _creds(roles=['reader']))
