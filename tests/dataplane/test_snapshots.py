"""Snapshots and clones of a shared volume in use, proved with bytes
over NBD and over iSCSI: two hosts write a multiattach volume, a
snapshot is taken while they stay attached, and a volume made from it
(and a clone of the volume) is attached by a third host, which reads
back exactly what the writers had written at that moment.  With a writer
busy throughout, the snapshot holds every write acknowledged before it
was asked for, and none issued after it was reported available
(doc/source/snapshots.rst)."""
import os
import threading
import uuid

import pytest

from tests.harness import dataplane as dp
from tests.harness import util

BLOCK = 4096


def snapshot(api, volume_id):
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': volume_id, 'force': True}})
    assert resp.status_code == 202, resp.text
    return resp.json()['snapshot']['id']


def wait_available(api, sid):
    def check():
        snap = api.get('/snapshots/%s' % sid).json()['snapshot']
        assert snap['status'] != 'error', snap
        return snap if snap['status'] == 'available' else None
    return util.wait_for(check, what='snapshot %s available' % sid)


def volume_from(api, **source):
    resp = api.post('/volumes', json={'volume': dict(source)})
    assert resp.status_code == 202, resp.text
    return api.wait_volume(resp.json()['volume']['id'], 'available')


@pytest.mark.parametrize('protocol', ['nbd', 'iscsi'])
def test_snapshot_and_clone_of_a_shared_volume_in_use(request, protocol):
    s = request.getfixturevalue('%s_stack' % protocol)
    api = s.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='shared')
    clients = {n: dp.attacher(s, n) for n in ('a', 'b', 'c')}
    atts, devs = {}, {}
    for n in ('a', 'b'):
        atts[n], devs[n] = clients[n].attach_device(
            vol['id'], str(uuid.uuid4()), mode='rw')
    first = {n: os.urandom(BLOCK) for n in ('a', 'b')}
    devs['a'].write(0, first['a'])
    devs['b'].write(BLOCK, first['b'])
    for n in ('a', 'b'):
        devs[n].flush()
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'in-use'
    sid = snapshot(api, vol['id'])
    wait_available(api, sid)
    # written after the snapshot: in the clone, not in the snapshot
    later = os.urandom(BLOCK)
    devs['a'].write(0, later)
    devs['a'].flush()

    restored = volume_from(api, snapshot_id=sid, size=2)
    clone = volume_from(api, source_volid=vol['id'])
    for new, block0 in ((restored, first['a']), (clone, later)):
        att, dev = clients['c'].attach_device(new['id'], str(uuid.uuid4()),
                                              mode='rw')
        assert att['connection_info']['driver_volume_type'] == protocol
        assert dev.read(0, BLOCK) == block0
        assert dev.read(BLOCK, BLOCK) == first['b']
        assert dev.read(2 * BLOCK, BLOCK) == b'\0' * BLOCK
        clients['c'].detach(att['id'], dev)
    for n in ('a', 'b'):
        clients[n].detach(atts[n]['id'], devs[n])


def test_snapshot_while_a_writer_is_busy(nbd_stack):
    """What a snapshot of a volume with an active writer holds, on a
    filesystem without reflinks (the sparse copy; a reflink is atomic)."""
    s = nbd_stack
    api = s.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='shared')
    client = dp.attacher(s, 'a')
    att, dev = client.attach_device(vol['id'], str(uuid.uuid4()),
                                    mode='rw')
    acked = []            # block numbers whose write was acknowledged
    stop = threading.Event()
    # each write goes to a block of its own: block i holds b'%08d' % i
    blocks = 8 * 1024 ** 3 // BLOCK // 8     # well inside 1 GiB

    def writer():
        i = 0
        while not stop.is_set() and i < blocks:
            dev.write(i * BLOCK, (b'%08d' % i) * (BLOCK // 8))
            acked.append(i)
            i += 1
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        util.wait_for(lambda: len(acked) > 200, what='writes under way')
        before = len(acked)
        sid = snapshot(api, vol['id'])
        wait_available(api, sid)
        after = len(acked)
        util.wait_for(lambda: len(acked) > after + 50,
                      what='writes after the snapshot')
    finally:
        stop.set()
        thread.join(timeout=30)
    last = len(acked)
    restored = volume_from(api, snapshot_id=sid)
    with open(dp.volume_path(s, restored['id']), 'rb') as f:
        data = f.read(last * BLOCK)
    present = [i for i in range(last)
               if data[i * BLOCK:(i + 1) * BLOCK]
               == (b'%08d' % i) * (BLOCK // 8)]
    # every write acknowledged before the request is in the snapshot,
    # none issued after it was available; those in between may or may
    # not be
    assert present[:before] == list(range(before))
    assert all(i < after for i in present), (after, present[-5:])
    client.detach(att['id'], dev)


@pytest.mark.parametrize('protocol', ['nbd', 'iscsi'])
def test_a_shared_volume_reverted_reads_its_snapshot(request, protocol):
    """Two hosts write a shared volume, it is snapshotted in use, they
    overwrite it and detach; the revert (refused while they are
    attached) gives a host that attaches again the snapshot's bytes,
    read over the target."""
    s = request.getfixturevalue('%s_stack' % protocol)
    api = s.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='shared')
    clients = {n: dp.attacher(s, n) for n in ('a', 'b')}
    atts, devs = {}, {}
    for n in ('a', 'b'):
        atts[n], devs[n] = clients[n].attach_device(
            vol['id'], str(uuid.uuid4()), mode='rw')
    first = {n: os.urandom(BLOCK) for n in ('a', 'b')}
    devs['a'].write(0, first['a'])
    devs['b'].write(BLOCK, first['b'])
    for n in ('a', 'b'):
        devs[n].flush()
    sid = snapshot(api, vol['id'])
    wait_available(api, sid)
    devs['a'].write(0, os.urandom(BLOCK))
    devs['b'].write(3 * BLOCK, os.urandom(BLOCK))
    for n in ('a', 'b'):
        devs[n].flush()
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'revert': {'snapshot_id': sid}})
    assert resp.status_code == 409, resp.text
    for n in ('a', 'b'):
        clients[n].detach(atts[n]['id'], devs[n])
    api.wait_volume(vol['id'], 'available')

    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'revert': {'snapshot_id': sid}})
    assert resp.status_code == 202, resp.text
    api.wait_volume(vol['id'], 'available')
    att, dev = clients['a'].attach_device(vol['id'], str(uuid.uuid4()),
                                          mode='rw')
    assert dev.read(0, BLOCK) == first['a']
    assert dev.read(BLOCK, BLOCK) == first['b']
    assert dev.read(3 * BLOCK, BLOCK) == bytes(BLOCK)
    clients['a'].detach(att['id'], dev)
