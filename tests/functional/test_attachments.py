"""The attachments API: lifecycle, modes, reservations, views, bad input."""
import os
import uuid

import pytest

from tests.harness.attach import I1, I2, I3, connector, create, volume
from tests.harness import stack as stack_mod


@pytest.fixture
def ma(api):
    api.create_type('ma', {'multiattach': '<is> True'})
    return api.create_volume(volume_type='ma')


@pytest.fixture
def plain(api):
    return api.create_volume()


def test_reserve_update_complete_delete(api, ma):
    att = create(api, ma['id'], I1)
    assert att['status'] == 'reserved'
    assert att['attach_mode'] == 'rw'
    assert att['connection_info'] == {}
    assert att['attached_at'] == '' and att['detached_at'] == ''
    assert att['instance'] == I1 and att['volume_id'] == ma['id']
    assert volume(api, ma['id'])['status'] == 'reserved'

    resp = api.put('/attachments/%s' % att['id'], json={
        'attachment': {'connector': connector()}})
    assert resp.status_code == 200
    upd = resp.json()['attachment']
    assert upd['status'] == 'attaching'          # not stale
    info = upd['connection_info']
    assert info['driver_volume_type'] == 'local'
    assert info['access_mode'] == 'rw'
    assert info['attachment_id'] == att['id']
    assert os.path.exists(info['device_path'])
    assert upd['attached_at']
    assert volume(api, ma['id'])['status'] == 'attaching'

    resp = api.post('/attachments/%s/action' % att['id'],
                    json={'os-complete': None})
    assert resp.status_code == 204 and resp.content == b''
    vol = volume(api, ma['id'])
    assert vol['status'] == 'in-use'
    (entry,) = vol['attachments']
    assert entry['attachment_id'] == att['id']
    assert entry['server_id'] == I1
    assert entry['host_name'] == 'compute-1'
    # Cinder's keys only: the mode is the attachments API's
    assert set(entry) == {'id', 'attachment_id', 'volume_id', 'server_id',
                          'host_name', 'device', 'attached_at'}
    assert entry['id'] == ma['id'] and entry['volume_id'] == ma['id']

    shown = api.get('/attachments/%s' % att['id']).json()['attachment']
    assert shown['status'] == 'attached'
    resp = api.delete('/attachments/%s' % att['id'])
    assert resp.status_code == 200
    assert resp.json() == {'attachments': []}
    assert volume(api, ma['id'])['status'] == 'available'
    assert api.get('/attachments/%s' % att['id']).status_code == 404
    assert api.delete('/attachments/%s' % att['id']).status_code == 404


def test_create_with_connector_connects_at_once(api, ma):
    att = create(api, ma['id'], I1, connector(), mode='ro')
    assert att['status'] == 'attaching'
    assert att['attach_mode'] == 'ro'
    assert att['connection_info']['access_mode'] == 'ro'


def test_connector_mode_sets_an_undecided_mode(api, ma):
    att = create(api, ma['id'], I1)
    upd = api.put('/attachments/%s' % att['id'], json={'attachment': {
        'connector': connector(mode='ro')}}).json()['attachment']
    assert upd['attach_mode'] == 'ro'
    assert upd['connection_info']['access_mode'] == 'ro'
    # an explicit mode wins over the connector's
    att2 = create(api, ma['id'], I2, mode='rw')
    upd2 = api.put('/attachments/%s' % att2['id'], json={'attachment': {
        'connector': connector('compute-2', mode='ro')}}).json()[
        'attachment']
    assert upd2['attach_mode'] == 'rw'
    assert upd2['connection_info']['access_mode'] == 'rw'


def test_mode_needs_3_54_and_a_known_value(api, ma):
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': ma['id'], 'mode': 'ro'}},
        headers={'OpenStack-API-Version': 'volume 3.53'})
    assert resp.status_code == 400
    assert 'mode' in resp.json()['badRequest']['message']
    for bad in ('null', 'wo', '', 'RW'):
        resp = api.post('/attachments', json={'attachment': {
            'volume_uuid': ma['id'], 'mode': bad}})
        assert resp.status_code == 400, bad
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': ma['id'], 'connector': connector(mode='x')}})
    assert resp.status_code == 400
    assert api.get('/attachments').json()['attachments'] == []
    assert volume(api, ma['id'])['status'] == 'available'


def test_plain_volume_takes_one_instance(api, plain):
    first = create(api, plain['id'], I1)
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': plain['id'], 'instance_uuid': I2}})
    assert resp.status_code == 400
    assert 'not multiattach' in resp.json()['badRequest']['message']
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': plain['id']}})
    assert resp.status_code == 400
    # the same instance may hold a second one (live migration)
    second = create(api, plain['id'], I1, connector('compute-2'))
    assert second['status'] == 'attaching'
    ids = {a['id'] for a in api.get('/attachments?volume_id=%s'
                                    % plain['id']).json()['attachments']}
    assert ids == {first['id'], second['id']}


def test_multiattach_reserves_while_others_are_in_flight(api, ma):
    a = create(api, ma['id'], I1)                       # reserved
    b = create(api, ma['id'], I2, connector('c2'))      # attaching
    assert volume(api, ma['id'])['status'] == 'attaching'
    c = create(api, ma['id'], I3, connector('c3'))
    api.post('/attachments/%s/action' % c['id'], json={'os-complete': 1})
    d = create(api, ma['id'])                            # no instance
    assert volume(api, ma['id'])['status'] == 'in-use'
    listed = api.get('/attachments/detail?volume_id=%s' % ma['id']).json()
    assert sorted(x['status'] for x in listed['attachments']) == [
        'attached', 'attaching', 'reserved', 'reserved']
    for att in (a, b, c, d):
        assert api.delete('/attachments/%s' % att['id']).status_code == 200
    assert volume(api, ma['id'])['status'] == 'available'


def test_single_writer_type(api):
    api.create_type('cluster', {'multiattach': '<is> True', 'mode': 'RO'})
    vol = api.create_volume(volume_type='cluster')
    writer = create(api, vol['id'], I1, connector('n1'))
    assert writer['attach_mode'] == 'rw'
    reader = create(api, vol['id'], I2, connector('n2'))
    assert reader['attach_mode'] == 'ro'
    assert reader['connection_info']['access_mode'] == 'ro'
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': I3, 'mode': 'rw'}})
    assert resp.status_code == 400
    assert 'one writer' in resp.json()['badRequest']['message']
    api.delete('/attachments/%s' % writer['id'])
    # no automatic promotion of the reader ...
    shown = api.get('/attachments/%s' % reader['id']).json()['attachment']
    assert shown['attach_mode'] == 'ro'
    # ... but a new writer may attach
    new_writer = create(api, vol['id'], I3, connector('n3'), mode='rw')
    assert new_writer['attach_mode'] == 'rw'


def test_shared_connections_on_one_host(api, ma):
    a = create(api, ma['id'], I1, connector('shared-host'))
    b = create(api, ma['id'], I2, connector('shared-host'))
    c = create(api, ma['id'], I3, connector('other-host'))
    show = lambda x: api.get('/attachments/%s' % x['id']).json()[
        'attachment']
    assert show(a)['shared_connections'] == [b['id']]
    assert show(b)['shared_connections'] == [a['id']]
    assert show(c)['shared_connections'] == []
    api.delete('/attachments/%s' % a['id'])
    assert show(b)['shared_connections'] == []


def test_list_filters_sort_and_paging(api, ma):
    a = create(api, ma['id'], I1)
    b = create(api, ma['id'], I2, connector())
    api.post('/attachments/%s/action' % b['id'], json={'os-complete': None})
    ids = lambda q: sorted(x['id'] for x in api.get(
        '/attachments' + q).json()['attachments'])
    assert ids('') == sorted([a['id'], b['id']])
    assert ids('?instance_id=%s' % I1) == [a['id']]
    assert ids('?attach_status=attached') == [b['id']]
    assert ids('?status=attached') == [b['id']]      # Cinder returns []
    assert ids('?volume_id=%s' % uuid.uuid4()) == []
    summary = api.get('/attachments').json()['attachments'][0]
    assert set(summary) == {'id', 'status', 'instance', 'volume_id'}
    page = api.get('/attachments?limit=1&sort=created_at:asc').json()
    assert [x['id'] for x in page['attachments']] == [a['id']]
    assert page['attachments_links'][0]['rel'] == 'next'
    page2 = api.get('/attachments?limit=1&sort=created_at:asc&marker=%s'
                    % a['id']).json()
    assert [x['id'] for x in page2['attachments']] == [b['id']]
    assert api.get('/attachments?bogus=1').status_code == 400


def test_versions_gate_the_api(api, ma):
    old = {'OpenStack-API-Version': 'volume 3.26'}
    assert api.get('/attachments', headers=old).status_code == 404
    att = create(api, ma['id'], I1)
    resp = api.post('/attachments/%s/action' % att['id'],
                    json={'os-complete': None},
                    headers={'OpenStack-API-Version': 'volume 3.43'})
    assert resp.status_code == 404


@pytest.mark.parametrize('body', [
    {},
    {'attachment': {}},
    {'attachment': {'volume_uuid': 'not-a-uuid'}},
    {'attachment': {'volume_uuid': I1, 'instance_uuid': 'nope'}},
    {'attachment': {'volume_uuid': I1, 'bogus': 1}},
    {'attachment': {'volume_uuid': I1, 'connector': 'x'}},
    {'attachment': {'volume_uuid': I1}, 'more': 1},
])
def test_bad_create_bodies(api, body):
    resp = api.post('/attachments', json=body)
    assert resp.status_code == 400, resp.text


def test_nova_fake_driver_connector_on_a_file_backend(api, ma):
    """Nova's fake compute driver names its initiator 'fake'.  A file
    backend exports locally or over NBD, which never read the initiator,
    so the attachment is made (an iSCSI backend refuses it: see
    tests/dataplane/test_iscsi.py)."""
    att = create(api, ma['id'], I1)
    resp = api.put('/attachments/%s' % att['id'], json={'attachment': {
        'connector': {'ip': '127.0.0.1', 'initiator': 'fake',
                      'host': 'compute-1'}}})
    assert resp.status_code == 200, resp.text
    shown = resp.json()['attachment']
    assert shown['status'] == 'attaching'
    assert shown['connection_info']['driver_volume_type'] != 'iscsi'
    assert shown['connection_info']['access_mode'] == 'rw'
    assert api.post('/attachments/%s/action' % att['id'], json={
        'os-complete': None}).status_code == 204
    assert volume(api, ma['id'])['status'] == 'in-use'
    assert api.delete('/attachments/%s' % att['id']).status_code == 200


@pytest.mark.parametrize('conn', [
    {'ip': '1.2.3.4'},
    {'host': ''},
    {'host': 5},
    {'host': 'h', 'initiator': 7},
    {'host': 'x' * 256},
    {'host': 'h', 'mode': 'rwx'},
    {'host': 'h', 'ip': '300.1.2.3'},
    {'host': 'h', 'ip': 'compute-1'},
])
def test_bad_connectors_change_nothing(api, ma, conn):
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': ma['id'], 'connector': conn}})
    assert resp.status_code == 400, resp.text
    assert 'connector' in resp.json()['badRequest']['message'].lower() \
        or 'mode' in resp.json()['badRequest']['message']
    att = create(api, ma['id'], I1)
    resp = api.put('/attachments/%s' % att['id'], json={
        'attachment': {'connector': conn}})
    assert resp.status_code == 400
    shown = api.get('/attachments/%s' % att['id']).json()['attachment']
    assert shown['status'] == 'reserved'
    assert volume(api, ma['id'])['status'] == 'reserved'


def test_bad_update_and_action_bodies(api, ma):
    att = create(api, ma['id'], I1)
    path = '/attachments/%s' % att['id']
    for body in ({}, {'attachment': {}},
                 {'attachment': {'connector': {}}},
                 {'attachment': {'connector': connector(), 'x': 1}}):
        assert api.put(path, json=body).status_code == 400, body
    for body in ({}, {'os-bogus': None}, {'os-complete': 1, 'x': 2}):
        assert api.post(path + '/action', json=body).status_code == 400
    assert api.put(path, data='{bad').status_code == 400


def test_unknown_ids(api):
    missing = str(uuid.uuid4())
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': missing}})
    assert resp.status_code == 404
    for method, path, body in (
            ('GET', '/attachments/%s' % missing, None),
            ('PUT', '/attachments/%s' % missing,
             {'attachment': {'connector': connector()}}),
            ('DELETE', '/attachments/%s' % missing, None),
            ('POST', '/attachments/%s/action' % missing,
             {'os-complete': None})):
        resp = api.request(method, path, json=body)
        assert resp.status_code == 404, (method, path)


def test_connect_twice_is_refused(api, ma):
    att = create(api, ma['id'], I1, connector())
    resp = api.put('/attachments/%s' % att['id'], json={
        'attachment': {'connector': connector()}})
    assert resp.status_code == 400
    assert 'already connected' in resp.json()['badRequest']['message']


def test_completed_before_connected_connects_later(api, plain):
    """Nova's attach to a shelved-offloaded server: the attachment is
    completed with no connector, and connected (then completed again)
    when the server is unshelved; once connected, a second connect is
    refused as before."""
    att = create(api, plain['id'], I1)
    path = '/attachments/%s' % att['id']
    assert api.post(path + '/action',
                    json={'os-complete': None}).status_code == 204
    assert volume(api, plain['id'])['status'] == 'in-use'
    resp = api.put(path, json={'attachment': {'connector': connector()}})
    assert resp.status_code == 200, resp.text
    info = resp.json()['attachment']['connection_info']
    assert info['driver_volume_type'] == 'local'
    assert api.post(path + '/action',
                    json={'os-complete': None}).status_code == 204
    shown = api.get(path).json()['attachment']
    assert (shown['status'], shown['connection_info']) == ('attached', info)
    assert volume(api, plain['id'])['status'] == 'in-use'
    again = api.put(path, json={'attachment': {'connector': connector()}})
    assert again.status_code == 400
    assert 'already connected' in again.json()['badRequest']['message']
    assert api.delete(path).status_code == 200
    assert volume(api, plain['id'])['status'] == 'available'


def test_complete_idempotent_and_needs_live_attachment(api, ma):
    att = create(api, ma['id'], I1, connector())
    path = '/attachments/%s/action' % att['id']
    assert api.post(path, json={'os-complete': None}).status_code == 204
    assert api.post(path, json={'os-complete': att['id']}).status_code \
        == 204


def _failed_connect(api, stack, volume_id):
    """An attachment of the volume whose connect failed on the backend
    (its file taken away while it exported): error_attaching."""
    path = os.path.join(stack.state_path, 'volumes', 'file',
                        'volume-%s' % volume_id)
    os.rename(path, path + '.away')
    try:
        resp = api.post('/attachments', json={'attachment': {
            'volume_uuid': volume_id, 'instance_uuid': I1,
            'connector': connector()}})
        assert resp.status_code == 503
        message = resp.json()['serviceUnavailable']['message']
        assert 'missing' in message
    finally:
        os.rename(path + '.away', path)
    (att,) = api.get('/attachments/detail').json()['attachments']
    assert att['status'] == 'error_attaching'
    # the caller never saw its id: the answer names it
    assert ('attachment %s is left error_attaching: delete it (DELETE '
            '/attachments/%s)' % (att['id'], att['id'])) in message
    return att


def test_error_attaching_is_visible_and_deletable(api, stack, ma):
    att = _failed_connect(api, stack, ma['id'])
    assert 'missing' in att['status_reason']
    assert volume(api, ma['id'])['status'] == 'available'
    # the volume cannot be deleted while the failed attachment is there
    assert api.delete('/volumes/%s' % ma['id']).status_code == 400
    # a retry of the same attachment works
    upd = api.put('/attachments/%s' % att['id'], json={'attachment': {
        'connector': connector()}})
    assert upd.status_code == 200
    assert upd.json()['attachment']['status'] == 'attaching'
    assert api.delete('/attachments/%s' % att['id']).status_code == 200
    assert api.delete('/volumes/%s' % ma['id']).status_code == 202


def test_a_connect_that_finds_its_attachment_moved_on(api, stack, ma):
    """The volume service's connect of an attachment another request
    moved on meanwhile (os-complete, or a legacy os-attach of the
    attachment a legacy initialize_connection was connecting, as the
    stateful fuzzer raced them) is refused (400): nothing failed, and the
    attachment keeps what the other request made it; one a failed
    delivery of the same connect left error_attaching fails (503)."""
    from cinder_lite.common import exception
    from cinder_lite.common import states
    manager, = stack.volume_service('file').endpoints
    att = create(api, ma['id'], I1, conn=connector())
    assert api.post('/attachments/%s/action' % att['id'],
                    json={'os-complete': None}).status_code == 204
    with pytest.raises(exception.ConnectRefused) as refused:
        manager.connect(None, att['id'], connector(), 'rw')
    assert 'changed while the connect was under way' in str(refused.value)
    # (the API answers an Invalid 400)
    assert isinstance(refused.value, exception.Invalid)
    shown = api.get('/attachments/%s' % att['id']).json()['attachment']
    assert shown['status'] == states.ATTACHED
    assert volume(api, ma['id'])['status'] == 'in-use'
    assert api.delete('/attachments/%s' % att['id']).status_code == 200

    failed = _failed_connect(api, stack, ma['id'])
    with pytest.raises(exception.ConnectFailed) as unserved:
        manager.connect(None, failed['id'], connector(), 'rw')
    assert 'changed while the connect was under way' in str(unserved.value)
    # (and a ConnectFailed 503)
    assert not isinstance(unserved.value, exception.Invalid)
    shown = api.get('/attachments/%s' % failed['id']).json()['attachment']
    assert shown['status'] == states.ERROR_ATTACHING


def test_backend_down_fails_fast_and_changes_nothing(api, stack, ma):
    att = create(api, ma['id'], I1)
    stack.stop_backend('file')
    resp = api.put('/attachments/%s' % att['id'], json={
        'attachment': {'connector': connector()}})
    assert resp.status_code == 503
    assert 'is down' in resp.json()['serviceUnavailable']['message']
    shown = api.get('/attachments/%s' % att['id']).json()['attachment']
    assert shown['status'] == 'reserved'
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': ma['id'], 'connector': connector()}})
    assert resp.status_code == 503
    assert len(api.get('/attachments').json()['attachments']) == 1
    # a reservation is only a record: it can still be dropped
    assert api.delete('/attachments/%s' % att['id']).status_code == 200


def test_in_use_volume_cannot_be_deleted(api, ma):
    att = create(api, ma['id'], I1, connector())
    api.post('/attachments/%s/action' % att['id'], json={'os-complete': 1})
    resp = api.delete('/volumes/%s' % ma['id'])
    assert resp.status_code == 400
    assert volume(api, ma['id'])['status'] == 'in-use'


def test_other_projects_cannot_see_or_touch(stack):
    owner = stack.client(project='a' * 32, roles='member')
    other = stack.client(project='b' * 32, roles='member')
    vol = owner.create_volume()
    resp = other.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id']}})
    assert resp.status_code == 404
    att = create(owner, vol['id'], I1)
    for method, path, body in (
            ('GET', '/attachments/%s' % att['id'], None),
            ('PUT', '/attachments/%s' % att['id'],
             {'attachment': {'connector': connector()}}),
            ('POST', '/attachments/%s/action' % att['id'],
             {'os-complete': None}),
            ('DELETE', '/attachments/%s' % att['id'], None)):
        assert other.request(method, path, json=body).status_code == 404
    assert other.get('/attachments').json()['attachments'] == []
    assert other.get('/attachments?all_tenants=1').status_code == 403
    assert owner.get('/attachments/%s' % att['id']).status_code == 200
    for action in ({'os-reserve': None}, {'os-detach': None},
                   {'os-attach': {'mountpoint': '/dev/vdb',
                                  'instance_uuid': I2}}):
        resp = other.post('/volumes/%s/action' % vol['id'], json=action)
        assert resp.status_code == 404, action


def test_service_attachment_is_guarded_against_members(stack):
    member = stack.client(project='a' * 32, roles='member')
    service = stack.client(project='a' * 32, roles='member')
    service.headers['X-Service-Roles'] = 'service'
    member.create_type
    vol = member.create_volume()
    att = create(service, vol['id'], I1, connector())
    resp = member.delete('/attachments/%s' % att['id'])
    assert resp.status_code == 409
    assert 'compute service' in resp.json()['conflictingRequest'][
        'message']
    assert member.get('/attachments/%s' % att['id']).status_code == 200
    # the member's own attachments are theirs to delete
    vol2 = member.create_volume()
    mine = create(member, vol2['id'], I2, connector())
    assert member.delete('/attachments/%s' % mine['id']).status_code == 200
    # a service (or an admin) may delete the guarded one
    assert service.delete('/attachments/%s' % att['id']).status_code == 200


def test_admin_may_delete_guarded_attachment(stack):
    service = stack.client(roles='member')
    service.headers['X-Service-Roles'] = 'service'
    vol = service.create_volume()
    att = create(service, vol['id'], I1, connector())
    admin = stack.client()
    assert admin.delete('/attachments/%s' % att['id']).status_code == 200


def test_multiattach_switched_off(tmp_path):
    s = stack_mod.Stack(tmp_path / 'st', extra={
        'allow_multiattach': 'false'}).start()
    try:
        api = s.client()
        api.create_type('ma', {'multiattach': '<is> True'})
        resp = api.post('/volumes', json={'volume': {
            'size': 1, 'volume_type': 'ma'}})
        assert resp.status_code == 400
        assert 'turned off' in resp.json()['badRequest']['message']
    finally:
        s.stop()


def _connect_answers(stack_):
    """The answers of POST /attachments with a connector to a shared
    volume: a first host, then a second attachment on the same host
    (sharing its connection), without ids and times."""
    api = stack_.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='shared')
    views = []
    for instance in (I1, I2):
        resp = api.post('/attachments', json={'attachment': {
            'volume_uuid': vol['id'], 'instance_uuid': instance,
            'connector': connector()}},
            headers={'OpenStack-API-Version': 'volume 3.54'})
        assert resp.status_code == 200, resp.text
        view = resp.json()['attachment']
        shown = api.get('/attachments/%s' % view['id'], headers={
            'OpenStack-API-Version': 'volume 3.54'}).json()['attachment']
        # the answer is what a read of it shows
        assert view == shown
        views.append(view)
    first, second = views
    assert second['shared_connections'] == [first['id']]
    for view in views:
        view.pop('id'), view.pop('attached_at'), view.pop('instance')
        view.pop('volume_id'), view.pop('shared_connections')
        view['connection_info'].pop('attachment_id')
        view['connection_info'].pop('device_path')
    return views


def test_connect_answer_is_the_same_from_a_volume_service_before_1_8(
        tmp_path):
    """Volume RPC 1.8: the volume service answers a connect with what it
    recorded, and the API shows the attachment from that instead of
    reading it again; capped at 1.7 (a rolling upgrade) it reads it
    again.  1.9 carries the volume the API read to the volume service,
    which reads nothing before the export.  Every answer is what a read
    shows, and the same."""
    answers = {}
    for version in ('1.9', '1.8', '1.7'):
        s = stack_mod.Stack(tmp_path / version, sections={
            'upgrade_levels': {'volume_version_cap': version}}).start()
        try:
            answers[version] = _connect_answers(s)
        finally:
            s.stop()
    assert answers['1.9'] == answers['1.8'] == answers['1.7']


def test_a_refused_complete_leaves_the_volume_as_it_was(api, stack, ma):
    """os-complete's lock writes the volume in-use (the request makes its
    attachment attached or fails): a refusal rolls that back."""
    att = _failed_connect(api, stack, ma['id'])
    before = volume(api, ma['id'])
    assert before['status'] == 'available'
    resp = api.post('/attachments/%s/action' % att['id'],
                    json={'os-complete': None})
    assert resp.status_code == 400, resp.text
    assert 'error_attaching' in resp.json()['badRequest']['message']
    after = volume(api, ma['id'])
    assert (after['status'], after['updated_at']) == \
        (before['status'], before['updated_at'])


@pytest.mark.parametrize('reset_to, attached_before, expected', [
    # an attached attachment makes it in-use, whatever it was reset to
    ('available', True, 'in-use'),
    ('reserved', True, 'in-use'),
    # and with nothing attached the new connect makes it attaching
    ('available', False, 'attaching'),
    ('detaching', False, 'attaching'),
])
def test_an_attach_derives_the_status_a_reset_left_wrong(
        api, ma, reset_to, attached_before, expected):
    """POST /attachments with a connector: the lock writes the status a
    connecting attachment makes the volume as its status says its
    attachments are, and the attachments read under the lock correct it
    when an operator's os-reset_status left it saying otherwise."""
    first = create(api, ma['id'], I1, connector(host='h1'))
    if attached_before:
        assert api.post('/attachments/%s/action' % first['id'],
                        json={'os-complete': None}).status_code == 204
    else:
        # a reservation instead: the volume is reserved
        api.delete('/attachments/%s' % first['id'])
        create(api, ma['id'], I3)
    resp = api.post('/volumes/%s/action' % ma['id'], json={
        'os-reset_status': {'status': reset_to}})
    assert resp.status_code == 202
    assert volume(api, ma['id'])['status'] == reset_to
    create(api, ma['id'], I2, connector(host='h2'))
    assert volume(api, ma['id'])['status'] == expected


def test_a_disconnect_leaves_the_status_the_other_attachments_make(api, ma):
    """The volume service's record of a disconnect: its lock writes
    available for a volume that was detaching, and the other attachments
    read under the lock correct it (here a reservation keeps the volume
    reserved)."""
    reserved = create(api, ma['id'], I1)
    connected = create(api, ma['id'], I2, connector(host='h2'))
    assert api.post('/attachments/%s/action' % connected['id'],
                    json={'os-complete': None}).status_code == 204
    assert volume(api, ma['id'])['status'] == 'in-use'
    assert api.delete('/attachments/%s' % connected['id']).status_code == 200
    assert volume(api, ma['id'])['status'] == 'reserved'
    assert api.delete('/attachments/%s' % reserved['id']).status_code == 200
    assert volume(api, ma['id'])['status'] == 'available'


def test_a_delete_leaves_in_use_a_volume_still_attached_elsewhere(api, ma):
    """DELETE: its lock writes detaching for an in-use volume (most often
    its one attachment is going), and the attachments read under the lock
    correct it: another host still attached keeps it in-use, whether the
    one deleted was connected or only reserved."""
    kept = create(api, ma['id'], I1, connector(host='h1'))
    going = create(api, ma['id'], I2, connector(host='h2'))
    for att in (kept, going):
        assert api.post('/attachments/%s/action' % att['id'],
                        json={'os-complete': None}).status_code == 204
    reserved = create(api, ma['id'], I3)
    assert volume(api, ma['id'])['status'] == 'in-use'
    for att in (going, reserved):
        assert api.delete('/attachments/%s' % att['id']).status_code == 200
        assert volume(api, ma['id'])['status'] == 'in-use'
    assert api.delete('/attachments/%s' % kept['id']).status_code == 200
    assert volume(api, ma['id'])['status'] == 'available'
