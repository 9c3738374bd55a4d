#!/usr/bin/env python
"""Boot storms: N hosts attach ONE multiattach volume at the same
instant, then all detach at once, next to the floor of the same round
trips at the same concurrency, measured in the same run.

Each host is a thread of this process with a client of its own, the
client a compute node uses:

* ``lite`` and ``cinder``: python-cinderclient (its v3 attachments
  manager, microversion 3.54, a keystoneauth session per host with
  cinderclient's noauth plugin and ``X-Service-Roles: service``, as Nova
  sends), attach = ``attachments.create`` without a connector (reserve),
  ``attachments.update`` with the host's connector, ``attachments.
  complete``; detach = ``attachments.delete``;
* ``lite-bus``: cinder_lite's own bus client (``cinder_lite.connector.
  client.BusTransport``: the API service's RPC topic), the same three
  steps and the delete.

Targets: ``lite`` / ``lite-bus`` on a distributed cinder_lite this
script starts (API with one worker, scheduler, volume nodes ``ma`` and
``noma`` as processes over RabbitMQ with MariaDB, tests/harness/
cluster.py); ``cinder`` on the Cinder 29 of ``tools/cinder-reference``
(started when it is not running, and stopped again at the end; one API
worker, Cinder's fake driver, the same RabbitMQ and MariaDB servers).

Per storm: the wall time from the release of all N hosts until the last
has finished, p50/p99 of each host's own time, the refused reservations,
the hosts that gave up, the errors, and CPU ms per attached (detached)
host of every service process (utime+stime of /proc/<pid>/stat, less
what the process spends idle in as long a time, measured for
``--idle-seconds`` before the storms: heartbeats, capability reports;
``*`` columns are the whole RabbitMQ and database servers, other users
included; "client CPU" is this process's, the hosts' clients).  Cinder reserves
only while the volume is ``available`` or ``in-use`` (400 "... to
reserve"): a refused host tries again after a capped exponential backoff
with full jitter (a random wait up to 20 ms, doubling per refusal, at
most 1 s: the clients' kindest policy to a busy API), its time runs from
its first try, and it gives up ``--host-timeout`` seconds after the
release (Nova itself does not retry: its boot fails at the first
refusal).  cinder_lite must refuse nothing: a refusal there is an error.
After the attach storm the volume must be ``in-use`` with exactly as
many attachments ``attached`` as hosts attached; after the detach storm
(of those hosts) ``available`` with none: anything else is an error.

The floor at N (``--floor-repeats`` runs of each part, the median wall
kept): the parts of the round trips a host makes, each alone as a storm
of N at once, on the same servers: bare ``GET /`` to the deployment's
API on a keep-alive connection per host; a no-op oslo.messaging call
over the deployment's RabbitMQ (the server a subprocess, one client for
all hosts, as the API shares one); the attach's transactions (T1
reserve, T2 connection info, T3 complete) and the detach's (T4) in
SQLAlchemy Core on the same database (bench/attach.py's ``DBFloor``, a
pool of min(N, 16) connections).  A REST attach is 3 HTTP + 1 RPC (the
connect) + T1-T3, a detach 1 HTTP + 1 RPC (the disconnect) + T4; over
the bus an attach is 4 RPC + T1-T3, a detach 2 RPC + T4.  The floor's
wall is the sum of its parts' walls (and its p50 the sum of theirs); its
CPU per attach is what the serving side and the client spend on those
round trips (the API for the HTTP requests, both ends of the calls, the
client of the transactions), as bench/attach.py composes it.

    tools/cinder-reference setup     # once (a few minutes: the venv)
    .venv/bin/python bench/storm.py                    # N = 10,50,100
    .venv/bin/python bench/storm.py --hosts 3 --targets lite,lite-bus \\
        --takeover --json out.json   # what tests/integration runs

``--takeover`` adds, after each of cinder_lite's storms, a writer
takeover at the instant of an attach storm, on a second volume of a
single-writer type (multiattach, ``mode = RO``): host W attaches it
read-write and host S read-only, S takes over once with nothing else
running (the "quiet" time of its ``os-takeover`` request), W attaches
again read-only, and W's takeover back is released together with N
hosts attaching read-only.  Then the volume must be in-use with the N
readers read-only, W read-write, and S's attachment ended by the
takeover (anything else is an error); all are deleted, untimed.  Cinder
has no takeover: not run there.

``--rounds R`` repeats each target's storms R times after one floor;
``--hold S`` pauses S seconds before the first storm of each target at
N = ``--hold-at`` and prints the service pids (to attach a profiler:
``--rounds 10 --hold 5`` and py-spy for the length of the rounds).
Exit status 1 when a storm had an error (Cinder's refusals and the
hosts it made give up are not errors).
"""
import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
import uuid
import warnings

warnings.filterwarnings('ignore', message='.*[Ee]ventlet is deprecated.*')

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import attach  # noqa: E402
from bench import cinder_reference  # noqa: E402
from bench import volume_create as vc  # noqa: E402

TARGETS = ('lite', 'lite-bus', 'cinder')
TYPE_NAME = 'storm-multiattach'
# a single-writer volume: one attachment read-write, the others read-only
SINGLE_TYPE_NAME = 'storm-single-writer'
VOLUME_NAME = 'storm'
MICROVERSION = '3.54'
REFUSED = 'to reserve'            # Cinder's refusal while reserving
HOST_TIMEOUT = 120.0
BACKOFF_FIRST, BACKOFF_MAX = 0.02, 1.0
# round trips of a host per phase: (HTTP requests, RPC calls)
TRIPS = {('rest', 'attach'): (3, 1), ('rest', 'detach'): (1, 1),
         ('bus', 'attach'): (0, 4), ('bus', 'detach'): (0, 2)}
CLIENT = 'bench'             # this process: the hosts' clients
IDLE_SECONDS = 3.0


def announce(msg):
    attach.announce('storm', msg)


def connector_for(index):
    return {'host': 'storm-%d' % index, 'ip': '127.0.0.1',
            'initiator': 'iqn.2026-12.org.example:storm-%d' % index,
            'platform': 'x86_64', 'os_type': 'linux', 'multipath': False}


# -- hosts -----------------------------------------------------------------

class GaveUp(Exception):
    """Refused until the storm's deadline."""


class RestHost:
    """A compute host with python-cinderclient; ``refusals``: whether a
    refused reservation is tried again (Cinder's documented behaviour)
    or an error (cinder_lite)."""

    def __init__(self, url, project, index, refusals=False):
        from cinderclient import client
        from cinderclient.contrib import noauth
        from keystoneauth1 import session
        auth = noauth.CinderNoAuthPlugin(user_id='admin',
                                         project_id=project,
                                         endpoint=url + '/v3')
        sess = session.Session(auth=auth, additional_headers={
            'X-Service-Roles': 'service'})
        self.session = sess
        self.cs = client.Client(MICROVERSION, session=sess)
        self.connector = connector_for(index)
        self.instance = str(uuid.uuid4())
        self.refused = 0
        self.refusals = refusals
        self.deadline = None

    def warm(self, volume_id):
        self.cs.attachments.list(search_opts={'volume_id': volume_id})

    def attach(self, volume_id, mode='rw'):
        from cinderclient import exceptions
        while True:
            try:
                att = self.cs.attachments.create(volume_id, None,
                                                 instance_id=self.instance,
                                                 mode=mode)
                break
            except exceptions.BadRequest as e:
                if not self.refusals or REFUSED not in str(e):
                    raise
                wait = random.uniform(0, min(
                    BACKOFF_MAX, BACKOFF_FIRST * 2 ** self.refused))
                self.refused += 1
                if time.monotonic() + wait > self.deadline:
                    raise GaveUp('refused %d times' % self.refused)
                time.sleep(wait)
        self.cs.attachments.update(att['id'], self.connector)
        self.cs.attachments.complete(att['id'])
        return att['id']

    def detach(self, attachment_id):
        self.cs.attachments.delete(attachment_id)

    def takeover(self, attachment_id):
        # (python-cinderclient has no os-takeover: the same session)
        resp = self.session.post(
            '/attachments/%s/action' % attachment_id,
            json={'os-takeover': {}}, endpoint_filter={
                'service_type': 'volumev3', 'interface': 'public'},
            headers={'OpenStack-API-Version': 'volume %s' % MICROVERSION},
            raise_exc=False)
        if resp.status_code != 200:
            raise RuntimeError('os-takeover -> %s %s' % (
                resp.status_code, resp.text[:300]))
        return resp.json()['attachment']

    def close(self):
        self.session.session.close()      # its keep-alive connections


class BusHost:
    """A compute host with cinder_lite's bus client."""

    def __init__(self, project, index):
        from cinder_lite.connector import client
        self.bus = client.BusTransport(project)
        self.connector = connector_for(index)
        self.instance = str(uuid.uuid4())
        self.refused = 0
        self.deadline = None

    def warm(self, volume_id):
        pass

    def attach(self, volume_id, mode='rw'):
        att = self.bus.create(volume_id, self.instance, None, mode)
        self.bus.update(att['id'], self.connector)
        done = self.bus.complete(att['id'])
        if done['status'] != 'attached':
            raise RuntimeError('complete: attachment %s is %s'
                               % (att['id'], done['status']))
        return att['id']

    def detach(self, attachment_id):
        self.bus.delete(attachment_id)

    def takeover(self, attachment_id):
        return self.bus.takeover(attachment_id)

    def close(self):
        pass                 # the process's transport, closed at the end


# -- storms ----------------------------------------------------------------

def storm(n, op, sampler=None, timeout=HOST_TIMEOUT):
    """``op(i)`` in N threads released at once: {wall, lat, errors,
    gave_up, results, cpu}.  The wall runs from the first thread's start
    to the last successful one's end."""
    barrier = threading.Barrier(n + 1)
    starts, ends = [None] * n, [None] * n
    results, errors, gave_up = [None] * n, [], []

    def go(i):
        barrier.wait()
        starts[i] = time.perf_counter()
        try:
            results[i] = op(i)
        except GaveUp as e:
            gave_up.append('host %d: %s' % (i, e))
        except Exception as e:
            errors.append('host %d: %s' % (i, str(e)[:300] or repr(e)))
        ends[i] = time.perf_counter()

    threads = [threading.Thread(target=go, args=(i,), daemon=True)
               for i in range(n)]
    for t in threads:
        t.start()
    before = sampler.snapshot() if sampler else None
    t0 = time.perf_counter()
    barrier.wait()
    deadline = time.monotonic() + timeout + 60
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in threads):
        errors.append('%d hosts did not finish within %g s'
                      % (sum(t.is_alive() for t in threads), timeout + 60))
    cpu = sampler.delta(before, sampler.snapshot()) if sampler else {}
    window = time.perf_counter() - t0
    ok = [i for i in range(n) if results[i] is not None and
          ends[i] is not None]
    wall = (max(ends[i] for i in ok) - min(s for s in starts if s)) \
        if ok else float('nan')
    return {'wall': wall, 'errors': errors, 'gave_up': gave_up,
            'results': results, 'cpu': cpu, 'done': len(ok),
            'window': window,
            'lat': [ends[i] - starts[i] for i in ok]}


def volume_and_attachments(target, volume_id, detail=False):
    """(The volume, its attachments) as the target shows them."""
    conn = target.http()
    try:
        vol = target.call(conn, 'GET', '/volumes/' + volume_id)['volume']
        atts = target.call(conn, 'GET', '/attachments%s?volume_id=%s' % (
            '/detail' if detail else '', volume_id))['attachments']
    finally:
        conn.close()
    return vol, atts


def check_volume(target, volume_id, n_attached):
    """Errors (strings) if the volume is not in the state a finished
    storm leaves: in-use with N attached attachments, or available with
    none."""
    vol, atts = volume_and_attachments(target, volume_id)
    errors = []
    want = 'in-use' if n_attached else 'available'
    if vol['status'] != want:
        errors.append('volume %s is %s, not %s'
                      % (volume_id, vol['status'], want))
    live = [a for a in atts if a['status'] != 'detached']
    if len(live) != n_attached or any(a['status'] != 'attached'
                                      for a in live):
        errors.append('%d attachments (%s), not %d attached' % (
            len(live), ','.join(sorted({a['status'] for a in live})),
            n_attached))
    return errors, [a['id'] for a in live]


class Target:
    """An endpoint in the v3 dialect: where, its client kind, its service
    processes."""

    def __init__(self, name, url, project, groups, kind, refusals=False):
        self.name, self.url, self.project = name, url, project
        self.groups, self.kind = groups, kind
        self.refusals = refusals      # a refused reservation is tried again
        self.volume_name = '%s-%s' % (VOLUME_NAME, name)
        self.idle = {}
        self.headers = {'X-Auth-Token': 'admin:%s' % project,
                        'OpenStack-API-Version': 'volume %s' % MICROVERSION,
                        'Accept': 'application/json',
                        'X-Service-Roles': 'service'}
        self.volume = self.single_volume = None

    def measure_idle(self, seconds):
        """CPU seconds per second each process spends with nothing to do
        (heartbeats, capability reports, periodic tasks), taken off the
        storms' CPU."""
        sampler = attach.Sampler(self.groups)
        before = sampler.snapshot()
        t0 = time.perf_counter()
        time.sleep(seconds)
        delta = sampler.delta(before, sampler.snapshot())
        elapsed = time.perf_counter() - t0
        self.idle = {g: v / elapsed for g, v in delta.items()}

    def http(self):
        return attach.http_for(self.url, self.headers)

    def call(self, conn, method, path, body=None, ok=(200, 202)):
        status, payload = conn.request(method, '/v3/%s%s' % (self.project,
                                                             path), body)
        if status not in ok:
            raise RuntimeError('%s: %s %s -> %s %s' % (
                self.name, method, path, status, payload[:300]))
        return json.loads(payload) if payload else None

    def prepare(self, single_writer=False):
        """One multiattach volume, available (the storm volumes an
        interrupted run left are detached and deleted first), and with
        ``single_writer`` a second one of a single-writer type
        (``single_volume``)."""
        conn = self.http()
        try:
            self.forget_old(conn)
        finally:
            conn.close()
        self.volume = self.make_volume(TYPE_NAME, {
            'multiattach': '<is> True'})
        if single_writer:
            self.single_volume = self.make_volume(SINGLE_TYPE_NAME, {
                'multiattach': '<is> True', 'mode': 'RO'})

    def make_volume(self, type_name, extra_specs):
        conn = self.http()
        try:
            types = self.call(conn, 'GET', '/types?is_public=None')
            vtype = next((t for t in types['volume_types']
                          if t['name'] == type_name), None)
            if vtype is None:
                vtype = self.call(conn, 'POST', '/types', {'volume_type': {
                    'name': type_name,
                    'extra_specs': extra_specs}})['volume_type']
            vol = self.call(conn, 'POST', '/volumes', {'volume': {
                'size': 1, 'name': self.volume_name,
                'volume_type': vtype['id']}})['volume']
            deadline = time.monotonic() + 60
            while True:
                status = self.call(conn, 'GET', '/volumes/' + vol['id'])[
                    'volume']['status']
                if status == 'available':
                    break
                if status.startswith('error') or \
                        time.monotonic() > deadline:
                    raise RuntimeError('%s: volume %s is %s'
                                       % (self.name, vol['id'], status))
                time.sleep(0.05)
        finally:
            conn.close()
        return vol['id']

    def forget_old(self, conn):
        old = self.call(conn, 'GET', '/volumes?name=%s' % self.volume_name)
        for vol in old['volumes']:
            self.detach_all(conn, vol['id'])
            self.call(conn, 'DELETE', '/volumes/' + vol['id'],
                      ok=(202, 404))

    def detach_all(self, conn, volume_id):
        atts = self.call(conn, 'GET', '/attachments?volume_id=%s'
                         % volume_id)['attachments']
        for att in atts:
            self.call(conn, 'DELETE', '/attachments/' + att['id'],
                      ok=(200, 404))

    def hosts(self, n):
        if self.kind == 'bus':
            return [BusHost(self.project, i) for i in range(n)]
        return [RestHost(self.url, self.project, i, self.refusals)
                for i in range(n)]

    def cleanup(self):
        conn = self.http()
        try:
            for volume in (self.volume, self.single_volume):
                if volume is not None:
                    self.detach_all(conn, volume)
                    self.call(conn, 'DELETE', '/volumes/' + volume,
                              ok=(202, 404))
        finally:
            conn.close()


def run_target(target, n, timeout):
    """The attach storm of N hosts, then the detach storm of those that
    attached."""
    hosts = target.hosts(n)
    for h in hosts:                  # connections open before the clock
        h.warm(target.volume)
    sampler = attach.Sampler(target.groups)
    out = {'target': target.name, 'hosts': n}
    deadline = time.monotonic() + timeout
    for h in hosts:
        h.deadline = deadline
    a = storm(n, lambda i: hosts[i].attach(target.volume), sampler,
              timeout)
    a['refused'] = sum(h.refused for h in hosts)
    attached = [(i, r) for i, r in enumerate(a['results']) if r is not None]
    errors, live = check_volume(target, target.volume, len(attached))
    a['errors'] += errors
    out['attach'] = a
    if errors or a['errors']:
        # detach what was made, but do not time it
        conn = target.http()
        target.detach_all(conn, target.volume)
        conn.close()
        out['detach'] = {'wall': float('nan'), 'lat': [], 'cpu': {},
                         'errors': ['not run after the errors above'],
                         'refused': 0, 'gave_up': [], 'done': 0}
    else:
        d = storm(len(attached), lambda j: hosts[attached[j][0]].detach(
            attached[j][1]) or True, sampler, timeout)
        d['refused'] = 0
        d['errors'] += check_volume(target, target.volume, 0)[0]
        out['detach'] = d
    for key in ('attach', 'detach'):
        out[key].pop('results', None)
        out[key]['idle'] = target.idle
    for h in hosts:
        h.close()
    return out


def run_takeover(target, n, timeout):
    """A writer takeover at the instant N hosts attach the single-writer
    volume read-only.  Host ``writer`` attaches it read-write and
    ``standby`` read-only; the standby takes over once with nothing else
    running (``quiet``: the request's time); the old writer attaches
    again read-only and takes the writer's role back as the N+1st
    thread of an attach storm of N read-only hosts (``storm``).  Then
    the volume must be in-use with the N readers attached read-only and
    the writer read-write, and the standby's attachment ended by the
    takeover; everything is deleted afterwards, untimed."""
    volume = target.single_volume
    hosts = target.hosts(n + 2)
    readers, writer, standby = hosts[:n], hosts[n], hosts[n + 1]
    deadline = time.monotonic() + timeout
    for h in hosts:
        h.warm(volume)
        h.deadline = deadline
    out = {'target': target.name, 'hosts': n, 'errors': [],
           'quiet': float('nan'), 'storm': float('nan'),
           'wall': float('nan'), 'done': 0}
    try:
        writer.attach(volume, 'rw')
        taken = standby.attach(volume, 'ro')
        t0 = time.perf_counter()
        standby.takeover(taken)
        out['quiet'] = time.perf_counter() - t0
        back = writer.attach(volume, 'ro')
        took = []

        def op(i):
            if i < n:
                return readers[i].attach(volume, 'ro')
            t0 = time.perf_counter()
            writer.takeover(back)
            took.append(time.perf_counter() - t0)
            return back
        res = storm(n + 1, op, None, timeout)
        out['errors'] += res['errors'] + res['gave_up']
        out['wall'] = res['wall']
        out['done'] = sum(1 for r in res['results'][:n] if r is not None)
        if took:
            out['storm'] = took[0]
        out['errors'] += check_single_writer(
            target, volume, set(r for r in res['results'][:n] if r),
            back, taken)
    except Exception as e:
        out['errors'].append('%s: %s' % (type(e).__name__, str(e)[:300]))
    finally:
        conn = target.http()
        try:
            target.detach_all(conn, volume)
        finally:
            conn.close()
        for h in hosts:
            h.close()
    return out


def check_single_writer(target, volume_id, readers, writer, taken):
    """Errors (strings) unless the volume is in-use with ``readers``
    attached read-only, ``writer`` read-write, and nothing else live
    (``taken``, the attachment the writer took over from, ended)."""
    vol, atts = volume_and_attachments(target, volume_id, detail=True)
    errors = []
    if vol['status'] != 'in-use':
        errors.append('volume %s is %s, not in-use' % (volume_id,
                                                       vol['status']))
    live = {a['id']: a for a in atts if a['status'] != 'detached'}
    want = dict.fromkeys(readers, 'ro')
    want[writer] = 'rw'
    got = {i: a['attach_mode'] for i, a in live.items()
           if a['status'] == 'attached'}
    if got != want:
        errors.append('live attachments %s, not %s' % (
            sorted((i[:8], m, live[i]['status']) for i, m in got.items()),
            '%d ro + 1 rw' % len(readers)))
    if taken in live:
        errors.append('the attachment taken over (%s) is %s'
                      % (taken, live[taken]['status']))
    return errors


# -- the floor -------------------------------------------------------------

def median_of(runs):
    """The run of the median wall, with every run's errors and the mean
    CPU of the runs (a clock tick is 10 ms: one run of a few hosts would
    read as 0 or 10)."""
    best = dict(sorted(runs, key=lambda r: r['wall'])[len(runs) // 2])
    best['errors'] = [e for r in runs for e in r['errors']]
    best['cpu'] = {g: sum(r['cpu'].get(g, 0.0) for r in runs) / len(runs)
                   for g in runs[0]['cpu']}
    best.pop('results', None)
    return best


def median_storm(repeats, n, make_op, sampler):
    return median_of([storm(n, make_op(), sampler)
                      for _ in range(repeats)])


def measure_floor(deployment, n, repeats):
    """{part: storm result} of the floor's parts at N: http1, http3,
    rpc1, rpc2, rpc4, db-attach, db-detach."""
    cluster = deployment.cluster
    groups = {'api': attach.with_children(cluster.processes['api'].pid),
              'bench': lambda: [os.getpid()]}
    parts = {}
    sampler = attach.Sampler(groups)
    for k in (1, 3):
        def make_http(k=k):
            conns = [attach.http_for(deployment.url) for _ in range(n)]
            for c in conns:
                c.request('GET', '/')

            def op(i):
                for _ in range(k):
                    status, body = conns[i].request('GET', '/')
                    if status not in (200, 300):
                        raise RuntimeError('GET / -> %s' % status)
                return True
            return op
        parts['http%d' % k] = median_storm(repeats, n, make_http, sampler)
        parts['http%d' % k]['server'] = ('api',)
    # the bus client's exchange is the cluster's (bus_conf)
    rpcf = attach.RPCFloor(cluster.transport_url, False,
                           cluster.control_exchange).start()
    try:
        rgroups = dict(groups, **{'rpc-server': rpcf.pids})
        rsampler = attach.Sampler(rgroups)
        ops = [rpcf.factory(i) for i in range(n)]
        for op in ops:               # the reply queue and pools warm
            op()
        for k in (1, 2, 4):
            def make_rpc(k=k):
                def op(i):
                    for _ in range(k):
                        ops[i]()
                    return True
                return op
            parts['rpc%d' % k] = median_storm(repeats, n, make_rpc,
                                              rsampler)
            parts['rpc%d' % k]['server'] = ('rpc-server', 'bench')
    finally:
        rpcf.stop()
    dbf = attach.DBFloor(cluster.db_url, min(n, 16))
    try:
        steps = dbf.steps('one')
        pairs = [steps(i) for i in range(n)]
        for at, de in pairs:         # every connection of the pool
            de(at())
        for _ in range(repeats):
            made = [None] * n
            got = storm(n, lambda i: made.__setitem__(
                i, pairs[i][0]()) or True, sampler)
            gone = storm(n, lambda i: pairs[i][1](made[i]) or True,
                         sampler)
            parts.setdefault('db-attach', []).append(got)
            parts.setdefault('db-detach', []).append(gone)
        for key in ('db-attach', 'db-detach'):
            parts[key] = median_of(parts[key])
            parts[key]['server'] = ('bench',)
    finally:
        dbf.stop()
    return parts


def composed(parts, kind, phase, n):
    """(wall s, p50 s, CPU ms per host) of the floor of a phase."""
    n_http, n_rpc = TRIPS[(kind, phase)]
    use = ['db-' + phase]
    if n_http:
        use.append('http%d' % n_http)
    if n_rpc:
        use.append('rpc%d' % n_rpc)
    wall = sum(parts[p]['wall'] for p in use)
    p50 = sum(attach.pct(parts[p]['lat'], 50) for p in use)
    cpu = sum(1000.0 * sum(parts[p]['cpu'].get(g, 0.0)
                           for g in parts[p]['server']) / n for p in use)
    return wall, p50, cpu


# -- report ----------------------------------------------------------------

def services_cpu(result):
    """CPU ms per host of each process, less what it spends idle in as
    long a time."""
    n = max(1, result['done'])
    idle = result.get('idle', {})
    return {g: 1000.0 * (v - idle.get(g, 0.0) * result.get('window', 0.0))
            / n for g, v in result['cpu'].items()}


def versus(mine, cinder, timeout):
    """Cinder's wall over this one's; '>' when Cinder gave up on some
    hosts (its wall is then at least the deadline)."""
    if not (mine and mine['wall'] == mine['wall'] and mine['done']):
        return '-'
    if cinder['done'] < mine['done'] and not cinder['gave_up']:
        return '-'           # a detach of the fewer hosts Cinder attached
    if cinder['gave_up']:
        return '>%.0fx' % (timeout / mine['wall'])
    if cinder['wall'] != cinder['wall']:
        return '-'
    return '%.1fx' % (cinder['wall'] / mine['wall'])


def report(runs, floors, timeout):
    pct, ms = attach.pct, attach.ms
    print()
    print('machine: %d CPUs, load average %s' % (
        os.cpu_count(), ' '.join('%.2f' % x for x in os.getloadavg())))
    print('storm = N hosts at once on ONE multiattach volume; attach = '
          'reserve, update (connector), complete; detach = delete (of the '
          'hosts attached); wall s, p50/p99 ms of a host; CPU ms per host '
          'of each process (* whole server); floor = the same round '
          'trips, each part a storm of N alone (HTTP, RPC, transactions)')
    for phase in ('attach', 'detach'):
        rows = []
        for r in runs:
            n = r['hosts']
            res = r[phase]
            kind = 'bus' if r['target'] == 'lite-bus' else 'rest'
            fwall, fp50, fcpu = composed(floors[n], kind, phase, n) \
                if n in floors else (float('nan'),) * 3
            cpu = services_cpu(res)
            client = cpu.pop(CLIENT, float('nan'))
            svc = sum(v for g, v in cpu.items() if not g.endswith('*'))
            cinder = next((c[phase] for c in runs if c['target'] ==
                           'cinder' and c['hosts'] == n and
                           c['round'] == r['round']), None)
            vs = versus(res, cinder, timeout) \
                if cinder and r['target'] != 'cinder' else '-'
            rows.append((
                r['target'], n, r['round'], '%d/%d' % (res['done'], n),
                '%.3f' % res['wall'], '%.3f' % fwall,
                '%.1fx' % (res['wall'] / fwall) if fwall else '-',
                ms(pct(res['lat'], 50)), ms(pct(res['lat'], 99)),
                ms(fp50), res['refused'], len(res['gave_up']),
                len(res['errors']),
                ' '.join('%s %.1f' % kv for kv in cpu.items()),
                '%.1f' % svc, '%.1f' % fcpu,
                '%.1fx' % (svc / fcpu) if fcpu else '-', '%.1f' % client,
                vs))
        print()
        print(phase)
        vc.print_table(('target', 'N', 'round', 'done', 'wall s',
                        'floor s',
                        'x floor', 'p50', 'p99', 'floor p50', 'refused',
                        'gave up', 'errors', 'CPU ms/host by process',
                        'services', 'floor CPU', 'x floor CPU',
                        'client CPU', 'Cinder/this'), rows)
    report_takeovers(runs)


def report_takeovers(runs):
    rows = []
    for r in runs:
        t = r.get('takeover')
        if t is None:
            continue
        plain = r['attach']['wall']
        rows.append((r['target'], r['hosts'], r['round'],
                     '%d/%d' % (t['done'], r['hosts']), '%.3f' % t['wall'],
                     '%.3f' % plain, attach.ms(t['quiet']),
                     attach.ms(t['storm']),
                     '%.1fx' % (t['storm'] / t['quiet'])
                     if t['quiet'] == t['quiet'] and t['quiet'] else '-',
                     len(t['errors'])))
    if not rows:
        return
    print()
    print('takeover during the attach storm (single-writer volume: N hosts '
          'attach read-only while one takes the writer\'s role; wall s; '
          'takeover = the os-takeover request, ms, quiet = alone before '
          'the storm; plain storm = the attach storm above, same N and '
          'round)')
    vc.print_table(('target', 'N', 'round', 'readers', 'wall s',
                    'plain storm s', 'takeover quiet', 'in storm',
                    'x quiet', 'errors'), rows)


def to_json(runs, floors):
    def clean(res):
        return {k: v for k, v in res.items() if k != 'results'}
    return {'runs': [dict({'target': r['target'], 'hosts': r['hosts'],
                           'round': r['round'],
                           'attach': clean(r['attach']),
                           'detach': clean(r['detach'])},
                          **({'takeover': r['takeover']}
                             if 'takeover' in r else {}))
                     for r in runs],
            'floors': {str(n): {p: clean(v) for p, v in parts.items()}
                       for n, parts in floors.items()}}


# -- main ------------------------------------------------------------------

def bus_conf(cluster, max_hosts):
    """This process on the cluster's bus (the bus client's transport and
    exchange)."""
    from cinder_lite.cmd import config
    fd, path = tempfile.mkstemp(prefix='storm-', suffix='.conf')
    with os.fdopen(fd, 'w') as f:
        # every host here would be a compute node with a pool of its own
        f.write('[DEFAULT]\ntransport_url = %s\ncontrol_exchange = %s\n'
                'rpc_conn_pool_size = %d\n'
                % (cluster.transport_url, cluster.control_exchange,
                   max(30, max_hosts + 8)))
    try:
        config.parse_args(['--config-file', path])
    finally:
        os.unlink(path)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--hosts', default='10,50,100',
                   type=lambda v: [int(x) for x in v.split(',')])
    p.add_argument('--targets', default=','.join(TARGETS),
                   type=lambda v: v.split(','))
    p.add_argument('--db', default='mysql', choices=('mysql', 'postgresql'))
    p.add_argument('--floor-repeats', type=int, default=3)
    p.add_argument('--idle-seconds', type=float, default=IDLE_SECONDS)
    p.add_argument('--host-timeout', type=float, default=HOST_TIMEOUT,
                   help='a refused host gives up this long after the '
                        'release (Cinder)')
    p.add_argument('--no-floor', action='store_true')
    p.add_argument('--json', help='write the results here')
    p.add_argument('--conf', action='append', default=[],
                   metavar='SECTION.OPTION=VALUE',
                   help="an option of cinder_lite's services (repeatable)")
    p.add_argument('--rounds', type=int, default=1,
                   help='storms of each N and target (after one floor)')
    p.add_argument('--takeover', action='store_true',
                   help="after each of cinder_lite's storms, a writer "
                        'takeover during an attach storm of N read-only '
                        'hosts on a single-writer volume')
    p.add_argument('--hold', type=float, default=0.0)
    p.add_argument('--hold-at', type=int, default=50)
    args = p.parse_args(argv)
    bad = set(args.targets) - set(TARGETS)
    if bad:
        p.error('unknown targets: %s' % ', '.join(sorted(bad)))
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    lite_wanted = {'lite', 'lite-bus'} & set(args.targets)
    deployment = vc.Distributed(args.db) if lite_wanted or \
        not args.no_floor else None
    for item in args.conf:
        key, _, value = item.partition('=')
        section, _, option = key.rpartition('.')
        if deployment is not None:
            if section in ('', 'DEFAULT'):
                deployment.cluster.extra_default[option] = value
            else:
                deployment.cluster.extra_sections.setdefault(
                    section, {})[option] = value
    reference = None
    targets, runs, floors = [], [], {}
    failed = False
    try:
        if deployment is not None:
            announce('starting cinder_lite (distributed, %s) ...' % args.db)
            deployment.start()
            bus_conf(deployment.cluster, max(args.hosts))
            groups = attach.service_groups(deployment)
            for name in ('lite', 'lite-bus'):
                if name in args.targets:
                    targets.append(Target(name, deployment.url,
                                          attach.PROJECT, groups,
                                          'bus' if name == 'lite-bus'
                                          else 'rest'))
        if 'cinder' in args.targets:
            reference = cinder_reference.Reference().ensure()
            groups = reference.groups()
            groups['rabbitmq*'] = lambda: attach.pids_named('beam.smp')
            groups['db*'] = lambda: attach.pids_named('mariadbd', 'mysqld')
            groups[CLIENT] = lambda: [os.getpid()]
            targets.append(Target('cinder', reference.url,
                                  reference.project, groups, 'rest',
                                  refusals=True))
        for target in targets:
            target.prepare(single_writer=args.takeover and
                           target.name != 'cinder')
            host = target.hosts(1)[0]
            host.deadline = time.monotonic() + args.host_timeout
            warm = storm(1, lambda i: host.attach(target.volume))
            if warm['errors']:
                raise RuntimeError('%s warm-up: %s' % (target.name,
                                                       warm['errors'][0]))
            errors, live = check_volume(target, target.volume, 1)
            conn = target.http()
            for att in live:
                target.call(conn, 'DELETE', '/attachments/' + att)
            conn.close()
            host.close()
            target.measure_idle(args.idle_seconds)
        for n in args.hosts:
            if not args.no_floor:
                announce('floor at N=%d' % n)
                floors[n] = measure_floor(deployment, n, args.floor_repeats)
                for part, res in floors[n].items():
                    for e in res['errors'][:3]:
                        announce('floor %s error: %s' % (part, e))
                    failed = failed or bool(res['errors'])
            for rnd, target in [(rnd, t) for rnd in range(1, args.rounds
                                                          + 1)
                                for t in targets]:
                if args.hold and n == args.hold_at and rnd == 1:
                    pids = {g: fn() for g, fn in target.groups.items()
                            if not g.endswith('*')}
                    announce('holding %g s before %s N=%d: %s' % (
                        args.hold, target.name, n, pids))
                    time.sleep(args.hold)
                announce('%s: %d hosts, round %d' % (target.name, n, rnd))
                out = run_target(target, n, args.host_timeout)
                out['round'] = rnd
                runs.append(out)
                if target.single_volume is not None:
                    announce('%s: takeover during a storm of %d hosts, '
                             'round %d' % (target.name, n, rnd))
                    out['takeover'] = run_takeover(target, n,
                                                   args.host_timeout)
                    for e in out['takeover']['errors'][:3]:
                        announce('%s takeover error: %s' % (target.name, e))
                    failed = failed or bool(out['takeover']['errors'])
                for phase in ('attach', 'detach'):
                    for e in out[phase]['errors'][:3]:
                        announce('%s %s error: %s' % (target.name, phase,
                                                      e))
                    failed = failed or bool(out[phase]['errors'])
            if n != args.hosts[-1]:          # so far, should a later N fail
                report(runs, floors, args.host_timeout)
            if args.json:
                with open(args.json, 'w') as f:
                    json.dump(to_json(runs, floors), f, indent=1)
        report(runs, floors, args.host_timeout)
    except Exception as e:
        failed = True
        announce('failed: %r' % (e,))
        raise
    finally:
        for target in targets:
            try:
                target.cleanup()
            except Exception as e:
                announce('cleanup of %s: %s' % (target.name, e))
        if reference is not None:
            reference.stop()
        if deployment is not None:
            from cinder_lite.common import rpc
            rpc.cleanup()            # the bus client's, before its vhost
            deployment.stop(keep=failed)
            if failed:
                announce('cinder_lite logs kept in %s'
                         % deployment.workdir)
    if failed:
        print('\nERRORS: see above')
        return 1
    print('no errors')
    return 0


if __name__ == '__main__':
    sys.exit(main())
