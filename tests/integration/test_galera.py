"""Two API processes writing through two nodes of a Galera cluster at once.

Galera replicates rows, not row locks: ``SELECT ... FOR UPDATE`` on node 1
does not block the same statement on node 2, and of two transactions that
changed the same row on two nodes the one that commits second fails its
certification with a deadlock (MariaDB error 1213).  Our reservations are
race-free because the volume's row is locked; on a multi-writer Galera
cluster that lock holds only among the writers of one node, and every
write transaction must be ready to be refused at its commit and run again
from its start.

The deployment: a three-node Galera cluster of the run's own
(tests/harness/galera.py), the usual cluster (tests/harness/cluster.py:
API, scheduler, volume nodes) on node 1, and a second API process on node
2.  Races send half of their requests to each API, every request on its
own connection, released together by a barrier.
"""
import collections
import http.client
import json
import os
import re
import threading
import uuid

import pymysql
import pytest

from tests.harness import attach
from tests.harness import cluster as cluster_mod
from tests.harness import stack
from tests.harness import util

VERSION = '3.71'
RACERS = 16
ROUNDS = 3
MULTIATTACH_SPECS = {'multiattach': '<is> True'}
HTTP_TIMEOUT = 120


@pytest.fixture(scope='module')
def deployment(galera):
    """(cluster on node 1, second API process on node 2, its port)."""
    keep = os.environ.get('CINDER_LITE_KEEP_WORKDIR') == '1'
    c = cluster_mod.Cluster('mysql', keep_workdir=keep,
                            server_url=galera.nodes[0].url)
    try:
        c.start()
    except cluster_mod.ClusterError as e:
        pytest.fail('cluster on Galera did not start: %s' % e,
                    pytrace=False)
    port2 = util.free_port()
    conf2 = os.path.join(c.workdir, 'api2-only.conf')
    cluster_mod.write_conf(conf2, {
        'DEFAULT': {'osapi_volume_listen_port': port2, 'host': 'node-ctl2'},
        'database': {'connection': '%s/%s' % (galera.nodes[1].url,
                                              c.db_name)}})
    api2 = cluster_mod.Process(
        'api2', c.argv('cinder_lite.cmd.api', conf2),
        os.path.join(c.workdir, 'api2.log'), c.workdir).start()
    try:
        util.wait_for(lambda: not api2.alive() or _answers(port2), 60,
                      interval=0.2, what='the second API answering')
        assert api2.alive(), api2.read_log()[-3000:]
        yield c, api2, port2
    finally:
        code = api2.stop()
        try:
            codes = c.stop_processes()
            bad = c.unclean_exits(codes)
        finally:
            c.cleanup()
        assert code == 0, 'api2 exited %s' % code
        assert not bad, bad


def _answers(port):
    try:
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=2)
        conn.request('GET', '/')
        ok = conn.getresponse().status in (200, 300)
        conn.close()
        return ok
    except OSError:
        return False


@pytest.fixture
def api(deployment):
    c, _api2, _port2 = deployment
    c.check_alive()
    client = stack.Client(c.url, project=cluster_mod.PROJECT,
                          version=VERSION)
    yield client
    client.session.close()


Reply = collections.namedtuple('Reply', 'port status body')


def race(requests_):
    """Send ``requests_`` ([(port, method, path, body)]) at once, each on
    its own connection; return the Replies in order."""
    n = len(requests_)
    barrier = threading.Barrier(n)
    replies = [None] * n
    errors = []
    headers = {'X-Auth-Token': 'admin:%s' % cluster_mod.PROJECT,
               'OpenStack-API-Version': 'volume %s' % VERSION,
               'Content-Type': 'application/json',
               'Accept': 'application/json'}

    def _one(i):
        port, method, path, body = requests_[i]
        conn = http.client.HTTPConnection('127.0.0.1', port,
                                          timeout=HTTP_TIMEOUT)
        try:
            conn.connect()
            barrier.wait(timeout=HTTP_TIMEOUT)
            conn.request(method, '/v3/%s%s' % (cluster_mod.PROJECT, path),
                         body=None if body is None else json.dumps(body),
                         headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            try:
                parsed = json.loads(data) if data else None
            except ValueError:
                parsed = data.decode('utf-8', 'replace')
            replies[i] = Reply(port, resp.status, parsed)
        except BaseException as e:   # reported below, never swallowed
            barrier.abort()
            errors.append('request %d (%s %s): %r' % (i, method, path, e))
        finally:
            conn.close()

    threads = [threading.Thread(target=_one, args=(i,), daemon=True)
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HTTP_TIMEOUT + 30)
    assert not any(t.is_alive() for t in threads), 'requests hang'
    assert not errors, errors
    return replies


def spread(deployment, method, paths_bodies):
    """Half of the requests to the API on node 1, half to node 2's."""
    c, _api2, port2 = deployment
    ports = (c.port, port2)
    return race([(ports[i % 2], method, path, body)
                 for i, (path, body) in enumerate(paths_bodies)])


def statuses(replies):
    return collections.Counter(r.status for r in replies)


def attachments_of(api, volume_id):
    resp = api.get('/attachments?volume_id=%s' % volume_id)
    assert resp.status_code == 200, resp.text
    return resp.json()['attachments']


def volume_status(api, volume_id):
    resp = api.get('/volumes/%s' % volume_id)
    assert resp.status_code == 200, resp.text
    return resp.json()['volume']['status']


def retries_logged(deployment):
    """Deadlock retries the two API processes logged."""
    c, api2, _port2 = deployment
    text = c.processes['api'].read_log() + api2.read_log()
    return len(re.findall(r'database deadlock \(attempt \d+ of \d+\)',
                          text))


def free(api, volume_id):
    for att in attachments_of(api, volume_id):
        resp = api.delete('/attachments/%s' % att['id'])
        assert resp.status_code == 200, resp.text
    resp = api.delete('/volumes/%s' % volume_id)
    assert resp.status_code == 202, resp.text
    api.wait_deleted(volume_id)


# -- the cluster itself ------------------------------------------------------

def _tcp(node, db=None):
    return pymysql.connect(host='127.0.0.1', port=node.port,
                           user='cinder', password=node.cluster.password,
                           database=db, connect_timeout=5)


def test_cluster_of_three_replicates(galera):
    assert galera.size() == 3
    assert len(galera.pids()) == 3
    name = 'cl_g_%s' % uuid.uuid4().hex[:8]
    a = _tcp(galera.nodes[1])
    b = _tcp(galera.nodes[2])
    try:
        with a.cursor() as cur:
            cur.execute('CREATE DATABASE %s' % name)
            cur.execute('CREATE TABLE %s.t (id INT PRIMARY KEY, n INT)'
                        % name)
            cur.execute('INSERT INTO %s.t VALUES (1, 0)' % name)
        a.commit()
        with b.cursor() as cur:
            # (wsrep_sync_wait: the read waits until node 3 applied what
            # the cluster committed before it)
            cur.execute('SET SESSION wsrep_sync_wait = 1')
            cur.execute('SELECT id, n FROM %s.t' % name)
            assert cur.fetchall() == ((1, 0),)
    finally:
        with a.cursor() as cur:
            cur.execute('DROP DATABASE IF EXISTS %s' % name)
        a.close()
        b.close()


def test_row_locks_are_not_replicated(galera):
    """What our reservations meet: both nodes grant the row lock, and the
    second commit fails certification with error 1213."""
    name = 'cl_g_%s' % uuid.uuid4().hex[:8]
    setup = _tcp(galera.nodes[0])
    try:
        with setup.cursor() as cur:
            cur.execute('CREATE DATABASE %s' % name)
            cur.execute('CREATE TABLE %s.t (id INT PRIMARY KEY, n INT)'
                        % name)
            cur.execute('INSERT INTO %s.t VALUES (1, 0)' % name)
        setup.commit()
        one, two = _tcp(galera.nodes[0], name), _tcp(galera.nodes[1], name)
        try:
            for conn in (one, two):
                with conn.cursor() as cur:
                    cur.execute('SET SESSION wsrep_sync_wait = 1')
                    cur.execute('SET SESSION innodb_lock_wait_timeout = 5')
                    cur.execute('BEGIN')
                    # the second does not wait for the first's lock
                    cur.execute('SELECT n FROM t WHERE id = 1 FOR UPDATE')
                    assert cur.fetchall() == ((0,),)
                    cur.execute('UPDATE t SET n = n + 1 WHERE id = 1')
            one.commit()
            with pytest.raises(pymysql.err.OperationalError) as e:
                two.commit()
            assert e.value.args[0] == 1213, e.value
        finally:
            one.close()
            two.close()
    finally:
        with setup.cursor() as cur:
            cur.execute('DROP DATABASE IF EXISTS %s' % name)
        setup.close()


# -- cinder_lite on two nodes ------------------------------------------------

def test_two_apis_on_two_nodes(deployment, api):
    c, api2, port2 = deployment
    assert api2.alive()
    vol = api.create_volume(size=1)
    conn = http.client.HTTPConnection('127.0.0.1', port2, timeout=30)
    conn.request('GET', '/v3/%s/volumes/%s' % (cluster_mod.PROJECT,
                                               vol['id']),
                 headers={'X-Auth-Token': 'admin:%s' % cluster_mod.PROJECT})
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    assert resp.status == 200, body
    assert body['volume']['id'] == vol['id']
    free(api, vol['id'])


@pytest.mark.xfail(strict=False, reason='once in a full suite run (load '
                   'average 3), 16 concurrent DELETEs of reservations '
                   'through two nodes all answered 200 and one of the '
                   'attachments was still listed after: a delete lost on '
                   'multi-writer Galera, not yet explained '
                   '(doc/source/deployment.rst, Galera)')
def test_multiattach_reservations_through_two_nodes(deployment, api):
    """16 concurrent reservations of one multiattach volume, half through
    each Galera node, three rounds, then 16 concurrent deletes: every
    request is answered 200, every reservation is there once, and the
    volume's status follows.  The certification failures the race meets
    are retried by the writers (counted in the logs)."""
    vtype = api.create_type(specs=MULTIATTACH_SPECS)
    vol = api.create_volume(size=1, volume_type=vtype['name'])
    assert vol['multiattach'] is True, vol
    made = {}
    try:
        for round_ in range(ROUNDS):
            instances = [str(uuid.uuid4()) for _ in range(RACERS)]
            replies = spread(deployment, 'POST', [
                ('/attachments', {'attachment': {
                    'volume_uuid': vol['id'], 'instance_uuid': i}})
                for i in instances])
            assert statuses(replies) == {200: RACERS}, (round_, replies)
            for reply in replies:
                made[reply.body['attachment']['id']] = \
                    reply.body['attachment']['instance']
            listed = attachments_of(api, vol['id'])
            assert len(listed) == len(made), (len(listed), len(made))
            assert {a['id']: a['instance'] for a in listed} == made
            assert {a['status'] for a in listed} == {'reserved'}
            assert volume_status(api, vol['id']) == 'reserved'
        replies = spread(deployment, 'DELETE', [
            ('/attachments/%s' % a, None) for a in list(made)[:RACERS]])
        assert statuses(replies) == {200: RACERS}, replies
        left = attachments_of(api, vol['id'])
        assert {a['id'] for a in left} == set(list(made)[RACERS:])
    finally:
        free(api, vol['id'])
    print('deadlock retries logged: %d' % retries_logged(deployment))


def test_plain_volume_one_winner_through_two_nodes(deployment, api):
    """The single-writer invariant across nodes: of 16 reservations of a
    plain volume for 16 instances, one wins and 15 are refused with 400,
    whichever node each went through."""
    vol = api.create_volume(size=1)
    assert vol['multiattach'] is False, vol
    try:
        for round_ in range(ROUNDS):
            replies = spread(deployment, 'POST', [
                ('/attachments', {'attachment': {
                    'volume_uuid': vol['id'],
                    'instance_uuid': str(uuid.uuid4())}})
                for _ in range(RACERS)])
            assert statuses(replies) == {200: 1, 400: RACERS - 1}, \
                (round_, replies)
            for reply in replies:
                if reply.status == 400:
                    assert vol['id'] in reply.body['badRequest']['message']
            listed = attachments_of(api, vol['id'])
            [won] = [r.body['attachment'] for r in replies
                     if r.status == 200]
            assert [a['id'] for a in listed] == [won['id']], listed
            resp = api.delete('/attachments/%s' % won['id'])
            assert resp.status_code == 200, resp.text
            assert volume_status(api, vol['id']) == 'available'
    finally:
        free(api, vol['id'])


@pytest.mark.xfail(strict=False, reason='about one run in four, one of 8 '
                   'concurrent DELETEs of connected attachments through '
                   'two nodes answers 400 (the volume service refused the '
                   'disconnect: it read the attachment as not detaching); '
                   'seen before wsrep_sync_wait and once after, not yet '
                   'explained')
def test_attach_cycles_through_two_nodes(deployment, api):
    """Whole attach cycles of one multiattach volume, 8 at once, half
    through each node: reserve-and-connect (the volume service records
    each connection in its own transaction on node 1 while the other API
    writes on node 2), os-complete, delete.  Every step answers 2xx and
    the volume's attachments and status follow."""
    vtype = api.create_type(specs=MULTIATTACH_SPECS)
    vol = api.create_volume(size=1, volume_type=vtype['name'])
    n = 8
    try:
        for round_ in range(2):
            replies = spread(deployment, 'POST', [
                ('/attachments', {'attachment': {
                    'volume_uuid': vol['id'],
                    'instance_uuid': str(uuid.uuid4()),
                    'connector': attach.connector(
                        host='compute-%d-%d' % (round_, i),
                        ip='127.0.%d.%d' % (round_ + 1, i + 2))}})
                for i in range(n)])
            assert statuses(replies) == {200: n}, (round_, replies)
            ids = [r.body['attachment']['id'] for r in replies]
            assert {r.body['attachment']['status'] for r in replies} == \
                {'attaching'}, replies
            replies = spread(deployment, 'POST', [
                ('/attachments/%s/action' % a, {'os-complete': None})
                for a in ids])
            assert statuses(replies) == {204: n}, (round_, replies)
            listed = attachments_of(api, vol['id'])
            assert sorted(a['id'] for a in listed) == sorted(ids)
            assert {a['status'] for a in listed} == {'attached'}, listed
            assert volume_status(api, vol['id']) == 'in-use'
            replies = spread(deployment, 'DELETE', [
                ('/attachments/%s' % a, None) for a in ids])
            assert statuses(replies) == {200: n}, (round_, replies)
            assert attachments_of(api, vol['id']) == []
            assert volume_status(api, vol['id']) == 'available'
    finally:
        free(api, vol['id'])
    print('deadlock retries logged: %d' % retries_logged(deployment))


def test_volume_creates_and_deletes_through_two_nodes(deployment, api):
    """Volumes made and deleted 8 at once, half through each node: each
    create changes the project's quota usage in its transaction, so the
    creates meet on that row.  All answer 202, each volume is there once,
    and the recorded usage equals the volumes (``quota check``)."""
    c, _api2, _port2 = deployment
    n = 8
    replies = spread(deployment, 'POST', [
        ('/volumes', {'volume': {'size': 1, 'name': 'galera-%d' % i}})
        for i in range(n)])
    assert statuses(replies) == {202: n}, replies
    ids = [r.body['volume']['id'] for r in replies]
    assert len(set(ids)) == n
    for volume_id in ids:
        api.wait_volume(volume_id, 'available')
    check = c.manage('quota', 'check', '--project', cluster_mod.PROJECT,
                     check=False)
    assert check.returncode == 0, (check.stdout, check.stderr)
    replies = spread(deployment, 'DELETE', [
        ('/volumes/%s' % v, None) for v in ids])
    assert statuses(replies) == {202: n}, replies
    for volume_id in ids:
        api.wait_deleted(volume_id)
    check = c.manage('quota', 'check', '--project', cluster_mod.PROJECT,
                     check=False)
    assert check.returncode == 0, (check.stdout, check.stderr)


def test_sessions_read_causally(galera):
    """cinder_lite's connections to a Galera node wait for the writes the
    cluster committed before each read (``wsrep_sync_wait``)."""
    from cinder_lite.db import api as db_api
    engine = db_api.create_engine(galera.nodes[2].url)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql(
                'SELECT @@session.wsrep_sync_wait').scalar() == \
                db_api.GALERA_SYNC_WAIT
    finally:
        engine.dispose()
