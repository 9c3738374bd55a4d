"""The bus as clouds run it: three RabbitMQ nodes of one cluster, the
RPC servers' queues quorum queues (``[oslo_messaging_rabbit]
rabbit_quorum_queue``), every service given all three nodes in its
``transport_url``.

The node leading the quorum queue of the volume service that owns the
volume is killed (SIGKILL, as a machine dies) while eight clients run
whole attach cycles of one multiattach volume, and started again: every
request answers 2xx or a 503 with a reason, the services fail over to
the other nodes by themselves, no attachment is lost or left half made,
and the quota usage stays true.
"""
import threading
import time
import uuid

from cinder_lite.volume import rpcapi as volume_rpcapi
from tests.harness import attach
from tests.harness import cluster as cluster_mod
from tests.harness import stack
from tests.harness import util

CLUSTER_KINDS = ['mysql']
PRIVATE_SERVERS = ('broker-cluster',)
CLUSTER_OPTIONS = {
    # RPC calls give up well before the clients do; a heartbeat late
    # while the bus fails over must not make a backend look down
    'service_down_time': 60,
    'extra_default': {'volume_rpc_timeout': 20,
                      'reconcile_after': 5, 'reconcile_interval': 2}}
CLIENTS = 8
SUCCESS = {'create': 200, 'complete': 204, 'delete': 200, 'left': 200}


class Cycles:
    """``CLIENTS`` threads, each attaching the volume from a host of its
    own, completing and detaching, until stopped.  ``log``: (client,
    step, status, body head, attachment id, started, ended)."""

    def __init__(self, url, volume_id):
        self.url, self.volume_id = url, volume_id
        self.log = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,),
                                         daemon=True)
                        for i in range(CLIENTS)]

    def record(self, *entry):
        with self.lock:
            self.log.append(entry)

    def call(self, client, i, step, method, path, body=None, aid=None):
        started = time.monotonic()
        try:
            resp = client.request(method, path, json=body)
            status, text = resp.status_code, resp.text[:300]
            answer = resp.json() if resp.content else {}
        except Exception as e:   # the client's own timeout
            status, text, answer = None, repr(e), {}
        if step == 'create' and status == 200:
            aid = answer['attachment']['id']
        self.record(i, step, status, text, aid, started, time.monotonic())
        return status == SUCCESS[step], aid, status

    def run(self, i):
        client = stack.Client(self.url, project=cluster_mod.PROJECT)
        while not self.stop.is_set():
            body = {'attachment': {
                'volume_uuid': self.volume_id,
                'instance_uuid': str(uuid.uuid4()),
                'connector': attach.connector(
                    host='compute-%d' % i, ip='127.0.8.%d' % (i + 2))}}
            ok, aid, _ = self.call(client, i, 'create', 'POST',
                                   '/attachments', body)
            if not ok:
                # what a careful caller does: delete what the failed
                # create left (named in the answer, or found by the
                # instance's id)
                for left in self.made_for(client, body['attachment'][
                        'instance_uuid']):
                    self.record(i, 'left', 200, '', left, time.monotonic(),
                                time.monotonic())
                    self.detach(client, i, left)
                time.sleep(0.2)
                continue
            self.call(client, i, 'complete', 'POST',
                      '/attachments/%s/action' % aid, {'os-complete': None},
                      aid)
            self.detach(client, i, aid)

    def detach(self, client, i, aid):
        """Delete until it is done: an attachment is never left behind
        (one whose delete was answered 503 may be finished meanwhile by
        the volume service or reconciliation: then the next delete
        answers 404)."""
        tried = False
        while True:
            ok, _, status = self.call(client, i, 'delete', 'DELETE',
                                      '/attachments/%s' % aid, aid=aid)
            if ok or (tried and status == 404):
                return
            tried = True
            time.sleep(0.5)

    def made_for(self, client, instance):
        """The attachments of the volume for ``instance``."""
        while True:
            try:
                resp = client.request(
                    'GET', '/attachments?volume_id=%s&instance_id=%s' % (
                        self.volume_id, instance))
            except Exception:   # the client's own timeout
                resp = None
            if resp is not None and resp.status_code == 200:
                return [a['id'] for a in resp.json()['attachments']]
            time.sleep(0.2)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=300)
        assert not any(t.is_alive() for t in self.threads), \
            'attach cycles did not stop'


def _leader_of_volume_queue(broker, volume_host):
    """The node leading the quorum queue the volume's service reads its
    RPC calls from (the backend's topic queue)."""
    backend = volume_host.split('#')[0]
    queues = broker.queues()
    mine = {name: q for name, q in queues.items()
            if name.startswith(volume_rpcapi.TOPIC) and
            name.endswith(backend)}
    assert mine, queues
    for name, (kind, leader) in mine.items():
        assert kind == 'quorum', (name, kind)
    return broker.node_named(sorted(mine.items())[0][1][1])


def test_volume_queue_leader_dies_under_attach_cycles(cluster, api):
    broker = cluster.broker
    assert len(broker.running()) == 3
    kinds = {kind for kind, _ in broker.queues().values()}
    assert 'quorum' in kinds, broker.queues()
    vtype = api.create_type(specs={'multiattach': '<is> True'})
    vol = api.create_volume(size=1, volume_type=vtype['name'])
    leader = _leader_of_volume_queue(broker, vol['os-vol-host-attr:host'])
    dead = broker.nodes.index(leader)
    with Cycles(cluster.url, vol['id']) as cycles:
        time.sleep(3)
        broker.kill(dead)
        down = time.monotonic()
        time.sleep(8)
        # the queue has a leader again, on a node that is alive
        moved = _leader_of_volume_queue(broker, vol['os-vol-host-attr:host'])
        assert moved is not leader
        print('volume queue leader %s killed, %s leads' % (
            leader.node, moved.node))
        broker.restart(dead)
        up = time.monotonic()
        time.sleep(5)
        after = len(cycles.log)
        time.sleep(4)
    log = cycles.log
    print('attach steps: %d, during the outage: %d' % (len(log), sum(
        1 for e in log if e[5] <= up and e[6] >= down)))
    by_status = {}
    for e in log:
        by_status.setdefault((e[1], e[2]), 0)
        by_status[(e[1], e[2])] += 1
    print('answers by step and status: %s' % sorted(
        by_status.items(), key=str))
    # a delete answered 404 after one of the same attachment that was
    # refused: the attachment is gone (detached after that answer)
    refused = set()
    settled = set()
    for e in log:
        if e[1] == 'delete' and e[2] != 200:
            if e[2] == 404 and e[4] in refused:
                settled.add(e[4])
            refused.add(e[4])
    bad = [e for e in log if e[2] != SUCCESS[e[1]] and not (
        e[2] == 503 and 'message' in e[3]) and not (
        e[1] == 'delete' and e[2] == 404 and e[4] in settled)]
    assert not bad, bad
    print('attachments whose refused delete was finished meanwhile '
          '(404 after): %d' % len(settled))
    # the services went on through the other nodes: cycles completed
    # while the node was dead, and after it was back
    assert any(e[1] == 'delete' and e[2] == 200 and down < e[6] < up
               for e in log), by_status
    assert any(e[1] == 'delete' and e[2] == 200 and e[5] > up
               for e in log[after:]), by_status
    # nothing lost, nothing left: every attachment made was detached
    made = {e[4] for e in log if e[1] in ('create', 'left') and
            e[2] == 200}
    print('attachments failed creates left (deleted by their clients): '
          '%d' % sum(1 for e in log if e[1] == 'left'))
    gone = {e[4] for e in log if e[1] == 'delete' and e[2] == 200} | \
        settled
    assert made == gone, (made - gone, gone - made)
    assert api.get('/attachments?volume_id=%s' % vol['id']).json()[
        'attachments'] == []
    util.wait_for(lambda: api.get('/volumes/%s' % vol['id']).json()[
        'volume']['status'] == 'available', 30, what='volume available')
    assert len(broker.running()) == 3
    check = cluster.manage('quota', 'check', '--project',
                           cluster_mod.PROJECT, check=False)
    assert check.returncode == 0, (check.stdout, check.stderr)
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])
