"""iSCSI-specific behaviour of the data path: ACLs per mode, forced
session drop on detach, discard, bad connectors, a daemon that fails
half-way, and what a volume service restart rebuilds."""
import errno
import os
import signal
import socket
import stat
import uuid

import pytest

from cinder_lite import iscsi
from tests.harness import attach
from tests.harness import dataplane as dp
from tests.harness import stack as stack_mod
from tests.harness import util

MiB = 1024 * 1024


def _multiattach_volume(api):
    api.create_type('shared', {'multiattach': '<is> True'})
    return api.create_volume(volume_type='shared')


def _login(info, initiator, address):
    """A login with the CHAP credentials ``info`` carries."""
    return iscsi.IscsiSession(info['target_portal'], info['target_iqn'],
                              info['target_lun'], initiator, timeout=5,
                              source_address=address,
                              chap=(info['auth_username'],
                                    info['auth_password'])).connect()


def test_each_attachment_may_log_in_only_to_the_target_of_its_mode(
        iscsi_stack):
    api = iscsi_stack.client()
    vol = _multiattach_volume(api)
    rw_host, ro_host = dp.attacher(iscsi_stack, 'a'), dp.attacher(
        iscsi_stack, 'c')
    rw = rw_host.attach(vol['id'], str(uuid.uuid4()), mode='rw')
    ro = ro_host.attach(vol['id'], str(uuid.uuid4()), mode='ro')
    rw_info, ro_info = rw['connection_info'], ro['connection_info']
    assert rw_info['target_iqn'].endswith('volume-%s' % vol['id'])
    assert ro_info['target_iqn'] == rw_info['target_iqn'] + '-ro'
    assert rw_info['target_portal'] == ro_info['target_portal']
    assert rw_info['target_lun'] == 1 and rw_info['discard'] is True
    # the read-only host cannot reach the read-write target, nor can
    # anyone who holds no attachment; the RW host is not in the RO ACL
    for info, who in ((rw_info, ro_host.connector['initiator']),
                      (ro_info, rw_host.connector['initiator']),
                      (rw_info, 'iqn.2026-11.org.example:intruder')):
        with pytest.raises(iscsi.IscsiError) as e:
            _login(info, who, '127.0.0.5')
        assert e.value.errno == errno.EACCES
    # each host logs in from its own address
    a, c = rw_host.open(rw), ro_host.open(ro)
    nexus = {n['initiator']: n['connections'][0]['address']
             for t in dp.tgt_targets(iscsi_stack.tgt_control).values()
             for n in t['nexus']}
    assert nexus == {rw_host.connector['initiator']: '127.0.0.2',
                     ro_host.connector['initiator']: '127.0.0.4'}
    rw_host.detach(rw['id'], a)
    ro_host.detach(ro['id'], c)
    assert dp.tgt_targets(iscsi_stack.tgt_control) == {}


def test_detach_ends_a_live_session_and_the_acl(iscsi_stack):
    """A host that did not log out loses its session at detach, while the
    other host of the volume goes on."""
    api = iscsi_stack.client()
    vol = _multiattach_volume(api)
    hosts = {n: dp.attacher(iscsi_stack, n) for n in ('a', 'b')}
    atts, devs = {}, {}
    for n, host in hosts.items():
        atts[n], devs[n] = host.attach_device(vol['id'], str(uuid.uuid4()))
    hosts['a'].detach(atts['a']['id'])             # device left open
    with pytest.raises(iscsi.IscsiError):
        devs['a'].read(0, 512)
    with pytest.raises(iscsi.IscsiError) as e:
        _login(atts['a']['connection_info'],
               hosts['a'].connector['initiator'], '127.0.0.2')
    assert e.value.errno == errno.EACCES
    devs['b'].write(0, b'b goes on')
    assert devs['b'].read(0, 9) == b'b goes on'
    hosts['b'].detach(atts['b']['id'], devs['b'])


def test_discard_gives_space_back(iscsi_stack):
    api = iscsi_stack.client()
    vol = api.create_volume()
    host = dp.attacher(iscsi_stack, 'a')
    att, dev = host.attach_device(vol['id'])
    path = dp.volume_path(iscsi_stack, vol['id'])
    dev.write(MiB, os.urandom(4 * MiB))
    dev.flush()
    used = os.stat(path).st_blocks
    dev.discard(MiB, 4 * MiB)
    dev.flush()
    assert os.stat(path).st_blocks <= used - (4 * MiB) // 512
    assert dev.read(MiB, 4 * MiB) == bytes(4 * MiB)
    host.detach(att['id'], dev)


@pytest.mark.parametrize('connector,reason', [
    ({'host': 'h', 'ip': '127.0.0.2'}, 'needs the initiator name'),
])
def test_connector_without_initiator_is_refused(iscsi_stack, connector,
                                                reason):
    api = iscsi_stack.client()
    vol = api.create_volume()
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'connector': connector}})
    assert resp.status_code == 400, resp.text
    assert reason in resp.json()['badRequest']['message']
    (att,) = api.get('/attachments/detail').json()['attachments']
    assert att['status'] == 'error_attaching'
    assert reason in att['status_reason']
    assert dp.tgt_targets(iscsi_stack.tgt_control) == {}
    assert dp.backend_target(iscsi_stack).exports() == {}
    assert api.delete('/attachments/%s' % att['id']).status_code == 200
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'


@pytest.mark.parametrize('initiator', [
    'compute-1', 'fake', 'iqn.2026.org.example:h',
    'iqn.2026-11.org.example:has space', 'eui.123'])
def test_a_malformed_initiator_changes_nothing(iscsi_stack, initiator):
    """An iSCSI backend refuses an initiator that is no iSCSI name before
    anything is recorded, on every path that connects (a file backend
    exporting over NBD takes it: tests/functional/test_attachments.py)."""
    api = iscsi_stack.client()
    vol = api.create_volume()
    connector = {'host': 'h', 'ip': '127.0.0.2', 'initiator': initiator}
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'connector': connector}})
    assert resp.status_code == 400, resp.text
    assert 'must be an iSCSI name' in resp.json()['badRequest']['message']
    resp = api.post('/volumes/%s/action' % vol['id'], json={
        'os-initialize_connection': {'connector': connector}})
    assert resp.status_code == 400, resp.text
    assert api.get('/attachments').json()['attachments'] == []
    reserved = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id']}}).json()['attachment']
    resp = api.put('/attachments/%s' % reserved['id'], json={
        'attachment': {'connector': connector}})
    assert resp.status_code == 400, resp.text
    assert api.get('/attachments/%s' % reserved['id']).json()[
        'attachment']['status'] == 'reserved'
    assert dp.tgt_targets(iscsi_stack.tgt_control) == {}
    assert api.delete('/attachments/%s' % reserved['id']).status_code == 200
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'


def _stack_on(tmp_path, port):
    """A stack whose file backend runs its tgtd on 127.0.0.1:port."""
    return stack_mod.Stack(tmp_path / 'st', backends={'file': {
        'target_protocol': 'iscsi', 'target_port': port,
        'target_control_port': port % 32768}}).start()


def _attach_fails(s, api, vol):
    """Attach host a: 503, and the attachment stays error_attaching."""
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'connector': dp.attacher(s, 'a').connector}})
    assert resp.status_code == 503, resp.text
    (att,) = api.get('/attachments/detail').json()['attachments']
    assert att['status'] == 'error_attaching'
    return att


FAILING_TGTADM = '''#!/bin/sh
# tgtadm that fails the ACL step; with KILL_TGTD_PIDFILE set it first
# kills the daemon whose pid that file records
case "$*" in *"--op bind"*)
    if [ -n "$KILL_TGTD_PIDFILE" ]; then kill -9 "$(sed 's/.*"pid": \\([0-9]*\\).*/\\1/' "$KILL_TGTD_PIDFILE")"; fi
    echo "tgtadm: can't send the request to the tgt daemon" >&2; exit 107;;
esac
exec %s "$@"
'''


@pytest.mark.parametrize('daemon_dies', [False, True],
                         ids=['bind-fails', 'daemon-dies'])
def test_export_failing_half_way_leaves_nothing(tmp_path, monkeypatch,
                                                daemon_dies):
    util.need('tgtd', 'tgtadm')
    import shutil
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    wrapper = bin_dir / 'tgtadm'
    wrapper.write_text(FAILING_TGTADM % shutil.which('tgtadm'))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv('PATH', '%s:%s' % (bin_dir, os.environ['PATH']))
    port = util.free_port()
    s = _stack_on(tmp_path, port)
    target = dp.backend_target(s)
    if daemon_dies:
        monkeypatch.setenv('KILL_TGTD_PIDFILE',
                           os.path.join(target.state_dir, 'tgtd.json'))
    try:
        api = s.client()
        vol = api.create_volume()
        att = _attach_fails(s, api, vol)
        assert "can't send the request" in att['status_reason']
        assert target.exports() == {}
        assert dp.tgt_targets(port % 32768) == {}
        if daemon_dies:
            assert util.processes('tgtd', 'portal=127.0.0.1:%d' % port) == []
        assert api.delete('/attachments/%s' % att['id']).status_code == 200
        # the backend recovers: with the real tgtadm the next attach works
        monkeypatch.setenv('PATH', os.environ['PATH'].split(':', 1)[1])
        monkeypatch.delenv('KILL_TGTD_PIDFILE', raising=False)
        target.tgtadm = shutil.which('tgtadm')
        host = dp.attacher(s, 'a')
        att, dev = host.attach_device(vol['id'])
        dev.write(0, b'recovered')
        assert dev.read(0, 9) == b'recovered'
        host.detach(att['id'], dev)
    finally:
        s.stop()
    assert util.processes('tgtd', 'portal=127.0.0.1:%d' % port) == []


def test_portal_taken_gives_a_readable_error(tmp_path):
    util.need('tgtd', 'tgtadm')
    holder = socket.socket()
    holder.bind(('127.0.0.1', 0))
    holder.listen()
    port = holder.getsockname()[1]
    s = _stack_on(tmp_path, port)
    try:
        api = s.client()
        vol = api.create_volume()
        att = _attach_fails(s, api, vol)
        assert 'did not listen on 127.0.0.1:%d' % port in att[
            'status_reason']
        assert 'Address already in use' in att['status_reason']
        assert util.processes('tgtd', 'portal=127.0.0.1:%d' % port) == []
    finally:
        holder.close()
        s.stop()


def test_restart_rebuilds_targets_after_tgtd_died(iscsi_stack):
    """tgtd was killed with attachments live, and a target nobody owns
    was left in it: at start the service brings up a new tgtd with the
    targets and ACLs the database asks for, on the same IQN and portal,
    and drops the rest."""
    api = iscsi_stack.client()
    vol = _multiattach_volume(api)
    host = dp.attacher(iscsi_stack, 'a')
    att, dev = host.attach_device(vol['id'])
    dev.write(0, b'before the crash')
    dev.flush()
    dev.close()
    manager = iscsi_stack.volume_service('file').endpoints[0]
    target = manager.driver.target
    os.kill(target._daemon_pid(), signal.SIGKILL)
    dp.util.wait_for(lambda: not util.processes(
        'tgtd', target.portal), what='tgtd to die')

    manager.init_host()
    # a target of this backend nobody attaches any more
    stray = str(uuid.uuid4())
    target.create_export(dp.volume_path(iscsi_stack, vol['id']), stray,
                         stray, 'ro', dp.attacher(iscsi_stack, 'b').connector)
    os.unlink(target._record_file(stray))
    manager.init_host()

    served = dp.tgt_targets(iscsi_stack.tgt_control)
    assert list(served) == [att['connection_info']['target_iqn']]
    # the attachment's account is made again (its secret derived again:
    # the connection info the host has still opens), the stray's is gone
    info = att['connection_info']
    assert served[info['target_iqn']]['accounts'] == [
        'cinder-lite-guard', info['auth_username']]
    assert target._accounts() == {'cinder-lite-guard',
                                  info['auth_username']}
    with pytest.raises(iscsi.IscsiError) as e:
        iscsi.IscsiSession(info['target_portal'], info['target_iqn'], 1,
                           host.connector['initiator'], timeout=5,
                           source_address='127.0.0.2').connect()
    assert e.value.errno == errno.EACCES
    dev = host.open(att)
    assert dev.read(0, 16) == b'before the crash'
    host.detach(att['id'], dev)


_settled = iscsi.settled
SENSE_UA = iscsi.SENSE_UNIT_ATTENTION
WE_RO = iscsi.PR_WRITE_EXCLUSIVE_REGISTRANTS_ONLY


def test_persistent_reservations_fence_a_failed_writer(iscsi_stack):
    """fence_scsi's steps through cinder_lite's initiator, on one volume
    with three writers and a reader: two writers register, one reserves
    "write exclusive, registrants only"; the unregistered writer's write
    conflicts (its session stays usable, and a new session connects),
    the reader reads; the survivor preempts the failed node's key and
    the failed node's next write conflicts."""
    api = iscsi_stack.client()
    vol = _multiattach_volume(api)
    hosts = {name: dp.attacher(iscsi_stack, name) for name in 'abc'}
    hosts['d'] = dp.attacher(iscsi_stack, 'd', address='127.0.0.5')
    atts = {name: hosts[name].attach(vol['id'], str(uuid.uuid4()),
                                     mode='ro' if name == 'c' else 'rw')
            for name in hosts}
    sessions = {name: _login(atts[name]['connection_info'],
                             hosts[name].connector['initiator'],
                             hosts[name].connector['ip'])
                for name in hosts}
    a, b, reader, outsider = (sessions[n] for n in 'abcd')
    block = b'\x5a' * a.block_size
    try:
        a.register(0xA1)
        b.register(0xB1)
        assert sorted(_settled(a.read_keys)[1]) == [0xA1, 0xB1]
        a.reserve(0xA1, WE_RO)
        assert _settled(b.read_reservation)[1:] == (0xA1, WE_RO)
        # registrants write, the others are fenced but still read
        _settled(lambda: a.write(0, block))
        _settled(lambda: b.write(a.block_size, block))
        with pytest.raises(iscsi.ReservationConflict) as e:
            _settled(lambda: outsider.write(0, block))
        assert e.value.errno == errno.EBADE
        assert _settled(lambda: outsider.read(0, len(block))) == block
        assert _settled(lambda: reader.read(0, len(block))) == block
        # a host that connects while the reservation is held gets a
        # session (SPC allows the probe's commands), not a crash
        late = _login(atts['d']['connection_info'],
                      hosts['d'].connector['initiator'],
                      hosts['d'].connector['ip'])
        assert late.blocks == a.blocks
        late.close()
        # a fails: b takes the reservation and cuts a off.  tgt has no
        # PREEMPT AND ABORT (its service action is left out of tgt's
        # table: ILLEGAL REQUEST, invalid field in CDB); PREEMPT removes
        # the failed node's registration all the same, only its commands
        # already queued are not aborted
        with pytest.raises(iscsi.IscsiError) as e:
            b.preempt_and_abort(0xB1, 0xA1, WE_RO)
        assert (e.value.sense_key, e.value.asc) == (0x5, 0x24)
        b.preempt(0xB1, 0xA1, WE_RO)
        assert _settled(b.read_reservation)[1:] == (0xB1, WE_RO)
        assert _settled(b.read_keys)[1] == [0xB1]
        with pytest.raises(iscsi.ReservationConflict):
            _settled(lambda: a.write(0, block))
        _settled(lambda: b.write(0, block))
        # "exclusive access, registrants only": an unregistered host may
        # not even read, and MODE SENSE is refused to it as well; a new
        # session still connects, its write-protect bit unknown
        b.release(0xB1, WE_RO)
        assert _settled(b.read_reservation)[1:] == (None, None)
        b.reserve(0xB1, iscsi.PR_EXCLUSIVE_ACCESS_REGISTRANTS_ONLY)
        with pytest.raises(iscsi.ReservationConflict):
            _settled(lambda: outsider.read(0, len(block)))
        late = _login(atts['d']['connection_info'],
                      hosts['d'].connector['initiator'],
                      hosts['d'].connector['ip'])
        assert (late.blocks, late.read_only) == (a.blocks, None)
        late.close()
        b.clear(0xB1)
        assert _settled(b.read_reservation)[1:] == (None, None)
        _settled(lambda: outsider.write(0, block))
    finally:
        for name, session in sessions.items():
            session.close()
            hosts[name].detach(atts[name]['id'])


def _reservations_of(api, vol):
    """Whether the hosts of ``vol`` can fence each other, as a host is
    told when it connects (``connection_info``)."""
    att = attach.create(api, vol['id'], conn=attach.connector())
    api.delete('/attachments/%s' % att['id'])
    return att['connection_info']['persistent_reservations']


def test_a_type_can_require_persistent_reservations(tmp_path):
    """iSCSI backends report ``persistent_reservations``, NBD and local
    ones do not; a type asking for it is placed on an iSCSI backend, and
    a host connecting to a volume is told whether it can fence the
    others."""
    util.need('tgtd', 'tgtadm', 'nbdkit')
    port = util.free_port()
    s = stack_mod.Stack(tmp_path / 'st', backends={
        'fence': {'target_protocol': 'iscsi',
                  'target_ip_address': '127.0.0.1', 'target_port': port,
                  'target_control_port': port % 32768},
        'plain': {'target_protocol': 'nbd',
                  'target_ip_address': '127.0.0.1',
                  'target_port_range': util.free_range(4)},
        'local': {'target_protocol': 'local'}}).start()
    try:
        api = s.client()
        pools = api.get('/scheduler-stats/get_pools?detail=True').json()
        caps = {p['name'].split('@')[1]: p['capabilities'][
            'persistent_reservations'] for p in pools['pools']}
        assert caps == {'fence#fence': True, 'plain#plain': False,
                        'local#local': False}
        api.create_type('clustered', {'multiattach': '<is> True',
                                      'persistent_reservations': '<is> True'})
        api.create_type('no-pr', {'persistent_reservations': '<is> False'})
        for _ in range(3):
            vol = api.create_volume(volume_type='clustered')
            assert vol['os-vol-host-attr:host'] == 'testnode@fence#fence'
            assert _reservations_of(api, vol) is True
        vol = api.create_volume(volume_type='no-pr')
        assert vol['os-vol-host-attr:host'] != 'testnode@fence#fence'
        # a member's host learns it too, from the connection info; the
        # volume view stays Cinder's
        member = s.client(user='demo', roles='member')
        assert _reservations_of(member, vol) is False
        shown = member.get('/volumes/%s' % vol['id']).json()['volume']
        assert 'persistent_reservations' not in shown
    finally:
        s.stop()


def test_detach_removes_the_departed_hosts_registration(iscsi_stack):
    """Each attachment's connection info names a reservation key.  Host a
    registers with it and reserves "write exclusive, registrants only";
    then a dies and is force-detached: its registration and reservation
    are gone, b's registration is untouched, b writes and may reserve.
    A registration under a key of a's own choosing would stay (tgt
    cannot tell whose it is); the last detach removes the target and
    with it everything."""
    api = iscsi_stack.client()
    vol = _multiattach_volume(api)
    hosts = {name: dp.attacher(iscsi_stack, name) for name in 'ab'}
    atts = {name: hosts[name].attach(vol['id'], str(uuid.uuid4()))
            for name in hosts}
    keys = {name: int(atts[name]['connection_info']['reservation_key'], 16)
            for name in hosts}
    assert keys['a'] != keys['b'] and all(keys.values())
    sessions = {name: _login(atts[name]['connection_info'],
                             hosts[name].connector['initiator'],
                             hosts[name].connector['ip'])
                for name in hosts}
    a, b = sessions['a'], sessions['b']
    block = b'\x3c' * a.block_size
    try:
        a.register(keys['a'])
        b.register(keys['b'])
        a.reserve(keys['a'], WE_RO)
        assert _settled(b.read_reservation)[1:] == (keys['a'], WE_RO)
        resp = api.post('/volumes/%s/action' % vol['id'], json={
            'os-force_detach': {'attachment_id': atts['a']['id']}})
        assert resp.status_code == 202, resp.text
        assert _settled(b.read_keys)[1] == [keys['b']]
        assert _settled(b.read_reservation)[1:] == (None, None)
        _settled(lambda: b.write(0, block))
        b.reserve(keys['b'], WE_RO)
        assert _settled(b.read_reservation)[1:] == (keys['b'], WE_RO)
        # the volume service's own initiator is gone from the ACL again
        acl = [i for t in dp.tgt_targets(iscsi_stack.tgt_control).values()
               for i in t['acl']]
        assert acl == [hosts['b'].connector['initiator']]
    finally:
        for session in sessions.values():
            session.close()
        hosts['b'].detach(atts['b']['id'])
    assert dp.tgt_targets(iscsi_stack.tgt_control) == {}
