"""The enforcer's memory of verdicts (cinder_lite.common.policy.Enforcer):
a verdict is made once per rule, target and credentials, never outlives
the rules it was made with, and is never kept for a check that may
answer differently to the same question."""
from oslo_config import cfg
from oslo_policy import _checks
from oslo_policy import policy as oslo_policy
import pytest

from cinder_lite.common import context
from cinder_lite.common import policy


@pytest.fixture
def enforcer():
    conf = cfg.ConfigOpts()
    conf([], project='cinder_lite_policy_test', default_config_files=[])
    enforcer = policy.Enforcer(conf)
    enforcer.register_defaults(policy.list_rules())
    enforcer.load_rules()
    return enforcer


@pytest.fixture
def evaluations(monkeypatch):
    """The checks oslo.policy evaluated (a rule and each part of it)."""
    seen = []
    check = _checks._check

    def counted(rule, target, creds, enforcer, current_rule):
        seen.append(rule)
        return check(rule, target, creds, enforcer, current_rule)
    monkeypatch.setattr(_checks, '_check', counted)
    return seen


def _creds(project='p1', roles=('member', 'reader')):
    return context.RequestContext(user_id='u1', project_id=project,
                                  roles=list(roles)).to_policy_values()


def _verdict(enforcer, rule, project, creds):
    return enforcer.authorize(rule, {'project_id': project}, creds)


def test_a_verdict_is_made_once_for_the_same_question(enforcer, evaluations):
    assert _verdict(enforcer, policy.ATTACHMENT_CREATE, 'p1', _creds())
    made = len(evaluations)
    assert made >= 1
    for _ in range(3):
        assert _verdict(enforcer, policy.ATTACHMENT_CREATE, 'p1', _creds())
    assert len(evaluations) == made


def test_another_target_or_caller_gets_its_own_verdict(enforcer):
    assert _verdict(enforcer, policy.ATTACHMENT_CREATE, 'p1', _creds())
    # the same caller on another project's resource
    assert not _verdict(enforcer, policy.ATTACHMENT_CREATE, 'p2', _creds())
    # a reader of the same project may look but not write
    reader = _creds(roles=('reader',))
    assert not _verdict(enforcer, policy.ATTACHMENT_CREATE, 'p1', reader)
    assert _verdict(enforcer, policy.ATTACHMENT_GET, 'p1', reader)
    # and the first question still gets its first answer
    assert _verdict(enforcer, policy.ATTACHMENT_CREATE, 'p1', _creds())


def test_new_rules_are_asked_at_once(enforcer):
    assert _verdict(enforcer, policy.ATTACHMENT_CREATE, 'p1', _creds())
    enforcer.set_rules(oslo_policy.Rules.from_dict(
        {policy.ATTACHMENT_CREATE: '!'}), overwrite=False)
    assert not _verdict(enforcer, policy.ATTACHMENT_CREATE, 'p1', _creds())


def test_a_policy_file_read_again_drops_the_verdicts(enforcer, tmp_path):
    assert _verdict(enforcer, policy.ATTACHMENT_CREATE, 'p1', _creds())
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"%s": "!"\n' % policy.ATTACHMENT_CREATE)
    enforcer.policy_path = str(policy_file)
    enforcer.load_rules(force_reload=True)
    assert not _verdict(enforcer, policy.ATTACHMENT_CREATE, 'p1', _creds())


class _Counting(_checks.Check):
    """A check that may answer differently each time it is asked, as an
    http: check asking a server does."""

    asked = 0

    def __call__(self, target, creds, enforcer, current_rule=None):
        type(self).asked += 1
        return type(self).asked % 2 == 1


def test_a_rule_reaching_another_kind_of_check_is_asked_every_time(
        enforcer, monkeypatch):
    monkeypatch.setitem(_checks.registered_checks, 'counting', _Counting)
    _Counting.asked = 0
    enforcer.set_rules(oslo_policy.Rules.from_dict({
        'flip': 'counting:x',
        policy.ATTACHMENT_CREATE: 'rule:owner and rule:flip'}),
        overwrite=False)
    answers = [_verdict(enforcer, policy.ATTACHMENT_CREATE, 'p1', _creds())
               for _ in range(4)]
    assert answers == [True, False, True, False]
    assert _Counting.asked == 4


def test_credentials_it_cannot_hold_are_still_answered(enforcer):
    creds = dict(_creds(), extra={'nested': ['x']})
    assert _verdict(enforcer, policy.ATTACHMENT_CREATE, 'p1', creds)
    assert enforcer._verdicts == {}
