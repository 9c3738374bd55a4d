"""The control plane on a Galera cluster behind HAProxy, the writer node
killed while clients work.

HAProxy (tests/harness/haproxy.py) sends every connection to node 1 and
keeps nodes 2 and 3 as backups, as OpenStack's deployment tools lay it
out (doc/source/deployment.rst, "MariaDB Galera cluster"), or spreads the
connections over all three (multi-writer: the certification failures
of concurrent changes are retried); every service of the usual cluster
(tests/harness/cluster.py) connects through it.  Clients
reserve and delete attachments of one multiattach volume while node 1 is
killed (SIGKILL, as a crash): HAProxy's checks take it out within a
second and new connections reach the others.  The services' pooled
connections to node 1 are dead by then; a request that meets one is
answered 503 (``serviceUnavailable``, ``Retry-After``), the connection
replaced, and the next request goes through another node.  A
transaction run by ``db.api.run_writer`` that meets a dead connection
before its commit is run again on a new one, so most requests do not
even see that.  What the test
holds: no answer but the expected ones and those 503s, clients served
again through the others, nothing left behind (every attachment deleted in
the end, sent again after a 503), the quota usage right, and every
service still running.  Node 1 rejoins afterwards (IST).

Runs after test_galera.py (alphabetical order, one session's cluster):
it is the one test that takes a node away.
"""
import collections
import os
import threading
import time
import uuid

import pytest

from tests.harness import cluster as cluster_mod
from tests.harness import haproxy as haproxy_mod
from tests.harness import stack
from tests.harness import util

VERSION = '3.71'
CLIENTS = 4
BEFORE_S = 5.0
AFTER_S = 12.0
# one pass of HAProxy's checks marking a node down, and slack
FAILOVER_S = 5.0
MULTIATTACH_SPECS = {'multiattach': '<is> True'}


@pytest.fixture(params=[1, None], ids=['one-writer', 'all-writers'])
def behind_haproxy(request, galera, tmp_path):
    """(the cluster, its HAProxy): one writer node and two backups, or
    connections spread over all three (``balance roundrobin``)."""
    why = haproxy_mod.available()
    if why:
        util.skip_or_fail('HAProxy: %s' % why)
    proxy = haproxy_mod.HAProxy(str(tmp_path),
                                [n.port for n in galera.nodes],
                                writers=request.param).start()
    c = cluster_mod.Cluster(
        'mysql', server_url=proxy.url('cinder', galera.password),
        keep_workdir=os.environ.get('CINDER_LITE_KEEP_WORKDIR') == '1')
    try:
        try:
            c.start()
        except cluster_mod.ClusterError as e:
            pytest.fail('cluster behind HAProxy did not start: %s' % e,
                        pytrace=False)
        yield c, proxy
    finally:
        try:
            codes = c.stop_processes()
            bad = c.unclean_exits(codes)
        finally:
            c.cleanup()
            proxy.stop()
        assert not bad, bad


class Tally:
    """What the clients were answered, by phase."""

    def __init__(self):
        self.lock = threading.Lock()
        self.answers = collections.Counter()
        self.unexpected = []
        self.made = {}         # attachment id -> deleted (True/False)
        self.ambiguous = 0     # reservations answered 503
        self.served_after = 0  # 2xx after the failover had time

    def note(self, phase, what, resp, expected):
        with self.lock:
            self.answers[(phase, what, resp.status_code)] += 1
            if resp.status_code == 503:
                body = resp.json()
                if 'serviceUnavailable' not in body or \
                        'Retry-After' not in resp.headers:
                    self.unexpected.append((what, resp.status_code,
                                            resp.text[:300]))
            elif resp.status_code != expected:
                self.unexpected.append((what, resp.status_code,
                                        resp.text[:300]))
            elif phase == 'after':
                self.served_after += 1


def _client(c):
    return stack.Client(c.url, project=cluster_mod.PROJECT, version=VERSION)


def _cycles(c, volume_id, tally, phase, stop):
    api = _client(c)
    try:
        while not stop.is_set():
            resp = api.post('/attachments', json={'attachment': {
                'volume_uuid': volume_id,
                'instance_uuid': str(uuid.uuid4())}})
            tally.note(phase(), 'reserve', resp, 200)
            if resp.status_code != 200:
                with tally.lock:
                    tally.ambiguous += resp.status_code == 503
                continue
            att = resp.json()['attachment']['id']
            with tally.lock:
                tally.made[att] = False
            resp = api.delete('/attachments/%s' % att)
            tally.note(phase(), 'delete', resp, 200)
            if resp.status_code == 200:
                with tally.lock:
                    tally.made[att] = True
    finally:
        api.session.close()


def test_writer_node_killed_behind_haproxy(galera, behind_haproxy):
    c, proxy = behind_haproxy
    api = _client(c)
    vtype = api.create_type(specs=MULTIATTACH_SPECS)
    vol = api.create_volume(size=1, volume_type=vtype['name'])
    tally = Tally()
    stop = threading.Event()
    killed_at = []

    def phase():
        if not killed_at:
            return 'before'
        if time.monotonic() - killed_at[0] < FAILOVER_S:
            return 'failover'
        return 'after'

    threads = [threading.Thread(target=_cycles,
                                args=(c, vol['id'], tally, phase, stop),
                                daemon=True) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    try:
        time.sleep(BEFORE_S)
        killed_at.append(time.monotonic())
        galera.kill(0)
        time.sleep(AFTER_S)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    try:
        assert not any(t.is_alive() for t in threads), 'clients hang'
        print('answers: %s; reservations answered 503: %d'
              % (dict(tally.answers), tally.ambiguous))
        assert not tally.unexpected, tally.unexpected[:10]
        # 503 only once node 1 is gone
        assert {k[2] for k in tally.answers if k[0] == 'before'} == {200}, \
            tally.answers
        # served through the others once HAProxy took node 1 out
        assert tally.served_after >= 10, tally.answers
        c.check_alive()
        # a delete answered 503 is sent again; whatever a reservation
        # answered 503 left (its commit may have gone through) is
        # listed, and deleted too
        for att, deleted in tally.made.items():
            if not deleted:
                resp = api.delete('/attachments/%s' % att)
                assert resp.status_code in (200, 404), resp.text
        resp = api.get('/attachments?volume_id=%s' % vol['id'])
        assert resp.status_code == 200, resp.text
        left = resp.json()['attachments']
        assert not {a['id'] for a in left} & set(tally.made), left
        assert len(left) <= tally.ambiguous, (left, tally.ambiguous)
        for att in left:
            resp = api.delete('/attachments/%s' % att['id'])
            assert resp.status_code == 200, resp.text
        resp = api.get('/volumes/%s' % vol['id'])
        assert resp.json()['volume']['status'] == 'available', resp.text
        check = c.manage('quota', 'check', '--project', cluster_mod.PROJECT,
                         check=False)
        assert check.returncode == 0, (check.stdout, check.stderr)
        resp = api.delete('/volumes/%s' % vol['id'])
        assert resp.status_code == 202, resp.text
        api.wait_deleted(vol['id'])
    finally:
        api.session.close()
        galera.restart(0)
    assert galera.size() == 3
