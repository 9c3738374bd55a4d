"""One of two API processes behind HAProxy killed while clients cycle
attachments (issue 52), on the clustered deployment
(tests/harness/clustered.py): Galera's three nodes behind HAProxy with
writes on all three, two API processes behind another HAProxy, the
scheduler, and volume services ``node-ma@ma`` and ``node-ma2@ma`` of
cluster ``aa``.

Eight REST clients (tests/harness/attach_cycles.py) create attachments
with a connector, complete and delete them, each on a volume of its
own, through HAProxy; a compute node on the bus (this process, through
the API's RPC server on topic ``cinder-lite-api``) does the same on a
volume of its own.  API process ``api`` is killed with SIGKILL, stays
away a while and is started again.

* every answer is a 2xx, a 4xx or a documented 503: among them
  HAProxy's for a request the killed process had taken and never
  answered (it may have been carried out: the client looks);
  connections refused by the dead process are sent to the other one;
* no attachment lost or duplicated; the bus calls made while ``api`` is
  away are answered (the other API's RPC server consumes them); a call
  the killed process had taken times out, and what it left is found;
* every client cycles again through both API processes once ``api`` is
  back, nothing is stuck after reconciliation, no export is left and
  ``cinder-lite-manage quota check`` is clean;
* the transactions run again (db.api.run_writer's retries: certification
  failures of the multi-writer Galera cluster, connections lost) are
  counted and printed.
"""
import collections
import os
import re
import shutil
import tempfile
import threading
import time
import types
import uuid

import oslo_messaging as messaging
import pytest

from cinder_lite.cmd import config
from cinder_lite.common import exception
from cinder_lite.connector import client
from cinder_lite import service
from tests.harness import attach_cycles
from tests.harness import cluster as cluster_mod
from tests.harness import clustered
from tests.harness import haproxy as haproxy_mod
from tests.harness import stack
from tests.harness import util

CLIENTS = 8
AWAY_S = 10.0
SHARED_CYCLES_S = 30.0
SETTLE = 120
BUS_RPC_TIMEOUT_S = 15
START_BUDGET_S = 120
EXTRA_DEFAULT = {
    # reconcile_after above the longest an API call waits (5 + 10 s)
    'reconcile_after': 20, 'reconcile_interval': 2,
    'volume_rpc_timeout': 5}
# what HAProxy answers for a request the killed process had taken
API_GONE = haproxy_mod.API_ERRORS[502]
DOCUMENTED_503 = attach_cycles.DOCUMENTED_503 + (API_GONE,)
SERVED_BY = re.compile(r' cinder-api cinder-api/(api\d) ')


@pytest.fixture(scope='module')
def deployment(galera):
    where = tempfile.mkdtemp(prefix='cinder-lite-clustered-')
    d = clustered.Deployment(galera, where, db_writers=None,
                             extra_default=EXTRA_DEFAULT)
    try:
        try:
            d.start()
        except (cluster_mod.ClusterError,
                cluster_mod.ServiceUnavailable) as e:
            pytest.fail('the clustered deployment did not start: %s' % e,
                        pytrace=False)
        print('clustered deployment started in %.1f s (Galera %.1f s '
              'before)' % (d.started_in, galera.started_in))
        assert d.started_in + galera.started_in < START_BUDGET_S
        yield d
    finally:
        bad = d.stop()
        if os.environ.get('CINDER_LITE_KEEP_WORKDIR') != '1':
            shutil.rmtree(where, ignore_errors=True)
    assert not bad, 'services did not stop cleanly on SIGTERM: %r' % bad


@pytest.fixture
def compute_node(deployment, tmp_path):
    """This process configured as a compute node on the deployment's
    bus (its vhost and control_exchange), RPC calls bounded."""
    path = tmp_path / 'compute.conf'
    path.write_text('[upgrade_levels]\napi_rpc_timeout = %d\n'
                    % BUS_RPC_TIMEOUT_S)
    conf = config.parse_args(['--config-file',
                              deployment.cluster.common_conf,
                              '--config-file', str(path)])
    yield conf
    service.release_bus()
    conf.reset()
    conf.clear()


def wait_deleted(api, volume_id):
    # (stack.Client.wait_deleted's 20 s are short on a loaded machine)
    try:
        util.wait_for(lambda: api.get('/volumes/%s' % volume_id
                                      ).status_code == 404, SETTLE,
                      interval=0.5, what='volume %s deleted' % volume_id)
    except AssertionError as e:
        raise AssertionError('%s: %s' % (e, api.get(
            '/volumes/%s' % volume_id).text[:600]))


class BusCycler(threading.Thread):
    """Attach cycles over the bus, as a compute node sends them; what a
    failed call left is found over REST (by instance) and deleted."""

    def __init__(self, url, volume_id, stop):
        super().__init__(daemon=True, name='bus-cycler')
        self.bus = client.BusTransport(cluster_mod.PROJECT)
        # (its REST half: lookups and deletes, never started)
        self.rest = attach_cycles.Cycler(types.SimpleNamespace(url=url),
                                         99, volume_id, threading.Event())
        self.volume_id = volume_id
        self.stop = stop
        self.connector = dict(self.rest.connector, host='bus-compute',
                              ip='127.0.0.19')
        self.answered = []     # monotonic times of calls answered
        self.timeouts = []     # (step, seconds waited)
        self.errors = []       # anything else a call raised
        self.cycles = 0

    def call(self, step, fn, *args):
        began = time.monotonic()
        try:
            result = fn(*args)
        except (messaging.MessagingTimeout,
                exception.ServiceUnavailable) as e:
            # (the client's bounded call: "no answer to ... within N s")
            if isinstance(e, exception.ServiceUnavailable) and \
                    'no answer to ' not in str(e):
                self.errors.append((step, type(e).__name__, str(e)[:200]))
            else:
                self.timeouts.append((step, time.monotonic() - began))
            return None, False
        except Exception as e:   # a domain error (exception.*) or other
            self.errors.append((step, type(e).__name__, str(e)[:200]))
            return None, False
        self.answered.append(time.monotonic())
        return result, True

    def run(self):
        while not self.stop.is_set():
            instance = str(uuid.uuid4())
            att, ok = self.call('create', self.bus.create, self.volume_id,
                                instance, dict(self.connector), None)
            if ok:
                _, ok = self.call('complete', self.bus.complete, att['id'])
            if ok:
                _, ok = self.call('delete', self.bus.delete, att['id'])
            if ok:
                self.cycles += 1
                continue
            # a call not answered: what it left, deleted over REST
            made = self.rest.made_for(instance)
            if len(made) > 1:
                self.rest.duplicated.append((instance, made))
            for aid in made:
                self.rest.delete(aid)
            time.sleep(0.2)


def test_api_process_killed_behind_haproxy(deployment, compute_node):
    d = deployment
    api = stack.Client(d.url, project=cluster_mod.PROJECT)
    vtype = api.create_type('ha-ma', {'volume_backend_name': 'ma'})
    volumes = [api.create_volume(volume_type=vtype['name'])['id']
               for _ in range(CLIENTS + 1)]
    stop = threading.Event()
    cyclers = [attach_cycles.Cycler(d, n, vid, stop)
               for n, vid in enumerate(volumes[:CLIENTS])]
    bus = BusCycler(d.url, volumes[CLIENTS], stop)
    for c in cyclers + [bus]:
        c.start()

    def progress(what):
        atts = api.get('/attachments/detail?all_tenants=1',
                       headers=attach_cycles.V354).json()['attachments']
        return '%s: %r; bus %d cycles %r %r; attachments %r' % (what, [
            (c.cycles, c.failures[-2:]) for c in cyclers], bus.cycles,
            bus.timeouts[-2:], bus.errors[-2:], [
            (a['id'], a['volume_id'], a['status'], a.get('status_reason'))
            for a in atts])

    def until_cycled(n_more, what, bus_more=0):
        mark = {id(c): c.cycles for c in cyclers}
        bus_mark = bus.cycles
        try:
            util.wait_for(lambda: all(c.cycles >= mark[id(c)] + n_more
                                      for c in cyclers) and
                          bus.cycles >= bus_mark + bus_more, SETTLE,
                          interval=0.2, what=what)
        except AssertionError:
            raise AssertionError(progress(what))

    retries_before = d.retries()
    galera_before = d.galera_counters()
    try:
        until_cycled(2, 'every client attaching', bus_more=2)
        killed_at = time.monotonic()
        d.kill_api('api')
        until_cycled(2, 'every client cycling with api away', bus_more=2)
        time.sleep(max(0.0, AWAY_S - (time.monotonic() - killed_at)))
        back_at = time.monotonic()
        d.restart_api('api')
        # (a second after the kill: no answer of the killed one is
        # still on its way)
        answered_away = [t for t in bus.answered
                         if killed_at + 1 < t < back_at]
        log_mark = len(open(d.api_proxy.log, errors='replace').read())
        until_cycled(3, 'every client cycling with api back', bus_more=1)
    finally:
        stop.set()
        for c in cyclers + [bus]:
            c.join(SETTLE)
    assert not any(c.is_alive() for c in cyclers + [bus]), \
        'a client is stuck'
    d.check_alive()

    failures = [f for c in cyclers + [bus.rest] for f in c.failures]
    bad = [f for f in failures if f[0] == 'exception' or (
        f[0] != 503 and f[0] >= 500)]
    assert bad == [], bad
    undocumented = [f for f in failures if f[0] == 503 and not any(
        w in f[1] for w in DOCUMENTED_503)]
    assert undocumented == [], undocumented
    gone = [f for f in failures if f[0] == 503 and API_GONE in f[1]]
    print('away %.1f s; 503s: %r; the killed process\'s requests answered '
          'by HAProxy: %d' % (back_at - killed_at, sorted({
              f[1][:70] for f in failures if f[0] == 503}), len(gone)))
    print('other failures: %r' % sorted({
        (f[0], f[1][:70]) for f in failures if f[0] != 503}))
    # (at most the requests the killed process had taken: one a client)
    assert len(gone) <= CLIENTS + 1, gone
    assert [c.lost for c in cyclers + [bus.rest] if c.lost] == []
    assert [c.duplicated for c in cyclers + [bus.rest]
            if c.duplicated] == []
    # the bus: calls answered while only api2's RPC server ran; a call
    # the killed one had taken timed out, nothing else went wrong
    print('bus: %d cycles, %d calls answered with api away, timeouts %r, '
          'errors %r' % (bus.cycles, len(answered_away), bus.timeouts,
                         bus.errors))
    assert len(answered_away) >= 3, (answered_away, bus.timeouts)
    assert bus.errors == []
    assert len(bus.timeouts) <= 3, bus.timeouts
    with open(d.api_proxy.log, errors='replace') as f:
        served_after = collections.Counter(
            SERVED_BY.findall(f.read()[log_mark:]))
    print('requests served after the restart: %r' % served_after)
    assert served_after.get('api1', 0) >= 10, served_after
    print('cycles: %d REST, %d bus; attachments a failed create left, '
          'unnamed by its answer: %d' % (
              sum(c.cycles for c in cyclers), bus.cycles,
              sum(c.unnamed for c in cyclers + [bus.rest])))

    try:
        util.wait_for(lambda: attach_cycles.nothing_left(api, volumes),
                      SETTLE, interval=0.5, what='nothing left')
    except AssertionError:
        raise AssertionError(progress('nothing left'))
    util.wait_for(lambda: not util.processes('nbdkit', d.cluster.workdir),
                  SETTLE, interval=0.5, what='no nbdkit left')
    check = d.cluster.manage('quota', 'check', check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert 'equals what the volumes say' in check.stdout
    retries = d.retries()
    print('transactions run again (db.api.run_writer), per process: %r '
          '(during the test: %d)' % (retries, sum(retries.values()) -
                                     sum(retries_before.values())))
    galera = d.counters_since(galera_before, d.galera_counters())
    print('Galera nodes, during the test: %r' % galera)
    # the writes went through all three nodes
    assert len(galera) == 3 and all(
        c['wsrep_local_commits'] > 0 for c in galera.values()), galera
    for vid in volumes:
        assert api.delete('/volumes/%s' % vid).status_code == 202
    for vid in volumes:
        wait_deleted(api, vid)
    api.session.close()


def test_attach_cycles_of_one_volume_on_all_writers(deployment):
    """Eight clients cycle attachments of one multiattach volume through
    HAProxy (both API processes, writes on all three Galera nodes): the
    volume's row and counters are changed through three nodes at once,
    and the certification failures are run again (db.api.run_writer).
    Every answer a 2xx, none lost or duplicated, the retries counted."""
    d = deployment
    d.check_alive()
    api = stack.Client(d.url, project=cluster_mod.PROJECT)
    vtype = api.create_type('ha-shared', {'volume_backend_name': 'ma',
                                          'multiattach': '<is> True'})
    vid = api.create_volume(volume_type=vtype['name'])['id']
    retries_before = d.retries()
    galera_before = d.galera_counters()
    stop = threading.Event()
    cyclers = [attach_cycles.Cycler(d, n, vid, stop)
               for n in range(CLIENTS)]
    began = time.monotonic()
    for c in cyclers:
        c.start()
    try:
        time.sleep(SHARED_CYCLES_S)
    finally:
        stop.set()
        for c in cyclers:
            c.join(SETTLE)
    took = time.monotonic() - began
    assert not any(c.is_alive() for c in cyclers), 'a client is stuck'
    d.check_alive()
    failures = [f for c in cyclers for f in c.failures]
    cycles = sum(c.cycles for c in cyclers)
    retries = d.retries()
    ran_again = sum(retries.values()) - sum(retries_before.values())
    galera = d.counters_since(galera_before, d.galera_counters())
    print('one volume, %d clients, %.0f s: %d cycles, failures %r' % (
        CLIENTS, took, cycles, sorted({(f[0], f[1][:70])
                                       for f in failures})))
    print('transactions run again: %d (%.1f per 1000 cycles), per '
          'process %r' % (ran_again, 1000.0 * ran_again / max(cycles, 1),
                          {name: retries[name] - retries_before.get(name, 0)
                           for name in retries}))
    print('Galera nodes: %r' % galera)
    # (a transaction still refused after db_max_retries answers the
    # documented 503; on a loaded machine one in some hundred cycles)
    assert [f for f in failures
            if f[0] != 503 or attach_cycles.DOCUMENTED_503[1] not in f[1]
            ] == [], failures
    assert len(failures) <= max(2, cycles // 50), failures
    assert [c.lost for c in cyclers if c.lost] == []
    assert [c.duplicated for c in cyclers if c.duplicated] == []
    assert cycles >= CLIENTS * 3, cycles
    assert all(c['wsrep_local_commits'] > 0 for c in galera.values()), \
        galera
    resp = api.get('/attachments?volume_id=%s' % vid)
    assert resp.status_code == 200 and resp.json()['attachments'] == [], \
        resp.text
    util.wait_for(lambda: api.get('/volumes/%s' % vid).json()['volume'][
        'status'] == 'available', SETTLE, interval=0.5,
        what='the volume available')
    check = d.cluster.manage('quota', 'check', check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert api.delete('/volumes/%s' % vid).status_code == 202
    wait_deleted(api, vid)
    api.session.close()
