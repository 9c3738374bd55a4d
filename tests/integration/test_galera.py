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
import contextlib
import http.client
import json
import os
import re
import threading
import time
import types
import uuid

import pymysql
import pytest

from tests.harness import attach
from tests.harness import cluster as cluster_mod
from tests.harness import groups
from tests.harness import snapshots
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
    with two_apis(galera) as deployed:
        yield deployed


@contextlib.contextmanager
def two_apis(galera, configure=None, **options):
    """The deployment of ``deployment``: (cluster on node 1, second API
    process on node 2, its port); ``options``: more keyword arguments of
    the ``Cluster``; ``configure(cluster)`` changes it before it
    starts."""
    keep = os.environ.get('CINDER_LITE_KEEP_WORKDIR') == '1'
    c = cluster_mod.Cluster('mysql', keep_workdir=keep,
                            server_url=galera.nodes[0].url, **options)
    if configure is not None:
        configure(c)
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


def race(requests_, project=cluster_mod.PROJECT):
    """Send ``requests_`` ([(port, method, path, body)]) at once, each on
    its own connection, as an admin of ``project``; return the Replies in
    order."""
    n = len(requests_)
    barrier = threading.Barrier(n)
    replies = [None] * n
    errors = []
    headers = {'X-Auth-Token': 'admin:%s' % project,
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
            conn.request(method, '/v3/%s%s' % (project, path),
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


def spread(deployment, method, paths_bodies, project=cluster_mod.PROJECT):
    """Half of the requests to the API on node 1, half to node 2's."""
    c, _api2, port2 = deployment
    ports = (c.port, port2)
    return race([(ports[i % 2], method, path, body)
                 for i, (path, body) in enumerate(paths_bodies)], project)


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


@pytest.fixture
def writer_on_node1(galera, monkeypatch):
    """The process's writer transactions (``db.api.run_writer``) on a
    database of their own on node 1, with a table ``t`` of rows (1, 0)
    and (2, 0); yields the database's name."""
    from cinder_lite.db import api as db_api
    name = 'cl_g_%s' % uuid.uuid4().hex[:8]
    setup = _tcp(galera.nodes[0])
    with setup.cursor() as cur:
        cur.execute('CREATE DATABASE %s' % name)
        cur.execute('CREATE TABLE %s.t (id INT PRIMARY KEY, n INT)' % name)
        cur.execute('INSERT INTO %s.t VALUES (1, 0), (2, 0)' % name)
    setup.commit()
    for attr in ('_engine', '_writer_maker', '_reader_maker',
                 '_serialise_writers', '_deadlock_retries'):
        monkeypatch.setattr(db_api, attr, getattr(db_api, attr))
    db_api.configure(types.SimpleNamespace(database=types.SimpleNamespace(
        connection='%s/%s' % (galera.nodes[0].url, name), db_max_retries=3,
        max_pool_size=2, max_overflow=2, pool_timeout=30,
        connection_recycle_time=3600)))
    try:
        yield name
    finally:
        db_api.get_engine().dispose()
        with setup.cursor() as cur:
            cur.execute('DROP DATABASE IF EXISTS %s' % name)
        setup.close()


def test_an_abort_sent_after_the_rows_is_raised(galera, writer_on_node1):
    """A transaction on node 1 that node 2's commit aborts while one of
    its statements runs learns of it after the statement's rows: a
    compound statement ending in a read (as ``query.compound_read``
    makes) is answered with its rows, then the deadlock.  That deadlock
    is raised by the statement and the transaction runs again from its
    start; it is not dropped with the cursor, which left the rest of the
    transaction to commit alone in a new one (the aborted part lost)."""
    from cinder_lite.db import api as db_api
    import sqlalchemy as sa
    attempts = []
    other = _tcp(galera.nodes[1], writer_on_node1)
    committed = threading.Event()

    def _commit_on_node2():
        # (once node 1's transaction holds row 1 and sleeps in its
        # compound statement, after its rows)
        time.sleep(1.0)
        with other.cursor() as cur:
            cur.execute('UPDATE t SET n = 100 WHERE id = 1')
        other.commit()
        committed.set()

    def txn(session):
        attempts.append(1)
        first = len(attempts) == 1
        if first:
            threading.Thread(target=_commit_on_node2, daemon=True).start()
        session.execute(sa.text('UPDATE t SET n = n + 1 WHERE id = 1'))
        rows = session.execute(sa.text(
            'BEGIN NOT ATOMIC UPDATE t SET n = n + 10 WHERE id = 2; '
            'SELECT n FROM t WHERE id = 2; DO SLEEP(%d); END'
            % (5 if first else 0)).columns(sa.column('n'))).all()
        return [n for (n,) in rows]

    try:
        assert db_api.run_writer(txn) == [10]
        assert committed.wait(10)
    finally:
        other.close()
    assert len(attempts) == 2, attempts
    check = _tcp(galera.nodes[2], writer_on_node1)
    try:
        with check.cursor() as cur:
            cur.execute('SET SESSION wsrep_sync_wait = 1')
            cur.execute('SELECT id, n FROM t ORDER BY id')
            # node 2's commit, then the whole transaction once
            assert cur.fetchall() == ((1, 101), (2, 10))
    finally:
        check.close()


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


@pytest.mark.parametrize('what', ['volume', 'snapshot', 'group'])
def test_our_row_locks_are_certified(deployment, api, galera, what):
    """``db.volumes.lock``, ``db.snapshots.lock`` and ``db.groups.lock``
    on the same row
    through two nodes: neither waits for the other (Galera replicates no
    lock), and the one that commits second is refused with a deadlock,
    as a check made under a lock that only read its row would not be
    (the lock writes the row: ``query.lock_rows``)."""
    from cinder_lite.db import api as db_api
    from cinder_lite.db import groups as db_groups
    from cinder_lite.db import snapshots as db_snapshots
    from cinder_lite.db import volumes as db_volumes
    import sqlalchemy as sa
    from sqlalchemy import orm
    c, _api2, _port2 = deployment
    vol = api.create_volume(size=1)
    row_id, lock = vol['id'], db_volumes.lock
    if what == 'snapshot':
        row_id, lock = snapshots.snapshot(api, vol['id'])['id'], \
            db_snapshots.lock
    if what == 'group':
        vtype = api.create_type('galera-lock-%s' % uuid.uuid4().hex[:6],
                                {'volume_backend_name': 'ma'})
        row_id, lock = groups.create_group(
            api, groups.create_group_type(api)['id'],
            [vtype['id']])['id'], db_groups.lock
    engines = [db_api.create_engine('%s/%s' % (galera.nodes[i].url,
                                               c.db_name))
               for i in (0, 1)]
    try:
        one, two = (orm.Session(e) for e in engines)
        with one, two:
            first, second = one.begin(), two.begin()
            lock(one, row_id)
            lock(two, row_id)
            first.commit()
            with pytest.raises(sa.exc.OperationalError) as e:
                second.commit()
            assert db_api.is_deadlock(e.value), e.value
    finally:
        for engine in engines:
            engine.dispose()
    if what == 'snapshot':
        resp = api.delete('/snapshots/%s' % row_id)
        assert resp.status_code == 202, resp.text
        snapshots.wait_gone(api, row_id)
    if what == 'group':
        groups.delete_group(api, row_id)
        groups.wait_group_gone(api, row_id)
    free(api, vol['id'])


def test_snapshot_or_volume_delete_through_two_nodes(deployment, api):
    """A volume's delete through node 1 and a snapshot of it through node
    2, at once, six times: one of the two wins, the other is refused with
    400 (a snapshot of a volume being deleted, or 404 once it is gone; a
    volume with a snapshot), never both.  Each takes the volume's lock in its
    transaction and is run again when refused at commit."""
    outcomes = collections.Counter()
    for round_ in range(6):
        vol = api.create_volume(size=1)
        c, _api2, port2 = deployment
        delete, snap = race([
            (c.port, 'DELETE', '/volumes/%s' % vol['id'], None),
            (port2, 'POST', '/snapshots', {'snapshot': {
                'volume_id': vol['id'], 'name': 'race-%d' % round_}})])
        # (a snapshot that comes after the whole delete finds no volume)
        assert (delete.status, snap.status) in (
            (202, 400), (202, 404), (400, 202)), (round_, delete, snap)
        outcomes[(delete.status, snap.status)] += 1
        if snap.status == 202:
            sid = snap.body['snapshot']['id']
            assert 'snapshot' in delete.body['badRequest']['message'], \
                delete.body
            snapshots.wait_snapshot(api, sid)
            resp = api.delete('/snapshots/%s' % sid)
            assert resp.status_code == 202, resp.text
            snapshots.wait_gone(api, sid)
            free(api, vol['id'])
        else:
            api.wait_deleted(vol['id'])
    print('(delete, snapshot) answers: %s; deadlock retries logged: %d'
          % (dict(outcomes), retries_logged(deployment)))


def test_legacy_reserves_and_unreserves_through_two_nodes(deployment, api):
    """Nova's older attach flow on one multiattach volume, 8 at once, half
    through each node: os-reserve (a reservation each), then os-unreserve
    (each drops one).  All answer 202, the reservations are made and
    dropped exactly, and the volume is available again."""
    vtype = api.create_type(specs=MULTIATTACH_SPECS)
    vol = api.create_volume(size=1, volume_type=vtype['name'])
    n = 8
    try:
        path = '/volumes/%s/action' % vol['id']
        replies = spread(deployment, 'POST',
                         [(path, {'os-reserve': None})] * n)
        assert statuses(replies) == {202: n}, replies
        listed = attachments_of(api, vol['id'])
        assert len(listed) == n, listed
        assert {a['status'] for a in listed} == {'reserved'}, listed
        replies = spread(deployment, 'POST',
                         [(path, {'os-unreserve': None})] * n)
        assert statuses(replies) == {202: n}, replies
        assert attachments_of(api, vol['id']) == []
        assert volume_status(api, vol['id']) == 'available'
    finally:
        free(api, vol['id'])


def test_group_add_or_group_delete_through_two_nodes(deployment, api):
    """A volume added to an empty group through node 1 while the group is
    deleted through node 2, four times: one of the two wins, the other
    is refused with 400 (a group with a volume; a group being deleted),
    never both (a deleted group keeping a live volume).  The add writes
    the volume's row and the delete the group's: only the group's lock,
    which writes its row, makes the two meet at certification."""
    c, _api2, port2 = deployment
    vtype = api.create_type('galera-grp-%s' % uuid.uuid4().hex[:6],
                            {'volume_backend_name': 'ma'})
    gtype = groups.create_group_type(api)
    outcomes = collections.Counter()
    for round_ in range(4):
        group = groups.create_group(api, gtype['id'], [vtype['id']])
        vol = api.create_volume(size=1, volume_type=vtype['id'])
        add, delete = race([
            (c.port, 'PUT', '/groups/%s' % group['id'],
             {'group': {'add_volumes': vol['id']}}),
            (port2, 'POST', '/groups/%s/action' % group['id'],
             {'delete': {'delete-volumes': False}})])
        outcomes[(add.status, delete.status)] += 1
        # (an add after the whole delete finds no group: 404)
        assert (add.status, delete.status) in (
            (202, 400), (400, 202), (404, 202)), (round_, add, delete)
        resp = api.get('/volumes/%s' % vol['id'])
        assert resp.status_code == 200, resp.text
        in_group = resp.json()['volume'].get('group_id')
        if add.status == 202:
            assert in_group == group['id'], resp.json()
            groups.delete_group(api, group['id'], delete_volumes=True)
            groups.wait_group_gone(api, group['id'])
            api.wait_deleted(vol['id'])
        else:
            assert in_group is None, resp.json()
            groups.wait_group_gone(api, group['id'])
            free(api, vol['id'])
    print('(add, delete) answers: %s' % dict(outcomes))


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
