"""RabbitMQ goes away under load and comes back: every service reconnects
by itself, requests made during the outage either fail with a clear 503
or complete once the broker is back (never a 500), nothing is left half
done, and new work runs afterwards.

The cluster runs on a RabbitMQ node of its own (the machine's stays up
for the other tests); it is stopped with ``rabbitmqctl stop_app``
(connections drop, the node keeps its vhosts and users) and started again
with ``start_app``.
"""
import time
import uuid

from tests.harness import load
from tests.harness import util

CLUSTER_KINDS = ['mysql']
OUTAGE_S = 6
CLUSTER_OPTIONS = {'extra_default': {'reconcile_after': 5,
                                     'reconcile_interval': 2}}
PRIVATE_SERVERS = ('broker',)


def test_services_ride_out_a_broker_restart(cluster, api):
    with load.CreateLoad(cluster) as traffic:
        time.sleep(1)
        cluster.broker.stop_app()
        down = time.monotonic()
        try:
            time.sleep(OUTAGE_S)
        finally:
            cluster.broker.start_app()
        up = time.monotonic()
        time.sleep(2)
    results = traffic.results

    statuses = [r[0] for r in results]
    assert set(statuses) <= {202, 503}, results
    assert 202 in statuses
    # requests were in flight while the broker was away
    assert any(r[3] <= up and r[4] >= down for r in results), results
    # every service is up again, by itself
    cluster.wait_ready(timeout=90)
    # what was accepted converges: available, or error with a message
    accepted = [r[2] for r in results if r[0] == 202]
    for volume_id in accepted:
        util.wait_for(
            lambda: api.get('/volumes/%s' % volume_id).json()['volume'][
                'status'] in ('available', 'error'), timeout=60,
            what='volume %s settled' % volume_id)
    # new work runs: a create, an attach and a delete
    vol = api.create_volume()
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4()),
        'connector': {'host': 'compute-1', 'ip': '127.0.0.5'}}})
    assert resp.status_code == 200, resp.text
    assert api.delete('/attachments/%s' % resp.json()['attachment'][
        'id']).status_code == 200
    for volume_id in accepted + [vol['id']]:
        assert api.delete('/volumes/%s' % volume_id).status_code == 202
    for volume_id in accepted + [vol['id']]:
        api.wait_deleted(volume_id)
