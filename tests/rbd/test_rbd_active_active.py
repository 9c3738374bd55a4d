"""Two volume services serve one RBD pool active-active: ``node-ma@ma``
and ``node-ma2@ma`` are cluster ``aa`` over RabbitMQ and one database,
each with a state_path of its own, so that nothing is shared but Ceph,
the database and the bus.

* creates, extends and deletes land once each, on both members;
* attachments are exported by both members, and bytes written through
  one member's export are read through the other's;
* with one member killed (SIGKILL), its attachments keep working (the
  hosts talk to Ceph, not to the member), the other member takes every
  new create and attach, and a detach of an attachment the dead member
  exported is done by the live one: the key is removed, the host's
  client is cut, the record in the pool's omap is gone;
* the killed member starting again removes none of the other member's
  exports;
* with the member that exported an old writer and a fenced host's
  attachment killed, the live one cuts the writer for a takeover, cuts
  the host for os-fence and exports it again for os-unfence.
"""
import collections
import concurrent.futures
import json
import re
import subprocess
import uuid

import pytest

from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from cinder_lite.volume.drivers import rbd as rbd_driver
from tests.conftest import rbd_backend
from tests.harness import cluster as cluster_mod
from tests.harness import stack
from tests.harness import util

# one database engine is enough here (test_active_active covers both)
CLUSTER_KINDS = ['postgresql']
MEMBERS = {'node-ma@ma': 'ma', 'node-ma2@ma': 'ma2'}
POOL = 'aa@ma#ma'
RECORDS = 'cinder_lite.exports.ma'
GiB = 1024 ** 3
CREATED = re.compile(r'created volume-([0-9a-f-]{36}) ')
DELETED = re.compile(r'deleted volume-([0-9a-f-]{36}) ')
V354 = {'OpenStack-API-Version': 'volume 3.54'}


@pytest.fixture(scope='module', params=CLUSTER_KINDS)
def cluster(request, ceph, tmp_path_factory):
    kind = request.param
    cluster_mod.require_services(kind)
    backend = rbd_backend(ceph)
    c = cluster_mod.Cluster(
        kind, extra_default={'reconcile_after': 2, 'reconcile_interval': 1},
        node_options={'ma': backend},
        extra_nodes={'ma2': ('node-ma2', 'ma', backend)},
        process_sections={
            'ma': {'DEFAULT': {'cluster': 'aa',
                               'state_path': '{workdir}/state-ma'}},
            'ma2': {'DEFAULT': {'cluster': 'aa',
                                'state_path': '{workdir}/state-ma2'}}})
    # the file backend of the harness's other node is not needed here
    del c.nodes['noma']
    try:
        c.start()
    except cluster_mod.ClusterError as e:
        pytest.fail('cluster on %s did not start: %s' % (kind, e),
                    pytrace=False)
    try:
        yield c
    finally:
        codes = c.stop_processes()
        bad = c.unclean_exits(codes)
        logs = c.logs() if bad else ''
        c.cleanup()
    assert not bad, 'services did not stop cleanly: %r\n%s' % (bad, logs)


@pytest.fixture
def api(cluster):
    cluster.check_alive()
    c = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    yield c
    c.session.close()


@pytest.fixture
def opened():
    """Devices a test opens: closed whatever happens (a librados client
    left open hangs the interpreter's exit once the cluster is gone)."""
    devices = []
    yield devices
    for dev in devices:
        try:
            dev.close()
        except Exception:
            pass


def _count(cluster, pattern):
    counts = collections.Counter()
    for name in MEMBERS.values():
        counts.update(pattern.findall(cluster.processes[name].read_log()))
    return counts


def _by_member(cluster, pattern, ids):
    return {name: {i for i in pattern.findall(
        cluster.processes[name].read_log()) if i in ids}
        for name in MEMBERS.values()}


def _images(ceph):
    return set(ceph.run('rbd', '--conf', ceph.conf, '--keyring',
                        ceph.admin_keyring, 'ls', ceph.pool).split())


def _image_size(ceph, volume_id):
    return json.loads(ceph.run(
        'rbd', '--conf', ceph.conf, '--keyring', ceph.admin_keyring,
        'info', '--format', 'json',
        '%s/volume-%s' % (ceph.pool, volume_id)))['size']


def _key_exists(ceph, attachment_id):
    done = subprocess.run(
        ['ceph', '--conf', ceph.conf, '--keyring', ceph.admin_keyring,
         'auth', 'get', 'client.cinder-lite.%s' % attachment_id],
        capture_output=True, timeout=60)
    return done.returncode == 0


def _records(ceph):
    done = subprocess.run(
        ['rados', '--conf', ceph.conf, '--keyring', ceph.admin_keyring,
         '-p', ceph.pool, 'listomapkeys', RECORDS],
        capture_output=True, text=True, timeout=60)
    return set(done.stdout.split())


def _attacher(cluster, n):
    transport = client.RestTransport(cluster.url + '/v3',
                                     cluster_mod.PROJECT)
    return client.AttachClient(transport, host_connector.get_connector(
        host='compute-%d' % n, ip='127.0.1.%d' % (n + 1)))


def _member(attachment):
    return MEMBERS[attachment['export_host']]


def _volume_type(api, name, specs):
    return api.create_type(name, dict(specs, volume_backend_name='ma'))


def _wait_down(api, host):
    util.wait_for(lambda: any(
        s['host'] == host and s['state'] == 'down'
        for s in api.get('/os-services').json()['services']),
        timeout=30, what='%s seen down' % host)


def test_volumes_are_made_grown_and_removed_by_both_members(cluster, api,
                                                            ceph):
    vtype = _volume_type(api, 'aa-rbd', {})
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        made = list(pool.map(lambda _: stack.Client(
            cluster.url, project=cluster_mod.PROJECT).create_volume(
                volume_type=vtype['name']), range(8)))
    ids = {v['id'] for v in made}
    assert {v['status'] for v in made} == {'available'}
    assert {'volume-%s' % i for i in ids} <= _images(ceph)
    counts = _count(cluster, CREATED)
    assert all(counts[i] == 1 for i in ids), counts
    # the cluster's queue hands creates to both members
    assert all(_by_member(cluster, CREATED, ids).values())

    for vol in made:
        resp = api.post('/volumes/%s/action' % vol['id'],
                        json={'os-extend': {'new_size': 2}})
        assert resp.status_code == 202, resp.text
    for vol in made:
        api.wait_volume(vol['id'], 'available')
        assert api.get('/volumes/%s' % vol['id']).json()['volume'][
            'size'] == 2
        assert _image_size(ceph, vol['id']) == 2 * GiB

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(
            lambda v: api.delete('/volumes/%s' % v['id']).status_code, made))
    assert set(codes) == {202}
    for vol in made:
        api.wait_deleted(vol['id'])
    deleted = _count(cluster, DELETED)
    assert all(deleted[i] == 1 for i in ids), deleted
    assert all(_by_member(cluster, DELETED, ids).values())
    assert not {'volume-%s' % i for i in ids} & _images(ceph)


def test_a_dead_members_attachments_stay_usable_and_detach(cluster, api,
                                                           ceph, opened):
    vtype = _volume_type(api, 'aa-rbd-shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type=vtype['name'])
    hosts = [_attacher(cluster, n) for n in range(4)]
    attached = [h.attach_device(vol['id'], str(uuid.uuid4()), mode='rw')
                for h in hosts]
    opened.extend(dev for _att, dev in attached)
    on = collections.defaultdict(list)
    for (att, dev), host in zip(attached, hosts):
        on[_member(att)].append((att, dev, host))
    # least-loaded choice: two exports on each member
    assert sorted(len(v) for v in on.values()) == [2, 2], dict(on)
    assert all(_key_exists(ceph, att['id']) for att, _dev in attached)
    assert {att['id'] for att, _dev in attached} <= _records(ceph)
    # one image: bytes written through one member's export are read
    # through the other's
    payload = uuid.uuid4().bytes * 256
    on['ma'][0][1].write(8192, payload)
    on['ma'][0][1].flush()
    assert on['ma2'][0][1].read(8192, len(payload)) == payload

    cluster.kill('ma2')
    _wait_down(api, 'node-ma2@ma')
    # the dead member's attachments go on working: the hosts talk to Ceph
    for _att, dev, _host in on['ma2']:
        dev.write(0, b'after ma2 died')
        dev.flush()
        assert dev.read(0, 14) == b'after ma2 died'
    # the cluster still creates, extends and attaches, through ma
    other = api.create_volume(volume_type=vtype['name'])
    assert 'volume-%s' % other['id'] in _images(ceph)
    resp = api.post('/volumes/%s/action' % other['id'],
                    json={'os-extend': {'new_size': 2}})
    assert resp.status_code == 202, resp.text
    api.wait_volume(other['id'], 'available')
    assert _image_size(ceph, other['id']) == 2 * GiB
    late_host = _attacher(cluster, 10)
    late, late_dev = late_host.attach_device(vol['id'], str(uuid.uuid4()))
    opened.append(late_dev)
    assert _member(late) == 'ma'
    assert late_dev.read(8192, len(payload)) == payload

    # a detach of an attachment the dead member exported: the live
    # member removes its key and cuts its client
    stranded, s_dev, s_host = on['ma2'][0]
    s_host.transport.delete(stranded['id'])    # the host keeps its device
    assert api.get('/attachments/%s' % stranded['id'],
                   headers=V354).status_code == 404
    assert not _key_exists(ceph, stranded['id'])
    assert stranded['id'] not in _records(ceph)
    rbd = rbd_driver.rbd_module()
    with pytest.raises(rbd.ConnectionShutdown):
        s_dev.write(0, b'after the detach')
        s_dev.flush()
    s_dev.close()
    assert 'attachment %s: Ceph user' % stranded['id'] in \
        cluster.processes['ma'].read_log()

    # ma2 comes back: it restores its own exports and removes none of
    # ma's (the records of both are in one omap object)
    cluster.start_process('ma2')
    cluster.wait_ready()
    kept = [a for a, _d, _h in on['ma'] + on['ma2'][1:]] + [late]
    assert all(_key_exists(ceph, att['id']) for att in kept)
    assert {att['id'] for att in kept} == _records(ceph) & {
        att['id'] for att, _d in attached + [(late, None)]}
    for _att, dev, _host in on['ma'] + on['ma2'][1:]:
        assert dev.read(8192, len(payload)) == payload
    late_dev.write(0, b'ma2 is back')
    late_dev.flush()

    for att, dev, host in on['ma'] + on['ma2'][1:]:
        host.detach(att['id'], dev)
    late_host.detach(late['id'], late_dev)
    api.wait_volume(vol['id'], 'available')
    for v in (vol, other):
        assert api.delete('/volumes/%s' % v['id']).status_code == 202
    for v in (vol, other):
        api.wait_deleted(v['id'])
    ids = [att['id'] for att, _d in attached] + [late['id']]
    assert not any(_key_exists(ceph, i) for i in ids)
    assert not set(ids) & _records(ceph)
    assert not {'volume-%s' % vol['id'], 'volume-%s' % other['id']} & \
        _images(ceph)


def _fence(api, host, action='os-fence', **scope):
    resp = api.post('/os-host-fences/%s/action' % host,
                    json={action: scope})
    assert resp.status_code == 200, resp.text
    return resp.json()['host_fence']['volumes'][0]


def _attach_on(member, volume_id, hosts, mode=None):
    """Attach ``volume_id`` from the first of ``hosts`` (attachers) whose
    export the cluster gives to ``member``; the others' attachments are
    returned too, to be detached at the end."""
    made = []
    for host in hosts:
        att, dev = host.attach_device(volume_id, str(uuid.uuid4()),
                                      mode=mode)
        made.append((att, dev, host))
        if _member(att) == member:
            return made
    pytest.fail('no attachment of %s landed on %s: %r' % (
        volume_id, member, [_member(a) for a, _d, _h in made]))


def test_a_live_member_takes_over_and_fences_for_a_dead_one(cluster, api,
                                                            ceph, opened):
    """The member that exported an old writer and a host's attachment is
    killed: a takeover cuts the old writer through the live member, a
    fence of the host cuts its attachment through it, and an unfence
    makes its export again there (recorded as the live member's own, so
    that the dead one coming back leaves it alone)."""
    rbd = rbd_driver.rbd_module()
    single = _volume_type(api, 'aa-rbd-single', {'multiattach': '<is> True',
                                                 'mode': 'RO'})
    shared = _volume_type(api, 'aa-rbd-fence', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type=single['name'])
    w_host = _attacher(cluster, 20)
    w_att, w_dev = w_host.attach_device(vol['id'], str(uuid.uuid4()))
    opened.append(w_dev)
    assert w_att['attach_mode'] == 'rw'
    dead = _member(w_att)
    live = ({'ma', 'ma2'} - {dead}).pop()
    readers = _attach_on(live, vol['id'],
                         [_attacher(cluster, n) for n in (21, 22, 23)])
    opened.extend(dev for _a, dev, _h in readers)
    r_att, r_dev, r_host = readers[-1]
    assert r_att['attach_mode'] == 'ro'
    w_dev.write(0, b'written before the member died')
    w_dev.flush()

    fvol = api.create_volume(volume_type=shared['name'])
    on_fvol = _attach_on(dead, fvol['id'],
                         [_attacher(cluster, n) for n in (24, 25, 26)])
    opened.extend(dev for _a, dev, _h in on_fvol)
    victim, v_dev, v_host = on_fvol[-1]
    fenced_host = v_host.connector['host']

    cluster.kill(dead)
    dead_host = [h for h, name in MEMBERS.items() if name == dead][0]
    _wait_down(api, dead_host)
    # its attachments go on working meanwhile
    w_dev.write(0, b'written after the member died')
    w_dev.flush()

    # takeover: the live member cuts the writer the dead one exported
    new_att, new_dev = r_host.takeover(r_att['id'], r_dev)
    opened.append(new_dev)
    assert new_att['attach_mode'] == 'rw'
    with pytest.raises(rbd.ConnectionShutdown):
        w_dev.write(0, b'a late write of the old writer')
        w_dev.flush()
    assert not _key_exists(ceph, w_att['id'])
    assert w_att['id'] not in _records(ceph)
    assert new_dev.read(0, 29) == b'written after the member died'
    new_dev.write(0, b'the new writer')
    new_dev.flush()
    events = api.get('/os-attachment-events?attachment_id=%s'
                     % w_att['id']).json()['attachment_events']
    assert events[-1]['reason'] == 'taken over by %s' % r_att['id']
    assert 'attachment %s: Ceph user' % w_att['id'] in \
        cluster.processes[live].read_log()

    # fence: the live member cuts the host's attachment
    entry = _fence(api, fenced_host, volume_id=fvol['id'],
                   reason='node lost')
    assert entry['attachments'] == [victim['id']]
    assert entry['drained_ms'] is not None
    with pytest.raises(rbd.ConnectionShutdown):
        v_dev.write(0, b'a write of the fenced host')
        v_dev.flush()
    v_dev.close()
    opened.remove(v_dev)
    assert not _key_exists(ceph, victim['id'])
    live_host = [h for h, name in MEMBERS.items() if name == live][0]
    assert 'volume %s: %s is down; %s stands in' % (
        fvol['id'], dead_host, live_host) in \
        cluster.processes['api'].read_log()

    # unfence: the live member makes the export again, as its own
    entry = _fence(api, fenced_host, 'os-unfence', volume_id=fvol['id'])
    assert entry['attachments'] == [victim['id']]
    assert _key_exists(ceph, victim['id'])
    back = api.get('/attachments/%s' % victim['id'],
                   headers=V354).json()['attachment']
    assert _member(back) == live
    v_dev = v_host.open(back)
    opened.append(v_dev)
    v_dev.write(0, b'the host is back')
    v_dev.flush()
    assert v_dev.read(0, 16) == b'the host is back'

    # the dead member comes back: it restores neither the cut writer's
    # export nor takes the unfenced one away
    cluster.start_process(dead)
    cluster.wait_ready()
    assert not _key_exists(ceph, w_att['id'])
    assert _key_exists(ceph, victim['id'])
    v_dev.write(0, b'still there')
    v_dev.flush()

    w_dev.close()
    opened.remove(w_dev)
    r_host.detach(new_att['id'], new_dev)
    opened.remove(new_dev)
    for att, dev, host in readers[:-1] + on_fvol[:-1]:
        host.detach(att['id'], dev)
        opened.remove(dev)
    v_host.detach(victim['id'], v_dev)
    opened.remove(v_dev)
    for v in (vol, fvol):
        api.wait_volume(v['id'], 'available')
        assert api.delete('/volumes/%s' % v['id']).status_code == 202
    for v in (vol, fvol):
        api.wait_deleted(v['id'])
    ids = [w_att['id'], new_att['id'], victim['id']] + [
        a['id'] for a, _d, _h in readers + on_fvol]
    assert not any(_key_exists(ceph, i) for i in ids)
    assert not set(ids) & _records(ceph)
