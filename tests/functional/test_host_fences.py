"""Host fences over HTTP (``/os-host-fences``, admins only): the durable
mark, what it refuses (attach, connect, os-initialize_connection,
takeover from the fenced host, 409), the audit trail,
idempotent unfence, a whole project at once, policy and bad input.  The
cut at the target itself is tests/dataplane/test_fencing.py's."""
import uuid

import pytest

from cinder_lite.db import api as db_api
from cinder_lite.db import models
from tests.harness import attach as att_mod
from tests.harness import stack as stack_mod

P = stack_mod.PROJECT
OTHER = stack_mod.OTHER_PROJECT


def fence(api, host, expect=200, action='os-fence', **scope):
    resp = api.post('/os-host-fences/%s/action' % host,
                    json={action: scope})
    assert resp.status_code == expect, resp.text
    return resp.json()


def unfence(api, host, expect=200, **scope):
    return fence(api, host, expect, 'os-unfence', **scope)


def marks():
    with db_api.reader() as session:
        return [(m.host, m.volume_id, m.deleted, m.reason, m.fenced_by,
                 m.unfenced_by, m.unfence_reason)
                for m in session.query(models.HostFence).order_by(
                    models.HostFence.id)]


@pytest.fixture
def shared(api):
    api.create_type('shared', {'multiattach': '<is> True'})
    return api.create_volume(volume_type='shared')


def test_a_fenced_host_gets_no_new_connection(stack, api, shared):
    vid = shared['id']
    c1, c2 = att_mod.connector('compute-1'), att_mod.connector(
        'compute-2', ip='127.0.0.3')
    a1 = att_mod.attach(api, vid, c1)
    body = fence(api, 'compute-1', volume_id=vid, reason='node lost')
    result = body['host_fence']
    assert result['fenced'] is True and result['host'] == 'compute-1'
    (entry,) = result['volumes']
    assert entry['volume_id'] == vid and entry['attachments'] == [a1['id']]
    assert marks() == [('compute-1', vid, False, 'node lost', 'admin',
                        None, None)]
    # every way in for compute-1 is refused; compute-2 goes on
    refused = att_mod.create(api, vid, str(uuid.uuid4()), c1, expect=409)
    assert refused['conflictingRequest']['message'] == \
        'host compute-1 is fenced off volume %s' % vid
    reserved = att_mod.create(api, vid, str(uuid.uuid4()))
    resp = api.put('/attachments/%s' % reserved['id'],
                   json={'attachment': {'connector': c1}})
    assert resp.status_code == 409 and 'is fenced' in resp.text
    resp = api.post('/volumes/%s/action' % vid, json={
        'os-initialize_connection': {'connector': c1}})
    assert resp.status_code == 409 and 'is fenced' in resp.text
    a2 = att_mod.attach(api, vid, c2)
    assert a2['connection_info']
    # the audit trail and the list
    trail = api.get('/os-attachment-events?attachment_id=%s'
                    % a1['id']).json()['attachment_events']
    assert trail[-1]['reason'] == 'host compute-1 fenced: node lost'
    assert trail[-1]['from_status'] == trail[-1]['to_status'] == 'attached'
    listed = api.get('/os-host-fences').json()['host_fences']
    assert [(f['host'], f['volume_id'], f['fenced_by']) for f in listed] \
        == [('compute-1', vid, 'admin')]
    assert api.get('/os-host-fences?host=compute-2').json()[
        'host_fences'] == []
    # fencing again changes nothing (one mark)
    fence(api, 'compute-1', volume_id=vid, reason='again')
    assert len(marks()) == 1
    # the status: marked; a local target cannot tell reachability
    shown = api.get('/os-host-fences/compute-1?volume_id=%s' % vid).json()[
        'host_fence']
    assert shown['fenced'] is True
    assert shown['volumes'][0]['fenced'] is True
    assert shown['volumes'][0]['attachments'] == [a1['id']]

    # unfence: compute-1 connects again; twice is the same as once
    out = unfence(api, 'compute-1', volume_id=vid, reason='node back')
    assert out['host_fence']['fenced'] is False
    assert out['host_fence']['volumes'][0]['attachments'] == [a1['id']]
    unfence(api, 'compute-1', volume_id=vid)
    assert marks() == [('compute-1', vid, True, 'node lost', 'admin',
                        'admin', 'node back')]
    again = att_mod.attach(api, vid, c1)
    assert again['connection_info']
    trail = api.get('/os-attachment-events?attachment_id=%s'
                    % a1['id']).json()['attachment_events']
    assert trail[-1]['reason'] == 'host compute-1 unfenced: node back'
    assert api.get('/os-host-fences').json()['host_fences'] == []


def test_a_takeover_from_a_fenced_host_is_refused(api):
    api.create_type('single', {'multiattach': '<is> True', 'mode': 'RO'})
    vol = api.create_volume(volume_type='single')
    att_mod.attach(api, vol['id'], att_mod.connector('compute-1'))
    reader = att_mod.attach(api, vol['id'], att_mod.connector(
        'compute-2', ip='127.0.0.3'))
    assert reader['attach_mode'] == 'ro'
    fence(api, 'compute-2', volume_id=vol['id'])
    resp = api.post('/attachments/%s/action' % reader['id'],
                    json={'os-takeover': {}})
    assert resp.status_code == 409, resp.text
    assert 'host compute-2 is fenced' in resp.text
    shown = api.get('/attachments/%s' % reader['id']).json()['attachment']
    assert shown['attach_mode'] == 'ro' and shown['status'] == 'attached'


def test_a_project_is_fenced_volume_by_volume(stack, api):
    mine = [api.create_volume()['id'] for _ in range(3)]
    other = stack.client(project=OTHER, user='o', roles='member')
    theirs = other.create_volume()['id']
    body = fence(api, 'compute-9', project_id=P, reason='project-wide')
    assert sorted(v['volume_id'] for v in body['host_fence']['volumes']) \
        == sorted(mine)
    for vid in mine:
        att_mod.create(api, vid, str(uuid.uuid4()),
                       att_mod.connector('compute-9'), expect=409)
    att_mod.create(other, theirs, str(uuid.uuid4()),
                   att_mod.connector('compute-9'))
    shown = api.get('/os-host-fences/compute-9?project_id=%s' % P).json()[
        'host_fence']
    assert shown['fenced'] is True and len(shown['volumes']) == 3
    unfence(api, 'compute-9', project_id=P)
    att_mod.create(api, mine[0], str(uuid.uuid4()),
                   att_mod.connector('compute-9'))
    # a project without volumes: nothing to fence, nothing fails
    assert fence(api, 'compute-9', project_id='nobody')['host_fence'][
        'volumes'] == []


def test_only_admins_fence_and_bad_input_changes_nothing(stack, api):
    vid = api.create_volume()['id']
    member = stack.client(user='m', roles='member')
    for method, path, body in (
            ('post', '/os-host-fences/h/action',
             {'os-fence': {'volume_id': vid}}),
            ('get', '/os-host-fences', None),
            ('get', '/os-host-fences/h?volume_id=%s' % vid, None)):
        resp = getattr(member, method)(path, **(
            {'json': body} if body else {}))
        assert resp.status_code == 403, resp.text
        assert 'volume_extension:host_fence' in resp.text

    def bad(body, text, expect=400, host='h'):
        resp = api.post('/os-host-fences/%s/action' % host, json=body)
        assert resp.status_code == expect, resp.text
        assert text in resp.text, resp.text

    bad({'os-fence': {}}, 'is not valid under any of the given schemas')
    bad({'os-fence': {'volume_id': vid, 'project_id': P}},
        'is valid under each of')
    bad({'os-fence': {'volume_id': 'nope'}}, "is not a 'uuid'")
    bad({'os-fence': {'volume_id': vid, 'force': True}},
        "'force' was unexpected")
    bad({'os-fence': {'volume_id': vid}, 'os-unfence': {'volume_id': vid}},
        'has too many properties')
    bad({'os-kill': {}}, "'os-kill' was unexpected")
    bad({'os-fence': {'volume_id': vid, 'reason': 'x' * 256}},
        'is too long')
    bad({'os-fence': {'volume_id': str(uuid.uuid4())}}, 'could not be found',
        expect=404)
    bad({'os-fence': {'volume_id': vid}}, 'host must be', host='x' * 256)
    resp = api.post('/os-host-fences/h/action', data=b'{not json',
                    headers={'Content-Type': 'application/json'})
    assert resp.status_code == 400
    for query in ('', '?volume_id=%s&project_id=%s' % (vid, P),
                  '?volume_id=zzz', '?host=h'):
        resp = api.get('/os-host-fences/h%s' % query)
        assert resp.status_code == 400, (query, resp.text)
    assert api.get('/os-host-fences?bogus=1').status_code == 400
    assert marks() == []


def test_a_volume_service_recorded_down_is_not_waited_for(stack, api,
                                                          shared):
    """The service exporting the host's attachment is down: the fence
    fails at once (503, nobody can cut that export) instead of waiting
    volume_rpc_timeout for an answer, but the mark is written, so the
    host is refused from then on; the status says it cannot tell, naming
    the service; unfence ends the mark and fails the same way."""
    vid = shared['id']
    c1 = att_mod.connector('compute-1')
    a1 = att_mod.attach(api, vid, c1)
    stack.stop_backend('file')
    resp = api.post('/os-host-fences/compute-1/action',
                    json={'os-fence': {'volume_id': vid}})
    assert resp.status_code == 503, resp.text
    message = resp.json()['serviceUnavailable']['message']
    assert 'is down' in message and 'heartbeat is older' in message
    assert marks() == [('compute-1', vid, False, None, 'admin', None,
                        None)]
    report = api.get('/os-host-fences/compute-1?volume_id=%s' % vid).json()[
        'host_fence']
    shown = report['volumes'][0]
    assert shown['fenced'] is True and shown['attachments'] == [a1['id']]
    assert shown['reachable'] is None
    # nor overall: a host nobody could check is not reported cut off
    assert report['reachable'] is None
    assert len(shown['errors']) == 1 and 'is down' in shown['errors'][0]
    resp = api.post('/os-host-fences/compute-1/action',
                    json={'os-unfence': {'volume_id': vid}})
    assert resp.status_code == 503, resp.text
    assert marks()[0][2] is True
