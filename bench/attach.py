#!/usr/bin/env python
"""Attach-path throughput and latency, with the machine floor measured in
the same run.

Cycles (each client runs them back to back for ``--seconds`` per cell):

* ``one-step``: POST /attachments with a connector -> POST
  /attachments/{id}/action {"os-complete": null} -> DELETE /attachments/{id}
  (3 HTTP requests);
* ``two-step`` (what the compute side does): POST /attachments without a
  connector -> PUT /attachments/{id} with the connector -> os-complete ->
  DELETE (4 HTTP requests).

Layouts: ``one`` = every client attaches the same multiattach volume (each
with its own instance_uuid and connector host ``bench-<client>``);
``distinct`` = one multiattach volume per client.  Both layouts use volumes
of the same multiattach type, so the only difference is contention on one
volume.  Clients: ``--clients`` (default 1,8,32), each on its own
keep-alive http.client connection, all threads of this process.

Deployments: ``embedded`` (``python -m cinder_lite.cmd.all``: SQLite, the
in-process bus; its file backend on each target of ``--targets``: the
``local`` one, or an ``nbd`` or ``iscsi`` one on 127.0.0.1, where each
connect makes a real export with the attachment's credential, or ``rbd``:
the file backend replaced by the RBD driver on a single-node Ceph cluster
the bench starts for the run (tests/harness/ceph.py) and stops at its
end, where each connect adds a cephx user and each detach removes it,
blocklists its sessions and waits for every placement group to apply the
map) and ``distributed`` over RabbitMQ with MariaDB and/or
PostgreSQL (``--db``): API (one worker), scheduler and the volume nodes
``ma`` and ``noma`` as separate processes, as tests/harness/cluster.py
starts them (``ma``'s target ``local``, or with ``--distributed-target
nbd`` an NBD export per connect, as the clustered deployment makes).
The deployments come from bench/volume_create.py.

CPU: utime+stime from /proc/<pid>/stat of every service process (the API
with any child worker processes) before and after each cell, divided by
the cycles of the cell (ms/cycle).  "bench" is this process (the clients).
Columns marked * are the shared RabbitMQ / database servers as a whole:
they include whatever else the machine runs against them meanwhile.

Floor, against the same servers, in the same run, at each client count:

* ``http``: GET / (version document, 300) with bare http.client on a
  keep-alive connection per client;
* ``rpc``: one oslo.messaging call (cinder_lite's context serializer, a
  connector-sized payload) to a no-op endpoint on a fresh topic: over the
  deployment's RabbitMQ vhost with the server in a subprocess, or for the
  embedded mode over its in-process bus with the server in this process;
* ``db``: the minimal transactions of one cycle with SQLAlchemy Core in
  bench tables of the same database (for SQLite: a file next to the
  deployment's, opened with cinder_lite's pragmas and BEGIN IMMEDIATE):
  T1 lock the volume row (compare-and-swap) + INSERT the attachment,
  T2 UPDATE the attachment (connector, connection_info), T3 UPDATE the
  attachment (attached) + the volume (in-use, count+1), T4 UPDATE the
  attachment (detached) + the volume (count-1, status), for layouts one
  (all clients on one volume row) and distinct.

The composed floor of a cycle at c clients is 1 / (n_http / http(c) +
2 / rpc(c) + 1 / db(c, layout)) cycles/s: each part measured alone at the
same concurrency, as in notes/physical-limits.md section 4 (a cycle needs
n_http requests, the two RPC calls connect and disconnect, and the DB
cycle).  At 1 client that is the sum of the latencies.  Its CPU per cycle
(column "floor" of the CPU table, with the services' CPU over it) is the
CPU those parts spend: the API's for n_http requests, both sides of two
calls, and the client side of the DB cycle.

Clustered (``--modes clustered``, issue 52; as root): the
deployment of tests/harness/clustered.py, once per ``--writers``
(``1``: HAProxy sends the writes to one Galera node, the two others
backups; ``all``: round robin over the three): three MariaDB Galera
nodes of the run's own behind HAProxy, two API processes behind
HAProxy (the clients' address), the scheduler and the volume services
``ma`` and ``ma2`` of cluster ``aa`` (file backend, NBD exports on
127.0.0.3 / 127.0.0.4), the bus three RabbitMQ nodes of one cluster of
the run's own with the RPC servers' queues quorum queues
(``--broker cluster``) or the machine's RabbitMQ (``--broker
single``).  Its mode is named ``clustered/w1-rabbit3q`` (or ``w3``,
``rabbit1``).  The floor is measured the same way through the same
servers: HTTP through the API HAProxy, RPC over the RabbitMQ cluster
with quorum queues, the DB cycle through the Galera HAProxy (a
transaction refused at certification run again, counted).  Per cell,
the transactions ``db.api.run_writer`` ran again (from the services'
logs, as for the distributed mode) and the Galera nodes' certification
failures and brute-force aborts (``wsrep_local_cert_failures``,
``wsrep_local_bf_aborts``, summed), per 1000 cycles in the last table
("side by side", every mode of the run).  The database server counts
are not taken (HAProxy picks the node of the connection).

RBD driver calls (``--targets rbd``, ``--rbd-calls`` N; bench/rbd_calls.py):
the driver's
create_export (omap record, ``auth add`` of the attachment's key) and
remove_export (``auth del``, the monitors' sessions of the user and the
blocklist of each, the barrier) timed in this process on the same
cluster, N cycles without a client and N with a librados client
connected with the key (whose session the cut-off blocklists), with the
CPU per call of this process and of each Ceph daemon.  The cluster's
daemons are CPU groups ``ceph-mon*``, ``ceph-mgr*``, ``ceph-osd*`` of the
attach cells too.

Race: ``--race-rounds`` rounds of ``--race-clients`` (32) clients that all
POST /attachments (no connector) for ONE plain volume with distinct
instance_uuids at once (barrier).  Exactly one must win (200) and the
others get 400; the winner is then deleted.

Any non-2xx answer (other than the race's 400s, and GET / which answers
300) is an error: counted, never hidden; exit status 1 with the first few
bodies printed, and the service logs kept.

    .venv/bin/python bench/attach.py                   # everything
    .venv/bin/python bench/attach.py --seconds 5 --modes distributed \\
        --db postgresql --clients 8 --cycles two-step --layouts one
    .venv/bin/python bench/attach.py --hold 20 ...  # pause before the
        # cells of each layout to attach py-spy to the printed pids
    .venv/bin/python bench/attach.py --modes distributed,clustered \\
        --db mysql --writers 1,all --cycles one-step --seconds 10
    .venv/bin/python bench/attach.py --modes distributed --clients 1 \\
        --cycles one-step --layouts one --seconds 30 --profile
        # each service's CPU per cycle by part (HTTP, RPC, SQL, taskflow,
        # logging, ..., our own code) next to the floor's parts, and the
        # calls of our code that spend it (bench/profile.py; py-spy from
        # the bench extra)
"""
import argparse
import datetime
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
import logging
import warnings

warnings.filterwarnings('ignore', message='.*[Ee]ventlet is deprecated.*')
# "Number of call queues is N, greater than warning threshold": more than
# 10 threads calling at once through one RPC client, expected here
logging.getLogger('oslo_messaging._drivers.amqpdriver').setLevel(
    logging.ERROR)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import ceph_cluster  # noqa: E402
from bench import profile  # noqa: E402
from bench import rbd_calls  # noqa: E402
from bench import volume_create as vc  # noqa: E402
from tests.harness import cluster as cluster_mod  # noqa: E402
from tests.harness import clustered  # noqa: E402
from tests.harness import galera as galera_mod  # noqa: E402
from tests.harness import servers  # noqa: E402
from tests.harness import util  # noqa: E402

PROJECT = cluster_mod.PROJECT
HEADERS = {'X-Auth-Token': 'admin:%s' % PROJECT,
           'OpenStack-API-Version': 'volume 3.71',
           'Accept': 'application/json'}
API = '/v3/%s' % PROJECT
CYCLES = ('one-step', 'two-step')
LAYOUTS = ('one', 'distinct')
HTTP_PER_CYCLE = {'one-step': 3, 'two-step': 4}
STEPS = ('create', 'update', 'complete', 'delete')
# the embedded backend's options per target (--targets): the clients'
# connectors all say 127.0.0.1
TGT_CONTROL = 23271


def _nbd_backend():
    low = util.free_port()
    return {'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1',
            'target_port_range': '%d-%d' % (low, low + 200)}


def _iscsi_backend():
    return {'target_protocol': 'iscsi', 'target_ip_address': '127.0.0.1',
            'target_port': util.free_port(),
            'target_control_port': TGT_CONTROL}


def _rbd_backend():
    # the file backend replaced by the RBD driver on the bench's own
    # single-node Ceph cluster (started once in main, stopped at its end)
    return RBD_CLUSTER[0].backend()


TARGETS = {'local': lambda: None, 'nbd': _nbd_backend,
           'iscsi': _iscsi_backend, 'rbd': _rbd_backend}
# [bench.ceph_cluster.Cluster] while the rbd target runs
RBD_CLUSTER = []
RPC_PER_CYCLE = 2        # connect, disconnect
CLK_TCK = os.sysconf('SC_CLK_TCK')
MAX_ERRORS_PER_CELL = 200
DB_FLOOR_ATTEMPTS = 20
VOLUME_TIMEOUT = 60.0


def pct(values, p):
    return vc.pct(values, p)


def ms(seconds):
    return vc.ms(seconds)


# -- HTTP ------------------------------------------------------------------

class HTTP:
    """One keep-alive connection (reopened after a failure)."""

    def __init__(self, host, port, timeout=60, headers=None):
        self.host, self.port, self.timeout = host, port, timeout
        self.headers = HEADERS if headers is None else headers
        self.conn = None

    def request(self, method, path, body=None):
        """(status, body bytes); status 0 when the connection failed."""
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port,
                                                   timeout=self.timeout)
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers['Content-Type'] = 'application/json'
        try:
            self.conn.request(method, path, body=data, headers=headers)
            resp = self.conn.getresponse()
            payload = resp.read()
        except (http.client.HTTPException, OSError) as e:
            self.close()
            return 0, ('%s %s: %r' % (method, path, e)).encode()
        if resp.will_close:
            self.close()
        return resp.status, payload

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def http_for(url, headers=None):
    parts = urllib.parse.urlsplit(url)
    return HTTP(parts.hostname, parts.port, headers=headers)


class CycleError(Exception):
    def __init__(self, step, status, body):
        self.step, self.status, self.body = step, status, body
        super().__init__('%s: %s %s' % (step, status,
                                        body[:400].decode('utf-8',
                                                          'replace')))


def expect(step, status, body, *ok):
    if status not in ok:
        raise CycleError(step, status, body)


# -- the cycles ------------------------------------------------------------

class Client:
    """One attaching host: its connection, instance and connector."""

    def __init__(self, url, index):
        self.http = http_for(url)
        self.index = index
        self.instance = str(uuid.uuid4())
        self.connector = {
            'host': 'bench-%d' % index, 'ip': '127.0.0.1',
            'initiator': 'iqn.2026-11.org.example:bench-%d' % index}
        self.steps = {s: [] for s in STEPS}
        self.cycles = []
        self.errors = []       # CycleError
        self.requests = 0

    def _req(self, step, method, path, body=None, ok=(200,)):
        t0 = time.perf_counter()
        status, payload = self.http.request(method, path, body)
        elapsed = time.perf_counter() - t0
        self.requests += 1
        expect(step, status, payload, *ok)
        self.steps[step].append(elapsed)
        return payload

    def cycle(self, kind, volume_id):
        t0 = time.perf_counter()
        body = {'volume_uuid': volume_id, 'instance_uuid': self.instance}
        if kind == 'one-step':
            body['connector'] = self.connector
        att_id = None
        try:
            att = json.loads(self._req('create', 'POST', API + '/attachments',
                                       {'attachment': body}))['attachment']
            att_id = att['id']
            want = 'attaching' if kind == 'one-step' else 'reserved'
            if att['status'] != want:
                raise CycleError('create', 200, (
                    'attachment status %r, expected %r' % (att['status'],
                                                           want)).encode())
            path = API + '/attachments/' + att_id
            if kind == 'two-step':
                self._req('update', 'PUT', path,
                          {'attachment': {'connector': self.connector}})
            self._req('complete', 'POST', path + '/action',
                      {'os-complete': None}, ok=(204,))
            self._req('delete', 'DELETE', path)
            att_id = None
        except CycleError as e:
            self.errors.append(e)
            if att_id is not None:
                self._cleanup(att_id)
            return False
        self.cycles.append(time.perf_counter() - t0)
        return True

    def _cleanup(self, att_id):
        """Delete what a failed cycle left (a failure here is an error
        too)."""
        try:
            self._req('cleanup', 'DELETE', API + '/attachments/' + att_id,
                      ok=(200, 404))
        except CycleError as e:
            self.errors.append(e)


# -- CPU accounting ----------------------------------------------------------

def cpu_ticks(pid):
    fields = util.stat_fields(pid)
    if fields is None:
        return None
    return int(fields[11]) + int(fields[12])     # utime + stime


def pids_named(*names):
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/comm' % entry) as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm in names:
            found.append(int(entry))
    return found


class Sampler:
    """Process groups (name -> function returning pids); snapshot() and
    delta() in CPU seconds per group.  ``counters``: a function returning
    {name: count} of the database server (``DBCounters.read``), whose
    differences ``counts`` gives."""

    def __init__(self, groups, counters=None):
        self.groups = groups      # ordered {name: callable}
        self.counters = counters

    def snapshot(self):
        snap = {}
        for name, pids in self.groups.items():
            snap[name] = {}
            for pid in pids():
                ticks = cpu_ticks(pid)
                if ticks is not None:
                    snap[name][pid] = ticks
        if self.counters is not None:
            snap[COUNTS] = self.counters()
        return snap

    def delta(self, before, after):
        out = {}
        for name in self.groups:
            b, a = before.get(name, {}), after.get(name, {})
            out[name] = sum(t - b.get(pid, 0) for pid, t in a.items()) \
                / float(CLK_TCK)
        return out

    @staticmethod
    def counts(before, after):
        b, a = before.get(COUNTS) or {}, after.get(COUNTS) or {}
        return {k: a[k] - b[k] for k in a if k in b}


# the snapshot key of the database counters
COUNTS = '#counts'


class DBCounters:
    """What the database server counts, read from the server itself, so
    nothing in cinder_lite is instrumented: on MariaDB the global
    ``Questions`` (every statement a client sent, BEGIN and COMMIT
    included), ``Com_commit`` + ``Com_rollback``, and the internal
    temporary tables statements needed (``Created_tmp_tables``, those
    written to disk ``Created_tmp_disk_tables``: a sort by a joined
    table's column with a TEXT column in the result made one on disk for
    every attach); on PostgreSQL the database's ``xact_commit`` +
    ``xact_rollback`` (statements are counted only by
    pg_stat_statements, which needs a server restart) and the temporary
    files its sorts and hashes spilled to (``temp_files``).  Server
    wide: heartbeats and anything else running count too (the idle rate
    is measured and subtracted)."""

    def __init__(self, url):
        import sqlalchemy as sa
        self.sa = sa
        url = sa.engine.make_url(url)
        self.backend = url.get_backend_name()
        self.database = url.database
        self.engine = sa.create_engine(url, poolclass=sa.pool.NullPool,
                                       isolation_level='AUTOCOMMIT')
        self.conn = self.engine.connect()

    def read(self):
        sa = self.sa
        if self.backend in ('mysql', 'mariadb'):
            rows = dict(self.conn.execute(sa.text(
                "SHOW GLOBAL STATUS WHERE Variable_name IN "
                "('Questions', 'Com_commit', 'Com_rollback', "
                "'Created_tmp_tables', 'Created_tmp_disk_tables')")).all())
            # this read is one question (and one temporary table) itself
            return {'statements': int(rows['Questions']),
                    'transactions': int(rows['Com_commit']) +
                    int(rows['Com_rollback']),
                    'tmp tables': int(rows['Created_tmp_tables']),
                    'tmp on disk': int(rows['Created_tmp_disk_tables'])}
        self.conn.execute(sa.text('SELECT pg_stat_clear_snapshot()'))
        # the server publishes a backend's counts when its transaction
        # ends, at most once a second; 8 s cells see all but the last
        xacts, files = self.conn.execute(sa.text(
            'SELECT xact_commit + xact_rollback, temp_files '
            'FROM pg_stat_database WHERE datname = :db'),
            {'db': self.database}).one()
        return {'transactions': int(xacts), 'temp files': int(files)}

    def close(self):
        self.conn.close()
        self.engine.dispose()


def with_children(pid):
    return lambda: [pid] + cluster_mod.child_pids(pid)


def service_groups(deployment):
    """{name: pids callable} of the deployment's service processes, then
    this process and (distributed) the shared broker and database."""
    groups = {'bench': lambda: [os.getpid()]}
    if isinstance(deployment, vc.Embedded):
        groups['all'] = with_children(deployment.proc.pid)
        if getattr(deployment, 'ceph', None) is not None:
            groups.update(deployment.ceph.groups())
        return groups
    cluster = deployment.cluster
    names = sorted(cluster.processes, key=lambda n: (
        not n.startswith('api'), not n.startswith('scheduler'), n))
    for name in names:
        proc = cluster.processes[name]
        label = name if name.startswith(('api', 'scheduler')) \
            else 'vol-' + name
        groups[label] = with_children(proc.pid) if name.startswith('api') \
            else (lambda p=proc.pid: [p])
    if isinstance(deployment, Clustered):
        # the deployment's own servers (no one else's in them)
        groups.update(deployment.server_groups())
        return groups
    groups['rabbitmq*'] = lambda: pids_named('beam.smp')
    if cluster.kind == 'mysql':
        groups['db*'] = lambda: pids_named('mariadbd', 'mysqld')
    else:
        groups['db*'] = lambda: pids_named('postgres')
    return groups


# -- concurrent runs ---------------------------------------------------------

def run_threads(workers, seconds, body, sampler):
    """Run ``body(worker)`` in one thread per worker, repeatedly, for
    ``seconds`` after a common start; returns (wall, cpu delta)."""
    barrier = threading.Barrier(len(workers) + 1)
    stop_at = [0.0]
    stop = threading.Event()

    def loop(worker):
        barrier.wait()
        while time.perf_counter() < stop_at[0] and not stop.is_set():
            body(worker)

    threads = [threading.Thread(target=loop, args=(w,), daemon=True)
               for w in workers]
    for t in threads:
        t.start()
    before = sampler.snapshot()
    t0 = time.perf_counter()
    stop_at[0] = t0 + seconds
    barrier.wait()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    after = sampler.snapshot()
    return wall, sampler.delta(before, after), \
        sampler.counts(before, after)


def run_cell(url, kind, layout, clients, seconds, volumes, sampler):
    workers = [Client(url, i) for i in range(clients)]
    for w in workers:            # open the connections before the clock
        w.http.request('GET', '/')

    def body(worker):
        vol = volumes['one'] if layout == 'one' else \
            volumes['distinct'][worker.index]
        worker.cycle(kind, vol)
        if len(worker.errors) > MAX_ERRORS_PER_CELL // clients + 1:
            time.sleep(0.05)     # a broken cell: do not spin

    wall, cpu, counts = run_threads(workers, seconds, body, sampler)
    for w in workers:
        w.http.close()
    cycles = [c for w in workers for c in w.cycles]
    steps = {s: [x for w in workers for x in w.steps[s]] for s in STEPS}
    errors = [e for w in workers for e in w.errors]
    return {'cycle': kind, 'layout': layout, 'clients': clients,
            'ops': len(cycles), 'wall': wall,
            'rate': len(cycles) / wall if wall else 0.0,
            'lat': cycles, 'steps': steps, 'errors': errors, 'cpu': cpu,
            'counts': counts,
            'requests': sum(w.requests for w in workers)}


def saturate(make_op, clients, seconds, sampler):
    """``clients`` threads each calling its own ``make_op(i)()`` back to
    back; returns rate, latencies, errors and CPU."""
    ops = [make_op(i) for i in range(clients)]
    lats = [[] for _ in range(clients)]
    errors = []

    def body(i):
        t0 = time.perf_counter()
        try:
            ops[i]()
        except Exception as e:
            errors.append(repr(e)[:400])
            time.sleep(0.01)
            return
        lats[i].append(time.perf_counter() - t0)

    # warm-up, unmeasured: a few ops each
    for i in range(clients):
        for _ in range(3):
            try:
                ops[i]()
            except Exception as e:
                errors.append('warm-up: %r' % (e,))
    wall, cpu, _ = run_threads(list(range(clients)), seconds, body,
                               sampler)
    flat = [x for lst in lats for x in lst]
    return {'ops': len(flat), 'rate': len(flat) / wall if wall else 0.0,
            'lat': flat, 'errors': errors, 'cpu': cpu}


# -- floor: HTTP -------------------------------------------------------------

def http_floor_op(url):
    def factory(_i):
        conn = http_for(url)

        def op():
            status, body = conn.request('GET', '/')
            if status not in (200, 300):
                raise RuntimeError('GET / -> %s %s' % (status, body[:200]))
        return op
    return factory


# -- floor: RPC --------------------------------------------------------------

class NoopEndpoint:
    def __init__(self):
        import oslo_messaging as messaging
        self.target = messaging.Target(version='1.0')

    def noop(self, ctxt, attachment_id, connector, mode):
        return {'driver_volume_type': 'local',
                'data': {'attachment_id': attachment_id,
                         'device_path': '/dev/null', 'access_mode': mode,
                         'host': connector.get('host')}}


def _transport(url, quorum=False):
    """An RPC transport; ``quorum``: the RPC servers' queues declared as
    quorum queues, as the clustered deployment's services declare them
    (``[oslo_messaging_rabbit] rabbit_quorum_queue``, registered by the
    rabbit driver as the transport is made, read by each connection)."""
    from oslo_config import cfg
    import oslo_messaging as messaging
    from cinder_lite.common import exception
    from cinder_lite.common import inproc_bus  # noqa: F401 (kombu+inproc)
    transport = messaging.get_rpc_transport(
        cfg.CONF, url=url, allowed_remote_exmods=[exception.__name__])
    if quorum:
        cfg.CONF.set_override('rabbit_quorum_queue', True,
                              group='oslo_messaging_rabbit')
    return transport


def _rpc_server(transport, topic, exchange=None):
    import oslo_messaging as messaging
    from cinder_lite.common import rpc
    return messaging.get_rpc_server(
        transport, messaging.Target(topic=topic, server='bench',
                                    exchange=exchange),
        [NoopEndpoint()], serializer=rpc.ContextSerializer())


def rpc_server_main(url, topic, exchange=None, quorum=False):
    """``attach.py --rpc-server [--quorum] URL TOPIC [EXCHANGE]``: serve
    until stdin closes."""
    transport = _transport(url, quorum)
    server = _rpc_server(transport, topic, exchange)
    server.start()
    print('ready', flush=True)
    sys.stdin.read()
    server.stop()
    server.wait()
    transport.cleanup()


class RPCFloor:
    """A no-op RPC server (subprocess over RabbitMQ, or a thread here
    for the in-process bus) and a client shared by all threads, as the API
    shares one."""

    def __init__(self, url, in_process, exchange=None, quorum=False):
        self.url, self.in_process = url, in_process
        self.quorum = quorum
        # None: the control_exchange of this process (and of the server
        # subprocess: both then use the default)
        self.exchange = exchange
        self.topic = 'bench-attach-noop-%s' % uuid.uuid4().hex[:8]
        self.proc = self.server = self.transport = None

    def start(self):
        import oslo_messaging as messaging
        from cinder_lite.common import context
        from cinder_lite.common import rpc
        self.transport = _transport(self.url, self.quorum)
        if self.in_process:
            self.server = _rpc_server(self.transport, self.topic,
                                      self.exchange)
            self.server.start()
        else:
            self.proc = subprocess.Popen(
                [cluster_mod.python(), os.path.abspath(__file__),
                 '--rpc-server'] + (['--quorum'] if self.quorum else []) +
                [self.url, self.topic] +
                ([self.exchange] if self.exchange else []),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
            line = self.proc.stdout.readline()
            if line.strip() != 'ready':
                raise RuntimeError('RPC floor server did not start (%r)'
                                   % line)
        self.client = messaging.get_rpc_client(
            self.transport, messaging.Target(topic=self.topic,
                                             server='bench', version='1.0',
                                             exchange=self.exchange),
            serializer=rpc.ContextSerializer(), timeout=30)
        self.ctxt = context.RequestContext(
            user_id='admin', project_id=PROJECT, roles=['admin'],
            is_admin=True, overwrite=False)
        return self

    def pids(self):
        return [self.proc.pid] if self.proc else []

    def factory(self, i):
        connector = {'host': 'bench-%d' % i, 'ip': '127.0.0.1',
                     'initiator': 'iqn.2026-11.org.example:bench-%d' % i}
        att = str(uuid.uuid4())

        def op():
            out = self.client.call(self.ctxt, 'noop', attachment_id=att,
                                   connector=connector, mode='rw')
            if out['data']['attachment_id'] != att:
                raise RuntimeError('bad RPC answer %r' % (out,))
        return op

    def stop(self):
        if self.server is not None:
            self.server.stop()
            self.server.wait()
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()          # our own child, by its handle
                self.proc.wait(10)
        if self.transport is not None:
            self.transport.cleanup()
        if self.quorum:
            from oslo_config import cfg
            cfg.CONF.clear_override('rabbit_quorum_queue',
                                    group='oslo_messaging_rabbit')


# -- floor: DB ---------------------------------------------------------------

class DBFloor:
    """The cycle's minimal transactions with SQLAlchemy Core (on Galera
    with cinder_lite's ``wsrep_sync_wait``).  A
    transaction that ends in a deadlock (MariaDB error 1213: on Galera
    with writes on several nodes, a certification failure) is run again
    as a whole, as ``db.api.run_writer`` runs cinder_lite's, and counted
    in ``retries``."""

    def __init__(self, url, pool):
        import sqlalchemy as sa
        from cinder_lite.db import api as db_api
        self.sa = sa
        url = sa.engine.make_url(url)
        backend = url.get_backend_name()
        kwargs = {'pool_size': pool, 'max_overflow': 0, 'pool_timeout': 60}
        if backend == 'sqlite':
            kwargs['connect_args'] = {'timeout': db_api.SQLITE_BUSY_TIMEOUT_S,
                                      'check_same_thread': False}
        elif backend in ('mysql', 'mariadb'):
            kwargs['isolation_level'] = 'READ COMMITTED'   # as cinder_lite
        self.engine = sa.create_engine(url, **kwargs)
        if backend in ('mysql', 'mariadb'):
            # on a Galera node, cinder_lite's wsrep_sync_wait: without it
            # the next transaction, through another node, may not see the
            # row the last one wrote yet
            db_api._galera_causal_reads(self.engine)
        self.retries = 0
        self._lock = threading.Lock()
        if backend == 'sqlite':
            # cinder_lite's pragmas (WAL, synchronous=NORMAL, busy
            # timeout) and BEGIN IMMEDIATE
            db_api._sqlite_setup(self.engine)
        md = self.metadata = sa.MetaData()
        self.V = sa.Table(
            'bench_floor_volumes', md,
            sa.Column('id', sa.String(36), primary_key=True),
            sa.Column('status', sa.String(32), nullable=False),
            sa.Column('multiattach', sa.Boolean, nullable=False),
            sa.Column('attach_count', sa.Integer, nullable=False),
            sa.Column('attach_seq', sa.Integer, nullable=False),
            sa.Column('updated_at', sa.DateTime))
        self.A = sa.Table(
            'bench_floor_attachments', md,
            sa.Column('id', sa.String(36), primary_key=True),
            sa.Column('volume_id', sa.String(36), nullable=False,
                      index=True),
            sa.Column('instance_uuid', sa.String(36)),
            sa.Column('attached_host', sa.String(255)),
            sa.Column('attach_status', sa.String(32), nullable=False),
            sa.Column('attach_mode', sa.String(2)),
            sa.Column('connector', sa.JSON),
            sa.Column('connection_info', sa.JSON),
            sa.Column('attach_time', sa.DateTime),
            sa.Column('detach_time', sa.DateTime),
            sa.Column('deleted', sa.Boolean, nullable=False),
            sa.Column('created_at', sa.DateTime, nullable=False),
            sa.Column('updated_at', sa.DateTime))
        md.drop_all(self.engine)
        md.create_all(self.engine)
        self.one = str(uuid.uuid4())
        self.own = [str(uuid.uuid4()) for _ in range(pool)]
        with self.engine.begin() as c:
            c.execute(sa.insert(self.V), [
                {'id': v, 'status': 'available', 'multiattach': True,
                 'attach_count': 0, 'attach_seq': 0}
                for v in [self.one] + self.own])

    def _tx(self, fn):
        """``fn(connection)`` in one transaction, run again after a
        deadlock (up to DB_FLOOR_ATTEMPTS)."""
        for attempt in range(1, DB_FLOOR_ATTEMPTS + 1):
            try:
                with self.engine.begin() as c:
                    return fn(c)
            except self.sa.exc.DBAPIError as e:
                code = (getattr(e.orig, 'args', None) or (None,))[0]
                if code != 1213 or attempt == DB_FLOOR_ATTEMPTS:
                    raise
                with self._lock:
                    self.retries += 1

    def steps(self, layout):
        """``make(i)`` -> (attach, detach) of client ``i``: ``attach()``
        runs T1-T3 and returns the attachment's id, ``detach(att)`` T4
        (bench/storm.py times them apart)."""
        sa, V, A = self.sa, self.V, self.A
        now = datetime.datetime.utcnow

        def make(i):
            vol = self.one if layout == 'one' else self.own[i]
            instance = str(uuid.uuid4())
            connector = {'host': 'bench-%d' % i, 'ip': '127.0.0.1',
                         'initiator': 'iqn.2026-11.org.example:bench-%d' % i}

            def t1(c, att):                       # T1 reserve
                r = c.execute(sa.update(V).where(
                    V.c.id == vol, V.c.multiattach == sa.true(),
                    V.c.status.in_(('available', 'reserved',
                                    'attaching', 'in-use'))).values(
                    attach_seq=V.c.attach_seq + 1,
                    status=sa.case((V.c.status == 'available',
                                    'reserved'), else_=V.c.status),
                    updated_at=now()))
                if r.rowcount != 1:
                    raise RuntimeError('reserve: volume not attachable')
                c.execute(sa.insert(A).values(
                    id=att, volume_id=vol, instance_uuid=instance,
                    attach_status='reserved', deleted=False,
                    created_at=now()))

            def t2(c, att):                       # T2 connection info
                r = c.execute(sa.update(A).where(
                    A.c.id == att, A.c.attach_status == 'reserved')
                    .values(attach_status='attaching', attach_mode='rw',
                            attached_host=connector['host'],
                            connector=connector,
                            connection_info={
                                'driver_volume_type': 'local',
                                'data': {'device_path': '/dev/null',
                                         'attachment_id': att}},
                            updated_at=now()))
                if r.rowcount != 1:
                    raise RuntimeError('connect: lost the attachment')

            def t3(c, att):                       # T3 complete
                r = c.execute(sa.update(A).where(
                    A.c.id == att, A.c.attach_status == 'attaching')
                    .values(attach_status='attached', attach_time=now(),
                            updated_at=now()))
                if r.rowcount != 1:
                    raise RuntimeError('complete: lost the attachment')
                c.execute(sa.update(V).where(V.c.id == vol).values(
                    status='in-use', attach_count=V.c.attach_count + 1,
                    attach_seq=V.c.attach_seq + 1, updated_at=now()))

            def t4(c, att):                       # T4 delete
                r = c.execute(sa.update(A).where(
                    A.c.id == att, A.c.attach_status == 'attached')
                    .values(attach_status='detached', deleted=True,
                            detach_time=now(), updated_at=now()))
                if r.rowcount != 1:
                    raise RuntimeError('delete: lost the attachment')
                c.execute(sa.update(V).where(V.c.id == vol).values(
                    attach_count=V.c.attach_count - 1,
                    status=sa.case((V.c.attach_count == 1, 'available'),
                                   else_='in-use'),
                    attach_seq=V.c.attach_seq + 1, updated_at=now()))

            def attach():
                att = str(uuid.uuid4())
                for tx in (t1, t2, t3):
                    self._tx(lambda c, tx=tx: tx(c, att))
                return att

            def detach(att):
                self._tx(lambda c: t4(c, att))
            return attach, detach
        return make

    def factory(self, layout):
        steps = self.steps(layout)

        def make(i):
            attach, detach = steps(i)

            def op():
                detach(attach())
            return op
        return make

    def stop(self):
        try:
            self.metadata.drop_all(self.engine)
        finally:
            self.engine.dispose()


# -- deployment setup --------------------------------------------------------

def api_json(conn, method, path, body=None, ok=(200, 202)):
    status, payload = conn.request(method, path, body)
    if status not in ok:
        raise RuntimeError('%s %s -> %s %s' % (method, path, status,
                                               payload[:400]))
    return json.loads(payload) if payload else None


def make_volumes(url, n_distinct):
    """A multiattach type; one shared and ``n_distinct`` own multiattach
    volumes and one plain volume, all available."""
    conn = http_for(url)
    vtype = api_json(conn, 'POST', API + '/types', {'volume_type': {
        'name': 'bench-ma-%s' % uuid.uuid4().hex[:8],
        'extra_specs': {'multiattach': '<is> True'}}})['volume_type']
    ids = []
    for i in range(1 + n_distinct):
        ids.append(api_json(conn, 'POST', API + '/volumes', {'volume': {
            'size': 1, 'name': 'bench-ma-%d' % i,
            'volume_type': vtype['id']}})['volume']['id'])
    plain = api_json(conn, 'POST', API + '/volumes', {'volume': {
        'size': 1, 'name': 'bench-plain'}})['volume']['id']
    for vid in ids + [plain]:
        def ready(vid=vid):
            vol = api_json(conn, 'GET', API + '/volumes/' + vid)['volume']
            if vol['status'].startswith('error'):
                raise RuntimeError('volume %s went %s' % (vid,
                                                          vol['status']))
            return vol['status'] == 'available'
        util.wait_for(ready, VOLUME_TIMEOUT, interval=0.02,
                      what='volume %s available' % vid)
    conn.close()
    return {'one': ids[0], 'distinct': ids[1:], 'plain': plain}


def leftovers(url, volume_ids):
    """Attachments still live on ``volume_ids`` (there should be none after
    a cell), deleted; returns error strings."""
    conn = http_for(url)
    errors = []
    for vid in volume_ids:
        status, payload = conn.request(
            'GET', API + '/attachments?volume_id=%s' % vid)
        if status != 200:
            errors.append('list attachments: %s %s' % (status,
                                                       payload[:300]))
            continue
        for att in json.loads(payload)['attachments']:
            errors.append('leftover attachment %s (%s) on %s'
                          % (att['id'], att['status'], vid))
            conn.request('DELETE', API + '/attachments/' + att['id'])
        vol = json.loads(conn.request('GET', API + '/volumes/' + vid)[1])
        if vol['volume']['status'] != 'available':
            errors.append('volume %s is %s after the cell'
                          % (vid, vol['volume']['status']))
    conn.close()
    return errors


# -- race ---------------------------------------------------------------------

def race(url, volume_id, clients, rounds):
    out = []
    for rnd in range(rounds):
        conns = [http_for(url) for _ in range(clients)]
        for c in conns:
            c.request('GET', '/')
        results = [None] * clients
        barrier = threading.Barrier(clients)

        def go(i):
            body = {'attachment': {'volume_uuid': volume_id,
                                   'instance_uuid': str(uuid.uuid4())}}
            barrier.wait()
            t0 = time.perf_counter()
            status, payload = conns[i].request('POST', API + '/attachments',
                                               body)
            results[i] = (status, payload, time.perf_counter() - t0)

        threads = [threading.Thread(target=go, args=(i,))
                   for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [json.loads(p)['attachment']['id']
                   for s, p, _ in results if s == 200]
        refused = [p for s, p, _ in results if s == 400]
        other = [(s, p) for s, p, _ in results if s not in (200, 400)]
        errors = ['race round %d: %s %s' % (rnd, s, p[:300]) for s, p in
                  other]
        if len(winners) != 1:
            errors.append('race round %d: %d winners (must be 1)'
                          % (rnd, len(winners)))
        wrong = [p for p in refused if b'not multiattach' not in p]
        errors += ['race round %d: unexpected 400: %s' % (rnd, p[:300])
                   for p in wrong[:3]]
        for att in winners:
            status, payload = conns[0].request(
                'DELETE', API + '/attachments/' + att)
            if status != 200:
                errors.append('race round %d: delete winner: %s %s'
                              % (rnd, status, payload[:300]))
        status, payload = conns[0].request('GET',
                                           API + '/volumes/' + volume_id)
        vstatus = json.loads(payload)['volume']['status'] \
            if status == 200 else status
        if vstatus != 'available':
            errors.append('race round %d: volume %s afterwards'
                          % (rnd, vstatus))
        for c in conns:
            c.close()
        out.append({'round': rnd, 'winners': len(winners),
                    'refused': len(refused), 'other': len(other),
                    'lat': [r[2] for r in results], 'errors': errors})
    return out


# -- the clustered deployment ----------------------------------------------

class ClusterServers:
    """What the clustered deployments of a run share: a Galera cluster of
    three nodes and (``--broker cluster``) three RabbitMQ nodes of one
    cluster, both of this run's own, started once, destroyed at the
    end."""

    def __init__(self, broker):
        self.where = None
        self.keep = False       # a deployment's logs are kept
        self.galera = self.broker = None
        self.broker_kind = broker

    def start(self):
        import tempfile
        why = galera_mod.available()
        if why:
            raise cluster_mod.ServiceUnavailable('Galera: %s' % why)
        self.where = tempfile.mkdtemp(prefix='cinder-lite-bench-clustered-')
        try:
            announce('clustered', 'starting three Galera nodes%s ...' % (
                ' and three RabbitMQ nodes' if self.broker_kind == 'cluster'
                else ''))
            t = time.perf_counter()
            self.galera = galera_mod.GaleraCluster(servers._owned_dir(
                os.path.join(self.where, 'galera'), 'mysql'))
            self.galera.start()
            if self.broker_kind == 'cluster':
                self.broker = servers.RabbitCluster(
                    os.path.join(self.where, 'rabbit')).start()
            announce('clustered', 'servers ready in %.1f s'
                     % (time.perf_counter() - t))
        except BaseException:
            self.destroy()
            raise
        return self

    def destroy(self):
        import shutil
        try:
            if self.broker is not None:
                self.broker.destroy()
        finally:
            try:
                if self.galera is not None:
                    self.galera.destroy()
            finally:
                if self.where and not self.keep:
                    shutil.rmtree(self.where, ignore_errors=True)


class Clustered:
    """tests/harness/clustered.py's deployment (two API processes behind
    HAProxy, the Galera cluster behind HAProxy with writes on one node or
    all three, scheduler, volume services ``ma`` and ``ma2`` of cluster
    ``aa``) on the run's ``ClusterServers``, the bus their RabbitMQ
    cluster with quorum queues (or the machine's RabbitMQ)."""

    def __init__(self, shared, writers):
        self.shared, self.writers = shared, writers
        self.workdir = os.path.join(shared.where, 'writers-%s' % writers)
        self.d = self.cluster = None

    def start(self):
        os.makedirs(self.workdir)
        broker = self.shared.broker
        self.d = clustered.Deployment(
            self.shared.galera, self.workdir,
            db_writers=1 if self.writers == '1' else None,
            broker=broker,
            # a heartbeat late on a loaded machine must not make a
            # backend look down
            service_down_time=30)
        self.d.start()
        self.cluster = self.d.cluster
        self.url = self.d.url
        return self

    @property
    def quorum(self):
        return self.shared.broker is not None

    def server_groups(self):
        groups = {}
        broker = self.shared.broker
        if broker is not None:
            groups['rabbitmq x3*'] = lambda: [
                p for p in (n._pid() for n in broker.nodes) if p]
        else:
            groups['rabbitmq*'] = lambda: pids_named('beam.smp')
        groups['galera x3*'] = self.shared.galera.pids
        groups['haproxy x2*'] = lambda: [
            p.proc.pid for p in (self.d.db_proxy, self.d.api_proxy)
            if p is not None and p.alive()]
        return groups

    def retries(self):
        return self.d.retries()

    def galera_counters(self):
        return self.d.galera_counters()

    def logs(self):
        return [p.log_path for p in self.cluster.processes.values()]

    def stop(self, keep=False):
        if self.d is None:
            return None
        if self.cluster is not None:
            self.cluster.keep_workdir = keep
        self.shared.keep |= keep
        return self.d.stop()


def retries_of(deployment):
    """{process: transactions db.api.run_writer ran again}, from the
    logs (clustered.RETRY: what each retry logs once), or None for the
    embedded mode."""
    if isinstance(deployment, Clustered):
        return deployment.retries()
    cluster = getattr(deployment, 'cluster', None)
    if cluster is None:
        return None
    counts = {}
    for name, proc in cluster.processes.items():
        try:
            with open(proc.log_path, errors='replace') as f:
                counts[name] = len(clustered.RETRY.findall(f.read()))
        except OSError:
            pass
    return counts


def galera_totals(deployment):
    """{counter: sum over the Galera nodes}, or None off Galera."""
    if not isinstance(deployment, Clustered):
        return None
    totals = {}
    for counts in deployment.galera_counters().values():
        for key, value in counts.items():
            totals[key] = totals.get(key, 0) + value
    return totals


# -- one deployment --------------------------------------------------------

def announce(name, msg):
    print('[%s] %s' % (name, msg), file=sys.stderr, flush=True)


def measure_floor(name, deployment, volumes_url, args, sampler,
                  rpc_url, in_process, db_url, quorum=False):
    """Floor rows: {(part, layout-or-None, clients): saturate result}."""
    floor = {}
    api_group = 'all' if in_process else 'api'
    announce(name, 'floor: http')
    for c in args.clients:
        floor[('http', None, c)] = saturate(
            http_floor_op(volumes_url), c, args.floor_seconds, sampler)
        floor[('http', None, c)]['server'] = api_group
    announce(name, 'floor: rpc (%s)' % ('in-process bus' if in_process
                                        else 'rabbit, server subprocess'))
    rpcf = RPCFloor(rpc_url, in_process, quorum=quorum).start()
    try:
        groups = dict(sampler.groups)
        groups['rpc-server'] = rpcf.pids
        rsampler = Sampler(groups)
        for c in args.clients:
            floor[('rpc', None, c)] = saturate(rpcf.factory, c,
                                               args.floor_seconds, rsampler)
            floor[('rpc', None, c)]['server'] = \
                None if in_process else 'rpc-server'
    finally:
        rpcf.stop()
    announce(name, 'floor: db')
    db_group = next((g for g in sampler.groups
                     if g in ('db*', 'galera x3*')), None)
    dbf = DBFloor(db_url, max(args.clients))
    try:
        for layout in args.layouts:
            for c in args.clients:
                retried = dbf.retries
                floor[('db', layout, c)] = saturate(
                    dbf.factory(layout), c, args.floor_seconds, sampler)
                floor[('db', layout, c)]['server'] = \
                    None if in_process else db_group
                floor[('db', layout, c)]['retries'] = dbf.retries - retried
    finally:
        dbf.stop()
    return floor


def composed_floor(floor, kind, layout, clients):
    """(cycles/s, 1-client latency s) of the composed floor."""
    try:
        h = floor[('http', None, clients)]
        r = floor[('rpc', None, clients)]
        d = floor[('db', layout, clients)]
    except KeyError:
        return float('nan'), float('nan')
    if not (h['rate'] and r['rate'] and d['rate']):
        return float('nan'), float('nan')
    per = (HTTP_PER_CYCLE[kind] / h['rate'] + RPC_PER_CYCLE / r['rate']
           + 1.0 / d['rate'])
    lat = (HTTP_PER_CYCLE[kind] * pct(h['lat'], 50)
           + RPC_PER_CYCLE * pct(r['lat'], 50) + pct(d['lat'], 50))
    return 1.0 / per, lat


def profiled_cell(url, kind, layout, clients, seconds, volumes, sampler,
                  pids):
    """The cell run again with py-spy on each service process: ({group:
    profile.Samples}, {group: CPU ms per cycle of the profiled run}).
    The shares of the samples are applied to the CPU of the unprofiled
    cell (sampling costs the processes CPU of its own); its errors count
    as the cell's."""
    recorders = {g: profile.Recorder(p[0]).start()
                 for g, p in pids.items() if g != 'bench'}
    try:
        res = run_cell(url, kind, layout, clients, seconds, volumes,
                       sampler)
    finally:
        samples = {g: r.stop() for g, r in recorders.items()}
    if not any(samples.values()):
        raise RuntimeError('py-spy sampled no service process: %s' % '; '.join(
            r.output for r in recorders.values()))
    if res['errors']:
        raise RuntimeError('the profiled cell failed: %s' % res['errors'][:3])
    n = max(1, res['ops'])
    return samples, {g: 1000.0 * v / n for g, v in res['cpu'].items()}


def floor_cpu_parts(floor, kind, layout, clients):
    """{'http', 'rpc', 'sql': CPU ms per cycle} of the composed floor's
    parts (None without one): the API's for the bare HTTP requests, the
    server's and the client's for the no-op calls, the client's for the
    transactions."""
    try:
        http = floor[('http', None, clients)]
        rpc = floor[('rpc', None, clients)]
        db = floor[('db', layout, clients)]
    except KeyError:
        return None
    parts = {}
    for name, times, part, groups in (
            ('http', HTTP_PER_CYCLE[kind], http, (http.get('server'),)),
            ('rpc', RPC_PER_CYCLE, rpc, (rpc.get('server'), 'bench')),
            ('sql', 1, db, ('bench',))):
        if not part['ops']:
            return None
        parts[name] = times * 1000.0 * sum(
            part['cpu'].get(g, 0.0) for g in groups if g) / part['ops']
    return parts


def floor_cpu(floor, kind, layout, clients):
    """The composed floor's CPU per cycle in ms (NaN without one): what
    the services would spend on the cycle's round trips doing nothing
    else (the database server's own CPU is not in it, nor in theirs)."""
    parts = floor_cpu_parts(floor, kind, layout, clients)
    return float('nan') if parts is None else sum(parts.values())


def bench_mode(name, deployment, args):
    announce(name, 'starting ...')
    t = time.perf_counter()
    deployment.start()
    announce(name, 'ready in %.1f s at %s' % (time.perf_counter() - t,
                                              deployment.url))
    out = {'name': name, 'cells': [], 'floor': {}, 'race': [],
           'errors': [], 'groups': [], 'idle': {}, 'idle_counts': {}}
    counters = None
    try:
        if not isinstance(deployment, (vc.Embedded, Clustered)):
            # (on Galera behind HAProxy, one node's: the Galera counters
            # of each cell count instead)
            counters = DBCounters(deployment.cluster.db_url)
        sampler = Sampler(service_groups(deployment),
                          counters.read if counters else None)
        out['groups'] = list(sampler.groups)
        pids = {g: fn() for g, fn in sampler.groups.items()
                if not g.endswith('*')}
        announce(name, 'pids: %s' % ', '.join(
            '%s %s' % (g, '+'.join(map(str, p))) for g, p in pids.items()))
        volumes = make_volumes(deployment.url, max(args.clients))
        # warm up every path (imports, pools, first exports)
        warm = Client(deployment.url, 999)
        for kind in args.cycles:
            for _ in range(5):
                warm.cycle(kind, volumes['one'])
                warm.cycle(kind, volumes['distinct'][0])
        warm.http.close()
        out['errors'] += ['warm-up %s' % e for e in warm.errors]

        # what the services burn with nothing to do
        before = sampler.snapshot()
        t0 = time.perf_counter()
        time.sleep(args.idle_seconds)
        after = sampler.snapshot()
        idle = time.perf_counter() - t0
        out['idle'] = {g: v / idle for g, v in
                       sampler.delta(before, after).items()}
        out['idle_counts'] = {k: v / idle for k, v in
                              sampler.counts(before, after).items()}

        if isinstance(deployment, vc.Embedded):
            from cinder_lite.common import inproc_bus
            rpc_url, in_process = inproc_bus.URL, True
            db_url = cluster_mod.sqlite_url(os.path.join(
                deployment.state, 'bench-attach-floor.sqlite'))
        else:
            rpc_url = deployment.cluster.transport_url
            in_process = False
            db_url = deployment.cluster.db_url
        if not args.no_floor:
            out['floor'] = measure_floor(
                name, deployment, deployment.url, args, sampler, rpc_url,
                in_process, db_url,
                quorum=getattr(deployment, 'quorum', False))
            for key, res in out['floor'].items():
                out['errors'] += ['floor %s: %s' % ('/'.join(
                    str(k) for k in key if k is not None), e)
                    for e in res['errors']]

        for layout in args.layouts:
            if args.hold:
                announce(name, 'holding %g s before the %s-volume cells '
                         '(pids above)' % (args.hold, layout))
                time.sleep(args.hold)
            for kind in args.cycles:
                for clients in args.clients:
                    announce(name, '%s, %s volume(s), %d client(s), %g s'
                             % (kind, layout, clients, args.seconds))
                    retried = retries_of(deployment)
                    galera0 = galera_totals(deployment)
                    res = run_cell(deployment.url, kind, layout, clients,
                                   args.seconds, volumes, sampler)
                    if args.profile:
                        announce(name, 'the same cell again, profiled')
                        res['profile'], res['profiled_cpu'] = profiled_cell(
                            deployment.url, kind, layout, clients,
                            args.seconds, volumes, sampler, pids)
                    # (what a retry logs is written before the answer)
                    after = retries_of(deployment)
                    if after is not None:
                        res['retries'] = sum(after.values()) - \
                            sum(retried.values())
                    if galera0 is not None:
                        res['galera'] = {
                            k: v - galera0.get(k, 0)
                            for k, v in galera_totals(deployment).items()}
                    used = [volumes['one']] if layout == 'one' else \
                        volumes['distinct'][:clients]
                    res['leftovers'] = leftovers(deployment.url, used)
                    res['mode'] = name
                    out['cells'].append(res)
                    for e in res['errors'][:3]:
                        announce(name, 'error: %s' % e)
                    for e in res['leftovers'][:3]:
                        announce(name, 'error: %s' % e)
        if args.race_rounds:
            announce(name, 'race: %d clients on one plain volume, %d rounds'
                     % (args.race_clients, args.race_rounds))
            out['race'] = race(deployment.url, volumes['plain'],
                               args.race_clients, args.race_rounds)
            for r in out['race']:
                for e in r['errors'][:3]:
                    announce(name, 'error: %s' % e)
    except Exception as e:
        out['errors'].append('%s: %r' % (name, e))
        announce(name, 'failed: %r' % (e,))
    finally:
        if counters is not None:
            counters.close()
        failed = mode_errors(out)
        if failed:
            vc.print_service_errors(name, deployment)
        keep = args.keep or bool(failed)
        try:
            deployment.stop(keep=keep)
        except Exception as e:
            out['errors'].append('stop: %r' % (e,))
        if keep:
            announce(name, 'logs kept in %s' % deployment.workdir)
    return out


def bench_rbd(name, args, driver_rows):
    """The embedded mode on the RBD target: a single-node Ceph cluster
    of its own, the cycles as for the other targets, then
    ``--rbd-calls`` cycles of the driver's export calls timed in this
    process; the cluster is stopped at the end."""
    announce(name, 'starting a single-node Ceph cluster ...')
    try:
        cluster = ceph_cluster.Cluster(announce)
    except Exception as e:
        announce(name, 'failed: %r' % (e,))
        return {'name': name, 'cells': [], 'floor': {}, 'race': [],
                'errors': ['ceph: %r' % (e,)], 'groups': [], 'idle': {},
                'idle_counts': {}}
    RBD_CLUSTER[:] = [cluster]
    try:
        deployment = vc.Embedded(TARGETS['rbd']())
        deployment.ceph = cluster
        out = bench_mode(name, deployment, args)
        if args.rbd_calls:
            announce(name, 'driver calls: %d cycles without and %d with a '
                     'client' % (args.rbd_calls, args.rbd_calls))
            workdir = os.path.join(cluster.path, 'driver')
            try:
                driver_rows.extend(rbd_calls.run(cluster, args.rbd_calls,
                                                 workdir))
            except Exception as e:
                out['errors'].append('driver calls: %r' % (e,))
                announce(name, 'driver calls failed: %r' % (e,))
        return out
    finally:
        RBD_CLUSTER[:] = []
        cluster.stop()


def bench_clustered(args, skipped):
    """The clustered deployment with each of ``--writers``, on one Galera
    cluster (and RabbitMQ cluster) of this run's."""
    shared = ClusterServers(args.broker)
    try:
        shared.start()
    except Exception as e:
        skipped.append('clustered skipped: %r' % (e,))
        print(skipped[-1], file=sys.stderr)
        return []
    out = []
    try:
        for writers in args.writers:
            name = 'clustered/%s-%s' % (
                'w1' if writers == '1' else 'w3',
                'rabbit3q' if args.broker == 'cluster' else 'rabbit1')
            out.append(bench_mode(name, Clustered(shared, writers), args))
    finally:
        shared.destroy()
    return out


def cell_errors(cell):
    return [str(e) for e in cell['errors']] + cell['leftovers']


def mode_errors(out):
    errs = list(out['errors'])
    for cell in out['cells']:
        errs += cell_errors(cell)
    for r in out['race']:
        errs += r['errors']
    return errs


# -- output ----------------------------------------------------------------

def fmt_rate(x):
    return '-' if x != x else '%.1f' % x


def print_profile(m, c):
    """The cell's CPU per cycle of each profiled process by part of the
    stack (bench/profile.py), next to the floor's parts."""
    n = max(1, c['ops'])
    # (a process that held the GIL in none of the samples, such as an
    # idle volume node, has none)
    groups = [g for g in m['groups'] if c['profile'].get(g)]
    per, ms_per_sample = {}, {}
    for g in groups:
        share = profile.shares(c['profile'][g].parts)
        cpu = 1000.0 * c['cpu'].get(g, 0.0) / n
        per[g] = {p: share[p] * cpu for p in profile.PARTS}
        ms_per_sample[g] = cpu / sum(c['profile'][g].parts.values())
    floor = floor_cpu_parts(m['floor'], c['cycle'], c['layout'],
                            c['clients']) or {}
    print()
    print('%s, %s, %s volume(s), %d client(s): CPU ms per cycle by part '
          '(the shares of py-spy --gil samples of the cell run again, %s '
          'samples, of the CPU the unprofiled cell measured; floor = the '
          'same part of the composed floor; sampled, the services spent '
          '%.2f ms a cycle)' % (
              m['name'], c['cycle'], c['layout'], c['clients'], '+'.join(
                  str(sum(c['profile'][g].parts.values())) for g in groups),
              sum(c['profiled_cpu'].get(g, 0.0) for g in groups)))
    rows = []
    for p in profile.PARTS + ('all',):
        vals = [sum(per[g].values()) if p == 'all' else per[g][p]
                for g in groups]
        least = sum(floor.values()) if p == 'all' and floor else \
            floor.get(p)
        total = sum(vals)
        rows.append((p,) + tuple('%.2f' % v for v in vals) + (
            '%.2f' % total, '-' if least is None else '%.2f' % least,
            '-' if least is None else '%+.2f' % (total - least)))
    vc.print_table(('part',) + tuple(groups)
                   + ('services', 'floor', 'over floor'), rows)
    print('the largest calls of our code into each part (ms per cycle; '
          '"-" = no frame of ours below: the servers\' own loops)')
    rows = []
    for g in groups:
        top = sorted(((k, v) for k, v in c['profile'][g].callers.items()
                      if k[0] not in ('ours', 'other')),
                     key=lambda kv: -kv[1])[:8]
        rows += [(g, part, caller or '-', '%.2f' % (v * ms_per_sample[g]))
                 for (part, caller), v in top]
    vc.print_table(('process', 'part', 'called by', 'ms/cycle'), rows)


def print_results(modes, args):
    print_table = vc.print_table
    print()
    print('machine: %d CPUs, load average %s, python %s' % (
        os.cpu_count(), ' '.join('%.2f' % x for x in os.getloadavg()),
        sys.version.split()[0]))
    print('cycle one-step = POST /attachments (connector), os-complete, '
          'DELETE; two-step = POST, PUT (connector), os-complete, DELETE.')
    print('layout one = all clients on one multiattach volume; distinct = '
          'one multiattach volume per client.  Latencies in ms.')
    print('floor = composed machine floor of the same run (http, rpc, db '
          'below): cycles/s at the same concurrency, p50 = 1-client sum.')
    print()
    rows = []
    for m in modes:
        for c in m['cells']:
            f_rate, _ = composed_floor(m['floor'], c['cycle'], c['layout'],
                                       c['clients'])
            _, f_lat = composed_floor(m['floor'], c['cycle'], c['layout'], 1)
            rows.append((m['name'], c['cycle'], c['layout'], c['clients'],
                         c['ops'], '%.1f' % c['rate'], ms(pct(c['lat'], 50)),
                         ms(pct(c['lat'], 95)), ms(pct(c['lat'], 99)),
                         len(cell_errors(c)), fmt_rate(f_rate),
                         '%.0f%%' % (100.0 * c['rate'] / f_rate)
                         if f_rate == f_rate and f_rate else '-',
                         ms(f_lat)))
    print_table(('mode', 'cycle', 'layout', 'clients', 'cycles', 'ops/s',
                 'p50', 'p95', 'p99', 'errors', 'floor ops/s', 'of floor',
                 'floor p50'), rows)

    print()
    print('per request (ms, p50 / p99):')
    rows = []
    for m in modes:
        for c in m['cells']:
            rows.append((m['name'], c['cycle'], c['layout'], c['clients']) +
                        tuple('%s / %s' % (ms(pct(c['steps'][s], 50)),
                                           ms(pct(c['steps'][s], 99)))
                              if c['steps'][s] else '-' for s in STEPS))
    print_table(('mode', 'cycle', 'layout', 'clients') + STEPS, rows)

    for m in modes:
        if not m['cells']:
            continue
        groups = m['groups']
        services = [g for g in groups if g != 'bench' and
                    not g.endswith('*')]
        print()
        print('%s: CPU ms per cycle (utime+stime; * = whole shared server, '
              'other users included)' % m['name'])
        rows = []
        for c in m['cells']:
            n = max(1, c['ops'])
            per = {g: 1000.0 * c['cpu'].get(g, 0.0) / n for g in groups}
            total = sum(per[g] for g in services)
            machine = sum(per.values())
            least = floor_cpu(m['floor'], c['cycle'], c['layout'],
                              c['clients'])
            rows.append((c['cycle'], c['layout'], c['clients'], c['ops']) +
                        tuple('%.2f' % per[g] for g in services) +
                        ('%.2f' % total,
                         '-' if least != least else '%.2f (%.1fx)' % (
                             least, total / least),
                         '%.2f' % per['bench']) +
                        tuple('%.2f' % per[g] for g in groups
                              if g.endswith('*')) +
                        ('%.2f' % machine,
                         '%.2f' % (1000.0 * c['wall'] * os.cpu_count() / n)))
        print_table(('cycle', 'layout', 'clients', 'cycles') +
                    tuple(services) +
                    ('services', 'floor (services/floor)', 'bench') +
                    tuple(g for g in groups if g.endswith('*')) +
                    ('all listed', 'machine'), rows)
        for c in m['cells']:
            if c.get('profile'):
                print_profile(m, c)
        counted = [c for c in m['cells'] if c.get('counts')]
        if counted:
            print()
            print('%s: database server counts per cycle (server-wide, less '
                  'the idle rate measured before the cells)' % m['name'])
            kinds = sorted(counted[0]['counts'])
            print_table(('cycle', 'layout', 'clients', 'cycles') +
                        tuple(kinds), [
                (c['cycle'], c['layout'], c['clients'], c['ops']) +
                tuple('%.1f' % ((c['counts'][k] - m['idle_counts'].get(
                    k, 0.0) * c['wall']) / max(1, c['ops']))
                    for k in kinds) for c in counted])
        if m['idle']:
            print('idle, before the cells (CPU %% of one core): %s'
                  % ', '.join('%s %.1f' % (g, 100.0 * v)
                              for g, v in m['idle'].items()))
    print('(machine = CPUs x wall / cycles: the machine time one cycle '
          'took; "all listed" is what the processes above used of it; '
          'floor = the CPU the floor\'s parts below spend on the '
          "cycle's round trips: the API for the HTTP requests, both sides "
          'of the no-op calls, the client of the transactions)')

    rows = []
    for m in modes:
        for (part, layout, clients), f in sorted(
                m['floor'].items(),
                key=lambda kv: (('http', 'rpc', 'db').index(kv[0][0]),
                                LAYOUTS.index(kv[0][1]) if kv[0][1] else 0,
                                kv[0][2])):
            what = {'http': 'GET / (http.client)',
                    'rpc': 'RPC call no-op',
                    'db': 'DB cycle, 4 tx (%s)' % layout}[part]
            n = max(1, f['ops'])
            srv = f.get('server')
            rows.append((m['name'], what, clients, f['ops'],
                         '%.0f' % f['rate'], ms(pct(f['lat'], 50)),
                         ms(pct(f['lat'], 99)),
                         '%s %.3f' % (srv, 1000.0 * f['cpu'].get(srv, 0) / n)
                         if srv else 'in bench',
                         '%.3f' % (1000.0 * f['cpu'].get('bench', 0) / n),
                         len(f['errors']), f.get('retries', '-')))
    if rows:
        print()
        print('floor, same run: each part alone at the same concurrency '
              '(ops/s, latency ms, CPU ms per op)')
        print_table(('mode', 'part', 'clients', 'ops', 'ops/s', 'p50', 'p99',
                     'server CPU', 'bench CPU', 'errors', 'tx retried'),
                    rows)

    print_summary(modes)

    if any(m['race'] for m in modes):
        print()
        print('race: %d clients POST /attachments on ONE plain volume at '
              'once, distinct instance_uuids' % args.race_clients)
        rows = []
        for m in modes:
            for r in m['race']:
                rows.append((m['name'], r['round'], r['winners'],
                             r['refused'], r['other'],
                             ms(pct(r['lat'], 50)), ms(max(r['lat'])),
                             'OK' if not r['errors'] else 'FAIL'))
        print_table(('mode', 'round', 'won (200)', 'refused (400)', 'other',
                     'p50', 'max', 'exactly one'), rows)


def per_1000(count, cycles):
    return '-' if count is None else '%.1f' % (1000.0 * count / max(1,
                                                                    cycles))


def print_summary(modes):
    """Every mode's cells side by side: throughput, latency, errors, the
    services' CPU, the transactions run again and Galera's certification
    failures per 1000 cycles."""
    rows = []
    for m in modes:
        services = [g for g in m['groups'] if g != 'bench' and
                    not g.endswith('*')]
        for c in m['cells']:
            n = max(1, c['ops'])
            f_rate, _ = composed_floor(m['floor'], c['cycle'], c['layout'],
                                       c['clients'])
            galera = c.get('galera')
            rows.append((
                m['name'], c['cycle'], c['layout'], c['clients'], c['ops'],
                '%.1f' % c['rate'], ms(pct(c['lat'], 50)),
                ms(pct(c['lat'], 99)), len(cell_errors(c)),
                '%.1f' % sum(1000.0 * c['cpu'].get(g, 0.0) / n
                             for g in services),
                fmt_rate(f_rate), per_1000(c.get('retries'), c['ops']),
                per_1000(galera and galera['wsrep_local_cert_failures'],
                         c['ops']),
                per_1000(galera and galera['wsrep_local_bf_aborts'],
                         c['ops'])))
    if not rows:
        return
    print()
    print('side by side (services = CPU ms per cycle of the cinder_lite '
          'processes; retried = transactions db.api.run_writer ran again, '
          'cert fail / bf abort = Galera certification failures / brute-'
          'force aborts, all nodes; each per 1000 cycles)')
    vc.print_table(('mode', 'cycle', 'layout', 'clients', 'cycles',
                    'cycles/s',
                    'p50', 'p99', 'errors', 'services', 'floor cycles/s',
                    'retried', 'cert fail', 'bf abort'), rows)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--modes', '--deployments', dest='modes',
                   default='embedded,distributed',
                   help='comma separated: embedded, distributed, '
                        'clustered (Galera x3 behind HAProxy, two APIs '
                        'behind HAProxy; MariaDB client, as root)')
    p.add_argument('--writers', default='1,all',
                   help='clustered: Galera nodes taking writes, comma '
                        'separated (1: one writer and two backups, all: '
                        'the three)')
    p.add_argument('--broker', choices=('cluster', 'single'),
                   default='cluster',
                   help='clustered: three RabbitMQ nodes of one cluster '
                        'with quorum queues (cluster), or the machine\'s '
                        'RabbitMQ (single)')
    p.add_argument('--targets', default='local',
                   help='targets of the embedded mode\'s backend, comma '
                        'separated (local, nbd, iscsi, rbd: the RBD driver '
                        'on a single-node Ceph cluster the bench starts)')
    p.add_argument('--rbd-calls', type=int, default=20,
                   help='rbd target: cycles of the driver\'s create_export '
                        '/ remove_export timed in this process, each '
                        'without and with a connected client (0: none)')
    p.add_argument('--db', default='mysql,postgresql',
                   help='databases of the distributed mode, comma separated '
                        '(mysql, postgresql)')
    p.add_argument('--distributed-target', choices=('local', 'nbd'),
                   default='local',
                   help='target of the distributed mode\'s multiattach '
                        'node ma (nbd: a real export per connect on '
                        '127.0.0.1, as the clustered deployment\'s)')
    p.add_argument('--clients', default='1,8,32',
                   help='comma separated client counts')
    p.add_argument('--seconds', type=float, default=8.0,
                   help='duration of each cell')
    p.add_argument('--cycles', default='one-step,two-step')
    p.add_argument('--layouts', default='one,distinct')
    p.add_argument('--floor-seconds', type=float, default=1.5,
                   help='duration of each floor measurement')
    p.add_argument('--no-floor', action='store_true')
    p.add_argument('--idle-seconds', type=float, default=2.0,
                   help='idle CPU sample of the services before the cells')
    p.add_argument('--race-clients', type=int, default=32)
    p.add_argument('--race-rounds', type=int, default=5)
    p.add_argument('--hold', type=float, default=0.0,
                   help='seconds to pause before each layout\'s cells (to '
                        'attach a profiler to the printed pids)')
    p.add_argument('--profile', action='store_true',
                   help='sample each service process with py-spy during '
                        'every cell and print its CPU per cycle by part '
                        '(HTTP, RPC, SQL, taskflow, logging, ..., our own '
                        'code; bench/profile.py)')
    p.add_argument('--keep', action='store_true',
                   help='keep work directories (kept anyway on errors)')
    args = p.parse_args(argv)

    def csv(value, allowed, what):
        items = [x.strip() for x in value.split(',') if x.strip()]
        for x in items:
            if x not in allowed:
                p.error('unknown %s %r (one of %s)' % (what, x,
                                                       ', '.join(allowed)))
        return items
    args.modes = csv(args.modes, ('embedded', 'distributed', 'clustered'),
                     'mode')
    args.writers = csv(args.writers, ('1', 'all'), 'writers')
    args.db = csv(args.db, cluster_mod.KINDS, 'database')
    args.targets = csv(args.targets, tuple(TARGETS), 'target')
    args.cycles = csv(args.cycles, CYCLES, 'cycle')
    args.layouts = csv(args.layouts, LAYOUTS, 'layout')
    args.clients = [int(c) for c in args.clients.split(',') if c.strip()]
    if not args.clients or min(args.clients) < 1:
        p.error('--clients needs positive counts')
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['--rpc-server']:
        rest = argv[1:]
        quorum = rest[:1] == ['--quorum']
        rpc_server_main(*rest[quorum:quorum + 3], quorum=quorum)
        return 0
    args = parse_args(argv)
    started = time.perf_counter()
    load0 = os.getloadavg()
    modes, skipped, driver_rows = [], [], []
    for mode in args.modes:
        if mode == 'embedded':
            for target in args.targets:
                name = 'embedded' if target == 'local' \
                    else 'embedded/%s' % target
                if target == 'rbd':
                    modes.append(bench_rbd(name, args, driver_rows))
                    continue
                modes.append(bench_mode(name, vc.Embedded(TARGETS[target]()),
                                        args))
            continue
        if mode == 'clustered':
            modes += bench_clustered(args, skipped)
            continue
        for kind in args.db:
            name = 'distributed/%s' % ('mariadb' if kind == 'mysql'
                                       else kind)
            try:
                cluster_mod.check_services(kind)
            except cluster_mod.ServiceUnavailable as e:
                skipped.append('%s skipped: %s' % (name, e))
                print(skipped[-1], file=sys.stderr)
                continue
            deployment = vc.Distributed(kind)
            if args.distributed_target == 'nbd':
                # exports as the clustered deployment's volume services
                # make them
                deployment.cluster.node_options = {'ma': _nbd_backend()}
                name += '/nbd'
            modes.append(bench_mode(name, deployment, args))

    print_results(modes, args)
    if driver_rows:
        rbd_calls.print_rows(driver_rows)
    print()
    print('load average at start %s; run took %.0f s' % (
        ' '.join('%.2f' % x for x in load0),
        time.perf_counter() - started))
    for line in skipped:
        print(line)
    errors = [(m['name'], e) for m in modes for e in mode_errors(m)]
    if errors:
        print()
        print('%d ERROR(S); the first ones:' % len(errors))
        for name, e in errors[:8]:
            print('  [%s] %s' % (name, e))
        return 1
    print('no errors')
    return 0


if __name__ == '__main__':
    sys.exit(main())
