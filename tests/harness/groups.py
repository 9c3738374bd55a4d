"""Group type, group and group snapshot steps over the API."""
import uuid

from tests.harness import util


def create_group_type(api, name=None, specs=None, is_public=True):
    body = {'group_type': {'name': name or 'gt-%s' % uuid.uuid4().hex[:8],
                           'is_public': is_public}}
    if specs:
        body['group_type']['group_specs'] = specs
    resp = api.post('/group_types', json=body)
    assert resp.status_code == 202, resp.text
    return resp.json()['group_type']


def wait_group(api, group_id, status='available'):
    def check():
        resp = api.get('/groups/%s' % group_id)
        assert resp.status_code == 200, resp.text
        group = resp.json()['group']
        if group['status'] == status:
            return group
        assert not group['status'].startswith('error') or \
            status.startswith('error'), group
        return None
    return util.wait_for(check, what='group %s %s' % (group_id, status))


def create_group(api, group_type, volume_types, wait=True, **extra):
    body = {'group': dict(group_type=group_type, volume_types=volume_types,
                          name=extra.pop('name', 'g-%s'
                                         % uuid.uuid4().hex[:6]), **extra)}
    resp = api.post('/groups', json=body)
    assert resp.status_code == 202, resp.text
    group = resp.json()['group']
    return wait_group(api, group['id']) if wait else group


def wait_group_gone(api, group_id):
    util.wait_for(lambda: api.get('/groups/%s' % group_id).status_code
                  == 404, what='group %s deleted' % group_id)


def delete_group(api, group_id, delete_volumes=False, expect=202):
    resp = api.post('/groups/%s/action' % group_id, json={
        'delete': {'delete-volumes': delete_volumes}})
    assert resp.status_code == expect, resp.text
    return resp


def wait_group_snapshot(api, gsid, status='available'):
    def check():
        resp = api.get('/group_snapshots/%s' % gsid)
        assert resp.status_code == 200, resp.text
        found = resp.json()['group_snapshot']
        if found['status'] == status:
            return found
        assert not found['status'].startswith('error') or \
            status.startswith('error'), found
        return None
    return util.wait_for(check, what='group snapshot %s %s' % (gsid, status))


def create_group_snapshot(api, group_id, wait=True, expect=202, **extra):
    resp = api.post('/group_snapshots', json={'group_snapshot': dict(
        group_id=group_id, **extra)})
    assert resp.status_code == expect, resp.text
    if expect != 202:
        return resp
    found = resp.json()['group_snapshot']
    return wait_group_snapshot(api, found['id']) if wait else found


def snapshots_of(api, gsid):
    resp = api.get('/snapshots/detail?all_tenants=1')
    assert resp.status_code == 200, resp.text
    return [s for s in resp.json()['snapshots']
            if s.get('group_snapshot_id') == gsid]
