"""Host fences at the targets, over NBD and iSCSI: two hosts write to a
shared volume; fencing host a cuts it at the target (its next write is
refused, nothing it had in flight lands after the fence answered), host
b goes on; the target itself says a cannot reach the volume; a restart
of the volume service (and of tgtd) leaves a fenced; unfencing lets a
write again through the connection info it had."""
import os
import signal
import threading
import time

import pytest

from cinder_lite import nbd
from cinder_lite import iscsi
from tests.harness import dataplane as dp
from tests.harness import util

PROTOCOLS = {'nbd': ('nbd_stack', (nbd.NbdError, ConnectionError)),
             'iscsi': ('iscsi_stack', iscsi.IscsiError)}
BLOCK = 4096
REGION = 256 * 1024


@pytest.fixture(params=sorted(PROTOCOLS))
def proto(request):
    fixture, error = PROTOCOLS[request.param]
    s = request.getfixturevalue(fixture)
    api = s.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    return request.param, s, api, error


def _fence(api, host, action='os-fence', **scope):
    resp = api.post('/os-host-fences/%s/action' % host,
                    json={action: scope})
    assert resp.status_code == 200, resp.text
    return resp.json()['host_fence']


def _status(api, host, volume_id):
    resp = api.get('/os-host-fences/%s?volume_id=%s' % (host, volume_id))
    assert resp.status_code == 200, resp.text
    return resp.json()['host_fence']['volumes'][0]


def _writes_in_flight(dev, stop):
    """Write REGION over and over from a thread until refused; returns
    the list of (start, end, acknowledged) and the thread."""
    writes = []

    def run():
        seq = 0
        while not stop.is_set():
            seq += 1
            head = b'A-%08d-' % seq
            block = head + b'.' * (BLOCK - len(head))
            begin = time.monotonic()
            try:
                dev.write((seq * BLOCK * 8) % REGION, block * 8)
                ok = True
            except Exception:
                ok = False
            writes.append((begin, time.monotonic(), ok))
            if not ok:
                return
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return writes, thread


def test_fence_cuts_a_host_and_unfence_lets_it_back(proto):
    protocol, s, api, refused = proto
    vol = api.create_volume(volume_type='shared')
    vid = vol['id']
    ha, hb = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    a_att, a_dev = ha.attach_device(vid)
    b_att, b_dev = hb.attach_device(vid)
    a_dev.write(0, b'a was here')
    a_dev.flush()
    assert _status(api, 'host-a', vid)['reachable'] is True
    stop = threading.Event()
    writes, thread = _writes_in_flight(a_dev, stop)
    while len(writes) < 5:
        time.sleep(0.001)

    asked = time.monotonic()
    fenced = _fence(api, 'host-a', volume_id=vid, reason='node a lost')
    answered = time.monotonic()
    (entry,) = fenced['volumes']
    assert entry['attachments'] == [a_att['id']]
    assert entry['drained_ms'] is not None
    # after the fence answered: nothing of a lands, a is refused
    b_dev.write(0, b'b' * REGION)
    b_dev.flush()
    thread.join(30)
    stop.set()
    assert not thread.is_alive()
    assert not [w for w in writes if w[2] and w[1] > answered]
    assert b_dev.read(0, REGION) == b'b' * REGION
    assert writes[-1][2] is False
    print('\n%s fence: request %.1f ms, drain %.1f ms; a had %d writes, '
          '%d in flight at the fence' % (
              protocol, (answered - asked) * 1000, entry['drained_ms'],
              len(writes), sum(1 for w in writes
                               if w[0] < asked < w[1])))
    with pytest.raises(refused):
        a_dev.write(0, b'late')
        a_dev.flush()
    a_dev.close()
    with pytest.raises(refused):
        ha.open(a_att).write(0, b'again')
    b_dev.write(0, b'b goes on')
    b_dev.flush()

    # the target says so, not only the database
    status = _status(api, 'host-a', vid)
    assert (status['fenced'], status['reachable'], status['exports'],
            status['acl'], status['sessions']) == (True, False, [], [], 0)
    assert _status(api, 'host-b', vid)['reachable'] is True
    target = dp.backend_target(s)
    assert set(target.exports()) == {b_att['id']}
    if protocol == 'iscsi':
        served = dp.tgt_targets(s.tgt_control)
        assert [t['acl'] for t in served.values()] == [
            [hb.connector['initiator']]]

    # a restart of the volume service, and of tgtd, leaves a fenced
    manager = s.volume_service('file').endpoints[0]
    if protocol == 'iscsi':
        b_dev.close()
        os.kill(target._daemon_pid(), signal.SIGKILL)
        util.wait_for(lambda: not util.processes('tgtd', target.portal),
                      what='tgtd to die')
    manager.init_host()
    assert set(target.exports()) == {b_att['id']}
    assert _status(api, 'host-a', vid)['reachable'] is False
    if protocol == 'iscsi':
        b_dev = hb.open(b_att)
    b_dev.write(0, b'b after the restart')
    b_dev.flush()
    with pytest.raises(refused):
        ha.open(a_att).write(0, b'after the restart')
    # and so does reconcile, and a reset of the attachment's volume
    manager.reconcile_now(max_age=0)
    resp = api.post('/volumes/%s/action' % vid, json={
        'os-reset_status': {'status': 'in-use'}})
    assert resp.status_code == 202, resp.text
    manager.init_host()
    assert _status(api, 'host-a', vid)['reachable'] is False

    # unfence: a writes again through the connection info it had
    out = _fence(api, 'host-a', 'os-unfence', volume_id=vid)
    assert out['volumes'][0]['attachments'] == [a_att['id']]
    assert _status(api, 'host-a', vid)['reachable'] is True
    a_dev = ha.open(a_att)
    assert a_dev.read(0, 19) == b'b after the restart'
    a_dev.write(0, b'a is back')
    a_dev.flush()
    assert b_dev.read(0, 9) == b'a is back'
    ha.detach(a_att['id'], a_dev)
    hb.detach(b_att['id'], b_dev)
    api.wait_volume(vid, 'available')
