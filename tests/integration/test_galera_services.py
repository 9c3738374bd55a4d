"""The services' own transactions on a multi-writer Galera cluster.

The API process writes through Galera node 1, the scheduler and volume
service ``noma`` through node 2, volume service ``ma`` through node 3
(tests/harness/galera.py, the usual cluster of tests/harness/cluster.py
with a ``[database] connection`` per process).  Row locks are not
replicated, so a service's transaction that changes a row the API (or
another service) changes at the same moment through another node fails
its certification at commit (MariaDB 1213) and must run again from its
start (``db.api.run_writer``):

* heartbeats, while another node changes the services' rows;
* the scheduler's choice of a backend (``claim_host``), while the API
  renames the volumes it is scheduling;
* a group's delete recorded by two volume services through two nodes at
  once (its quota given back: one row of the project's);
* reconciliation after a volume service's restart, rolling attachments
  it connected and nobody completed forward to ``attached`` under their
  volume's lock while the API reserves and deletes attachments of that
  volume.

Each asserts no 5xx, nothing left in a transition, no transaction given
up (nothing logged as failed), and prints the retries each process
logged (``database deadlock (attempt``), asserting them where the
collisions are certain enough to count on.
"""
import collections
import os
import re
import secrets
import threading
import time
import uuid

import pymysql
import pytest

from tests.harness import attach
from tests.harness import cluster as cluster_mod
from tests.harness import groups
from tests.harness import stack
from tests.harness import util

VERSION = '3.71'
RECONCILE_AFTER = 4
MULTIATTACH_SPECS = {'multiattach': '<is> True'}
RETRY = re.compile(r'database deadlock \(attempt \d+ of \d+\) in (\S+):')
# what a transaction refused and not run again leaves in a service's log
FAILED = re.compile(r'heartbeat of \S+ failed|Exception during message '
                    r'handling|reconcile of \S+ failed|still refused after')
# the node (index in galera.nodes) each process writes through
NODE_OF = {'api': 0, 'scheduler': 1, 'noma': 1, 'ma': 2}


@pytest.fixture(scope='module')
def deployment(galera):
    keep = os.environ.get('CINDER_LITE_KEEP_WORKDIR') == '1'
    c = cluster_mod.Cluster(
        'mysql', keep_workdir=keep, server_url=galera.nodes[0].url,
        extra_default={'reconcile_after': RECONCILE_AFTER,
                       'reconcile_interval': 1, 'quota_groups': -1})
    sections = {}
    for name, node in NODE_OF.items():
        sections[name] = {'database': {'connection': '%s/%s' % (
            galera.nodes[node].url, c.db_name)}}
    # the scheduler schedules again what it lost only much later: a
    # choice refused and not run again would leave its volume creating
    sections['scheduler']['DEFAULT'] = {'reconcile_after': 600}
    c.process_sections = sections
    try:
        c.start()
    except cluster_mod.ClusterError as e:
        pytest.fail('cluster on Galera did not start: %s' % e,
                    pytrace=False)
    try:
        yield c
    finally:
        try:
            bad = c.unclean_exits(c.stop_processes())
        finally:
            c.cleanup()
        assert not bad, bad


@pytest.fixture
def api(deployment):
    deployment.check_alive()
    client = stack.Client(deployment.url, project=cluster_mod.PROJECT,
                          version=VERSION)
    yield client
    client.session.close()


def _log(proc):
    """The whole of a process's log (every run of a restarted one)."""
    with open(proc.log_path, errors='replace') as f:
        return f.read()


def retried(deployment):
    """{(process, transaction): retries logged}."""
    counts = collections.Counter()
    for name, proc in deployment.processes.items():
        for fn in RETRY.findall(_log(proc)):
            counts[(name, fn)] += 1
    return counts


def failures(deployment):
    """{(process, what its log says failed): times}."""
    counts = collections.Counter()
    for name, proc in deployment.processes.items():
        for what in FAILED.findall(_log(proc)):
            counts[(name, what)] += 1
    return counts


def _since(before, after):
    return {k: v - before.get(k, 0) for k, v in after.items()
            if v - before.get(k, 0)}


def _tcp(node, db):
    return pymysql.connect(host='127.0.0.1', port=node.port,
                           user='cinder', password=node.cluster.password,
                           database=db, connect_timeout=5, autocommit=True)


class Load(threading.Thread):
    """Calls ``step()`` until stopped; counts what it answered."""

    def __init__(self, step):
        super().__init__(daemon=True)
        self.step = step
        self.stop = threading.Event()
        self.answers = collections.Counter()
        self.errors = []

    def run(self):
        while not self.stop.is_set():
            try:
                for status in self.step():
                    self.answers[status] += 1
            except Exception as e:   # reported by the test
                self.errors.append(repr(e))
                return

    def end(self):
        self.stop.set()
        self.join(60)
        assert not self.is_alive(), 'load hangs'
        return self.answers


def test_heartbeats_while_another_node_changes_the_rows(deployment, api,
                                                        galera):
    """Every service row changed through node 1 about every 5 ms for
    8 s while each service beats every second through its own node:
    the beats that lose their certification run again, none is lost,
    every service stays up."""
    before, failed = retried(deployment), failures(deployment)
    conn = _tcp(galera.nodes[0], deployment.db_name)
    stop = threading.Event()
    changes = []

    def _change():
        while not stop.is_set():
            changes.append(_change_rows(
                conn, 'UPDATE services SET disabled_reason = %s'))
            time.sleep(0.005)
    writer = threading.Thread(target=_change, daemon=True)
    writer.start()
    try:
        time.sleep(8)
        resp = api.get('/os-services')
        assert resp.status_code == 200, resp.text
        down = [s for s in resp.json()['services'] if s['state'] != 'up']
        assert not down, down
    finally:
        stop.set()
        writer.join(10)
        with conn.cursor() as cur:
            cur.execute('UPDATE services SET disabled_reason = NULL')
        conn.close()
    beats = {k: v for k, v in _since(before, retried(deployment)).items()
             if k[1] == 'heartbeat'}
    print('row changes: %d (%d refused); heartbeats run again: %s' % (
        changes.count(True), changes.count(False), beats))
    assert not _since(failed, failures(deployment)), failures(deployment)
    assert sum(beats.values()) > 0, 'no heartbeat met a certification ' \
        'failure (%d row changes)' % len(changes)


def _change_rows(conn, statement):
    """One autocommitted ``statement`` (its one parameter a new random
    value) through ``conn``; False when Galera refused it (the rows it
    changes are the services' too)."""
    try:
        with conn.cursor() as cur:
            cur.execute(statement, (secrets.token_hex(4),))
        return True
    except pymysql.err.OperationalError as e:
        if e.args[0] != 1213:
            raise
        return False


def test_scheduling_while_the_rows_change(deployment, api, galera):
    """16 volumes created at once, each renamed 10 times through the API
    (node 1) as soon as it exists, while the volumes not scheduled yet
    are changed through node 1 all the time (as another API would) and
    the scheduler (node 2) records its choice on the same rows: every
    request answers 2xx, the choices refused at their commit are made
    again, and every volume is scheduled once and becomes available (a
    choice refused and not run again would leave its volume
    ``creating``)."""
    before, failed = retried(deployment), failures(deployment)
    n = 16
    barrier = threading.Barrier(n + 1)
    made, answers, errors = [], collections.Counter(), []
    conn = _tcp(galera.nodes[0], deployment.db_name)
    stop = threading.Event()

    def _change():
        barrier.wait(30)
        while not stop.is_set():
            _change_rows(conn, "UPDATE volumes SET description = %s WHERE "
                               "status = 'creating' AND host IS NULL")
            time.sleep(0.002)

    def _one(i):
        client = stack.Client(deployment.url, project=cluster_mod.PROJECT,
                              version=VERSION)
        try:
            barrier.wait(30)
            resp = client.post('/volumes', json={'volume': {
                'size': 1, 'name': 'sched-%d' % i}})
            answers[resp.status_code] += 1
            if resp.status_code != 202:
                errors.append(resp.text)
                return
            vid = resp.json()['volume']['id']
            made.append(vid)
            for k in range(10):
                resp = client.put('/volumes/%s' % vid, json={'volume': {
                    'name': 'sched-%d-%d' % (i, k)}})
                answers[resp.status_code] += 1
                if resp.status_code != 200:
                    errors.append(resp.text)
        except Exception as e:   # reported below
            errors.append(repr(e))
        finally:
            client.session.close()

    writer = threading.Thread(target=_change, daemon=True)
    writer.start()
    threads = [threading.Thread(target=_one, args=(i,), daemon=True)
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert not errors, errors
        assert set(answers) <= {200, 202}, answers
        assert len(made) == n
        for vid in made:
            vol = api.wait_volume(vid, 'available')
            assert vol['name'] == 'sched-%s-9' % vol['name'].split('-')[1]
    finally:
        stop.set()
        writer.join(10)
        conn.close()
        for vid in made:
            resp = api.delete('/volumes/%s' % vid)
            assert resp.status_code == 202, resp.text
        for vid in made:
            api.wait_deleted(vid)
    counts = _since(before, retried(deployment))
    print('transactions run again: %s' % counts)
    assert not _since(failed, failures(deployment)), failures(deployment)
    assert any(k[0] == 'scheduler' and k[1].endswith('_claim')
               for k in counts), counts


def test_group_deletes_recorded_by_two_services(deployment, api):
    """Eight groups on ``ma`` (node 3) and eight on ``noma`` (node 2),
    two of each with a volume, deleted at once with their volumes: both
    services give the groups' (and the volumes') quota back on the
    project's rows at the same moments, and the records refused are run
    again; every group and volume goes, and the quota usage is what is
    left (nothing given back twice)."""
    before, failed = retried(deployment), failures(deployment)
    gtype = groups.create_group_type(api)
    made = []
    for backend in ('ma', 'noma'):
        vtype = api.create_type('grp-%s-%s' % (backend, uuid.uuid4().hex[:6]),
                                {'volume_backend_name': backend})
        for i in range(8):
            group = groups.create_group(api, gtype['id'], [vtype['id']])
            vol = None if i >= 2 else api.create_volume(
                size=1, volume_type=vtype['id'], group_id=group['id'])
            made.append((group['id'], vol and vol['id']))
    answers, errors = collections.Counter(), []
    barrier = threading.Barrier(len(made))

    def _delete(group_id):
        client = stack.Client(deployment.url, project=cluster_mod.PROJECT,
                              version=VERSION)
        try:
            barrier.wait(30)
            resp = client.post('/groups/%s/action' % group_id,
                               json={'delete': {'delete-volumes': True}})
            answers[resp.status_code] += 1
        except Exception as e:   # reported below
            errors.append(repr(e))
        finally:
            client.session.close()
    threads = [threading.Thread(target=_delete, args=(g,), daemon=True)
               for g, _v in made]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert answers == {202: len(made)}, answers
    for group_id, volume_id in made:
        groups.wait_group_gone(api, group_id)
        if volume_id:
            api.wait_deleted(volume_id)
    check = deployment.manage('quota', 'check', check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert 'equals what the volumes say' in check.stdout
    counts = _since(before, retried(deployment))
    print('transactions run again: %s' % counts)
    assert not _since(failed, failures(deployment)), failures(deployment)
    assert any(k[1].startswith('GroupEndpoints.delete_group')
               for k in counts), counts


def test_reconcile_after_a_restart_while_the_api_reserves(deployment, api):
    """Eight attachments of a multiattach volume on ``ma`` connected and
    never completed, ``ma`` killed and started again while four clients
    reserve and delete attachments of that volume through the API: the
    restarted service's reconciliation rolls each forward to
    ``attached`` under the volume's lock, which the reservations take
    too (through another node), and runs again what is refused."""
    before, failed = retried(deployment), failures(deployment)
    vtype = api.create_type(specs=dict(MULTIATTACH_SPECS,
                                       volume_backend_name='ma'))
    vol = api.create_volume(size=1, volume_type=vtype['name'])
    connected = []
    for i in range(8):
        att = attach.create(api, vol['id'], str(uuid.uuid4()),
                            attach.connector(host='rc-%d' % i,
                                             ip='127.0.1.%d' % (10 + i)))
        assert att['status'] == 'attaching', att
        connected.append(att['id'])

    def _reserve_and_delete(client):
        resp = client.post('/attachments', json={'attachment': {
            'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4())}})
        if resp.status_code != 200:
            return [resp.status_code]
        gone = client.delete('/attachments/%s'
                             % resp.json()['attachment']['id'])
        return [resp.status_code, gone.status_code]

    loads = []
    for _ in range(4):
        client = stack.Client(deployment.url, project=cluster_mod.PROJECT,
                              version=VERSION)
        loads.append(Load(lambda client=client: _reserve_and_delete(client)))
    deployment.kill('ma')
    for load in loads:
        load.start()
    try:
        deployment.start_process('ma')
        deployment.ensure_running('ma', 'cinder-volume', 'node-ma@ma')

        def _all_attached():
            statuses = [api.get('/attachments/%s' % a).json()[
                'attachment']['status'] for a in connected]
            return all(s == 'attached' for s in statuses)
        util.wait_for(_all_attached, 60, interval=0.5,
                      what='the 8 attachments rolled forward to attached')
        time.sleep(2)     # (the reservations go on a little longer)
    finally:
        answers = collections.Counter()
        for load in loads:
            answers.update(load.end())
            assert not load.errors, load.errors
    assert answers[200] > 0 and set(answers) <= {200}, answers
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'in-use'
    for att in connected:
        resp = api.delete('/attachments/%s' % att)
        assert resp.status_code == 200, resp.text
    util.wait_for(lambda: not api.get('/attachments?volume_id=%s' % vol[
        'id']).json()['attachments'], 60, what='attachments gone')
    resp = api.delete('/volumes/%s' % vol['id'])
    assert resp.status_code == 202, resp.text
    api.wait_deleted(vol['id'])
    counts = _since(before, retried(deployment))
    settles = {k: v for k, v in counts.items()
               if k[0] == 'ma' and '_settle' in k[1]}
    print('reservations: %s; transactions run again: %s'
          % (dict(answers), counts))
    assert not _since(failed, failures(deployment)), failures(deployment)
    assert sum(settles.values()) > 0, counts
