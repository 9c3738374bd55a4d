"""Cut-offs drain before they report success, over NBD, iSCSI and RBD.

The old writer of a single-writer volume keeps a stream of writes in
flight (several connections of its attachment, each writing without
pause) while a reader takes over (os-takeover).  The new writer's first
write covers every block the old writer writes, in one command; then,
block by block, nothing of the old writer may be found (a write of it
that landed after the new writer's first acknowledged write would show),
and no write of the old writer may be acknowledged after it.  When the
target cannot confirm the drain (tgtd frozen), the takeover fails and
the reader stays a reader."""
import os
import signal
import threading
import time
import uuid

import pytest

from cinder_lite.connector import devices
from tests.harness import dataplane as dp
from tests.harness import stack as stack_mod
from tests.harness import util

SINGLE_WRITER = {'multiattach': '<is> True', 'mode': 'RO'}
BLOCK = 4096
REGION = 1024 * 1024           # what the new writer's first write covers
CHUNK = 256 * 1024             # one write of the old writer
STREAMS = 4                    # connections of the old writer


def _stamp(tag, number, length):
    """``length`` bytes whose every block starts with ``tag`` and
    ``number``."""
    head = b'%s-%010d-' % (tag, number)
    block = head + b'.' * (BLOCK - len(head))
    return block * (length // BLOCK)


class OldWriter:
    """STREAMS threads, each with its own connection of the old
    writer's attachment, writing CHUNKs round the region until the
    target cuts them off; every write's start, end and outcome kept."""

    def __init__(self, info, connector):
        self.devs = [devices.connect(info, connector['ip'],
                                     connector.get('initiator'))
                     for _ in range(STREAMS)]
        self.writes = []         # (stream, start, end, acknowledged)
        self.lock = threading.Lock()
        self.started = threading.Event()
        self.threads = [threading.Thread(target=self._stream, args=(n,),
                                         daemon=True)
                        for n in range(STREAMS)]

    def _stream(self, n):
        dev, seq = self.devs[n], 0
        while True:
            seq += 1
            offset = ((n + seq * STREAMS) * CHUNK) % REGION
            begin = time.monotonic()
            try:
                dev.write(offset, _stamp(b'OLD%d' % n, seq, CHUNK))
                ok = True
            except Exception:
                ok = False
            with self.lock:
                self.writes.append((n, begin, time.monotonic(), ok))
                if len(self.writes) >= 4 * STREAMS:
                    self.started.set()
            if not ok:
                return

    def start(self):
        for t in self.threads:
            t.start()
        assert self.started.wait(30), 'the old writer did not write'

    def join(self):
        for t in self.threads:
            t.join(30)
            assert not t.is_alive(), 'a write of the old writer hangs'
        for dev in self.devs:
            dev.close()


def _nexus_of(s, initiator):
    return [n for t in dp.tgt_targets(s.tgt_control).values()
            for n in t['nexus'] if n['initiator'] == initiator]


@pytest.mark.parametrize('protocol', ['nbd', 'iscsi', 'rbd'])
def test_nothing_of_the_old_writer_lands_after_the_takeover(
        request, protocol):
    s = request.getfixturevalue(protocol + '_stack')
    api = s.client()
    api.create_type('single', SINGLE_WRITER)
    vol = api.create_volume(volume_type='single')
    writer, reader = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    w_att, w_dev = writer.attach_device(vol['id'], str(uuid.uuid4()))
    r_att, r_dev = reader.attach_device(vol['id'], str(uuid.uuid4()))
    if protocol != 'rbd':
        old_pid = dp.backend_target(s).exports()[w_att['id']].get('pid')
    old = OldWriter(w_att['connection_info'], writer.connector)
    old.start()

    asked = time.monotonic()
    new_att, new_dev = reader.takeover(r_att['id'], r_dev)
    answered = time.monotonic()
    # the target holds nothing of the old writer any more
    if protocol == 'iscsi':
        assert _nexus_of(s, writer.connector['initiator']) == []
    elif protocol == 'rbd':
        # the old writer's key is gone and its clients are blocklisted
        reach = s.volume_service('rbd').endpoints[0].driver.reach(
            vol['id'], [w_att['id']], [])
        assert (reach['exports'], reach['sessions'],
                reach['reachable']) == ([], 0, False)
    else:
        assert not os.path.exists('/proc/%d' % old_pid)
    new_dev.write(0, _stamp(b'NEW', 0, REGION))
    first_ack = time.monotonic()
    new_dev.flush()
    old.join()
    w_dev.close()

    landed = [i for i in range(REGION // BLOCK)
              if not bytes(new_dev.read(i * BLOCK, 4)) == b'NEW-']
    in_flight = [w for w in old.writes if w[1] < asked < w[2]]
    late_acks = [w for w in old.writes if w[3] and w[2] > first_ack]
    acked_during = [w for w in old.writes if w[3] and asked < w[2]]
    print('\n%s takeover: %d writes of the old writer, %d in flight when '
          'the takeover was asked, %d acknowledged during it, request %.1f '
          'ms; blocks of the old writer after the new writer\'s first '
          'acknowledged write: %d; old writes acknowledged after it: %d'
          % (protocol, len(old.writes), len(in_flight), len(acked_during),
             (answered - asked) * 1000, len(landed), len(late_acks)))
    assert in_flight, 'no write was in flight at the cut'
    assert landed == [] and late_acks == []
    assert all(not ok for n, b, e, ok in old.writes if b > answered)
    reader.detach(new_att['id'], new_dev)
    api.wait_volume(vol['id'], 'available')


@pytest.fixture
def frozen_tgt_stack(tmp_path):
    """An iSCSI stack whose cut-offs may take 1 s."""
    util.need('tgtd', 'tgtadm')
    backend = dict(dp.iscsi_backend(), target_drain_timeout=1.0)
    s = stack_mod.Stack(tmp_path / 'st', backends={'file': backend}
                        ).start()
    s.tgt_control = backend['target_control_port']
    yield s
    dp.stop(s)


def test_a_takeover_whose_cut_cannot_be_confirmed_does_not_promote(
        frozen_tgt_stack):
    """tgtd stops answering (SIGSTOP): nobody can say whether the old
    writer's commands are done, so the takeover fails within the drain
    timeout, the reader stays read-only and the old writer's attachment
    is left error_detaching (not detached) for a retry."""
    s = frozen_tgt_stack
    api = s.client()
    api.create_type('single', SINGLE_WRITER)
    vol = api.create_volume(volume_type='single')
    writer, reader = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    w_att, w_dev = writer.attach_device(vol['id'])
    r_att, r_dev = reader.attach_device(vol['id'])
    target_pid = dp.backend_target(s)._daemon_pid()
    assert target_pid
    os.kill(target_pid, signal.SIGSTOP)
    try:
        begin = time.monotonic()
        resp = api.post('/attachments/%s/action' % r_att['id'],
                        json={'os-takeover': {}})
        took = time.monotonic() - begin
    finally:
        os.kill(target_pid, signal.SIGCONT)
    assert resp.status_code == 503, resp.text
    assert 'cannot be confirmed' in resp.text
    assert took < 10
    shown = api.get('/attachments/%s' % r_att['id']).json()['attachment']
    assert (shown['attach_mode'], shown['status']) == ('ro', 'attached')
    old = api.get('/attachments/%s' % w_att['id']).json()['attachment']
    assert old['status'] == 'error_detaching'
    w_dev.close()
    # tgtd answers again: the retry cuts and drains, then the takeover
    assert api.delete('/attachments/%s' % w_att['id']).status_code == 200
    assert _nexus_of(s, writer.connector['initiator']) == []
    att, dev = reader.takeover(r_att['id'], r_dev)
    assert att['attach_mode'] == 'rw'
    dev.write(0, b'mine')
    dev.flush()
    reader.detach(att['id'], dev)


def test_a_fence_whose_cut_cannot_be_confirmed_answers_503(
        frozen_tgt_stack):
    """tgtd frozen: the fence answers 503 within the drain timeout; the
    mark is written (new connections of the host are refused); once tgtd
    answers, fencing again cuts and drains."""
    s = frozen_tgt_stack
    api = s.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='shared')
    host = dp.attacher(s, 'a')
    att, dev = host.attach_device(vol['id'])
    pid = dp.backend_target(s)._daemon_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        resp = api.post('/os-host-fences/host-a/action',
                        json={'os-fence': {'volume_id': vol['id']}})
    finally:
        os.kill(pid, signal.SIGCONT)
    assert resp.status_code == 503, resp.text
    assert 'cannot be confirmed' in resp.text
    refused = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'connector': host.connector}})
    assert refused.status_code == 409 and 'is fenced' in refused.text
    resp = api.post('/os-host-fences/host-a/action',
                    json={'os-fence': {'volume_id': vol['id']}})
    assert resp.status_code == 200, resp.text
    assert _nexus_of(s, host.connector['initiator']) == []
    dev.close()
    api.post('/os-host-fences/host-a/action',
             json={'os-unfence': {'volume_id': vol['id']}})
    host.detach(att['id'])
