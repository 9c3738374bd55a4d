"""A distributed cinder_lite across network namespaces of the test's own
(tests/harness/netns.py), one namespace per node, so that faults can be
made per node:

* ``infra``   -- a private PostgreSQL (or MariaDB) and a private RabbitMQ
  (tests/harness/servers.py), listening on the node's address only;
* ``api``     -- cinder-lite-api and cinder-lite-scheduler;
* ``vol1``, ``vol2`` -- cinder-lite-volume ``node-vol1@aa`` and
  ``node-vol2@aa``, the members of active-active cluster ``aa`` over one
  volumes directory (the shared storage: both are on this machine), each
  exporting over NBD on its own node's address;
* ``compute`` -- a compute node (tests/harness/netns_host.py) attaching
  through the API with cinder_lite's connector and doing I/O over NBD
  to the volume nodes' exports;
* ``admin``   -- where the test's own API client connects from.

Every process runs inside its node's namespace (``ip netns exec``); the
test process reaches the API only through sockets made inside ``admin``
(``client()``) and the compute node only through its pipes.  Each
process logs to ``<workdir>/<name>.log``.  ``stop()`` ends the services
by pid (SIGTERM, then SIGKILL), the servers, then whatever is left in the
namespaces, and deletes them; it returns what it had to end that way.

This module imports no pytest (tests/integration/test_netns_faults.py
is the pytest side).
"""
import json
import os
import shutil
import subprocess
import tempfile
import threading

from tests.harness import cluster as cluster_mod
from tests.harness import netns
from tests.harness import servers
from tests.harness import stack
from tests.harness import util

NODES = ('infra', 'api', 'vol1', 'vol2', 'compute', 'admin')
BACKEND = 'aa'
CLUSTER = 'aa'
MEMBERS = {'vol1': 'node-vol1', 'vol2': 'node-vol2'}
POOL = '%s@%s#%s' % (CLUSTER, BACKEND, BACKEND)
API_PORT = 8776
NBD_PORTS = '10809-10899'
DATABASE = 'cinder_lite'
PROJECT = cluster_mod.PROJECT
START_TIMEOUT = 120.0
# Erlang's port mapper, which the broker starts inside its namespace and
# leaves running by design: not a process left behind by cinder_lite
BY_DESIGN = {'epmd'}
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class Deployment:
    """cinder_lite on the nodes of ``NODES``; ``kind`` is the database
    (``'postgresql'`` or ``'mysql'``).  ``heartbeat_timeout`` is
    oslo.messaging's ``heartbeat_timeout_threshold``: how long the broker
    and the services take to give up a connection that went silent."""

    def __init__(self, kind='postgresql', workdir=None, report_interval=1,
                 service_down_time=5, heartbeat_timeout=10,
                 extra_default=None, keep_workdir=False):
        self.kind = kind
        self.report_interval = report_interval
        self.service_down_time = service_down_time
        self.heartbeat_timeout = heartbeat_timeout
        self.extra_default = extra_default or {}
        self.keep_workdir = keep_workdir
        self._own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix='cinder-lite-netns-')
        self.net = netns.Network(NODES)
        self.db_server = self.broker = None
        self.processes = {}
        self.hosts = []
        self.db_url = None
        self.leftovers = {}

    # -- addresses and config -------------------------------------------------
    @property
    def url(self):
        return 'http://%s:%d' % (self.net.address['api'], API_PORT)

    def member_host(self, node):
        return '%s@%s' % (MEMBERS[node], BACKEND)

    def member_of_address(self, address):
        """The volume node whose address ``address`` is."""
        return next(n for n in MEMBERS if self.net.address[n] == address)

    def conf(self, name):
        return os.path.join(self.workdir, '%s.conf' % name)

    def _write_configs(self):
        default = {
            'transport_url': self.broker.url,
            'state_path': os.path.join(self.workdir, 'state'),
            'credential_key_file': os.path.join(self.workdir,
                                                'credential.key'),
            'osapi_volume_listen': self.net.address['api'],
            'osapi_volume_listen_port': API_PORT,
            'report_interval': self.report_interval,
            'service_down_time': self.service_down_time,
            'control_exchange': 'cinder-lite-netns',
            'host': 'node-ctl',
            'quota_volumes': -1,
            'quota_gigabytes': -1,
            # noauth on the namespace network's address: only the
            # deployment's own nodes can reach it
            'allow_noauth_off_loopback': True,
        }
        default.update(self.extra_default)
        cluster_mod.write_conf(self.conf('common'), {
            'DEFAULT': default,
            'database': {'connection': self.db_url},
            'oslo_messaging_rabbit': {
                'heartbeat_timeout_threshold': self.heartbeat_timeout}})
        for node, host in MEMBERS.items():
            cluster_mod.write_conf(self.conf(node), {
                'DEFAULT': {
                    'host': host, 'enabled_backends': BACKEND,
                    'cluster': CLUSTER,
                    'state_path': os.path.join(self.workdir,
                                               'state-%s' % node)},
                BACKEND: {
                    'volume_backend_name': BACKEND,
                    'target_protocol': 'nbd',
                    'target_ip_address': self.net.address[node],
                    'target_port_range': NBD_PORTS,
                    # the shared storage
                    'volumes_dir': os.path.join(self.workdir, 'volumes')}})

    def argv(self, node, module, *confs):
        argv = [cluster_mod.python(), '-m', module,
                '--config-file', self.conf('common')]
        for name in confs:
            argv += ['--config-file', self.conf(name)]
        return self.net.argv(node, argv)

    # -- lifecycle ------------------------------------------------------------
    def start(self, timeout=START_TIMEOUT):
        try:
            self.net.create()
            self._start_servers()
            with netns.entered(self.net.ns['admin']):
                self.db_url = cluster_mod.create_database(
                    self.kind, DATABASE, self.db_server.url)
                self._write_configs()
                self._sync_database()
            for name, node, module, confs in (
                    ('scheduler', 'api', 'cinder_lite.cmd.scheduler', ()),
                    ('vol1', 'vol1', 'cinder_lite.cmd.volume', ('vol1',)),
                    ('vol2', 'vol2', 'cinder_lite.cmd.volume', ('vol2',)),
                    ('api', 'api', 'cinder_lite.cmd.api', ())):
                self.processes[name] = cluster_mod.Process(
                    name, self.argv(node, module, *confs),
                    os.path.join(self.workdir, '%s.log' % name),
                    self.workdir).start()
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _sync_database(self):
        # (what ``cinder-lite-manage db sync`` does, in this thread)
        from cinder_lite.db import api as db_api
        from cinder_lite.db import migration
        engine = db_api.create_engine(self.db_url)
        try:
            migration.upgrade(engine=engine)
        finally:
            engine.dispose()

    def _start_servers(self):
        infra = self.net.address['infra']
        where = os.path.join(self.workdir, 'servers')
        os.makedirs(where)
        self.db_server = servers.DATABASES[self.kind](
            where, host=infra, netns=self.net.ns['infra'],
            clients='%s.0/24' % self.net.subnet)
        self.broker = servers.RabbitMQ(where, host=infra,
                                       netns=self.net.ns['infra'])
        # the broker boots while the database does
        failed = []

        def _broker():
            try:
                self.broker.start()
            except BaseException as e:
                failed.append(e)
        thread = threading.Thread(target=_broker)
        thread.start()
        try:
            self.db_server.start()
        finally:
            thread.join()
        if failed:
            raise failed[0]

    def expected_services(self):
        return {('cinder-scheduler', 'node-ctl')} | {
            ('cinder-volume', self.member_host(n)) for n in MEMBERS}

    def services(self, api=None):
        """os-services (3.7, with clusters) as the admin client sees it:
        {(binary, host): service}, or None while the API does not
        answer."""
        api = api or self.client()
        try:
            resp = api.get('/os-services', headers={
                'OpenStack-API-Version': 'volume 3.7'})
        except Exception:
            return None
        if resp.status_code != 200:
            return None
        return {(s['binary'], s['host']): s
                for s in resp.json()['services']}

    def wait_ready(self, timeout=START_TIMEOUT):
        api = self.client()
        expected = self.expected_services()

        def _ready():
            self.check_alive()
            found = self.services(api)
            return found is not None and all(
                key in found and found[key]['state'] == 'up'
                for key in expected)
        try:
            util.wait_for(_ready, timeout, interval=0.2,
                          what='API and %d services up on %s'
                          % (len(expected), self.url))
        except AssertionError as e:
            raise cluster_mod.ClusterError('%s\n%s' % (e, self.logs()))

    def check_alive(self):
        dead = ['%s (rc %s)' % (p.name, p.popen.returncode)
                for p in self.processes.values() if not p.alive()]
        if dead:
            raise cluster_mod.ClusterError('%s exited unexpectedly:\n%s'
                                           % (', '.join(dead), self.logs()))

    def client(self):
        """An admin client of the API, connecting from the admin node."""
        api = stack.Client(self.url, project=PROJECT)
        api.session.close()
        api.session = self.net.session('admin')
        return api

    def compute_host(self, name='compute-1', node='compute'):
        """The compute node's agent (tests/harness/netns_host.py)."""
        host = ComputeHost(self, node, name)
        self.hosts.append(host)
        return host

    def manage(self, node, *args, timeout=120):
        """cinder-lite-manage run on ``node`` (a volume node reads its
        own config too); the CompletedProcess (text)."""
        confs = (node,) if node in MEMBERS else ()
        argv = self.argv(node, 'cinder_lite.cmd.manage', *confs) + list(args)
        return subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout, cwd=self.workdir)

    def exports(self, node):
        """Pids of the nbdkit processes (one per NBD export) running on
        ``node``."""
        return sorted(pid for pid, name in self.net.processes(node).items()
                      if name == 'nbdkit')

    def logs(self, lines=cluster_mod.LOG_TAIL_LINES):
        out = []
        for name, proc in self.processes.items():
            out.append('----- %s (pid %s) %s -----\n%s' % (
                name, proc.pid, proc.log_path,
                cluster_mod.tail(proc.log_path, lines)))
        for host in self.hosts:
            out.append('----- compute host %s -----\n%s' % (
                host.name, cluster_mod.tail(host.log_path, lines)))
        return '\n'.join(out)

    def stop(self, timeout=cluster_mod.STOP_TIMEOUT):
        """Stop everything; returns {name: exit code} of the services.
        ``leftovers`` then holds the processes that were still inside the
        namespaces after the services and servers stopped (but those of
        BY_DESIGN), which it ended."""
        codes = {}
        try:
            for host in self.hosts:
                host.close()
            for proc in self.processes.values():
                proc.terminate()
            for name, proc in self.processes.items():
                codes[name] = proc.stop(timeout)
            for server in (self.broker, self.db_server):
                if server is not None:
                    try:
                        server.destroy()
                    except Exception as e:
                        codes[type(server).__name__] = e
        finally:
            self.leftovers = {pid: name for pid, name
                              in self.net.destroy().items()
                              if name not in BY_DESIGN}
            if self._own_workdir and not self.keep_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
        return codes

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class ComputeHost:
    """The agent process of a compute node; ``call(op, **args)`` sends one
    command and returns its answer (RuntimeError on an error answer)."""

    def __init__(self, deployment, node, name):
        self.name = name
        self.node = node
        self.log_path = os.path.join(deployment.workdir,
                                     'host-%s.log' % name)
        log = open(self.log_path, 'ab')
        argv = deployment.net.argv(node, [
            cluster_mod.python(), '-m', 'tests.harness.netns_host',
            '--endpoint', deployment.url + '/v3', '--project', PROJECT,
            '--host', name, '--ip', deployment.net.address[node]])
        try:
            self.popen = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log, cwd=REPO, text=True, bufsize=1,
                env=dict(os.environ, PYTHONUNBUFFERED='1'))
        finally:
            log.close()
        self._lock = threading.Lock()

    def call(self, op, **args):
        with self._lock:
            self.popen.stdin.write(json.dumps(dict(args, op=op)) + '\n')
            self.popen.stdin.flush()
            line = self.popen.stdout.readline()
        if not line:
            raise RuntimeError('compute host %s exited (rc %s): %s' % (
                self.name, self.popen.poll(), cluster_mod.tail(
                    self.log_path)))
        reply = json.loads(line)
        if 'error' in reply:
            raise RuntimeError('compute host %s: %s failed: %s\n%s' % (
                self.name, op, reply['error'], reply.get('trace', '')))
        return reply

    def attach(self, volume_id, mode=None):
        return self.call('attach', volume_id=volume_id,
                         mode=mode)['attachment']

    def writes(self, attachment_id):
        """(completed writes, error) of the writer of ``attachment_id``."""
        state = self.call('progress')['writers'][attachment_id]
        return state['writes'], state['error']

    def close(self):
        if self.popen.poll() is None:
            try:
                self.popen.stdin.close()
            except OSError:
                pass
            try:
                self.popen.wait(30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
