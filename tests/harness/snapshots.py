"""Snapshot steps over the API, and the quota usage they change."""
from tests.harness import stack as stack_mod
from tests.harness import util


def create(api, volume_id, expect=202, **extra):
    body = {'snapshot': dict(volume_id=volume_id, **extra)}
    resp = api.post('/snapshots', json=body)
    assert resp.status_code == expect, resp.text
    return resp.json().get('snapshot', resp.json())


def wait_snapshot(api, sid, status='available'):
    def check():
        resp = api.get('/snapshots/%s' % sid)
        assert resp.status_code == 200, resp.text
        snap = resp.json()['snapshot']
        if snap['status'] == status:
            return snap
        assert not snap['status'].startswith('error') or \
            status.startswith('error'), snap
        return None
    return util.wait_for(check, what='snapshot %s %s' % (sid, status))


def wait_gone(api, sid):
    util.wait_for(lambda: api.get('/snapshots/%s' % sid).status_code == 404,
                  what='snapshot %s deleted' % sid)


def snapshot(api, volume_id, **extra):
    """A snapshot of ``volume_id``, once it is available."""
    return wait_snapshot(api, create(api, volume_id, **extra)['id'])


def usage(api, project=stack_mod.PROJECT):
    """{resource: in_use} of ``project``'s quota set."""
    resp = api.get('/os-quota-sets/%s?usage=True' % project)
    assert resp.status_code == 200, resp.text
    return {k: v['in_use'] for k, v in resp.json()['quota_set'].items()
            if k != 'id'}
