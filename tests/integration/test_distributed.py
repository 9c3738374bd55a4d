"""The distributed mode: API, scheduler and two volume nodes as separate
processes over RabbitMQ, on MariaDB and on PostgreSQL.

Node ``ma`` reports multiattach, node ``noma`` does not (see cluster.py).
The test that kills ``noma`` restarts it before it returns, so the tests
do not depend on their order.
"""
import concurrent.futures
import time

from tests.harness import stack
from tests.harness import util

HOST_ATTR = 'os-vol-host-attr:host'
MA_POOL = 'node-ma@ma#ma'
NOMA_POOL = 'node-noma@noma#noma'
MA_SERVICE = ('cinder-volume', 'node-ma@ma')
NOMA_SERVICE = ('cinder-volume', 'node-noma@noma')
SCHEDULER_SERVICE = ('cinder-scheduler', 'node-ctl')
MULTIATTACH_SPECS = {'multiattach': '<is> True'}


def services(api):
    resp = api.get('/os-services')
    assert resp.status_code == 200, resp.text
    return {(s['binary'], s['host']): s for s in resp.json()['services']}


def delete_all(api, volumes):
    for vol in volumes:
        resp = api.delete('/volumes/%s' % vol['id'])
        assert resp.status_code == 202, resp.text
    for vol in volumes:
        api.wait_deleted(vol['id'])


def test_services_and_pools(cluster, api):
    svcs = services(api)
    for key in (SCHEDULER_SERVICE, MA_SERVICE, NOMA_SERVICE):
        assert key in svcs, sorted(svcs)
        assert svcs[key]['state'] == 'up', svcs[key]
        assert svcs[key]['status'] == 'enabled', svcs[key]
    resp = api.get('/scheduler-stats/get_pools?detail=true')
    assert resp.status_code == 200, resp.text
    pools = {p['name']: p['capabilities'] for p in resp.json()['pools']}
    assert set(pools) == {MA_POOL, NOMA_POOL}
    assert pools[MA_POOL]['multiattach'] is True
    assert pools[NOMA_POOL]['multiattach'] is False


def test_multiattach_type_lands_on_ma(cluster, api):
    vtype = api.create_type(specs=MULTIATTACH_SPECS)
    shared = [api.create_volume(volume_type=vtype['name'])
              for _ in range(3)]
    # by id, too
    shared.append(api.create_volume(volume_type=vtype['id']))
    plain = [api.create_volume() for _ in range(4)]
    try:
        for vol in shared:
            assert vol['status'] == 'available'
            assert vol[HOST_ATTR] == MA_POOL, vol
            assert vol['multiattach'] is True, vol
            assert vol['volume_type'] == vtype['name'], vol
        for vol in plain:
            assert vol['status'] == 'available'
            assert vol[HOST_ATTR] in (MA_POOL, NOMA_POOL), vol
            assert vol['multiattach'] is False, vol
    finally:
        delete_all(api, shared + plain)


def test_create_delete_round_trip(cluster, api):
    vol = api.create_volume(size=1, name='round-trip')
    assert vol['status'] == 'available'
    assert vol['name'] == 'round-trip'
    assert vol[HOST_ATTR] in (MA_POOL, NOMA_POOL)
    listed = api.get('/volumes/detail').json()['volumes']
    assert vol['id'] in {v['id'] for v in listed}

    resp = api.delete('/volumes/%s' % vol['id'])
    assert resp.status_code == 202, resp.text
    api.wait_deleted(vol['id'])
    assert api.get('/volumes/%s' % vol['id']).status_code == 404
    listed = api.get('/volumes').json()['volumes']
    assert vol['id'] not in {v['id'] for v in listed}


def test_manage_service_list(cluster):
    proc = cluster.manage('service', 'list')
    lines = proc.stdout.strip().splitlines()
    assert lines[0].split()[:5] == ['Binary', 'Host', 'Zone', 'Status',
                                    'State'], proc.stdout
    rows = {}
    for line in lines[1:]:
        cols = line.split()
        rows[(cols[0], cols[1])] = cols
    for key in (SCHEDULER_SERVICE, MA_SERVICE, NOMA_SERVICE):
        assert key in rows, proc.stdout
        assert rows[key][2:5] == ['nova', 'enabled', 'up'], proc.stdout


def test_killed_node_goes_down_and_work_moves(cluster, api):
    bound = cluster.service_down_time + 2 * cluster.report_interval + 5
    cluster.kill('noma')
    killed_at = time.monotonic()
    try:
        util.wait_for(lambda: services(api)[NOMA_SERVICE]['state']
                      == 'down', timeout=bound, interval=0.2,
                      what='node-noma shown down')
        went_down = time.monotonic() - killed_at
        # not before service_down_time has passed since the last beat
        assert went_down > cluster.service_down_time - \
            cluster.report_interval - 0.5, went_down
        svcs = services(api)
        assert svcs[MA_SERVICE]['state'] == 'up'
        assert svcs[SCHEDULER_SERVICE]['state'] == 'up'
        pools = api.get('/scheduler-stats/get_pools').json()['pools']
        assert [p['name'] for p in pools] == [MA_POOL]

        # Several plain volumes, some at once: all go to the live node.
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            vols = list(pool.map(
                lambda _: stack.Client(cluster.url).create_volume(),
                range(6)))
        assert [v[HOST_ATTR] for v in vols] == [MA_POOL] * len(vols), vols
        delete_all(api, vols)
    finally:
        # Bring the node back so the cluster is whole for whatever runs
        # next (and check it rejoins).
        cluster.start_process('noma')
        cluster.wait_ready()
    assert services(api)[NOMA_SERVICE]['state'] == 'up'
