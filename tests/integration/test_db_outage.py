"""MariaDB and PostgreSQL restart under load: requests made while the
database is away answer a clear 503 (never a 500), every service carries
on by itself once it is back (heartbeats, new work), and nothing is left
half done."""
import os
import socket
import subprocess
import time

from tests.harness import load
from tests.harness import util

CLUSTER_KINDS = ['mysql', 'postgresql']
CLUSTER_OPTIONS = {'extra_default': {'reconcile_after': 5,
                                     'reconcile_interval': 2}}
PIDFILE = '/run/mysqld/mysqld.pid'


def _port_open(port):
    try:
        socket.create_connection(('127.0.0.1', port), timeout=1).close()
        return True
    except OSError:
        return False


def _pg_ctl(action, *args):
    version, = os.listdir('/etc/postgresql')
    return ['pg_ctlcluster', '--skip-systemctl-redirect', version, 'main',
            action] + list(args)


# kind -> (name, port, stop command, start command), as the machine runs
# them; PostgreSQL stops fast, which also ends the open sessions
SERVERS = {
    'mysql': ('MariaDB', 3306, lambda: ['mysqladmin', '-uroot', 'shutdown'],
              lambda: ['start-stop-daemon', '--start', '--oknodo',
                       '--background', '--exec', '/usr/sbin/mariadbd']),
    'postgresql': ('PostgreSQL', 5432, lambda: _pg_ctl('stop', '-m', 'fast'),
                   lambda: _pg_ctl('start')),
}


def _restart(kind, pause):
    """Stop the database server of ``kind``, wait ``pause`` seconds, start
    it again.  Returns when it was seen down and when it was told to
    start: it was away for all of that interval."""
    name, port, stop, start = SERVERS[kind]
    if kind == 'mysql':
        assert os.path.exists(PIDFILE)
    subprocess.run(stop(), check=True, capture_output=True, timeout=120)
    util.wait_for(lambda: not _port_open(port), timeout=60,
                  what='%s down' % name)
    down = time.monotonic()
    time.sleep(pause)
    starting = time.monotonic()
    subprocess.run(start(), check=True, capture_output=True, timeout=120)
    util.wait_for(lambda: _port_open(port), timeout=120,
                  what='%s up' % name)
    return down, starting


def test_services_ride_out_a_database_restart(cluster, api):
    with load.CreateLoad(cluster, also_list=True) as traffic:
        time.sleep(1)
        down, up = _restart(cluster.kind, 4)
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
