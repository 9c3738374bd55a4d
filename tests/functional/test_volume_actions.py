"""Legacy volume actions on /volumes/{id}/action, on the same attachment
records as the attachments API."""
import uuid

import pytest

from tests.harness.attach import I1, I2, behind_the_lock, connector, create
from tests.harness.attach import volume
from tests.harness import stack as stack_mod
from tests.harness import util


def act(api, vid, body, expect=202, **kw):
    resp = api.post('/volumes/%s/action' % vid, json=body, **kw)
    assert resp.status_code == expect, resp.text
    return resp


@pytest.fixture
def plain(api):
    return api.create_volume()


@pytest.fixture
def ma(api):
    api.create_type('ma', {'multiattach': '<is> True'})
    return api.create_volume(volume_type='ma')


def test_legacy_attach_detach_cycle(api, plain):
    vid = plain['id']
    act(api, vid, {'os-reserve': None})
    # as Cinder's legacy flow (the attachments API's reservation shows
    # ``reserved``)
    assert volume(api, vid)['status'] == 'attaching'
    resp = act(api, vid, {'os-initialize_connection': {
        'connector': connector()}}, expect=200)
    info = resp.json()['connection_info']
    assert info['driver_volume_type'] == 'local'
    assert info['access_mode'] == 'rw'
    # same host again: the same connection, no second attachment
    again = act(api, vid, {'os-initialize_connection': {
        'connector': connector()}}, expect=200).json()['connection_info']
    assert again == info
    act(api, vid, {'os-attach': {'instance_uuid': I1,
                                 'mountpoint': '/dev/vdb', 'mode': 'rw'}})
    vol = volume(api, vid)
    assert vol['status'] == 'in-use'
    (entry,) = vol['attachments']
    assert (entry['server_id'], entry['device']) == (I1, '/dev/vdb')
    act(api, vid, {'os-begin_detaching': None})
    assert volume(api, vid)['status'] == 'detaching'
    act(api, vid, {'os-roll_detaching': None})
    assert volume(api, vid)['status'] == 'in-use'
    act(api, vid, {'os-begin_detaching': {}})
    act(api, vid, {'os-terminate_connection': {'connector': connector()}})
    act(api, vid, {'os-detach': {'attachment_id': None}})
    vol = volume(api, vid)
    assert vol['status'] == 'available' and vol['attachments'] == []
    assert api.get('/attachments').json()['attachments'] == []


def test_reserve_unreserve(api, plain):
    act(api, plain['id'], {'os-reserve': {}})
    assert volume(api, plain['id'])['status'] == 'attaching'
    act(api, plain['id'], {'os-unreserve': None})
    assert volume(api, plain['id'])['status'] == 'available'
    act(api, plain['id'], {'os-unreserve': None})   # nothing to do


def test_reserve_on_plain_attached_volume_refused(api, plain):
    create(api, plain['id'], I1)
    resp = act(api, plain['id'], {'os-reserve': None}, expect=400)
    assert 'not multiattach' in resp.json()['badRequest']['message']


def test_os_attach_without_reservation_and_modes(api, ma):
    act(api, ma['id'], {'os-attach': {'host_name': 'h1',
                                      'mountpoint': '/mnt', 'mode': 'ro'}})
    (att,) = api.get('/attachments/detail').json()['attachments']
    assert att['attach_mode'] == 'ro' and att['status'] == 'attached'
    for bad in ({'os-attach': {'mountpoint': '/x'}},
                {'os-attach': {'instance_uuid': I1}},
                {'os-attach': {'instance_uuid': I1, 'mountpoint': '/x',
                               'mode': 'wo'}},
                {'os-attach': {'instance_uuid': 'x', 'mountpoint': '/x'}}):
        act(api, ma['id'], bad, expect=400)


def test_detach_needs_an_id_when_several(api, ma):
    a = create(api, ma['id'], I1, connector('h1'))
    b = create(api, ma['id'], I2, connector('h2'))
    # 409 as Cinder (which tells a user to detach through Nova)
    resp = act(api, ma['id'], {'os-detach': {}}, expect=409)
    assert 'attachment_id' in resp.json()['conflictingRequest']['message']
    assert len(api.get('/attachments').json()['attachments']) == 2
    act(api, ma['id'], {'os-detach': {'attachment_id': a['id']}})
    left = api.get('/attachments').json()['attachments']
    assert [x['id'] for x in left] == [b['id']]
    act(api, ma['id'], {'os-detach': {'attachment_id': str(uuid.uuid4())}},
        expect=404)


def test_force_detach_touches_only_the_named_attachment(api, ma):
    a = create(api, ma['id'], I1, connector('h1'))
    b = create(api, ma['id'], I2, connector('h2'))
    api.post('/attachments/%s/action' % b['id'], json={'os-complete': 1})
    act(api, ma['id'], {'os-force_detach': {'attachment_id': a['id'],
                                            'connector': None}})
    (left,) = api.get('/attachments/detail').json()['attachments']
    assert left['id'] == b['id'] and left['status'] == 'attached'
    assert volume(api, ma['id'])['status'] == 'in-use'
    act(api, ma['id'], {'os-force_detach': {}})       # the only one left
    assert volume(api, ma['id'])['status'] == 'available'
    act(api, ma['id'], {'os-force_detach': {}}, expect=400)


def test_force_detach_and_reset_are_admin_only(stack):
    member = stack.client(roles='member')
    vol = member.create_volume()
    act(member, vol['id'], {'os-force_detach': {}}, expect=403)
    act(member, vol['id'], {'os-reset_status': {'status': 'error'}},
        expect=403)


def test_reset_status(api, ma):
    a = create(api, ma['id'], I1, connector())
    assert volume(api, ma['id'])['status'] == 'attaching'
    act(api, ma['id'], {'os-reset_status': {'status': 'deleting'}},
        expect=400)
    act(api, ma['id'], {'os-reset_status': {'status': 'bogus'}},
        expect=400)
    act(api, ma['id'], {'os-reset_status': {'attach_status': 'weird'}},
        expect=400)
    act(api, ma['id'], {'os-reset_status': {'status': 'in-use'}},
        expect=400)   # nothing is attached
    act(api, ma['id'], {'os-reset_status': {'status': 'error'}})
    assert volume(api, ma['id'])['status'] == 'error'
    # detached for real: the attachment goes, through the backend
    act(api, ma['id'], {'os-reset_status': {'status': 'available',
                                            'attach_status': 'detached'}})
    assert volume(api, ma['id'])['status'] == 'available'
    assert api.get('/attachments/%s' % a['id']).status_code == 404


def test_readonly_flag(api, ma):
    act(api, ma['id'], {'os-update_readonly_flag': {'readonly': True}})
    att = create(api, ma['id'], I1, connector())
    assert att['attach_mode'] == 'ro'
    assert att['connection_info']['access_mode'] == 'ro'
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': ma['id'], 'mode': 'rw'}})
    assert resp.status_code == 400
    # only an available volume changes its flag
    act(api, ma['id'], {'os-update_readonly_flag': {'readonly': False}},
        expect=400)
    api.delete('/attachments/%s' % att['id'])
    act(api, ma['id'], {'os-update_readonly_flag': {'readonly': 'false'}})
    assert create(api, ma['id'], I1)['attach_mode'] == 'rw'
    act(api, ma['id'], {'os-update_readonly_flag': {'readonly': 'maybe'}},
        expect=400)


def test_begin_detaching_of_a_shared_volume_marks_the_volume(api, ma):
    """Nova's detach: os-begin_detaching (no attachment named), then the
    delete of its own attachment, or os-roll_detaching if that failed.
    With several attachments the volume is detaching (Nova and Tempest
    wait for it to leave that status) and no attachment is marked; the
    detach of one derives in-use again, for the others."""
    vid = ma['id']
    atts = [create(api, vid, inst, connector(host))
            for inst, host in ((I1, 'compute-1'), (I2, 'compute-2'),
                               (str(uuid.uuid4()), 'compute-3'))]
    for att in atts:
        assert api.post('/attachments/%s/action' % att['id'], json={
            'os-complete': None}).status_code == 204
    act(api, vid, {'os-begin_detaching': {}})
    assert volume(api, vid)['status'] == 'detaching'
    shown = api.get('/attachments/detail').json()['attachments']
    assert {a['status'] for a in shown} == {'attached'}
    # a second detach meanwhile is refused, as Cinder's
    act(api, vid, {'os-begin_detaching': {}}, expect=400)
    act(api, vid, {'os-roll_detaching': {}})
    assert volume(api, vid)['status'] == 'in-use'
    act(api, vid, {'os-begin_detaching': {}})
    assert api.delete('/attachments/%s' % atts[0]['id']).status_code == 200
    assert sorted(a['attachment_id'] for a in volume(
        api, vid)['attachments']) == sorted([atts[1]['id'], atts[2]['id']])
    assert volume(api, vid)['status'] == 'in-use'
    assert api.delete('/attachments/%s' % atts[2]['id']).status_code == 200
    (left,) = volume(api, vid)['attachments']
    assert left['attachment_id'] == atts[1]['id']
    # with one attachment left, it is marked as before
    act(api, vid, {'os-begin_detaching': {}})
    assert volume(api, vid)['status'] == 'detaching'
    act(api, vid, {'os-roll_detaching': {}})
    assert volume(api, vid)['status'] == 'in-use'
    assert api.delete('/attachments/%s' % atts[1]['id']).status_code == 200
    assert volume(api, vid)['status'] == 'available'


def test_begin_detaching_decides_under_the_lock(api, ma):
    """os-begin_detaching that waits for the volume's lock while a detach
    of one of two attachments commits: it finds one attachment left and
    marks it, as on a volume with one, instead of marking the volume
    (which would then stay detaching over a single attached attachment,
    a status its attachments do not make it).  The fuzzer found it."""
    from cinder_lite.db import attachments as db_attachments

    vid = ma['id']
    # completed unconnected: no export to leave behind below
    atts = [create(api, vid, inst) for inst in (I1, I2)]
    for att in atts:
        assert api.post('/attachments/%s/action' % att['id'], json={
            'os-complete': None}).status_code == 204

    def detach_one(session):
        db_attachments.transition(session, atts[0]['id'], 'detach')
        db_attachments.sync_volume_status(session, vid)

    reply = behind_the_lock(api, vid, detach_one,
                            {'os-begin_detaching': None})
    assert reply.status_code == 202, reply.text
    shown = api.get('/attachments/detail').json()['attachments']
    assert [(a['id'], a['status']) for a in shown] == [
        (atts[1]['id'], 'detaching')]
    assert volume(api, vid)['status'] == 'detaching'
    act(api, vid, {'os-roll_detaching': None})
    assert volume(api, vid)['status'] == 'in-use'


def test_unreserve_chooses_under_the_lock(api, plain):
    """os-unreserve that waits for the volume's lock while an
    os-initialize_connection connects the reservation it read as spare:
    the reservation is no longer spare, and it stays connected (dropping
    it would remove the export the host was just handed)."""
    from cinder_lite.db import attachments as db_attachments

    vid = plain['id']
    act(api, vid, {'os-reserve': None})
    (att,) = api.get('/attachments/detail').json()['attachments']
    info = {'driver_volume_type': 'local', 'access_mode': 'rw',
            'data': {'device_path': '/dev/null'}}

    def connect(session):
        # what the connect leaves
        db_attachments.transition(
            session, att['id'], 'connect',
            values={'connector': connector(), 'attached_host': 'compute-1',
                    'export_host': 'testnode@file', 'attach_mode': 'rw'})
        db_attachments.transition(session, att['id'], 'connected',
                                  values={'connection_info': info})
        db_attachments.sync_volume_status(session, vid)

    reply = behind_the_lock(api, vid, connect, {'os-unreserve': None})
    assert reply.status_code == 202, reply.text
    shown = api.get('/attachments/%s' % att['id']).json()['attachment']
    assert (shown['status'], shown['connection_info']) == (
        'attaching', info)
    assert volume(api, vid)['status'] == 'attaching'


def test_set_bootable(stack, api, plain):
    """Nova boots only from a volume that says it is bootable; Cinder's
    os-set_bootable answers 200 with no body, in any status."""
    vid = plain['id']
    assert volume(api, vid)['bootable'] == 'false'
    resp = act(api, vid, {'os-set_bootable': {'bootable': True}}, expect=200)
    assert resp.content == b''
    assert volume(api, vid)['bootable'] == 'true'
    listed = api.get('/volumes/detail?bootable=true').json()['volumes']
    assert [v['id'] for v in listed] == [vid]
    att = create(api, vid, I1, connector())
    act(api, vid, {'os-set_bootable': {'bootable': 'false'}}, expect=200)
    assert volume(api, vid)['bootable'] == 'false'
    for bad in ({}, {'bootable': 'maybe'}, {'bootable': None},
                {'bootable': True, 'other': 1}, {'bootable': [True]}):
        act(api, vid, {'os-set_bootable': bad}, expect=400)
    assert volume(api, vid)['bootable'] == 'false'
    # a reader of the project may not, another project does not see it
    reader = stack.client(user='r', roles='reader')
    act(reader, vid, {'os-set_bootable': {'bootable': True}}, expect=403)
    other = stack.client(project=uuid.uuid4().hex, roles='member,reader')
    act(other, vid, {'os-set_bootable': {'bootable': True}}, expect=404)
    act(api, uuid.uuid4(), {'os-set_bootable': {'bootable': True}},
        expect=404)
    assert volume(api, vid)['bootable'] == 'false'
    assert api.delete('/attachments/%s' % att['id']).status_code == 200


def test_set_bootable_keeps_the_bootable_multiattach_rule(tmp_path):
    """With volume:multiattach_bootable_volume kept for admins, a member
    cannot make a volume that is already shared bootable (it could not
    have shared it had it been bootable)."""
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text(
        '"volume:multiattach_bootable_volume": "rule:admin_api"\n')
    s = stack_mod.Stack(tmp_path / 'st', sections={
        'oslo_policy': {'policy_file': str(policy_file)}}).start()
    try:
        admin = s.client()
        admin.create_type('ma', {'multiattach': '<is> True'})
        member = s.client(user='m', roles='member,reader')
        vid = member.create_volume(volume_type='ma')['id']
        atts = [create(member, vid, inst, connector(host))
                for inst, host in ((I1, 'compute-1'), (I2, 'compute-2'))]
        act(member, vid, {'os-set_bootable': {'bootable': True}},
            expect=403)
        assert volume(member, vid)['bootable'] == 'false'
        act(admin, vid, {'os-set_bootable': {'bootable': True}},
            expect=200)
        act(member, vid, {'os-set_bootable': {'bootable': False}},
            expect=200)
        member.delete('/attachments/%s' % atts[1]['id'])
        act(member, vid, {'os-set_bootable': {'bootable': True}},
            expect=200)
        member.delete('/attachments/%s' % atts[0]['id'])
    finally:
        s.stop()


def test_retype(api, plain):
    api.create_type('ma', {'multiattach': '<is> True'})
    api.create_type('plain2')
    act(api, plain['id'], {'os-retype': {'new_type': 'ma',
                                         'migration_policy': 'never'}})
    vol = volume(api, plain['id'])
    assert vol['volume_type'] == 'ma' and vol['multiattach'] is True
    att = create(api, vol['id'], I1, connector())
    resp = act(api, vol['id'], {'os-retype': {'new_type': 'plain2'}},
               expect=400)
    assert 'only allowed on available volumes' in resp.json()[
        'badRequest']['message']
    # a retype that keeps the multiattach keys is fine while in use
    api.create_type('ma2', {'multiattach': '<is> True'})
    act(api, vol['id'], {'os-retype': {'new_type': 'ma2'}})
    api.delete('/attachments/%s' % att['id'])
    act(api, vol['id'], {'os-retype': {'new_type': 'plain2'}})
    assert volume(api, vol['id'])['multiattach'] is False
    api.create_type('elsewhere', {'volume_backend_name': 'nowhere'})
    resp = act(api, vol['id'], {'os-retype': {
        'new_type': 'elsewhere', 'migration_policy': 'on-demand'}},
        expect=400)
    # no backend holds it: nowhere to migrate to
    assert 'no other backend that can is up' in resp.json()['badRequest'][
        'message']
    act(api, vol['id'], {'os-retype': {'new_type': 'nope'}}, expect=404)
    act(api, vol['id'], {'os-retype': {'new_type': 'plain2',
                                       'migration_policy': 'x'}},
        expect=400)


def test_extend(api, stack, plain):
    import os
    act(api, plain['id'], {'os-extend': {'new_size': 3}})
    stack_size = lambda: volume(api, plain['id'])
    util.wait_for(lambda: stack_size()['size'] == 3 and
                  stack_size()['status'] == 'available',
                  what='extended')
    path = os.path.join(stack.state_path, 'volumes', 'file',
                        'volume-%s' % plain['id'])
    assert os.path.getsize(path) == 3 * 1024 ** 3
    act(api, plain['id'], {'os-extend': {'new_size': 2}}, expect=400)
    act(api, plain['id'], {'os-extend': {'new_size': 'x'}}, expect=400)
    att = create(api, plain['id'], I1, connector())
    api.post('/attachments/%s/action' % att['id'], json={'os-complete': 1})
    act(api, plain['id'], {'os-extend': {'new_size': 4}}, expect=400,
        headers={'OpenStack-API-Version': 'volume 3.41'})
    act(api, plain['id'], {'os-extend': {'new_size': 4}})
    assert volume(api, plain['id'])['size'] == 4
    assert os.path.getsize(path) == 4 * 1024 ** 3


@pytest.mark.parametrize('body', [
    {}, {'os-bogus': None}, {'os-reserve': None, 'os-unreserve': None},
    {'os-reserve': 'x'}, {'os-initialize_connection': {}},
    {'os-initialize_connection': {'connector': {'ip': '1.2.3.4'}}},
    {'os-terminate_connection': {'connector': 'x'}},
    {'os-detach': {'attachment_id': 'nope'}},
    {'os-reset_status': {}},
])
def test_bad_action_bodies(api, plain, body):
    act(api, plain['id'], body, expect=400)
    assert volume(api, plain['id'])['status'] == 'available'


def test_unknown_volume_action_404(api):
    act(api, str(uuid.uuid4()), {'os-reserve': None}, expect=404)


def _reconcile_now(stack):
    """Run the volume service's reconciliation with no age limit."""
    manager, = stack.volume_service('file').endpoints
    return manager.reconcile_now(max_age=0)


def test_reconcile_leaves_a_begin_detaching_mark_alone(api, stack, plain):
    """os-begin_detaching marks the attachment detaching; no disconnect is
    under way (the host may still be writing: Nova has not detached it
    yet).  Reconcile, however old the mark, leaves it to the detach or
    to os-roll_detaching, which gives it back attached with its export:
    rolling it forward would cut the host off, and a roll back after
    that would show an attachment attached without an export."""
    vid = plain['id']
    att = create(api, vid, I1, connector())
    assert api.post('/attachments/%s/action' % att['id'], json={
        'os-complete': None}).status_code == 204
    act(api, vid, {'os-begin_detaching': None})
    assert api.get('/attachments/%s' % att['id']).json()['attachment'][
        'status'] == 'detaching'
    assert _reconcile_now(stack) == []
    act(api, vid, {'os-roll_detaching': None})
    shown = api.get('/attachments/%s' % att['id']).json()['attachment']
    assert shown['status'] == 'attached'
    assert shown['connection_info'] == att['connection_info']
    assert volume(api, vid)['status'] == 'in-use'
    # the detach Nova then makes disconnects it as usual
    act(api, vid, {'os-begin_detaching': None})
    assert api.delete('/attachments/%s' % att['id']).status_code == 200
    assert volume(api, vid)['status'] == 'available'


def test_os_attach_after_reconcile_completed_the_connection(api, stack,
                                                            plain):
    """The legacy flow slowed down between os-initialize_connection and
    os-attach: reconcile completes the connection meanwhile, and the
    late os-attach still records the instance on that attachment."""
    vid = plain['id']
    act(api, vid, {'os-reserve': None})
    act(api, vid, {'os-initialize_connection': {
        'connector': connector()}}, expect=200)
    (att,) = api.get('/attachments').json()['attachments']
    assert volume(api, vid)['status'] == 'attaching'
    assert _reconcile_now(stack) == [
        'attachment %s: attaching -> attached' % att['id']]
    assert volume(api, vid)['status'] == 'in-use'
    act(api, vid, {'os-attach': {'instance_uuid': I1,
                                 'mountpoint': '/dev/vdb', 'mode': 'rw'}})
    vol = volume(api, vid)
    (entry,) = vol['attachments']
    assert (entry['attachment_id'], entry['server_id'], entry['device']) \
        == (att['id'], I1, '/dev/vdb')
    act(api, vid, {'os-begin_detaching': None})
    act(api, vid, {'os-terminate_connection': {'connector': connector()}})
    act(api, vid, {'os-detach': {'attachment_id': None}})
    assert volume(api, vid)['status'] == 'available'


def test_detach_of_a_connect_cut_short_while_the_backend_is_down(
        api, stack, plain):
    """An attachment ``attaching`` without connection info (the volume
    service went down during the connect): with the backend down its
    delete records it detached at once instead of waiting for the
    backend; nothing was handed out."""
    from cinder_lite.db import api as db_api
    from cinder_lite.db import attachments as db_attachments

    att = create(api, plain['id'], instance=I1)
    with db_api.writer() as session:
        db_attachments.lock_volume(session, plain['id'])
        db_attachments.transition(
            session, att['id'], 'connect',
            values={'connector': connector(), 'attached_host': 'compute-1',
                    'export_host': 'testnode@file'})
        db_attachments.sync_volume_status(session, plain['id'])
    assert volume(api, plain['id'])['status'] == 'attaching'
    stack.stop_backend('file')
    resp = api.delete('/attachments/%s' % att['id'])
    assert resp.status_code == 200, resp.text
    assert volume(api, plain['id'])['status'] == 'available'
    assert api.get('/attachments/%s' % att['id']).status_code == 404


@pytest.mark.parametrize('new_size', [10000, 2000000])
def test_extend_beyond_the_backend_is_refused_at_once(api, plain, new_size):
    """As a create of that size: 400 naming the capacity, and nothing
    recorded (quota lifted, so the capacity is what refuses)."""
    resp = api.put('/os-quota-sets/%s' % api.project,
                   json={'quota_set': {'gigabytes': -1}})
    assert resp.status_code == 200, resp.text
    resp = act(api, plain['id'], {'os-extend': {'new_size': new_size}},
               expect=400)
    assert "exceeds the capacity of the volume's backend testnode@file" \
        in resp.json()['badRequest']['message']
    shown = volume(api, plain['id'])
    assert (shown['status'], shown['size']) == ('available', 1)
    usage = api.get('/os-quota-sets/%s?usage=True' % api.project).json()[
        'quota_set']['gigabytes']
    assert (usage['in_use'], usage['reserved']) == (1, 0)
