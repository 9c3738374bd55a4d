"""Operators narrow the defaults in policy.yaml."""
import os
import time

from tests.harness import stack as stack_mod
from tests.harness import util


def test_multiattach_policy_can_be_restricted_to_admins(tmp_path):
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"volume:multiattach": "rule:admin_api"\n')
    s = stack_mod.Stack(tmp_path / 'st', sections={'oslo_policy': {
        'policy_file': str(policy_file)}}).start()
    try:
        admin = s.client()
        admin.create_type('ma', {'multiattach': '<is> True'})
        admin.create_type('plain')
        member = s.client(roles='member')
        resp = member.post('/volumes', json={'volume': {
            'size': 1, 'volume_type': 'ma'}})
        assert resp.status_code == 403
        assert 'volume:multiattach' in resp.json()['forbidden']['message']
        assert member.get('/volumes').json()['volumes'] == []
        vol = member.create_volume(volume_type='plain')
        resp = member.post('/volumes/%s/action' % vol['id'], json={
            'os-retype': {'new_type': 'ma'}})
        assert resp.status_code == 403
        assert admin.create_volume(volume_type='ma')['multiattach'] is True
    finally:
        s.stop()


def test_an_edit_of_policy_yaml_applies_to_a_running_api(tmp_path):
    """The enforcer looks for a changed policy file at most once a second
    (cinder_lite.common.policy.Enforcer), not before every check: an
    operator's edit still applies without a restart."""
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"volume:multiattach": "rule:admin_api"\n')
    s = stack_mod.Stack(tmp_path / 'st', sections={'oslo_policy': {
        'policy_file': str(policy_file)}}).start()
    try:
        s.client().create_type('ma', {'multiattach': '<is> True'})
        member = s.client(roles='member')

        def create():
            return member.post('/volumes', json={'volume': {
                'size': 1, 'volume_type': 'ma'}}).status_code
        assert create() == 403
        policy_file.write_text('"volume:multiattach": ""\n')
        # (a new mtime even on a file system that keeps whole seconds)
        os.utime(policy_file, (time.time() + 5, time.time() + 5))
        util.wait_for(lambda: create() == 202, timeout=30,
                      what="the edited policy to apply")
    finally:
        s.stop()
