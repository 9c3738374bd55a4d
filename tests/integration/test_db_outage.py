"""MariaDB and PostgreSQL restart under load: requests made while the
database is away answer a clear 503 (never a 500), every service carries
on by itself once it is back (heartbeats, new work), and nothing is left
half done.  The cluster runs on a database server of its own, which the
test stops and starts; the machine's stay up for the other tests."""
import time

from tests.harness import load
from tests.harness import util

CLUSTER_KINDS = ['mysql', 'postgresql']
CLUSTER_OPTIONS = {'extra_default': {'reconcile_after': 5,
                                     'reconcile_interval': 2}}
# the server this module stops is its own, not the machine's
PRIVATE_SERVERS = ('database',)


def _restart(server, pause):
    """Stop the cluster's own database server, wait ``pause`` seconds,
    start it again.  Returns when it went down and when it was told to
    start: it was away for all of that interval."""
    server.stop()
    down = time.monotonic()
    time.sleep(pause)
    starting = time.monotonic()
    server.start()
    return down, starting


def test_services_ride_out_a_database_restart(cluster, api):
    with load.CreateLoad(cluster, also_list=True) as traffic:
        time.sleep(1)
        down, up = _restart(cluster.db_server, 4)
        time.sleep(3)
    results = traffic.results

    statuses = [r[0] for r in results]
    assert set(statuses) <= {202, 503}, [r for r in results
                                         if r[0] not in (202, 503)]
    during = [r for r in results if down <= r[3] <= up]
    assert during and {r[0] for r in during} == {503}, during
    # the database is away, or back with the heartbeats of the volume
    # services not yet in
    assert all('The database is unavailable' in r[1]
               or 'no volume service' in r[1] for r in during), during
    assert any('The database is unavailable' in r[1] for r in during)
    cluster.wait_ready(timeout=90)
    accepted = [r[2] for r in results if r[0] == 202]
    for volume_id in accepted:
        util.wait_for(
            lambda: api.get('/volumes/%s' % volume_id).json()['volume'][
                'status'] in ('available', 'error'), timeout=60,
            what='volume %s settled' % volume_id)
    vol = api.create_volume()
    for volume_id in accepted + [vol['id']]:
        assert api.delete('/volumes/%s' % volume_id).status_code == 202
    for volume_id in accepted + [vol['id']]:
        api.wait_deleted(volume_id)
