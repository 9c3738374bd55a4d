"""Edges of volume requests: statuses attachments do not own, retypes judged
by the volume's own flag, reservations os-initialize_connection may use,
extends that must not shrink, readers that must not write."""
import uuid

import pytest

from tests.harness.attach import I1, I2, behind_the_lock, connector, create
from tests.harness.attach import volume


def act(api, vid, body, expect=202):
    resp = api.post('/volumes/%s/action' % vid, json=body)
    assert resp.status_code == expect, resp.text
    return resp


@pytest.fixture
def ma(api):
    api.create_type('ma', {'multiattach': '<is> True'})
    return api.create_volume(volume_type='ma')


def test_attachment_changes_leave_an_operator_status_alone(api, ma):
    att = create(api, ma['id'], I1)
    act(api, ma['id'], {'os-reset_status': {'status': 'error'}})
    assert api.delete('/attachments/%s' % att['id']).status_code == 200
    assert volume(api, ma['id'])['status'] == 'error'


def test_retype_judges_sharing_by_the_volume_flag(api, ma):
    create(api, ma['id'], I1, connector('h1'))
    create(api, ma['id'], I2, connector('h2'))
    ma_type = api.get('/types/%s' % volume(api, ma['id'])[
        'volume_type_id']).json()['volume_type']
    # an operator edits the type after the fact
    assert api.delete('/types/%s/extra_specs/multiattach'
                      % ma_type['id']).status_code == 202
    api.create_type('plain')
    resp = act(api, ma['id'], {'os-retype': {'new_type': 'plain'}},
               expect=400)
    assert 'multiattach' in resp.json()['badRequest']['message']
    assert volume(api, ma['id'])['multiattach'] is True


def test_retype_decides_sharing_on_the_type_under_the_lock(stack, api):
    """os-retype between two plain types reads the volume and waits for
    its lock while another retype makes it multiattach and two instances
    attach it: it decides again on the type it finds under the lock and
    is refused, instead of making a volume two instances hold plain."""
    from cinder_lite.db import attachments as db_attachments
    from cinder_lite.db import models
    from cinder_lite.db import volumes as db_volumes
    from cinder_lite.db import quota_limits as quota

    api.create_type('plain')
    api.create_type('other')
    shared = api.create_type('ma', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='plain')
    # (the project's usage rows of type ma, which a retype moves to)
    api.create_volume(volume_type='ma')

    def retype_and_attach(session):
        # what the other retype and two attaches leave
        db_volumes.retype(session, vol['id'], shared['id'],
                          {'multiattach': True},
                          quota.Checker(stack.conf, session))
        for instance in (I1, I2):
            db_attachments.create(session, {
                'id': str(uuid.uuid4()), 'volume_id': vol['id'],
                'project_id': api.project, 'instance_uuid': instance,
                'attach_status': 'attached', 'attach_mode': 'rw',
                'service_owned': False, 'deleted': False,
                'created_at': models.utcnow()})
        db_attachments.sync_volume_status(session, vol['id'])

    reply = behind_the_lock(api, vol['id'], retype_and_attach,
                            {'os-retype': {'new_type': 'other'}})
    assert reply.status_code == 400, reply.text
    assert 'multiattach' in reply.json()['badRequest']['message']
    shown = volume(api, vol['id'])
    assert (shown['volume_type'], shown['multiattach'], shown['status']) \
        == ('ma', True, 'in-use')


def test_initialize_connection_leaves_instance_reservations_alone(api, ma):
    theirs = create(api, ma['id'], I1)
    info = act(api, ma['id'], {'os-initialize_connection': {
        'connector': connector('other')}}, expect=200).json()[
        'connection_info']
    assert info['attachment_id'] != theirs['id']
    shown = api.get('/attachments/%s' % theirs['id']).json()['attachment']
    assert shown['status'] == 'reserved' and shown['connection_info'] == {}


@pytest.mark.parametrize('size', ['99999999999', '1' * 5000, 2 ** 31])
def test_extend_bounds(api, size):
    vol = api.create_volume()
    act(api, vol['id'], {'os-extend': {'new_size': size}}, expect=400)
    assert volume(api, vol['id'])['status'] == 'available'


def test_create_with_a_huge_size_string_is_400(api):
    resp = api.post('/volumes', json={'volume': {'size': '1' * 5000}})
    assert resp.status_code == 400


@pytest.mark.parametrize('query', ['{[]:1}', '-' * 5000, '{"a": 1}',
                                   "{'a': ['b']}"])
def test_odd_metadata_filters_are_400(api, query):
    assert api.get('/volumes?metadata=%s' % query).status_code == 400


def test_readers_read_but_do_not_write(stack):
    member = stack.client(roles='member,reader')
    vol = member.create_volume()
    reader = stack.client(roles='reader')
    assert reader.get('/volumes/%s' % vol['id']).status_code == 200
    assert reader.get('/volumes').status_code == 200
    assert reader.delete('/volumes/%s' % vol['id']).status_code == 403
    assert reader.post('/volumes', json={'volume': {
        'size': 1}}).status_code == 403
    assert reader.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id']}}).status_code == 403
    act(reader, vol['id'], {'os-extend': {'new_size': 2}}, expect=403)
    assert volume(member, vol['id'])['status'] == 'available'


def test_force_detach_with_backend_down(api, stack, ma):
    att = create(api, ma['id'], I1, connector())
    stack.stop_backend('file')
    assert api.delete('/attachments/%s' % att['id']).status_code == 503
    act(api, ma['id'], {'os-force_detach': {'attachment_id': att['id']}})
    assert api.get('/attachments/%s' % att['id']).status_code == 404
    assert volume(api, ma['id'])['status'] == 'available'
