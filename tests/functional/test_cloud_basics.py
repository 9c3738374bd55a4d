"""What every Cinder cloud has: availability zones, extensions, os-hosts,
os-force_delete, the read-only flag as Cinder shows it, and freezing a
backend (os-services/freeze and thaw)."""
import uuid

import pytest

from tests.harness.attach import I1, I2, behind_the_lock, connector, create
from tests.harness import stack as stack_mod



@pytest.fixture
def two(tmp_path):
    """Two file backends, ``file`` and ``b``, in zone ``nova``."""
    s = stack_mod.Stack(tmp_path / 'st', backends={'file': {}, 'b': {}}
                        ).start()
    yield s
    s.stop()


def disable(api, host):
    resp = api.put('/os-services/disable', json={
        'host': host, 'binary': 'cinder-volume'})
    assert resp.status_code == 200, resp.text


def act(api, vid, body, expect=202):
    resp = api.post('/volumes/%s/action' % vid, json=body)
    assert resp.status_code == expect, resp.text
    return resp


# -- availability zones ------------------------------------------------------
def test_availability_zones(two):
    api = two.client()
    available = {'availabilityZoneInfo': [
        {'zoneName': 'nova', 'zoneState': {'available': True}}]}
    assert api.get('/os-availability-zone').json() == available
    # any caller of the project reads them, with or without the project
    # in the URL
    reader = two.client(roles='reader', project_in_url=False)
    assert reader.get('/os-availability-zone').json() == available
    # a zone is available while one of its volume services is enabled
    disable(api, 'testnode@b')
    assert api.get('/os-availability-zone').json() == available
    disable(api, 'testnode@file')
    assert api.get('/os-availability-zone').json() == {
        'availabilityZoneInfo': [{'zoneName': 'nova',
                                  'zoneState': {'available': False}}]}


# -- extensions --------------------------------------------------------------
def test_extensions(api):
    body = api.get('/extensions').json()
    by_alias = {e['alias']: e for e in body['extensions']}
    assert by_alias['os-hosts'] == {
        'name': 'Hosts', 'alias': 'os-hosts',
        'description': 'Admin-only host administration.',
        'updated': '2011-06-29T00:00:00+00:00', 'links': []}
    for alias in ('os-admin-actions', 'os-availability-zone',
                  'os-volume-actions', 'os-services', 'os-quota-sets',
                  'os-volume-type-access', 'scheduler-stats'):
        assert alias in by_alias
    # nothing cinder_lite does not serve
    for alias in ('backups', 'cgsnapshots', 'os-snapshot-actions',
                  'os-volume-manage', 'encryption'):
        assert alias not in by_alias
    assert api.get('/extensions/os-hosts').json() == {
        'extension': by_alias['os-hosts']}
    resp = api.get('/extensions/backups')
    assert resp.status_code == 404
    assert resp.json()['itemNotFound']['message'] == \
        'Extension backups could not be found.'


# -- os-hosts ----------------------------------------------------------------
def _resource(host, project, count, size):
    return {'resource': {
        'host': host, 'project': project, 'volume_count': str(count),
        'total_volume_gb': str(size), 'snapshot_count': '0',
        'total_snapshot_gb': '0'}}


def test_hosts_list_and_show(two):
    api = two.client()
    hosts = api.get('/os-hosts').json()['hosts']
    assert sorted((h['host_name'], h['service'], h['zone'])
                  for h in hosts) == [
        ('testnode', 'cinder-backup', 'nova'),
        ('testnode', 'cinder-scheduler', 'nova'),
        ('testnode@b', 'cinder-volume', 'nova'),
        ('testnode@file', 'cinder-volume', 'nova')]
    assert {(h['service-status'], h['service-state']) for h in hosts} == {
        ('available', 'enabled')}
    assert all(h['last-update'] for h in hosts)
    assert len(api.get('/os-hosts?zone=nova').json()['hosts']) == 4
    assert api.get('/os-hosts?zone=mars').json() == {'hosts': []}
    # what a volume service holds, per project and in total
    file_type = api.create_type('on-file', {'volume_backend_name': 'file'})
    api.create_volume(size=2, volume_type=file_type['name'])
    api.create_volume(size=3, volume_type=file_type['name'])
    other = two.client(project=stack_mod.OTHER_PROJECT, roles='member')
    other.create_volume(size=4, volume_type=file_type['name'])
    # (sorted by project: OTHER_PROJECT sorts after PROJECT)
    assert api.get('/os-hosts/testnode@file').json() == {'host': [
        _resource('testnode@file', '(total)', 3, 9),
        _resource('testnode@file', stack_mod.PROJECT, 2, 5),
        _resource('testnode@file', stack_mod.OTHER_PROJECT, 1, 4)]}
    assert api.get('/os-hosts/testnode@b').json() == {'host': [
        _resource('testnode@b', '(total)', 0, 0)]}
    # not a volume service, unknown, or disabled: 404 (as Cinder)
    for host in ('testnode', 'nohost@x'):
        assert api.get('/os-hosts/%s' % host).status_code == 404
    disable(api, 'testnode@b')
    assert api.get('/os-hosts/testnode@b').status_code == 404
    assert 'testnode@b' not in [
        h['host_name'] for h in api.get('/os-hosts').json()['hosts']]
    # admins only; unknown filters are refused
    member = two.client(roles='member')
    for path in ('/os-hosts', '/os-hosts/testnode@file'):
        resp = member.get(path)
        assert resp.status_code == 403
        assert 'volume_extension:hosts' in resp.json()['forbidden'][
            'message']
    assert api.get('/os-hosts?service=x').status_code == 400


# -- os-force_delete ---------------------------------------------------------
def test_force_delete_whatever_the_status(stack, api):
    for status in ('error', 'attaching', 'error_deleting', 'reserved',
                   'maintenance', 'creating'):
        vol = api.create_volume()
        act(api, vol['id'], {'os-reset_status': {'status': status}})
        # a plain delete refuses all but error and error_deleting
        act(api, vol['id'], {'os-force_delete': {}})
        api.wait_deleted(vol['id'])
    # cinderclient's body
    vol = api.create_volume()
    act(api, vol['id'], {'os-force_delete': None})
    api.wait_deleted(vol['id'])
    # the storage went with it
    assert not any(name.startswith('volume-') for name in
                   _files(stack))


def _files(stack):
    import os
    path = os.path.join(stack.state_path, 'volumes', 'file')
    return os.listdir(path) if os.path.isdir(path) else []


def test_force_delete_detaches_what_is_not_attached(api):
    api.create_type('ma', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='ma')
    vid = vol['id']
    reserved = create(api, vid, I1)
    connecting = create(api, vid, I2, connector())
    assert connecting['status'] == 'attaching'
    act(api, vid, {'os-force_delete': {}})
    api.wait_deleted(vid)
    for att in (reserved, connecting):
        assert api.get('/attachments/%s' % att['id']).status_code == 404
    events = api.get('/os-attachment-events?volume_id=%s' % vid).json()
    detached = {e['attachment_id'] for e in events['attachment_events']
                if e['to_status'] == 'detached'}
    assert detached == {reserved['id'], connecting['id']}


def test_force_delete_refuses_an_attached_volume(api):
    vol = api.create_volume()
    att = create(api, vol['id'], I1, connector())
    assert api.post('/attachments/%s/action' % att['id'], json={
        'os-complete': None}).status_code == 204
    resp = act(api, vol['id'], {'os-force_delete': {}}, expect=400)
    assert 'must not be attached' in resp.json()['badRequest']['message']
    shown = api.get('/volumes/%s' % vol['id']).json()['volume']
    assert shown['status'] == 'in-use'
    assert api.get('/attachments/%s' % att['id']).json()['attachment'][
        'status'] == 'attached'


def test_force_delete_refuses_a_volume_begin_detaching_marked(api):
    """os-begin_detaching marks the attachment detaching while its host
    still uses it (Nova has not detached it yet): the volume is still
    attached for a delete, forced or not, and keeps its export."""
    vol = api.create_volume()
    att = create(api, vol['id'], I1, connector())
    assert api.post('/attachments/%s/action' % att['id'], json={
        'os-complete': None}).status_code == 204
    act(api, vol['id'], {'os-begin_detaching': None})
    resp = act(api, vol['id'], {'os-force_delete': {}}, expect=400)
    assert 'must not be attached' in resp.json()['badRequest']['message']
    shown = api.get('/attachments/%s' % att['id']).json()['attachment']
    assert (shown['status'], shown['connection_info']) == (
        'detaching', att['connection_info'])
    act(api, vol['id'], {'os-roll_detaching': None})
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'in-use'


def test_force_delete_refuses_a_volume_attached_while_it_waited(api):
    """os-force_delete reads the attachments, sees none attached, and
    detaches them; one completed (os-complete) while it waited for the
    volume's lock refuses it (400) as an attached volume does, instead
    of losing its export under the server just told it is attached."""
    from cinder_lite.db import attachments as db_attachments

    vol = api.create_volume()
    att = create(api, vol['id'], I1)

    def complete(session):
        db_attachments.transition(session, att['id'], 'complete')
        db_attachments.sync_volume_status(session, vol['id'])

    reply = behind_the_lock(api, vol['id'], complete,
                            {'os-force_delete': {}})
    assert reply.status_code == 400, reply.text
    assert 'must not be attached' in reply.json()['badRequest']['message']
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'in-use'
    assert api.get('/attachments/%s' % att['id']).json()['attachment'][
        'status'] == 'attached'


def test_force_delete_of_a_volume_detached_while_it_waited(api):
    """os-force_delete that finds an attachment detached by another
    request while it waited for the volume's lock goes on: that detach
    did what it was going to do."""
    from cinder_lite.db import attachments as db_attachments

    vol = api.create_volume()
    att = create(api, vol['id'], I1)

    def detach(session):
        db_attachments.transition(session, att['id'], 'detach')
        db_attachments.sync_volume_status(session, vol['id'])

    reply = behind_the_lock(api, vol['id'], detach, {'os-force_delete': {}})
    assert reply.status_code == 202, reply.text
    api.wait_deleted(vol['id'])


def test_force_delete_policy_and_bad_input(stack, api):
    vol = api.create_volume()
    member = stack.client(roles='member')
    resp = member.post('/volumes/%s/action' % vol['id'], json={
        'os-force_delete': {}})
    assert resp.status_code == 403
    assert 'volume_extension:volume_admin_actions:force_delete' in \
        resp.json()['forbidden']['message']
    for body in ({'os-force_delete': 5}, {'os-force_delete': 'x'},
                 {'os-force_delete': {}, 'os-reserve': None}):
        act(api, vol['id'], body, expect=400)
    act(api, str(uuid.uuid4()), {'os-force_delete': {}}, expect=404)
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'


def test_delete_with_force_from_3_23(stack, api):
    old = {'OpenStack-API-Version': 'volume 3.22'}
    vol = api.create_volume()
    act(api, vol['id'], {'os-reset_status': {'status': 'attaching'}})
    path = '/volumes/%s?force=true' % vol['id']
    # before 3.23 force is not a parameter: a plain delete, refused
    assert api.delete(path, headers=old).status_code == 400
    member = stack.client(roles='member')
    resp = member.delete(path)
    assert resp.status_code == 403
    assert 'volume:force_delete' in resp.json()['forbidden']['message']
    assert api.delete('/volumes/%s?force=maybe' % vol['id']
                      ).status_code == 400
    assert api.delete(path).status_code == 202
    api.wait_deleted(vol['id'])


# -- the read-only flag --------------------------------------------------------
def test_readonly_flag_in_the_view(stack, api):
    vol = api.create_volume(metadata={'k': 'v'})
    vid = vol['id']
    # never set: not shown (as Cinder's admin metadata)
    assert vol['metadata'] == {'k': 'v'}
    act(api, vid, {'os-update_readonly_flag': {'readonly': True}})
    shown = api.get('/volumes/%s' % vid).json()['volume']
    assert shown['metadata'] == {'k': 'v', 'readonly': 'True'}
    detail = api.get('/volumes/detail').json()['volumes'][0]
    assert detail['metadata'] == {'k': 'v', 'readonly': 'True'}
    # not user metadata: the metadata API does not list it, and a user key
    # of that name does not change what the view says
    meta = '/volumes/%s/metadata' % vid
    assert api.get(meta).json() == {'metadata': {'k': 'v'}}
    api.post(meta, json={'metadata': {'readonly': 'False'}})
    assert api.get('/volumes/%s' % vid).json()['volume']['metadata'] == {
        'k': 'v', 'readonly': 'True'}
    # a reader sees it as Tempest reads it; only members change it
    reader = stack.client(roles='reader')
    assert reader.get('/volumes/%s' % vid).json()['volume']['metadata'][
        'readonly'] == 'True'
    resp = reader.post('/volumes/%s/action' % vid, json={
        'os-update_readonly_flag': {'readonly': False}})
    assert resp.status_code == 403
    assert 'volume:update_readonly_flag' in resp.json()['forbidden'][
        'message']
    act(api, vid, {'os-update_readonly_flag': {'readonly': False}})
    assert api.get('/volumes/%s' % vid).json()['volume']['metadata'][
        'readonly'] == 'False'


def test_readonly_volume_attaches_read_only(api):
    vol = api.create_volume()
    vid = vol['id']
    act(api, vid, {'os-update_readonly_flag': {'readonly': 'true'}})
    # Nova's flow (no mode): read-only, and so is the export
    att = create(api, vid, I1, connector())
    assert att['attach_mode'] == 'ro'
    assert att['connection_info']['access_mode'] == 'ro'
    # not while it has attachments (nor while it is in use)
    resp = act(api, vid, {'os-update_readonly_flag': {'readonly': False}},
               expect=400)
    assert 'status must be available' in resp.json()['badRequest'][
        'message']
    api.delete('/attachments/%s' % att['id'])
    # a read-write attachment is refused, by either API
    create(api, vid, mode='rw', expect=400)
    act(api, vid, {'os-reserve': None})
    act(api, vid, {'os-attach': {'instance_uuid': I2, 'mountpoint':
                                 '/dev/vdb', 'mode': 'rw'}}, expect=400)
    # a reservation alone (no attachment attached) also keeps the flag
    act(api, vid, {'os-unreserve': None})
    act(api, vid, {'os-update_readonly_flag': {'readonly': False}})
    assert create(api, vid, I1, connector())['attach_mode'] == 'rw'


def test_readonly_flag_refused_with_a_failed_attachment(api):
    """An attachment an operator's os-reset_status left behind (the volume
    is available again): the flag waits until it is deleted."""
    vol = api.create_volume()
    vid = vol['id']
    att = create(api, vid, I1)
    act(api, vid, {'os-reset_status': {'status': 'available'}})
    assert api.get('/volumes/%s' % vid).json()['volume'][
        'status'] == 'available'
    resp = act(api, vid, {'os-update_readonly_flag': {'readonly': True}},
               expect=400)
    assert att['id'] in resp.json()['badRequest']['message']
    api.delete('/attachments/%s' % att['id'])
    act(api, vid, {'os-update_readonly_flag': {'readonly': True}})


# -- freeze and thaw ---------------------------------------------------------
def _services(api):
    return {s['host']: s for s in api.get('/os-services').json()['services']}


def test_freeze_and_thaw(two):
    api = two.client()
    on_b = api.create_type('on-b', {'volume_backend_name': 'b'})
    vol = api.create_volume(volume_type=on_b['name'])
    resp = api.put('/os-services/freeze', json={'host': 'testnode@b'})
    assert resp.status_code == 200 and resp.content == b''
    b = _services(api)['testnode@b']
    assert (b['frozen'], b['status'], b['disabled_reason']) == (
        True, 'disabled', 'frozen')
    assert _services(api)['testnode@file']['frozen'] is False
    assert 'frozen' not in _services(api)['testnode']
    # no volume of a frozen backend is deleted, forced or not
    for resp in (api.delete('/volumes/%s' % vol['id']),
                 api.post('/volumes/%s/action' % vol['id'],
                          json={'os-force_delete': {}})):
        assert resp.status_code == 400
        assert 'frozen' in resp.json()['badRequest']['message']
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'
    # nor created there
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': on_b['name']}})
    if resp.status_code == 202:
        api.wait_volume(resp.json()['volume']['id'], 'error')
    else:
        assert resp.status_code == 400, resp.text
    # other backends work as before
    other = api.create_volume()
    assert api.delete('/volumes/%s' % other['id']).status_code == 202
    # frozen twice, or enabled while frozen: refused
    resp = api.put('/os-services/freeze', json={'host': 'testnode@b'})
    assert resp.status_code == 400
    assert 'No service could be changed' in resp.json()['badRequest'][
        'message']
    resp = api.put('/os-services/enable', json={
        'host': 'testnode@b', 'binary': 'cinder-volume'})
    assert resp.status_code == 400
    assert 'thaw it' in resp.json()['badRequest']['message']
    resp = api.put('/os-services/thaw', json={'host': 'testnode@b'})
    assert resp.status_code == 200 and resp.content == b''
    b = _services(api)['testnode@b']
    assert (b['frozen'], b['status'], b['disabled_reason']) == (
        False, 'enabled', None)
    assert api.put('/os-services/thaw', json={
        'host': 'testnode@b'}).status_code == 400
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


def test_freeze_and_thaw_bad_requests(two):
    api = two.client()
    for action in ('freeze', 'thaw'):
        path = '/os-services/%s' % action
        # Tempest's negative tests: an unknown host is 400
        resp = api.put(path, json={'host': 'invalid_host'})
        assert resp.status_code == 400
        assert 'No service found with host=invalid_host' in \
            resp.json()['badRequest']['message']
        # a node with two backends names neither
        resp = api.put(path, json={'host': 'testnode'})
        assert resp.status_code == 400
        assert 'Services from different clusters found' in \
            resp.json()['badRequest']['message']
        for body in ({}, {'host': None}, {'host': 5}, {'host': ''},
                     {'host': 'testnode@b', 'bogus': 1},
                     {'host': 'bad host'}):
            assert api.put(path, json=body).status_code == 400, body
        assert api.put(path, data='nope').status_code == 400
        # from 3.26 a cluster, or a host, but one of them
        resp = api.put(path, json={'host': 'testnode@b',
                                   'cluster': 'c@b'})
        assert resp.status_code == 400
        assert 'One and only one' in resp.json()['badRequest']['message']
        resp = api.put(path, json={'cluster': 'c@b'})
        assert resp.status_code == 400
        assert 'No service found with cluster=c@b' in resp.json()[
            'badRequest']['message']
        resp = api.put(path, json={'cluster': 'c@b'}, headers={
            'OpenStack-API-Version': 'volume 3.25'})
        assert 'Host field is missing' in resp.json()['badRequest'][
            'message']
        member = two.client(roles='member')
        resp = member.put(path, json={'host': 'testnode@b'})
        assert resp.status_code == 403
    assert _services(api)['testnode@b']['frozen'] is False


def test_freezing_a_cluster_member_freezes_the_cluster(tmp_path):
    s = stack_mod.Stack(tmp_path, extra={'cluster': 'aa'}).start()
    try:
        api = s.client()
        vol = api.create_volume()
        assert api.put('/os-services/freeze', json={
            'host': 'testnode@file'}).status_code == 200
        resp = api.delete('/volumes/%s' % vol['id'])
        assert resp.status_code == 400
        assert 'aa@file' in resp.json()['badRequest']['message']
        resp = api.put('/os-services/thaw', json={'cluster': 'aa@file'})
        assert resp.status_code == 200
        assert api.delete('/volumes/%s' % vol['id']).status_code == 202
        api.wait_deleted(vol['id'])
    finally:
        s.stop()
