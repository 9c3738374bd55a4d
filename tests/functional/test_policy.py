"""Operators narrow the defaults in policy.yaml."""
from tests.harness import stack as stack_mod


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
