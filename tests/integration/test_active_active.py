"""Two volume services serve one backend active-active (PostgreSQL and
MariaDB): ``node-ma@ma`` and ``node-ma2@ma`` are cluster ``aa`` over one
volumes directory, each exporting over NBD on its own address, with two
API workers and two schedulers in front.

* concurrent creates land once each, spread over both members;
* concurrent attaches of a multiattach volume are exported by both
  members, and bytes written through one member's export are read through
  the other's; each detach removes the export on the member holding it;
* a plain volume attached concurrently by many instances has exactly one
  winner;
* with one member killed, the other takes every new create and attach,
  the dead member's attachments refuse a detach with a 503 naming it, and
  once it is back its exports are restored and detach works;
* volumes left ``creating``/``deleting`` are rolled forward once although
  both members reconcile them at the same time.
"""
import collections
import concurrent.futures
import datetime
import os
import re
import socket
import uuid

import sqlalchemy as sa

from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from cinder_lite.db import models
from tests.harness import stack
from tests.harness import cluster as cluster_mod
from tests.harness import util

CLUSTER_KINDS = ['postgresql', 'mysql']
ADDRESSES = {'ma': '127.0.0.3', 'ma2': '127.0.0.4'}
NBD = {'target_protocol': 'nbd', 'target_port_range': '11200-11299'}
CLUSTER_OPTIONS = {
    'api_workers': 2,
    'extra_default': {'reconcile_after': 2, 'reconcile_interval': 1},
    'node_options': {'ma': dict(NBD, target_ip_address=ADDRESSES['ma'])},
    # the second member: its own state (exports) and address, the first
    # member's volumes directory (the shared storage)
    'extra_nodes': {'ma2': ('node-ma2', 'ma', dict(
        NBD, target_ip_address=ADDRESSES['ma2'],
        volumes_dir='{workdir}/state/volumes/ma'))},
    'process_sections': {
        'ma': {'DEFAULT': {'cluster': 'aa'}},
        'ma2': {'DEFAULT': {'cluster': 'aa',
                            'state_path': '{workdir}/state-ma2'}},
        'scheduler2': {'DEFAULT': {'host': 'node-ctl2'}}},
}
MEMBERS = {'node-ma@ma': 'ma', 'node-ma2@ma': 'ma2'}
POOL = 'aa@ma#ma'
CREATED = re.compile(r'created ([0-9a-f-]{36}) ')
DELETED = re.compile(r'deleted \S*volume-([0-9a-f-]{36})')
V361 = {'OpenStack-API-Version': 'volume 3.61'}


def _count(cluster, pattern):
    """volume id -> how often the members' logs match ``pattern``."""
    counts = collections.Counter()
    for name in MEMBERS.values():
        counts.update(pattern.findall(cluster.processes[name].read_log()))
    return counts


def _members_by_address():
    return {address: name for name, address in ADDRESSES.items()}


def _attacher(cluster, n):
    transport = client.RestTransport(cluster.url + '/v3',
                                     cluster_mod.PROJECT)
    return client.AttachClient(transport, host_connector.get_connector(
        host='compute-%d' % n, ip='127.0.1.%d' % (n + 1)))


def _exporting_member(attachment):
    info = attachment['connection_info']
    assert info['driver_volume_type'] == 'nbd', info
    return _members_by_address()[info['host']], (info['host'], info['port'])


def _listening(address):
    try:
        socket.create_connection(address, timeout=1).close()
        return True
    except OSError:
        return False


def _volume_type(api, name, specs):
    return api.create_type(name, dict(specs, volume_backend_name='ma'))


def test_members_are_one_backend(cluster, api):
    services = api.get('/os-services', headers={
        'OpenStack-API-Version': 'volume 3.7'}).json()['services']
    clusters = {s['host']: s['cluster'] for s in services
                if s['binary'] == 'cinder-volume'}
    assert clusters == {'node-ma@ma': 'aa@ma', 'node-ma2@ma': 'aa@ma',
                        'node-noma@noma': None}, clusters
    pools = [p['name'] for p in api.get('/scheduler-stats/get_pools')
             .json()['pools']]
    assert sorted(pools) == sorted([POOL, 'node-noma@noma#noma']), pools
    caps = api.get('/capabilities/aa@ma')
    assert caps.status_code == 200, caps.text
    assert caps.json()['namespace'] == 'OS::Storage::Capabilities::aa@ma'
    listed = cluster.manage('service', 'list').stdout
    assert re.search(r'node-ma2@ma .* aa@ma$', listed, re.M), listed


def test_concurrent_creates_land_once_on_both_members(cluster, api):
    cluster.ensure_running('scheduler2', 'cinder-scheduler', 'node-ctl2')
    vtype = _volume_type(api, 'aa-plain', {})
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda _: stack.Client(
            cluster.url, project=cluster_mod.PROJECT).create_volume(
                volume_type=vtype['name']), range(24)))
    assert {v['status'] for v in made} == {'available'}
    for vol in made:
        shown = api.get('/volumes/%s' % vol['id'], headers=V361).json()
        assert shown['volume']['os-vol-host-attr:host'] == POOL
        assert shown['volume']['cluster_name'] == POOL
    counts = _count(cluster, CREATED)
    assert all(counts[v['id']] == 1 for v in made), counts
    per_member = {name: sum(v['id'] in CREATED.findall(
        cluster.processes[name].read_log()) for v in made)
        for name in MEMBERS.values()}
    # the cluster's queue hands creates to both members
    assert all(per_member.values()), per_member
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(
            lambda v: api.delete('/volumes/%s' % v['id']).status_code, made))
    assert set(codes) == {202}
    for vol in made:
        api.wait_deleted(vol['id'])
    deleted = _count(cluster, DELETED)
    assert all(deleted[v['id']] == 1 for v in made), deleted


def test_attachments_spread_over_members_and_share_bytes(cluster, api):
    vtype = _volume_type(api, 'aa-shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type=vtype['name'])
    hosts = [_attacher(cluster, n) for n in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        attached = list(pool.map(
            lambda h: h.attach_device(vol['id'], str(uuid.uuid4()),
                                      mode='rw'), hosts))
    by_member = collections.defaultdict(list)
    for attachment, _dev in attached:
        member, _address = _exporting_member(attachment)
        by_member[member].append(attachment['id'])
    # least-loaded choice: the eight exports split evenly
    assert sorted(len(v) for v in by_member.values()) == [4, 4], by_member
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'in-use'

    # bytes written through one member's export are read through the
    # other's (one file on the shared storage)
    writer = next((d for a, d in attached
                   if _exporting_member(a)[0] == 'ma'))
    reader = next((d for a, d in attached
                   if _exporting_member(a)[0] == 'ma2'))
    payload = uuid.uuid4().bytes * 256
    writer.write(8192, payload)
    writer.flush()
    assert reader.read(8192, len(payload)) == payload

    # each detach goes to the member holding the export, which stops it
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda pair: pair[0].detach(pair[1][0]['id'],
                                                  pair[1][1]),
                      zip(hosts, attached)))
    for attachment, _dev in attached:
        _member, address = _exporting_member(attachment)
        util.wait_for(lambda: not _listening(address), timeout=10,
                      what='export %s:%d stopped' % address)
    api.wait_volume(vol['id'], 'available')
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


def test_plain_volume_has_one_winner(cluster, api):
    vtype = _volume_type(api, 'aa-single', {})
    vol = api.create_volume(volume_type=vtype['name'])
    connector = host_connector.get_connector(host='compute-x',
                                             ip='127.0.1.50')

    def attach(_):
        return api.post('/attachments', json={'attachment': {
            'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4()),
            'connector': connector}}, headers={
                'OpenStack-API-Version': 'volume 3.54'})
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(attach, range(8)))
    won = [r for r in answers if r.status_code == 200]
    assert len(won) == 1, [(r.status_code, r.text) for r in answers]
    assert {r.status_code for r in answers} == {200, 400}, answers
    attachment = won[0].json()['attachment']
    assert api.delete('/attachments/%s' % attachment['id'],
                      headers={'OpenStack-API-Version': 'volume 3.54'}
                      ).status_code == 200
    api.wait_volume(vol['id'], 'available')
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


def test_one_member_down_the_other_serves(cluster, api):
    vtype = _volume_type(api, 'aa-failover', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type=vtype['name'])
    hosts = [_attacher(cluster, n) for n in range(10, 14)]
    attached = [h.attach(vol['id'], str(uuid.uuid4()), mode='rw')
                for h in hosts]
    on = {n: [a for a in attached if _exporting_member(a)[0] == n]
          for n in ('ma', 'ma2')}
    assert all(on.values()), on

    cluster.kill('ma2')
    util.wait_for(lambda: any(
        s['host'] == 'node-ma2@ma' and s['state'] == 'down'
        for s in api.get('/os-services').json()['services']),
        timeout=30, what='node-ma2@ma seen down')
    # the cluster still creates (its queue now has one consumer) ...
    made = [api.create_volume(volume_type=vtype['name']) for _ in range(3)]
    assert all(v['status'] == 'available' for v in made)
    # ... and exports every new attachment from the live member
    late = [_attacher(cluster, n).attach(vol['id'], str(uuid.uuid4()))
            for n in range(20, 23)]
    assert {_exporting_member(a)[0] for a in late} == {'ma'}
    # an attachment exported by the dead member: its detach cannot reach
    # the export, so it is refused and nothing changes
    stranded = on['ma2'][0]
    resp = api.delete('/attachments/%s' % stranded['id'],
                      headers={'OpenStack-API-Version': 'volume 3.54'})
    assert resp.status_code == 503, resp.text
    assert 'node-ma2@ma' in resp.text
    assert api.get('/attachments/%s' % stranded['id'], headers={
        'OpenStack-API-Version': 'volume 3.54'}).json()['attachment'][
        'status'] == 'attached'

    # and the dead member cannot be removed while it holds exports
    proc = cluster.manage('service', 'remove', 'cinder-volume',
                          'node-ma2@ma', check=False)
    assert proc.returncode != 0
    assert 'still holds the exports of %d attachment' % len(on['ma2']) \
        in proc.stderr + proc.stdout, (proc.stdout, proc.stderr)

    cluster.start_process('ma2')
    cluster.wait_ready()
    for attachment in on['ma2']:
        assert _listening(_exporting_member(attachment)[1])
    for attachment in attached + late:
        resp = api.delete('/attachments/%s' % attachment['id'],
                          headers={'OpenStack-API-Version': 'volume 3.54'})
        assert resp.status_code == 200, resp.text
    for attachment in attached + late:
        address = _exporting_member(attachment)[1]
        util.wait_for(lambda: not _listening(address), timeout=10,
                      what='export %s:%d stopped' % address)
    api.wait_volume(vol['id'], 'available')
    for v in made + [vol]:
        assert api.delete('/volumes/%s' % v['id']).status_code == 202
    for v in made + [vol]:
        api.wait_deleted(v['id'])


def test_both_members_reconcile_each_volume_once(cluster, api):
    """Rows a crash left ``creating`` (scheduled to the cluster) and
    ``deleting``: both members find them stale at the same time, one
    claims each."""
    vtype = _volume_type(api, 'aa-reconcile', {})
    doomed = [api.create_volume(volume_type=vtype['name'])
              for _ in range(4)]
    engine = sa.create_engine(cluster.db_url)
    old = datetime.datetime.utcnow() - datetime.timedelta(minutes=5)
    lost = [str(uuid.uuid4()) for _ in range(6)]
    try:
        with engine.begin() as conn:
            conn.execute(sa.insert(models.Volume), [dict(
                id=volume_id, project_id=cluster_mod.PROJECT,
                user_id='admin', size=1, status='creating',
                volume_type_id=vtype['id'], host=POOL, cluster_name=POOL,
                availability_zone='nova', multiattach=False,
                bootable=False, attach_seq=0, readonly=False,
                deleted=False, created_at=old, updated_at=old)
                for volume_id in lost])
            conn.execute(
                sa.update(models.Volume)
                .where(models.Volume.id.in_([v['id'] for v in doomed]))
                .values(status='deleting', updated_at=old))
    finally:
        engine.dispose()
    for volume_id in lost:
        api.wait_volume(volume_id, 'available')
    for vol in doomed:
        api.wait_deleted(vol['id'])
    created, deleted = _count(cluster, CREATED), _count(cluster, DELETED)
    assert all(created[v] == 1 for v in lost), created
    assert all(deleted[v['id']] == 1 for v in doomed), deleted
    logs = '\n'.join(cluster.processes[n].read_log()
                     for n in MEMBERS.values())
    for volume_id in lost:
        assert logs.count('reconcile: volume %s: creating -> available'
                          % volume_id) == 1, volume_id
    for volume_id in lost:
        assert api.delete('/volumes/%s' % volume_id).status_code == 202
    for volume_id in lost:
        api.wait_deleted(volume_id)


def test_concurrent_extends_of_an_in_use_volume_lose_no_update(cluster,
                                                               api):
    """Six extends of one in-use volume at once, served by both members:
    each moves the size by compare-and-swap from the size the API read,
    so those that overlap have one winner and the rest are refused; the
    database and the file end at the largest accepted size."""
    vtype = _volume_type(api, 'aa-extend', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type=vtype['name'])
    host = _attacher(cluster, 30)
    attachment = host.attach(vol['id'], str(uuid.uuid4()))
    v342 = {'OpenStack-API-Version': 'volume 3.42'}

    def extend(size):
        return size, api.post('/volumes/%s/action' % vol['id'],
                              json={'os-extend': {'new_size': size}},
                              headers=v342)
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(extend, range(2, 8)))
    won = [size for size, r in answers if r.status_code == 202]
    refused = [r for _size, r in answers if r.status_code == 400]
    assert won and len(won) + len(refused) == 6, [
        (size, r.status_code, r.text) for size, r in answers]
    # refused: it lost the swap, or it came after a larger one
    assert all('changed size meanwhile' in r.text
               or 'must be greater' in r.text for r in refused), [
        r.text for r in refused]
    assert any('changed size meanwhile' in r.text for r in refused)
    shown = api.get('/volumes/%s' % vol['id']).json()['volume']
    assert (shown['size'], shown['status']) == (max(won), 'in-use')
    path = '%s/state/volumes/ma/volume-%s' % (cluster.workdir, vol['id'])
    assert os.path.getsize(path) == max(won) * 1024 ** 3
    assert api.delete('/attachments/%s' % attachment['id'], headers={
        'OpenStack-API-Version': 'volume 3.54'}).status_code == 200
    api.wait_volume(vol['id'], 'available')
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


def _agent(cluster, **options):
    """fence_cinder_lite as pacemaker-fenced runs it: (exit code, stdout,
    stderr)."""
    import subprocess
    import sys
    options = dict({'endpoint': cluster.url + '/v3',
                    'project_id': cluster_mod.PROJECT}, **options)
    done = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable),
                      'fence_cinder_lite')],
        input=''.join('%s=%s\n' % kv for kv in options.items()),
        capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_fencing_a_host_whose_exporting_member_is_killed(cluster, api):
    """The member exporting the host's attachment is killed: ``off``
    fails (exit 1: nobody can cut that export), but the mark is written,
    so the other member refuses the host a new export; when the member
    comes back it drops the fenced host's export at start, ``off`` then
    succeeds and ``status`` says off; ``on`` brings the export back."""
    vtype = _volume_type(api, 'aa-fence', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type=vtype['name'])
    hosts = [_attacher(cluster, n) for n in (30, 31)]
    atts = [h.attach(vol['id'], str(uuid.uuid4()), mode='rw')
            for h in hosts]
    victim, other = atts
    member, address = _exporting_member(victim)
    fenced_host = 'compute-30'
    cluster.kill(member)
    util.wait_for(lambda: any(
        s['host'] == 'node-%s@ma' % member and s['state'] == 'down'
        for s in api.get('/os-services').json()['services']),
        timeout=30, what='node-%s@ma seen down' % member)
    # (the harness's kill takes the member's nbdkit along; on a real node
    # it may go on serving, and nobody could confirm a cut: off fails)
    code, out, err = _agent(cluster, action='off', port=fenced_host,
                            volume=vol['id'])
    assert code == 1 and 'HTTP 503' in err, (code, out, err)
    # the mark is there: the live member refuses the host a new export
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4()),
        'connector': hosts[0].connector}}, headers={
            'OpenStack-API-Version': 'volume 3.54'})
    assert resp.status_code == 409, resp.text
    assert 'host compute-30 is fenced' in resp.text
    assert _agent(cluster, action='status', port=fenced_host,
                  volume=vol['id'])[0] != 0

    cluster.start_process(member)
    cluster.wait_ready()
    # at start the member restores only unfenced hosts' exports
    assert not _listening(address)
    assert _listening(_exporting_member(other)[1])
    assert _agent(cluster, action='off', port=fenced_host,
                  volume=vol['id'])[:2] == (0, 'Success: Powered OFF\n')
    assert _agent(cluster, action='status', port=fenced_host,
                  volume=vol['id'])[:2] == (2, 'Status: OFF\n')
    assert _agent(cluster, action='status', port='compute-31',
                  volume=vol['id'])[:2] == (0, 'Status: ON\n')
    code, out, err = _agent(cluster, action='on', port=fenced_host,
                            volume=vol['id'])
    assert code == 0, err
    assert _listening(address)
    for att in atts:
        assert api.delete('/attachments/%s' % att['id'], headers={
            'OpenStack-API-Version': 'volume 3.54'}).status_code == 200
    api.wait_volume(vol['id'], 'available')
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])
