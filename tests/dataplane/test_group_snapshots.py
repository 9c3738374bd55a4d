"""A group snapshot is one point in time across every volume of the
group, whoever writes them (doc/source/groups.rst).

Two hosts attach each of three shared volumes of a group over NBD and
write, one request at a time, an increasing counter into a block of
their own of every volume in turn: counter 1 to volume 0, 1 to volume 1,
1 to volume 2, 2 to volume 0, ...  A group snapshot is taken while they
write.  In its snapshots, each host's counters must be a prefix of what
that host wrote: the first volumes hold some n, the others n - 1 (the
one request in flight at the pause may be in or not), never more apart;
every counter the host had acknowledged everywhere before the request
is in, none it issued after the group snapshot was available.  Each
volume holds 64 MiB of data, so the copies are tens of milliseconds
apart while a host writes a block every fraction of one: without the
hold, they hold counters hundreds apart (checked by hand with the hold
taken out of flows/group_snapshot.py: the test fails).
Volumes made from the group snapshot (create-from-src) hold the same.
"""
import json
import os
import threading
import uuid

from tests.harness import dataplane as dp
from tests.harness import groups as gh
from tests.harness import util
from tests.harness.volumes import volume_file

BLOCK = 4096
FILL_AT = 1 << 20
FILL = 64 << 20
HOSTS = ('a', 'b')
VOLUMES = 3


def block_of(counter):
    return (b'%015d\n' % counter) * (BLOCK // 16)


def counter_in(data):
    if data[:16] == b'\0' * 16:
        return 0
    value = int(data[:15])
    assert data == block_of(value), 'a torn block: %r' % data[:40]
    return value


class Writer(threading.Thread):
    """One host: counter n into its block of every volume in turn."""

    def __init__(self, index, devices):
        super().__init__(daemon=True)
        self.index = index
        self.devices = devices
        self.stop = threading.Event()
        # the last counter acknowledged on every volume
        self.complete = 0
        self.issued = 0
        self.error = None

    def run(self):
        try:
            n = 0
            while not self.stop.is_set():
                n += 1
                for dev in self.devices:
                    self.issued = n
                    dev.write(self.index * BLOCK, block_of(n))
                self.complete = n
        except Exception as e:        # reported by the test
            self.error = e


def check_prefix(counters, before, after, what):
    """``counters`` (one per volume, in write order) is a prefix of the
    host's writes: n for the first volumes, n - 1 for the others."""
    top = counters[0]
    assert all(c in (top, top - 1) for c in counters), (what, counters)
    assert counters == sorted(counters, reverse=True), (what, counters)
    assert min(counters) >= before, (what, counters, before)
    assert top <= after, (what, counters, after)


def test_group_snapshot_is_one_point_in_time(nbd_stack):
    s = nbd_stack
    api = s.client()
    shared = api.create_type('shared', {'multiattach': '<is> True'})
    gtype = gh.create_group_type(api, specs={
        'consistent_group_snapshot_enabled': '<is> True'})
    group = gh.create_group(api, gtype['id'], [shared['id']])
    vols = [api.create_volume(volume_type=shared['id'], group_id=group['id'])
            for _ in range(VOLUMES)]
    for v in vols:
        # data to copy: each copy takes tens of milliseconds
        with open(volume_file(s, v['id']), 'r+b') as f:
            f.seek(FILL_AT)
            for _ in range(FILL // (1 << 20)):
                f.write(os.urandom(1 << 20))
    clients = {h: dp.attacher(s, h) for h in HOSTS}
    attached = {h: [clients[h].attach_device(v['id'], str(uuid.uuid4()),
                                             mode='rw') for v in vols]
                for h in HOSTS}
    writers = [Writer(i, [dev for _, dev in attached[h]])
               for i, h in enumerate(HOSTS)]
    for w in writers:
        w.start()
    try:
        util.wait_for(lambda: all(w.complete > 100 for w in writers),
                      what='writes under way')
        before = [w.complete for w in writers]
        gs = gh.create_group_snapshot(api, group['id'])
        after = [w.issued for w in writers]
        # the writers go on once they are let go
        util.wait_for(lambda: all(w.complete > a + 50
                                  for w, a in zip(writers, after)),
                      what='writes after the group snapshot')
    finally:
        for w in writers:
            w.stop.set()
        for w in writers:
            w.join(timeout=30)
    assert [w.error for w in writers] == [None, None]
    snaps = {sn['volume_id']: sn for sn in gh.snapshots_of(api, gs['id'])}
    assert sorted(snaps) == sorted(v['id'] for v in vols)
    seen = []
    for i, h in enumerate(HOSTS):
        counters = []
        for v in vols:
            path = volume_file(s, snaps[v['id']]['id'], kind='snapshot')
            with open(path, 'rb') as f:
                f.seek(i * BLOCK)
                counters.append(counter_in(f.read(BLOCK)))
        check_prefix(counters, before[i], after[i], 'host %s' % h)
        seen.append(counters)
    # a group made from the group snapshot holds the same counters
    resp = api.post('/groups/action', json={'create-from-src': {
        'group_snapshot_id': gs['id']}})
    assert resp.status_code == 202, resp.text
    copy = gh.wait_group(api, resp.json()['group']['id'])
    copies = api.get('/volumes/detail?group_id=%s' % copy['id']).json()[
        'volumes']
    by_source = {c['snapshot_id']: c for c in copies}
    reader = dp.attacher(s, 'c')
    for i in range(len(HOSTS)):
        got = []
        for v in vols:
            new = by_source[snaps[v['id']]['id']]
            att, dev = reader.attach_device(new['id'], str(uuid.uuid4()),
                                            mode='ro')
            got.append(counter_in(dev.read(i * BLOCK, BLOCK)))
            reader.detach(att['id'], dev)
        assert got == seen[i]
    for h in HOSTS:
        for att, dev in attached[h]:
            clients[h].detach(att['id'], dev)
    # the writers' exports were let go: every volume takes writes again
    # (the test's writers went on above); nothing is left paused
    target = dp.backend_target(s)
    assert target._held == set()


def test_group_snapshot_refused_when_writers_cannot_be_held(nbd_stack):
    """An export started before the pause filter (no control socket)
    cannot be held: a group whose type asks for consistency gets an
    error group snapshot with a user message; nothing stays paused and
    no copy is left."""
    s = nbd_stack
    api = s.client()
    shared = api.create_type('shared', {'multiattach': '<is> True'})
    gtype = gh.create_group_type(api, specs={
        'consistent_group_snapshot_enabled': '<is> True'})
    group = gh.create_group(api, gtype['id'], [shared['id']])
    vol = api.create_volume(volume_type=shared['id'], group_id=group['id'])
    client = dp.attacher(s, 'a')
    att, dev = client.attach_device(vol['id'], str(uuid.uuid4()), mode='rw')
    target = dp.backend_target(s)
    # as an export made by a release before the pause filter recorded it
    record = target._load(att['id'])
    record['pause'] = None
    with open(target._state_file(att['id']), 'w') as f:
        json.dump(record, f)
    gs = gh.create_group_snapshot(api, group['id'], wait=False)
    failed = gh.wait_group_snapshot(api, gs['id'], 'error')
    messages = [m for m in api.get('/messages').json()['messages']
                if m['resource_uuid'] == failed['id']]
    assert messages and 'pause filter' in messages[0]['user_message']
    snaps = gh.snapshots_of(api, gs['id'])
    assert [sn['status'] for sn in snaps] == ['error']
    assert not os.path.exists(volume_file(s, snaps[0]['id'],
                                          kind='snapshot'))
    dev.write(0, block_of(7))
    dev.flush()
    assert api.delete('/group_snapshots/%s' % gs['id']).status_code == 202
    util.wait_for(lambda: api.get('/group_snapshots/%s' % gs['id'])
                  .status_code == 404, what='group snapshot deleted')
    client.detach(att['id'], dev)
