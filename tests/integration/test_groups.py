"""Group snapshots with every service a process of its own, over
RabbitMQ, on MariaDB and on PostgreSQL.  Node ``ma`` exports over NBD;
a group of its type holds two volumes that a host writes through its
attachments while a group snapshot is taken: the group snapshot and its
snapshots are available, a group made from it holds, in both volumes,
one moment of the writer (the same counter, or the next one in the
first volume only), and deleting the group snapshot and the groups
gives back every snapshot, volume and group of quota; volumes made from a
snapshot or a volume with ``group_id`` join the group
(``cinder-lite-manage quota check`` finds the usage exact)."""
import threading
import uuid

from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from tests.harness import cluster as cluster_mod
from tests.harness import groups as gh
from tests.harness import util

CLUSTER_KINDS = ['mysql', 'postgresql']
NBD = {'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1',
       'target_port_range': util.free_range(20)}
CLUSTER_OPTIONS = {'node_options': {'ma': NBD}}
BLOCK = 4096


def attacher(cluster, address):
    transport = client.RestTransport(cluster.url + '/v3',
                                     cluster_mod.PROJECT)
    return client.AttachClient(transport, host_connector.get_connector(
        host='host-%s' % address, ip=address))


def block_of(counter):
    return (b'%015d\n' % counter) * (BLOCK // 16)


def counter_in(data):
    return 0 if data[:16] == b'\0' * 16 else int(data[:15])


def test_group_snapshot_create_and_delete(cluster, api):
    vtype = api.create_type('grp-ma-%s' % uuid.uuid4().hex[:6],
                            {'volume_backend_name': 'ma'})
    gtype = gh.create_group_type(api, specs={
        'consistent_group_snapshot_enabled': '<is> True'})
    group = gh.create_group(api, gtype['id'], [vtype['id']])
    vols = [api.create_volume(volume_type=vtype['id'], group_id=group['id'])
            for _ in range(2)]
    host = attacher(cluster, '127.0.0.2')
    attached = [host.attach_device(v['id'], str(uuid.uuid4()), mode='rw')
                for v in vols]
    stop = threading.Event()
    done = []

    def write():
        n = 0
        while not stop.is_set():
            n += 1
            for _, dev in attached:
                dev.write(0, block_of(n))
            done.append(n)
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        util.wait_for(lambda: len(done) > 20, what='writes under way')
        gs = gh.create_group_snapshot(api, group['id'])
    finally:
        stop.set()
        writer.join(timeout=30)
    snaps = gh.snapshots_of(api, gs['id'])
    assert sorted(s['volume_id'] for s in snaps) == sorted(
        v['id'] for v in vols)
    assert {s['status'] for s in snaps} == {'available'}
    resp = api.post('/groups/action', json={'create-from-src': {
        'group_snapshot_id': gs['id']}})
    assert resp.status_code == 202, resp.text
    copy = gh.wait_group(api, resp.json()['group']['id'])
    by_snapshot = {v['snapshot_id']: v for v in api.get(
        '/volumes/detail?group_id=%s' % copy['id']).json()['volumes']}
    reader = attacher(cluster, '127.0.0.3')
    counters = []
    for v in vols:
        snap = [s for s in snaps if s['volume_id'] == v['id']][0]
        att, dev = reader.attach_device(by_snapshot[snap['id']]['id'],
                                        str(uuid.uuid4()), mode='ro')
        counters.append(counter_in(dev.read(0, BLOCK)))
        reader.detach(att['id'], dev)
    assert counters[0] in (counters[1], counters[1] + 1), counters
    assert counters[1] > 0
    for att, dev in attached:
        host.detach(att['id'], dev)
    # deleting: refused while it has the group snapshot, then all goes
    refused = gh.delete_group(api, group['id'], True, expect=400)
    assert 'group_snapshot' in refused.json()['badRequest']['message']
    assert api.delete('/group_snapshots/%s' % gs['id']).status_code == 202
    util.wait_for(lambda: api.get('/group_snapshots/%s' % gs['id'])
                  .status_code == 404, what='group snapshot deleted')
    for s in snaps:
        assert api.get('/snapshots/%s' % s['id']).status_code == 404
    for g in (copy, group):
        gh.delete_group(api, g['id'], delete_volumes=True)
        gh.wait_group_gone(api, g['id'])
    for v in vols:
        api.wait_deleted(v['id'])
    result = cluster.manage('quota', 'check', check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    usage = api.get('/os-quota-sets/%s?usage=True' % cluster_mod.PROJECT
                    ).json()['quota_set']
    assert usage['groups']['in_use'] == 0


def test_copies_join_a_group(cluster, api):
    """A volume from a snapshot and a clone of a volume, each with
    ``group_id`` (as Cinder takes them), made in one transaction under
    the group's lock and then the source's, on MariaDB and PostgreSQL:
    both join the group with the source's data; the group's delete takes
    them along and the quota usage stays exact."""
    vtype = api.create_type('grp-copy-%s' % uuid.uuid4().hex[:6],
                            {'volume_backend_name': 'ma'})
    group = gh.create_group(api, gh.create_group_type(api)['id'],
                            [vtype['id']])
    source = api.create_volume(volume_type=vtype['id'], group_id=group['id'])
    host = attacher(cluster, '127.0.0.2')
    att, dev = host.attach_device(source['id'], str(uuid.uuid4()), mode='rw')
    dev.write(0, block_of(7))
    host.detach(att['id'], dev)
    api.wait_volume(source['id'], 'available')
    snap = api.post('/snapshots', json={'snapshot': {
        'volume_id': source['id']}}).json()['snapshot']
    util.wait_for(lambda: api.get('/snapshots/%s' % snap['id']).json()[
        'snapshot']['status'] == 'available', what='snapshot')
    copies = [api.create_volume(snapshot_id=snap['id'], group_id=group['id']),
              api.create_volume(source_volid=source['id'],
                                group_id=group['id'])]
    assert {v['group_id'] for v in copies} == {group['id']}
    listed = api.get('/volumes/detail?group_id=%s' % group['id']).json()[
        'volumes']
    assert sorted(v['id'] for v in listed) == sorted(
        [source['id']] + [v['id'] for v in copies])
    reader = attacher(cluster, '127.0.0.3')
    for v in copies:
        att, dev = reader.attach_device(v['id'], str(uuid.uuid4()),
                                        mode='ro')
        assert counter_in(dev.read(0, BLOCK)) == 7
        reader.detach(att['id'], dev)
    assert api.delete('/snapshots/%s' % snap['id']).status_code == 202
    util.wait_for(lambda: api.get('/snapshots/%s' % snap['id'])
                  .status_code == 404, what='snapshot deleted')
    gh.delete_group(api, group['id'], delete_volumes=True)
    gh.wait_group_gone(api, group['id'])
    for v in [source] + copies:
        api.wait_deleted(v['id'])
    result = cluster.manage('quota', 'check', check=False)
    assert result.returncode == 0, result.stdout + result.stderr
