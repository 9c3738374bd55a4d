"""Writer takeover on single-writer volumes (os-takeover), over NBD,
iSCSI and RBD: the old writer is cut off at the target before the reader gets a
read-write export, two readers racing get one winner, and every refusal
changes nothing."""
import concurrent.futures
import datetime
import threading
import uuid

import pytest
import sqlalchemy as sa

from cinder_lite.common import states
from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from cinder_lite import nbd
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import models
from cinder_lite import iscsi
from tests.harness import dataplane as dp
from tests.harness import stack as stack_mod

# what the old writer's client raises once the target cut it off: the NBD
# export is gone (its socket was closed), the iSCSI session was ended
PROTOCOLS = {'nbd': ('nbd_stack', (nbd.NbdError, ConnectionError)),
             'iscsi': ('iscsi_stack', iscsi.IscsiError),
             # librbd's errors, known once its bindings are loaded
             'rbd': ('rbd_stack', None)}
SINGLE_WRITER = {'multiattach': '<is> True', 'mode': 'RO'}


def _takeover(api, attachment_id, body=None):
    return api.post('/attachments/%s/action' % attachment_id,
                    json={'os-takeover': {}} if body is None else body)


def _live(api, volume_id):
    return {a['id']: a for a in api.get(
        '/attachments/detail?volume_id=%s' % volume_id).json()[
            'attachments']}


def _events(api, attachment_id):
    return api.get('/os-attachment-events?attachment_id=%s'
                   % attachment_id).json()['attachment_events']


@pytest.fixture(params=sorted(PROTOCOLS))
def proto(request):
    fixture, error = PROTOCOLS[request.param]
    s = request.getfixturevalue(fixture)
    if request.param == 'rbd':
        from cinder_lite.volume.drivers import rbd as rbd_driver
        error = (rbd_driver.rbd_module().Error,
                 rbd_driver.rados_module().Error)
    api = s.client()
    api.create_type('single', SINGLE_WRITER)
    return request.param, s, api, error


def _manager(s):
    """The volume manager of the stack's one backend."""
    return s.volume_service(next(iter(s.backends))).endpoints[0]


def test_a_reader_takes_over_and_the_old_writer_is_cut_at_the_target(
        proto):
    protocol, s, api, refused = proto
    vol = api.create_volume(volume_type='single')
    writer_host, reader_host = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    w_att, w_dev = writer_host.attach_device(vol['id'], str(uuid.uuid4()))
    r_att, r_dev = reader_host.attach_device(vol['id'], str(uuid.uuid4()))
    assert (w_att['attach_mode'], r_att['attach_mode']) == ('rw', 'ro')
    w_dev.write(0, b'the old writer was here')
    w_dev.flush()
    assert r_dev.read(0, 23) == b'the old writer was here'

    # the old writer's host is unreachable: nobody closes its device
    new_att, new_dev = reader_host.takeover(r_att['id'], r_dev)
    assert new_att['id'] == r_att['id']
    assert new_att['attach_mode'] == 'rw'
    assert new_att['status'] == 'attached'
    info = new_att['connection_info']
    assert info['access_mode'] == 'rw' and info['driver_volume_type'] == \
        protocol
    assert not new_dev.read_only
    # the target refuses the old writer: its session or export is gone
    with pytest.raises(refused):
        w_dev.write(0, b'a late write')
        w_dev.flush()
    w_dev.close()
    assert new_dev.read(0, 23) == b'the old writer was here'
    new_dev.write(0, b'the new writer')
    new_dev.flush()

    live = _live(api, vol['id'])
    assert list(live) == [r_att['id']]
    assert api.get('/attachments/%s' % w_att['id']).status_code == 404
    trail = _events(api, w_att['id'])
    assert trail[-1]['to_status'] == 'detached'
    assert trail[-1]['reason'] == 'taken over by %s' % r_att['id']
    mine = _events(api, r_att['id'])[-1]
    assert (mine['from_status'], mine['to_status'], mine['attach_mode'],
            mine['reason']) == ('attached', 'attached', 'rw',
                                'took over as the writer')
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'in-use'

    # the old writer's host attaches again: read-only now
    again, again_dev = writer_host.attach_device(vol['id'],
                                                 str(uuid.uuid4()))
    assert again['attach_mode'] == 'ro' and again_dev.read_only
    assert again_dev.read(0, 14) == b'the new writer'
    # and it can take the volume back
    back, back_dev = writer_host.takeover(again['id'], again_dev)
    assert back['attach_mode'] == 'rw'
    with pytest.raises(refused):
        new_dev.write(0, b'cut')
        new_dev.flush()
    new_dev.close()
    writer_host.detach(back['id'], back_dev)
    api.wait_volume(vol['id'], 'available')


def test_takeover_refusals_change_nothing(proto):
    protocol, s, api, _refused = proto
    vol = api.create_volume(volume_type='single')
    writer_host, reader_host = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    w_att, w_dev = writer_host.attach_device(vol['id'])
    r_att, r_dev = reader_host.attach_device(vol['id'])
    pending = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id']}}).json()['attachment']
    before = _live(api, vol['id'])

    def refused(attachment_id, status, text, **kw):
        resp = _takeover(api if 'client' not in kw else kw['client'],
                         attachment_id, kw.get('body'))
        assert resp.status_code == status, resp.text
        assert text in next(iter(resp.json().values()))['message']

    refused(w_att['id'], 409, 'is the writer of volume')
    refused(pending['id'], 400, 'only a connected attachment')
    refused(str(uuid.uuid4()), 404, 'could not be found')
    refused(r_att['id'], 400, "'force' was unexpected",
            body={'os-takeover': {'force': True}})
    refused(r_att['id'], 400, "'os-complete' was unexpected",
            body={'os-takeover': {}, 'os-complete': {}})
    refused(r_att['id'], 403, 'volume:attachment_takeover',
            client=s.client(user='r', roles='reader'))
    refused(r_att['id'], 404, 'could not be found',
            client=s.client(project='ab' * 16, user='m',
                            roles='member'))
    old = api.post('/attachments/%s/action' % r_att['id'],
                   json={'os-takeover': {}},
                   headers={'OpenStack-API-Version': 'volume 3.43'})
    assert old.status_code == 404
    # a volume without the single-writer rule
    api.create_type('shared', {'multiattach': '<is> True'})
    plain = api.create_volume(volume_type='shared')
    p_att, p_dev = reader_host.attach_device(plain['id'], mode='ro')
    refused(p_att['id'], 400, 'is not a single-writer volume')
    assert _live(api, vol['id']) == before
    w_dev.write(0, b'still the writer')
    w_dev.flush()
    reader_host.detach(p_att['id'], p_dev)
    for host, att, dev in ((writer_host, w_att, w_dev),
                           (reader_host, r_att, r_dev)):
        host.detach(att['id'], dev)
    api.delete('/attachments/%s' % pending['id'])


def test_two_readers_racing_get_one_writer(proto):
    protocol, s, api, refused = proto
    vol = api.create_volume(volume_type='single')
    hosts = {n: dp.attacher(s, n) for n in ('a', 'b', 'c')}
    atts = {n: h.attach_device(vol['id']) for n, h in hosts.items()}
    assert [atts[n][0]['attach_mode'] for n in 'abc'] == ['rw', 'ro', 'ro']
    start = threading.Barrier(2)

    def race(name):
        start.wait()
        return name, _takeover(s.client(), atts[name][0]['id'])
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = dict(pool.map(race, ('b', 'c')))
    codes = sorted(r.status_code for r in results.values())
    assert codes == [200, 409], {n: r.text for n, r in results.items()}
    winner = next(n for n, r in results.items() if r.status_code == 200)
    loser = 'c' if winner == 'b' else 'b'
    assert 'is taking over' in results[loser].text
    live = _live(api, vol['id'])
    modes = sorted((a['attach_mode'], a['id']) for a in live.values())
    assert modes == sorted([('rw', atts[winner][0]['id']),
                            ('ro', atts[loser][0]['id'])])
    assert all(a['status'] == 'attached' for a in live.values())
    # the loser's device still reads; the old writer's does not write
    assert atts[loser][1].read(0, 4) == b'\0' * 4
    with pytest.raises(refused):
        atts['a'][1].write(0, b'late')
        atts['a'][1].flush()
    atts['a'][1].close()
    for n in (winner, loser):
        hosts[n].detach(atts[n][0]['id'], atts[n][1])


def test_a_reader_takes_over_when_there_is_no_writer(proto):
    """The writer detached (or was force-detached) already: the reader
    is re-exported read-write, and a new writer is refused meanwhile."""
    protocol, s, api, _refused = proto
    vol = api.create_volume(volume_type='single')
    writer_host, reader_host = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    w_att, w_dev = writer_host.attach_device(vol['id'])
    r_att, r_dev = reader_host.attach_device(vol['id'])
    resp = api.post('/volumes/%s/action' % vol['id'], json={
        'os-force_detach': {'attachment_id': w_att['id']}})
    assert resp.status_code == 202, resp.text
    w_dev.close()
    att, dev = reader_host.takeover(r_att['id'], r_dev)
    assert att['attach_mode'] == 'rw'
    dev.write(0, b'mine')
    dev.flush()
    late = writer_host.attach(vol['id'], mode='ro')
    assert late['attach_mode'] == 'ro'
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'mode': 'rw'}}, headers={
            'OpenStack-API-Version': 'volume 3.54'})
    assert resp.status_code == 400
    assert 'takes one writer' in resp.text
    writer_host.detach(late['id'])
    reader_host.detach(att['id'], dev)


def test_an_interrupted_takeover_is_undone_by_reconcile(proto):
    """The API process died after marking a reader as taking over, before
    its promote: once the mark is older than two RPC waits, reconcile
    clears it, leaving the reader's untouched read-only export and
    connection alone, and the reader can take over once more."""
    protocol, s, api, _refused = proto
    vol = api.create_volume(volume_type='single')
    reader_host = dp.attacher(s, 'b')
    r_att, r_dev = reader_host.attach_device(vol['id'], mode='ro')
    with db_api.writer() as session:
        db_attachments.update(session, r_att['id'], {
            'operation': states.TAKING_OVER})
    manager = _manager(s)
    # younger than two RPC waits: the request may still be under way
    assert manager.reconcile_now(max_age=0) == []
    with db_api.writer() as session:
        session.execute(sa.update(models.VolumeAttachment).where(
            models.VolumeAttachment.id == r_att['id']).values(
                updated_at=models.utcnow() - datetime.timedelta(minutes=5)))
    # meanwhile it counts as the writer
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'mode': 'rw'}})
    assert resp.status_code == 400 and 'takes one writer' in resp.text
    changes = manager.reconcile_now(max_age=0)
    assert changes == ['attachment %s: takeover interrupted -> attached'
                       % r_att['id']]
    shown = api.get('/attachments/%s' % r_att['id']).json()['attachment']
    assert shown['attach_mode'] == 'ro' and shown['status'] == 'attached'
    # the export was never touched: the reader's connection goes on
    assert shown['connection_info'] == r_att['connection_info']
    assert r_dev.read(0, 4) == b'\0' * 4
    att, dev = reader_host.takeover(r_att['id'], r_dev)
    assert att['attach_mode'] == 'rw'
    reader_host.detach(att['id'], dev)


def test_takeover_over_the_bus(proto):
    """A compute node on the bus takes over as well (API RPC 1.1)."""
    protocol, s, api, refused = proto
    vol = api.create_volume(volume_type='single')
    bus = client.BusTransport(stack_mod.PROJECT)
    writer_host = dp.attacher(s, 'a')
    reader_host = client.AttachClient(bus, host_connector.get_connector(
        host='host-bus', ip=dp.HOSTS['b']))
    w_att, w_dev = writer_host.attach_device(vol['id'])
    r_att, r_dev = reader_host.attach_device(vol['id'])
    att, dev = reader_host.takeover(r_att['id'], r_dev)
    assert att['attach_mode'] == 'rw' and not dev.read_only
    dev.write(0, b'over the bus')
    dev.flush()
    with pytest.raises(refused):
        w_dev.write(0, b'late')
        w_dev.flush()
    w_dev.close()
    reader_host.detach(att['id'], dev)


def test_a_member_cannot_cut_a_writer_a_compute_service_connected(proto):
    """As with its delete (CVE-2023-2088): the writer was connected for
    an instance by a compute service, so a plain member's takeover is
    refused (409) and changes nothing; an admin's goes through."""
    protocol, s, api, refused = proto
    vol = api.create_volume(volume_type='single')
    compute = dp.attacher(s, 'a')
    w_att, w_dev = compute.attach_device(vol['id'], str(uuid.uuid4()))
    member = client.AttachClient(
        client.RestTransport(s.url + '/v3', stack_mod.PROJECT,
                             roles='member', service=False),
        host_connector.get_connector(host='host-m', ip=dp.HOSTS['b']))
    r_att, r_dev = member.attach_device(vol['id'])
    resp = _takeover(s.client(roles='member'), r_att['id'])
    assert resp.status_code == 409, resp.text
    assert 'is connected for instance' in resp.text
    assert _live(api, vol['id'])[w_att['id']]['attach_mode'] == 'rw'
    w_dev.write(0, b'still here')
    w_dev.flush()
    resp = _takeover(api, r_att['id'])
    assert resp.status_code == 200, resp.text
    with pytest.raises(refused):
        w_dev.write(0, b'late')
        w_dev.flush()
    w_dev.close()
    r_dev.close()
    api.delete('/attachments/%s' % r_att['id'])


def test_a_takeover_interrupted_mid_export_is_undone_by_reconcile(proto):
    """The volume service died inside the promote, after the reader's
    read-only export was removed and before the read-write one was
    recorded: reconcile makes the read-only export again, records its
    connection info and clears the mark; the reader reads through it."""
    protocol, s, api, _refused = proto
    vol = api.create_volume(volume_type='single')
    reader_host = dp.attacher(s, 'b')
    r_att, r_dev = reader_host.attach_device(vol['id'], mode='ro')
    r_dev.close()
    manager = _manager(s)
    manager.driver.remove_export(None, None, r_att['id'], False)
    with db_api.writer() as session:
        session.execute(sa.update(models.VolumeAttachment).where(
            models.VolumeAttachment.id == r_att['id']).values(
                operation=states.TAKING_OVER,
                updated_at=models.utcnow() - datetime.timedelta(minutes=5)))
    assert manager.reconcile_now(max_age=0) == [
        'attachment %s: takeover interrupted -> attached' % r_att['id']]
    shown = api.get('/attachments/%s' % r_att['id']).json()['attachment']
    assert (shown['attach_mode'], shown['status'],
            shown['connection_info']['access_mode']) == ('ro', 'attached',
                                                         'ro')
    dev = reader_host.open(shown)
    assert dev.read_only and dev.read(0, 4) == b'\0' * 4
    reader_host.detach(shown['id'], dev)


def _marked_reader(s, api):
    vol = api.create_volume(volume_type='single')
    reader_host = dp.attacher(s, 'b')
    r_att, r_dev = reader_host.attach_device(vol['id'], mode='ro')
    r_dev.close()
    with db_api.writer() as session:
        db_attachments.update(session, r_att['id'], {
            'operation': states.TAKING_OVER})
    return vol, reader_host, r_att


def _reader_again(api, manager, reader_host, r_att):
    """The promote's revert made the read-only export again and ended the
    takeover: the reader reads through it and may take over later."""
    shown = api.get('/attachments/%s' % r_att['id']).json()['attachment']
    assert (shown['status'], shown['attach_mode'],
            shown['connection_info']['access_mode'],
            shown.get('status_reason')) == ('attached', 'ro', 'ro', None)
    assert manager.driver.export_mode(r_att['id']) == 'ro'
    dev = reader_host.open(shown)
    assert dev.read_only and dev.read(0, 4) == b'\0' * 4
    reader_host.detach(shown['id'], dev)


def _promote_with(s, api, monkeypatch, method, on_rw):
    """Promote a marked reader (``_marked_reader``) with the driver's
    ``method`` calling ``on_rw(volume_id, volume, connector,
    attachment_id)`` first when it is asked for the read-write export:
    what the promote raised, the manager, and the reader."""
    from cinder_lite.common import context
    vol, reader_host, r_att = _marked_reader(s, api)
    manager = _manager(s)
    real = getattr(manager.driver, method)

    def wrapped(volume, connector, mode, attachment_id):
        if mode == 'rw':
            on_rw(vol['id'], volume, connector, attachment_id)
        return real(volume, connector, mode, attachment_id)
    monkeypatch.setattr(manager.driver, method, wrapped)
    with pytest.raises(Exception) as e:
        manager.promote(context.get_admin_context(), r_att['id'])
    monkeypatch.undo()
    return e.value, manager, reader_host, r_att


def test_a_promote_whose_read_write_export_fails_is_reverted(
        proto, monkeypatch):
    """The read-write export cannot be made: the promote flow's revert
    makes the read-only one again and ends the takeover; the caller gets
    ConnectFailed."""
    from cinder_lite.common import exception
    protocol, s, api, _refused = proto

    def fail(volume_id, volume, connector, attachment_id):
        raise RuntimeError('no read-write export today')
    raised, manager, reader_host, r_att = _promote_with(
        s, api, monkeypatch, 'create_export', fail)
    assert isinstance(raised, exception.ConnectFailed)
    assert 'no read-write export today' in str(raised)
    _reader_again(api, manager, reader_host, r_att)


def test_a_promote_settled_meanwhile_is_reverted(proto, monkeypatch):
    """Another request ended the takeover while the read-write export was
    being made: nothing is recorded, the revert makes the read-only
    export again, and the caller gets InvalidInput."""
    from cinder_lite.common import exception
    protocol, s, api, _refused = proto

    def settle(volume_id, volume, connector, attachment_id):
        with db_api.writer() as session:
            db_attachments.unmark(session, attachment_id,
                                  states.TAKING_OVER)
    raised, manager, reader_host, r_att = _promote_with(
        s, api, monkeypatch, 'initialize_connection', settle)
    assert isinstance(raised, exception.InvalidInput)
    assert 'stopped taking over meanwhile' in str(raised)
    _reader_again(api, manager, reader_host, r_att)


def test_a_promote_whose_attachment_is_detached_meanwhile_leaves_no_export(
        proto, monkeypatch):
    """A forced detach of a reader whose takeover hung (its mark older
    than two RPC waits) disconnects it while the read-write export is
    being made, and that export then fails: the revert makes the
    read-only export again after the detach removed it, finds the
    attachment detaching, and removes that export too, so the host the
    detach cut off gets no way back in."""
    protocol, s, api, _refused = proto

    def detach_and_fail(volume_id, volume, connector, attachment_id):
        # the forced detach: marked, and its disconnect done
        with db_api.writer() as session:
            db_attachments.lock_volume(session, volume_id)
            db_attachments.transition(
                session, attachment_id, 'start_disconnect',
                values={'operation': states.DISCONNECTING})
        _manager(s).driver.remove_export(
            volume, connector, attachment_id, False)
        raise RuntimeError('no read-write export today')
    raised, manager, _host, r_att = _promote_with(
        s, api, monkeypatch, 'create_export', detach_and_fail)
    assert 'no read-write export today' in str(raised)
    assert manager.driver.export_mode(r_att['id']) is None
    shown = api.get('/attachments/%s' % r_att['id']).json()['attachment']
    assert shown['status'] == 'detaching'
