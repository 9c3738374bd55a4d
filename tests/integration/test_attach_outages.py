"""The database restarted and then RabbitMQ restarted while 8 clients
cycle attachments (issue 48): create with a connector (a real NBD
export on node ma), os-complete, delete, each client on a volume of its
own.  The cluster runs on a MariaDB server and a RabbitMQ node of its
own (tests/harness/servers.py), which the test stops and starts.

* no answer is a 5xx but a 503 of the documented kinds: the database
  unavailable (retry later), or no answer from the volume service / the
  bus not taking the call, naming the attachment left and what to do;
* no attachment is lost (a client's attachment vanishing before it
  deleted it: os-complete answering 404) or duplicated (an attachment
  the database holds that no client was told of), and every client
  carries on once the servers are back;
* afterwards nothing is in transition, every volume is ``available``,
  no nbdkit export is left and ``quota check`` is clean.
"""
import re
import threading
import time
import uuid

import requests

from tests.harness import cluster as cluster_mod
from tests.harness import stack
from tests.harness import util

CLUSTER_KINDS = ['mysql']
PRIVATE_SERVERS = ('database', 'broker')
CLIENTS = 8
V354 = {'OpenStack-API-Version': 'volume 3.54'}
_PORT = int(util.free_range(60).partition('-')[0])
CLUSTER_OPTIONS = {
    # reconcile_after above the longest an API call waits (5 + 10 s)
    'extra_default': {'reconcile_after': 20, 'reconcile_interval': 2,
                      'volume_rpc_timeout': 5},
    'node_options': {'ma': {'target_protocol': 'nbd',
                            'target_ip_address': '127.0.0.1',
                            'target_port_range': '%d-%d' % (
                                _PORT, _PORT + 59)}}}
# the 503s a client may get, and what they mean
DOCUMENTED_503 = (
    'The database is unavailable; retry later.',
    'no answer to ',                 # the volume service did not answer
    'the message bus did not take',  # the bus refused the call
    'no volume service',             # heartbeats not in yet after a restart
    'is down: its heartbeat is older',  # ... or late after the database
    'the database is unavailable; attachment',  # the connect's record
    # the volume service answered that its database is away
    'its database is unavailable; retry later',
)
LEFT = re.compile(r'attachment ([0-9a-f-]{36}) (is left|was settled)')
SETTLE = 120


class Cycler(threading.Thread):

    def __init__(self, cluster, n, volume_id, stop):
        super().__init__(daemon=True, name='cycler-%d' % n)
        self.api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
        self.volume_id = volume_id
        self.stop = stop
        self.connector = {'host': 'outage-%d' % n,
                          'ip': '127.0.0.%d' % (20 + n),
                          'initiator': 'iqn.2026-12.org.example:o-%d' % n,
                          'platform': 'x86_64', 'os_type': 'linux',
                          'multipath': False}
        # (status or exception, message) of every answer not 2xx
        self.failures = []
        self.known = set()        # attachments this client was told of
        self.deleted = set()      # ... and deleted (answered 200)
        self.lost = []
        # attachments a failed create left that its answer did not name;
        # instances one create made two attachments for
        self.unnamed = 0
        self.duplicated = []
        self.cycles = 0

    def request(self, method, path, **kw):
        try:
            resp = self.api.request(method, path, headers=V354, **kw)
        except requests.RequestException as e:
            self.failures.append(('exception', str(e)))
            return None
        if resp.status_code >= 300:
            try:
                body = resp.json()
                message = next(iter(body.values()))['message']
            except (ValueError, StopIteration, KeyError, TypeError,
                    AttributeError):
                message = resp.text
            self.failures.append((resp.status_code, message))
            for found in LEFT.finditer(message):
                self.known.add(found.group(1))
        return resp

    def delete(self, attachment_id):
        """Until the delete is answered 200 (or 404 after a try whose
        answer was lost)."""
        tried = False
        while True:
            resp = self.request('DELETE', '/attachments/%s' % attachment_id)
            if resp is not None and resp.status_code == 200:
                self.deleted.add(attachment_id)
                return
            if resp is not None and resp.status_code == 404:
                if not tried:
                    self.lost.append((attachment_id, 'delete: 404'))
                self.deleted.add(attachment_id)
                return
            if resp is not None and resp.status_code < 500 and \
                    resp.status_code not in (400, 409):
                self.lost.append((attachment_id, resp.text))
                return
            # (a try not answered, or one under way, may have deleted it)
            tried = tried or resp is None or resp.status_code in (409, 503)
            time.sleep(0.2)

    def made_for(self, instance):
        """The attachments of this client's volume for ``instance`` (what
        a caller whose create was not answered looks for)."""
        while True:
            resp = self.request('GET', '/attachments?volume_id=%s&'
                                'instance_id=%s' % (self.volume_id,
                                                    instance))
            if resp is not None and resp.status_code == 200:
                return [a['id'] for a in resp.json()['attachments']]
            time.sleep(0.2)

    def run(self):
        while not self.stop.is_set():
            instance = str(uuid.uuid4())
            resp = self.request('POST', '/attachments', json={
                'attachment': {'volume_uuid': self.volume_id,
                               'instance_uuid': instance,
                               'connector': dict(self.connector)}})
            if resp is None or resp.status_code != 200:
                # what the failed create left: named in the answer, or
                # found by the instance's id
                made = self.made_for(instance)
                if len(made) > 1:
                    self.duplicated.append((instance, made))
                unnamed = set(made) - self.known
                self.unnamed += len(unnamed)
                self.known |= set(made)
                for aid in self.known - self.deleted:
                    self.delete(aid)
                time.sleep(0.2)
                continue
            aid = resp.json()['attachment']['id']
            self.known.add(aid)
            while True:
                done = self.request('POST', '/attachments/%s/action' % aid,
                                    json={'os-complete': None})
                if done is not None and done.status_code == 404:
                    self.lost.append((aid, 'os-complete: 404'))
                    break
                if done is not None and done.status_code in (204, 400):
                    break
                time.sleep(0.2)
            self.delete(aid)
            self.cycles += 1


def test_attach_cycles_ride_out_database_and_broker_restarts(cluster):
    api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    vtype = api.create_type('outage-ma', {'volume_backend_name': 'ma'})
    volumes = [api.create_volume(volume_type=vtype['name'])['id']
               for _ in range(CLIENTS)]
    stop = threading.Event()
    cyclers = [Cycler(cluster, n, vid, stop)
               for n, vid in enumerate(volumes)]
    for c in cyclers:
        c.start()

    def progress(what):
        atts = api.get('/attachments/detail?all_tenants=1',
                       headers=V354).json()['attachments']
        return '%s: %r; attachments %r' % (what, [
            (c.cycles, c.failures[-2:]) for c in cyclers], [
            (a['id'], a['volume_id'], a['status'], a.get('status_reason'))
            for a in atts])

    def until_cycled(n_more, what):
        mark = {id(c): c.cycles for c in cyclers}

        try:
            util.wait_for(lambda: all(c.cycles >= mark[id(c)] + n_more
                                      for c in cyclers), SETTLE,
                          interval=0.2, what=what)
        except AssertionError:
            raise AssertionError(progress(what))
    try:
        def cycled(n):
            return lambda: all(c.cycles >= n for c in cyclers)
        util.wait_for(cycled(2), 120, interval=0.2,
                      what='every client attaching')
        # the database away for 4 s
        cluster.db_server.stop()
        time.sleep(4)
        cluster.db_server.start()
        until_cycled(2, 'every client cycling after the database')
        # the broker away for 6 s
        cluster.broker.stop_app()
        time.sleep(6)
        cluster.broker.start_app()
        until_cycled(2, 'every client cycling after the broker')
    finally:
        stop.set()
        for c in cyclers:
            c.join(SETTLE)
    assert not any(c.is_alive() for c in cyclers), 'a client is stuck'

    failures = [f for c in cyclers for f in c.failures]
    # (an exception is a request the API did not answer within the
    # client's 30 s)
    bad = [f for f in failures if f[0] == 'exception' or (
        f[0] != 503 and f[0] >= 500)]
    assert bad == [], bad
    undocumented = [f for f in failures if f[0] == 503 and not any(
        d in f[1] for d in DOCUMENTED_503)]
    assert undocumented == [], undocumented
    print('503s: %r' % sorted({f[1][:70] for f in failures
                               if f[0] == 503}))
    print('other failures: %r' % sorted({
        (f[0], f[1][:70]) for f in failures if f[0] != 503}))
    assert [c.lost for c in cyclers if c.lost] == []
    assert [c.duplicated for c in cyclers if c.duplicated] == []
    print('attachments left by a failed create, unnamed by its answer: '
          '%d; cycles: %d' % (sum(c.unnamed for c in cyclers),
                              sum(c.cycles for c in cyclers)))

    # nothing left: no attachment the database holds, none in transition
    known = set().union(*(c.known for c in cyclers))

    def quiet():
        atts = api.get('/attachments/detail?all_tenants=1',
                       headers=V354).json()['attachments']
        return atts == [] and all(
            api.get('/volumes/%s' % v).json()['volume']['status'] ==
            'available' for v in volumes)
    try:
        util.wait_for(quiet, SETTLE, interval=0.5, what='nothing left')
    except AssertionError:
        atts = api.get('/attachments/detail?all_tenants=1',
                       headers=V354).json()['attachments']
        raise AssertionError('left: %r (unknown to the clients: %r)' % (
            [(a['id'], a['status']) for a in atts],
            [a['id'] for a in atts if a['id'] not in known]))
    util.wait_for(lambda: not util.processes('nbdkit', cluster.workdir),
                  SETTLE, interval=0.5, what='no nbdkit left')
    check = cluster.manage('quota', 'check', check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert 'equals what the volumes say' in check.stdout
    for vid in volumes:
        assert api.delete('/volumes/%s' % vid).status_code == 202
    for vid in volumes:
        api.wait_deleted(vid)
