"""Generic volume groups as Cinder serves them: group types (3.11) and
their group specs, the default group type, private types; groups (3.13):
create, list/detail/show with filters, sort and pages, update (rename,
add and remove volumes, with Cinder's refusals), delete with and
without delete-volumes, reset_status (3.20), volumes created in a group,
the ``groups`` quota; group snapshots (3.14): create, list, show,
delete, reset_status (3.19), the snapshots they take; groups created
from a group snapshot or another group (3.14)."""
import pytest

from cinder_lite.volume import quota_api
from tests.harness import groups as gh
from tests.harness import snapshots
from tests.harness.snapshots import usage
from tests.harness import stack as stack_mod
from tests.harness import util
from tests.harness.volumes import read
from tests.harness.volumes import volume_file
from tests.harness.volumes import write

P = stack_mod.PROJECT
OTHER = stack_mod.OTHER_PROJECT


def error(resp, code):
    assert resp.status_code == code, resp.text
    return list(resp.json().values())[0]['message']


@pytest.fixture
def vtype(api):
    return api.create_type('vt-a')


@pytest.fixture
def gtype(api):
    return gh.create_group_type(api, 'gt-a')


@pytest.fixture
def group(api, gtype, vtype):
    return gh.create_group(api, gtype['id'], [vtype['id']], name='g1')


def test_group_types_crud_and_specs(api):
    old = stack_mod.Client(api.base, version='3.10')
    assert old.get('/group_types').status_code == 404
    gt = gh.create_group_type(api, 'gold', specs={'k1': 'v1'})
    assert gt == {'id': gt['id'], 'name': 'gold', 'description': None,
                  'is_public': True, 'group_specs': {'k1': 'v1'}}
    assert error(api.post('/group_types', json={'group_type': {
        'name': 'gold'}}), 409)
    assert error(api.post('/group_types', json={'group_type': {
        'name': 'x', 'bogus': 1}}), 400)
    shown = api.get('/group_types/%s' % gt['id']).json()['group_type']
    assert shown == gt
    resp = api.put('/group_types/%s' % gt['id'], json={'group_type': {
        'name': 'platinum', 'description': 'best'}})
    assert resp.status_code == 200, resp.text
    assert resp.json()['group_type']['name'] == 'platinum'
    base = '/group_types/%s/group_specs' % gt['id']
    resp = api.post(base, json={'group_specs': {
        'consistent_group_snapshot_enabled': '<is> False', 'k2': 'v2'}})
    assert resp.status_code == 202, resp.text
    assert api.get(base).json()['group_specs'] == {
        'k1': 'v1', 'k2': 'v2',
        'consistent_group_snapshot_enabled': '<is> False'}
    assert api.get(base + '/k2').json() == {'k2': 'v2'}
    assert api.put(base + '/k2', json={'k2': 'v3'}).json() == {'k2': 'v3'}
    assert 'mismatch' in error(api.put(base + '/k2', json={'k9': 'x'}), 400)
    assert error(api.put(base + '/k2', json={'k2': 'a', 'k3': 'b'}), 400)
    assert api.delete(base + '/k2').status_code == 202
    assert error(api.get(base + '/k2'), 404)
    assert error(api.delete(base + '/k2'), 404)
    # a member sees public types, without their specs, and changes none
    member = stack_mod.Client(api.base, user='m', roles='member')
    listed = member.get('/group_types').json()['group_types']
    assert [t['name'] for t in listed] == ['platinum']
    assert 'group_specs' not in listed[0]
    assert error(member.post('/group_types', json={'group_type': {
        'name': 'mine'}}), 403)
    assert error(member.get(base), 403)
    assert api.delete('/group_types/%s' % gt['id']).status_code == 202
    assert error(api.get('/group_types/%s' % gt['id']), 404)
    # the name is free again
    gh.create_group_type(api, 'platinum')


def test_private_group_type_and_default(tmp_path):
    s = stack_mod.Stack(tmp_path / 'state',
                        extra={'default_group_type': 'dflt'}).start()
    try:
        api = s.client()
        assert error(api.get('/group_types/default'), 404)
        dflt = gh.create_group_type(api, 'dflt')
        assert api.get('/group_types/default').json()['group_type'][
            'id'] == dflt['id']
        assert error(api.delete('/group_types/%s' % dflt['id']), 400)
        private = gh.create_group_type(api, 'hidden', is_public=False)
        other = s.client(project=OTHER, user='o', roles='member')
        assert error(other.get('/group_types/%s' % private['id']), 404)
        assert [t['name'] for t in other.get('/group_types').json()[
            'group_types']] == ['dflt']
        listed = api.get('/group_types?is_public=false').json()
        assert [t['name'] for t in listed['group_types']] == ['hidden']
    finally:
        s.stop()


def test_group_create_show_list_and_quota(api, gtype, vtype):
    assert error(stack_mod.Client(api.base, version='3.12').get(
        '/groups'), 404)
    assert error(api.post('/groups', json={'group': {
        'group_type': gtype['id']}}), 400)
    assert error(api.post('/groups', json={'group': {
        'group_type': 'nope', 'volume_types': [vtype['id']]}}), 404)
    assert error(api.post('/groups', json={'group': {
        'group_type': gtype['id'], 'volume_types': ['nope']}}), 404)
    g1 = gh.create_group(api, gtype['name'], [vtype['name']], name='b',
                         description='first')
    g2 = gh.create_group(api, gtype['id'], [vtype['id']], name='a')
    assert set(g1) == {'id', 'status', 'availability_zone', 'created_at',
                       'name', 'description', 'group_type',
                       'volume_types', 'group_snapshot_id',
                       'source_group_id', 'replication_status',
                       'project_id'}
    assert g1['group_type'] == gtype['id']
    assert g1['volume_types'] == [vtype['id']]
    assert g1['availability_zone'] == 'nova'
    old = stack_mod.Client(api.base, version='3.13')
    assert set(old.get('/groups/%s' % g1['id']).json()['group']) == {
        'id', 'status', 'availability_zone', 'created_at', 'name',
        'description', 'group_type', 'volume_types'}
    listed = api.get('/groups').json()['groups']
    assert listed == [{'id': g2['id'], 'name': 'a'},
                      {'id': g1['id'], 'name': 'b'}]
    by_name = api.get('/groups/detail?sort=name:asc').json()['groups']
    assert [g['name'] for g in by_name] == ['a', 'b']
    page = api.get('/groups?limit=1&sort=name:asc').json()
    assert [g['name'] for g in page['groups']] == ['a']
    assert 'marker=%s' % g2['id'] in page['group_links'][0]['href']
    assert [g['name'] for g in api.get(
        '/groups?limit=1&sort=name:asc&marker=%s' % g2['id']).json()[
        'groups']] == ['b']
    assert [g['id'] for g in api.get('/groups?name=b').json()[
        'groups']] == [g1['id']]
    assert error(api.get('/groups?bogus=1'), 400)
    assert api.get('/groups?with_count=true').json()['count'] == 2
    other = stack_mod.Client(api.base, project=OTHER, user='o',
                             roles='member')
    assert other.get('/groups').json()['groups'] == []
    assert error(other.get('/groups/%s' % g1['id']), 404)
    assert usage(api)['groups'] == 2
    resp = api.put('/os-quota-sets/%s' % P, json={'quota_set': {
        'groups': 2}})
    assert resp.status_code == 200, resp.text
    assert 'groups' in error(api.post('/groups', json={'group': {
        'group_type': gtype['id'], 'volume_types': [vtype['id']]}}), 413)
    # a volume type a group holds is not deleted
    assert error(api.delete('/types/%s' % vtype['id']), 400)
    # nor is a group type a group has
    assert error(api.delete('/group_types/%s' % gtype['id']), 400)
    for g in (g1, g2):
        gh.delete_group(api, g['id'])
        gh.wait_group_gone(api, g['id'])
    assert usage(api)['groups'] == 0
    assert quota_api.audit() == []


def test_volumes_in_a_group_and_update(api, group, gtype, vtype):
    other_type = api.create_type('vt-b')
    assert 'not compatible' in error(api.post('/volumes', json={
        'volume': {'size': 1, 'volume_type': other_type['id'],
                   'group_id': group['id']}}), 400)
    assert '3.13' in error(stack_mod.Client(api.base, version='3.12').post(
        '/volumes', json={'volume': {'size': 1, 'group_id': group['id']}}),
        400)
    v1 = api.create_volume(volume_type=vtype['id'], group_id=group['id'])
    assert v1['group_id'] == group['id']
    outside = api.create_volume(volume_type=vtype['id'])
    wrong = api.create_volume(volume_type=other_type['id'])
    assert outside['group_id'] is None
    assert [v['id'] for v in api.get('/volumes?group_id=%s' % group[
        'id']).json()['volumes']] == [v1['id']]
    shown = api.get('/groups/%s?list_volume=True' % group['id']).json()
    assert shown['group']['volumes'] == [v1['id']]
    url = '/groups/%s' % group['id']
    assert 'can not be all empty' in error(api.put(url, json={
        'group': {}}), 400)
    assert 'in both' in error(api.put(url, json={'group': {
        'add_volumes': outside['id'], 'remove_volumes': outside['id']}}),
        400)
    assert 'not supported by the group' in error(api.put(url, json={
        'group': {'add_volumes': wrong['id']}}), 400)
    assert 'cannot be found' in error(api.put(url, json={
        'group': {'add_volumes': '00000000-0000-0000-0000-000000000000'}}),
        400)
    assert 'not in the group' in error(api.put(url, json={
        'group': {'remove_volumes': outside['id']}}), 400)
    second = gh.create_group(api, gtype['id'], [vtype['id']])
    assert 'already in group' in error(api.put(
        '/groups/%s' % second['id'], json={'group': {
            'add_volumes': v1['id']}}), 400)
    resp = api.post('/volumes/%s/action' % outside['id'], json={
        'os-reset_status': {'status': 'error'}})
    assert resp.status_code == 202
    assert 'invalid state: error' in error(api.put(url, json={
        'group': {'add_volumes': outside['id']}}), 400)
    api.post('/volumes/%s/action' % outside['id'], json={
        'os-reset_status': {'status': 'available'}})
    # nothing changed by the refusals
    assert api.get('/volumes/%s' % outside['id']).json()['volume'][
        'group_id'] is None
    resp = api.put(url, json={'group': {
        'name': 'renamed', 'add_volumes': outside['id'] + ',',
        'remove_volumes': v1['id']}})
    assert resp.status_code == 202, resp.text
    shown = api.get(url + '?list_volume=true').json()['group']
    assert shown['name'] == 'renamed'
    assert shown['volumes'] == [outside['id']]
    # deleting a group that has volumes needs delete-volumes
    assert 'delete-volumes' in error(gh.delete_group(
        api, group['id'], expect=400), 400)
    gh.delete_group(api, group['id'], delete_volumes=True)
    gh.wait_group_gone(api, group['id'])
    api.wait_deleted(outside['id'])
    # the volume removed before stays
    assert api.get('/volumes/%s' % v1['id']).json()['volume'][
        'group_id'] is None


def test_copies_made_in_a_group(stack, api, group, gtype, vtype):
    """As Cinder: a volume made from a snapshot or a volume with
    ``group_id`` joins the group, with the source's data, and the
    group's snapshots take it."""
    source = api.create_volume(volume_type=vtype['id'])
    write(stack, source['id'], 0, b'source data')
    snap = snapshots.snapshot(api, source['id'])
    write(stack, source['id'], 0, b'later  data')
    from_snap = api.create_volume(snapshot_id=snap['id'],
                                  group_id=group['id'])
    clone = api.create_volume(source_volid=source['id'], size=2,
                              group_id=group['id'])
    for vol, data in ((from_snap, b'source data'), (clone, b'later  data')):
        assert vol['group_id'] == group['id']
        assert read(stack, vol['id'], 0, len(data)) == data
    assert clone['size'] == 2
    assert from_snap['snapshot_id'] == snap['id']
    assert clone['source_volid'] == source['id']
    assert sorted(api.get('/groups/%s?list_volume=True' % group['id'])
                  .json()['group']['volumes']) == sorted(
        [from_snap['id'], clone['id']])
    # the group's rules still hold: its types, its status, the version
    other_type = api.create_type('vt-b')
    assert 'not compatible' in error(api.post('/volumes', json={
        'volume': {'size': 1, 'source_volid': source['id'],
                   'volume_type': other_type['id'],
                   'group_id': group['id']}}), 400)
    assert '3.13' in error(stack_mod.Client(api.base, version='3.12').post(
        '/volumes', json={'volume': {'size': 1, 'snapshot_id': snap['id'],
                                     'group_id': group['id']}}), 400)
    assert 'not from an image or a backup' in error(api.post(
        '/volumes', json={'volume': {
            'size': 1, 'imageRef': '00000000-0000-0000-0000-000000000000',
            'group_id': group['id']}}), 400)
    assert 'could not be found' in error(api.post('/volumes', json={
        'volume': {'size': 1, 'snapshot_id': snap['id'],
                   'group_id': '00000000-0000-0000-0000-000000000000'}}),
        404)
    resp = api.post('/groups/%s/action' % group['id'], json={
        'reset_status': {'status': 'error'}})
    assert resp.status_code == 202, resp.text
    assert 'must be available' in error(api.post('/volumes', json={
        'volume': {'size': 1, 'snapshot_id': snap['id'],
                   'group_id': group['id']}}), 400)
    resp = api.post('/groups/%s/action' % group['id'], json={
        'reset_status': {'status': 'available'}})
    assert resp.status_code == 202, resp.text
    # as Cinder, a volume of a group is not retyped (the group holds its
    # type)
    assert 'not be part of an active migration or a consistency group' in \
        error(api.post('/volumes/%s/action' % clone['id'], json={
            'os-retype': {'new_type': other_type['id']}}), 400)
    assert api.get('/volumes/%s' % clone['id']).json()['volume'][
        'volume_type'] == vtype['name']
    # the group's snapshot takes the copies
    gs = gh.create_group_snapshot(api, group['id'])
    assert sorted(s['volume_id'] for s in gh.snapshots_of(
        api, gs['id'])) == sorted([from_snap['id'], clone['id']])
    resp = api.delete('/group_snapshots/%s' % gs['id'])
    assert resp.status_code == 202, resp.text
    util.wait_for(lambda: api.get('/group_snapshots/%s' % gs['id'])
                  .status_code == 404, what='group snapshot deleted')
    gh.delete_group(api, group['id'], delete_volumes=True)
    gh.wait_group_gone(api, group['id'])
    for vol in (from_snap, clone):
        api.wait_deleted(vol['id'])
    resp = api.delete('/snapshots/%s' % snap['id'])
    assert resp.status_code == 202, resp.text
    snapshots.wait_gone(api, snap['id'])
    assert api.get('/volumes/%s' % source['id']).json()['volume'][
        'group_id'] is None
    assert quota_api.audit() == []


def host_of(api, volume):
    return api.get('/volumes/%s' % volume['id']).json()['volume'][
        'os-vol-host-attr:host']


def test_volume_on_another_backend_is_not_added(tmp_path):
    s = stack_mod.Stack(tmp_path / 'state', backends={
        'one': {'volume_backend_name': 'one'},
        'two': {'volume_backend_name': 'two'}}).start()
    try:
        api = s.client()
        on_one = api.create_type('on-one', {'volume_backend_name': 'one'})
        on_two = api.create_type('on-two', {'volume_backend_name': 'two'})
        both = api.create_type('any')
        gt = gh.create_group_type(api)
        # a group lives on one backend: no backend holds both types
        resp = api.post('/groups', json={'group': {
            'group_type': gt['id'],
            'volume_types': [on_one['id'], on_two['id']]}})
        assert resp.status_code == 202
        failed = gh.wait_group(api, resp.json()['group']['id'], 'error')
        messages = api.get('/messages').json()['messages']
        assert any(m['resource_uuid'] == failed['id'] for m in messages)
        gh.delete_group(api, failed['id'])
        gh.wait_group_gone(api, failed['id'])
        group = gh.create_group(api, gt['id'], [on_one['id'], both['id']])
        assert api.get('/groups/%s' % group['id']).json()['group'][
            'status'] == 'available'
        ingroup = api.create_volume(volume_type=both['id'],
                                    group_id=group['id'])
        assert host_of(api, ingroup).startswith('testnode@one#')
        # a volume of a type the group holds, made on the other backend
        # (backend one disabled meanwhile)
        service = {'host': 'testnode@one', 'binary': 'cinder-volume'}
        assert api.put('/os-services/disable',
                       json=service).status_code == 200
        elsewhere = api.create_volume(volume_type=both['id'])
        assert api.put('/os-services/enable',
                       json=service).status_code == 200
        assert host_of(api, elsewhere).startswith('testnode@two#')
        msg = error(api.put('/groups/%s' % group['id'], json={
            'group': {'add_volumes': elsewhere['id']}}), 400)
        assert 'a group lives on one backend' in msg, msg
        # nor is a copy of it made in the group (it would be made on two)
        msg = error(api.post('/volumes', json={'volume': {
            'size': 1, 'source_volid': elsewhere['id'],
            'group_id': group['id']}}), 400)
        assert 'a group lives on one backend' in msg, msg
        assert [v['id'] for v in api.get('/volumes?group_id=%s' % group[
            'id']).json()['volumes']] == [ingroup['id']]
    finally:
        s.stop()


def test_group_snapshots(stack, api, group, vtype):
    vols = [api.create_volume(volume_type=vtype['id'], group_id=group['id'])
            for _ in range(2)]
    for i, v in enumerate(vols):
        with open(volume_file(stack, v['id']), 'r+b') as f:
            f.write(b'volume %d' % i)
    assert error(stack_mod.Client(api.base, version='3.13').get(
        '/group_snapshots'), 404)
    assert error(api.post('/group_snapshots', json={'group_snapshot': {
        'group_id': '00000000-0000-0000-0000-000000000000'}}), 404)
    before = usage(api)
    gs = gh.create_group_snapshot(api, group['id'], name='gs',
                                  description='both')
    assert set(gs) == {'id', 'group_id', 'group_type_id', 'status',
                       'created_at', 'name', 'description', 'project_id'}
    assert gs['group_id'] == group['id']
    assert gs['group_type_id'] == group['group_type']
    snaps = gh.snapshots_of(api, gs['id'])
    assert sorted(s['volume_id'] for s in snaps) == sorted(
        v['id'] for v in vols)
    assert all(s['status'] == 'available' for s in snaps)
    assert usage(api)['snapshots'] == before['snapshots'] + 2
    assert api.get('/group_snapshots').json()['group_snapshots'] == [
        {'id': gs['id'], 'name': 'gs', 'group_type_id': gs['group_type_id']}]
    assert api.get('/group_snapshots/detail?group_id=%s' % group[
        'id']).json()['group_snapshots'] == [gs]
    assert error(api.get('/group_snapshots?bogus=x'), 400)
    # its snapshots go with it, and the group stays while it does
    assert 'group snapshot' in error(api.delete('/snapshots/%s' % snaps[0][
        'id']), 400)
    assert 'group_snapshot' in error(gh.delete_group(
        api, group['id'], True, expect=400), 400)
    # a group made from it holds each volume's data at that moment
    resp = api.post('/groups/action', json={'create-from-src': {
        'group_snapshot_id': gs['id'], 'name': 'copy'}})
    assert resp.status_code == 202, resp.text
    copy = gh.wait_group(api, resp.json()['group']['id'])
    assert copy['group_snapshot_id'] == gs['id']
    copied = api.get('/groups/%s?list_volume=true' % copy['id']).json()[
        'group']['volumes']
    assert len(copied) == 2
    data = set()
    for vid in copied:
        with open(volume_file(stack, vid), 'rb') as f:
            data.add(f.read(8))
    assert data == {b'volume 0', b'volume 1'}
    # and a group from a group
    resp = api.post('/groups/action', json={'create-from-src': {
        'source_group_id': copy['id']}})
    assert resp.status_code == 202, resp.text
    clone = gh.wait_group(api, resp.json()['group']['id'])
    assert clone['source_group_id'] == copy['id']
    assert error(api.post('/groups/action', json={'create-from-src': {
        'source_group_id': copy['id'], 'group_snapshot_id': gs['id']}}),
        400)
    for g in (clone, copy):
        gh.delete_group(api, g['id'], True)
        gh.wait_group_gone(api, g['id'])
    # reset_status (3.19) and delete
    url = '/group_snapshots/%s/action' % gs['id']
    assert error(stack_mod.Client(api.base, version='3.18').post(url, json={
        'reset_status': {'status': 'error'}}), 404)
    assert error(api.post(url, json={'reset_status': {'status': 'bogus'}}),
                 400)
    member = stack_mod.Client(api.base, user='m', roles='member')
    assert error(member.post(url, json={'reset_status': {
        'status': 'error'}}), 403)
    assert api.post(url, json={'reset_status': {
        'status': 'error'}}).status_code == 202
    assert api.get('/group_snapshots/%s' % gs['id']).json()[
        'group_snapshot']['status'] == 'error'
    assert api.delete('/group_snapshots/%s' % gs['id']).status_code == 202
    util.wait_for(lambda: api.get('/group_snapshots/%s' % gs['id'])
                  .status_code == 404, what='group snapshot deleted')
    assert usage(api)['snapshots'] == before['snapshots']
    assert gh.snapshots_of(api, gs['id']) == []
    gh.delete_group(api, group['id'], True)
    gh.wait_group_gone(api, group['id'])
    assert quota_api.audit() == []


def test_group_reset_status_and_refusals(api, group):
    url = '/groups/%s/action' % group['id']
    assert error(stack_mod.Client(api.base, version='3.19').post(url, json={
        'reset_status': {'status': 'error'}}), 404)
    assert error(api.post(url, json={'reset_status': {'status': 'nope'}}),
                 400)
    assert error(api.post(url, json={'bogus': {}}), 400)
    assert api.post(url, json={'reset_status': {
        'status': 'error'}}).status_code == 202
    shown = api.get('/groups/%s' % group['id']).json()['group']
    assert shown['status'] == 'error'
    # an unusable group takes no volume and no snapshot
    assert 'must be available' in error(api.post('/group_snapshots', json={
        'group_snapshot': {'group_id': group['id']}}), 400)
    assert 'must be available' in error(api.put('/groups/%s' % group['id'],
                                                json={'group': {
                                                    'name': 'x'}}), 400)
    gh.delete_group(api, group['id'])
    gh.wait_group_gone(api, group['id'])


def test_empty_group_snapshot_refused(api, group):
    assert 'no volumes' in error(api.post('/group_snapshots', json={
        'group_snapshot': {'group_id': group['id']}}), 400)
