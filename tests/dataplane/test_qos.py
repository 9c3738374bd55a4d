"""Back-end QoS specs on the data path.  The NBD target applies byte
limits with nbdkit's rate filter: an export of a volume whose type has
them really moves no more than that per second, reads and writes alike,
while a volume without them runs at full speed; a restart of the volume
service brings the export back with its limit.  tgt has no I/O limits:
an iSCSI attachment of such a volume works, unthrottled, and the volume
service says so in its log."""
import logging
import os
import time
import uuid

from tests.harness import dataplane as dp
from tests.harness import util

MiB = 1024 * 1024
# a 2 GiB volume at 2 MiB/s per GiB: 4 MiB/s each way
PER_GB = 2 * MiB
SIZE = 2
RATE = PER_GB * SIZE
# nbdkit's rate filter lets a client burst for 2 s of the rate after a
# pause (its default "burstiness"), so the first 2 * RATE pass at once
BURST = 2 * RATE
MOVED = 16 * MiB


def _qos_type(api, name, consumer='back-end', **specs):
    qos = api.post('/qos-specs', json={'qos_specs': dict(
        name=name, consumer=consumer, **specs)})
    assert qos.status_code == 200, qos.text
    vtype = api.create_type(name)
    resp = api.get('/qos-specs/%s/associate?vol_type_id=%s' % (
        qos.json()['qos_specs']['id'], vtype['id']))
    assert resp.status_code == 202, resp.text
    return vtype


def _timed(move):
    """Seconds ``move(offset)`` takes for MOVED bytes in 1 MiB steps."""
    start = time.monotonic()
    for offset in range(0, MOVED, MiB):
        move(offset)
    return time.monotonic() - start


def _cmdline(pid):
    with open('/proc/%d/cmdline' % pid, 'rb') as f:
        return [a.decode() for a in f.read().split(b'\0') if a]


def test_back_end_rate_limits_an_nbd_export(nbd_stack):
    api = nbd_stack.client()
    _qos_type(api, 'slow', total_bytes_sec_per_gb=str(PER_GB),
              total_iops_sec='100')
    slow = api.create_volume(size=SIZE, volume_type='slow')
    plain = api.create_volume(size=SIZE)
    host = dp.attacher(nbd_stack, 'a')
    att = host.attach(slow['id'], str(uuid.uuid4()))
    # back-end specs are the target's: nothing for the host to apply
    assert att['connection_info']['qos_specs'] is None
    target = dp.backend_target(nbd_stack)
    record = target.exports()[att['id']]
    assert record['rate'] == RATE * 8
    argv = _cmdline(record['pid'])
    assert '--filter=rate' in argv and 'rate=%d' % (RATE * 8) in argv
    dev = host.open(att)
    chunk = os.urandom(MiB)
    # at most RATE after the burst: (MOVED - BURST) / RATE = 2 s each way
    least = (MOVED - BURST) / RATE
    wrote = _timed(lambda offset: dev.write(offset, chunk))
    dev.flush()
    read = _timed(lambda offset: dev.read(offset, MiB))
    assert least * 0.9 <= wrote < least * 3, wrote
    assert least * 0.9 <= read < least * 3, read
    assert dev.read(MOVED - MiB, MiB) == chunk

    fast = host.attach(plain['id'], str(uuid.uuid4()))
    assert target.exports()[fast['id']]['rate'] is None
    fast_dev = host.open(fast)
    assert _timed(lambda offset: fast_dev.write(offset, chunk)) < \
        least / 4
    assert _timed(lambda offset: fast_dev.read(offset, MiB)) < least / 4

    # the export a restart brings back has its limit again
    dev.close()
    target.remove_export(att['id'])
    nbd_stack.volume_service('file').endpoints[0].init_host()
    record = target.exports()[att['id']]
    assert 'rate=%d' % (RATE * 8) in _cmdline(record['pid'])
    dev = host.open(att)
    assert dev.read(MOVED - MiB, MiB) == chunk
    host.detach(att['id'], dev)
    host.detach(fast['id'], fast_dev)
    assert util.processes('nbdkit', nbd_stack.state_path) == []


def test_read_and_write_limits_bound_both_directions(nbd_stack):
    """nbdkit has one rate for reads and for writes: the smallest byte
    limit given bounds both (so each stays within every limit)."""
    api = nbd_stack.client()
    _qos_type(api, 'mixed', consumer='both', read_bytes_sec=str(8 * MiB),
              write_bytes_sec=str(RATE))
    vol = api.create_volume(volume_type='mixed')
    host = dp.attacher(nbd_stack, 'b')
    att = host.attach(vol['id'], str(uuid.uuid4()))
    # consumer "both": the host gets them too
    assert att['connection_info']['qos_specs'] == {
        'read_bytes_sec': str(8 * MiB), 'write_bytes_sec': str(RATE)}
    assert dp.backend_target(nbd_stack).exports()[att['id']]['rate'] == \
        RATE * 8
    dev = host.open(att)
    least = (MOVED - BURST) / RATE
    assert _timed(lambda offset: dev.read(offset, MiB)) >= least * 0.9
    host.detach(att['id'], dev)


def test_tgt_cannot_apply_back_end_specs(iscsi_stack, caplog):
    api = iscsi_stack.client()
    _qos_type(api, 'slow-iscsi', total_bytes_sec=str(RATE))
    vol = api.create_volume(volume_type='slow-iscsi')
    host = dp.attacher(iscsi_stack, 'a')
    with caplog.at_level(logging.WARNING):
        att = host.attach(vol['id'], str(uuid.uuid4()))
    assert any('back-end QoS specs total_bytes_sec=%d not applied: tgt '
               'has no I/O limits' % RATE in r.getMessage()
               for r in caplog.records), caplog.text
    dev = host.open(att)
    chunk = os.urandom(MiB)
    dev.write(0, chunk)
    dev.flush()
    assert dev.read(0, MiB) == chunk
    host.detach(att['id'], dev)
