"""The control plane laid out as clouds run it, on this machine: a
Galera cluster behind HAProxy, two API processes behind another HAProxy,
the scheduler and two volume services of one cluster.

``Deployment(galera, workdir).start()``, given a started
``tests.harness.galera.GaleraCluster``:

* HAProxy (TCP) in front of the three Galera nodes, every node a writer
  (``balance roundrobin``: the services' connections, and so their
  writes, spread over all three; ``db_writers=1`` for one writer and two
  backups, as OpenStack's deployment tools lay it out);
* the usual cluster (tests/harness/cluster.py) with its database
  through that HAProxy: API ``api`` (host ``node-ctl``), the scheduler,
  and volume services ``ma`` (``node-ma@ma``) and ``ma2``
  (``node-ma2@ma``), both members of cluster ``aa`` over one volumes
  directory, each exporting over NBD on an address and a port range of
  its own;
* a second API process ``api2`` (host ``node-ctl2``), its own port;
* with ``extra_nodes`` more volume services (as ``cluster.NODES``:
  ``noma`` for the stateful fuzzer), with ``backup=True`` a backup
  service (POSIX store);
* HAProxy (HTTP) in front of both APIs (tests/harness/haproxy.py's
  ``APIProxy``): ``url`` is the address clients use;
* the bus: the machine's RabbitMQ (a vhost of its own), or with
  ``rabbit_url`` a broker of the caller's (``servers.RabbitCluster``'s
  URL naming its three nodes; ``extra_sections`` then sets
  ``[oslo_messaging_rabbit] rabbit_quorum_queue``).

``kill_api(name)`` ends one API process with SIGKILL and
``restart_api(name)`` starts it again and waits until HAProxy sends it
requests.  ``retries()`` counts, per process, the transactions
``db.api.run_writer`` ran again (its ``deadlock_retries()`` counter
lives in each process; every retry it counts is logged once at
WARNING, and the logs are what a test can read); ``galera_counters()``
is what each Galera node committed and refused.  ``stop()`` ends
everything it started by pid.  The Galera cluster is the caller's.
"""
import collections
import os
import re
import time

import requests

from tests.harness import cluster as cluster_mod
from tests.harness import haproxy as haproxy_mod
from tests.harness import util

ADDRESSES = {'ma': '127.0.0.3', 'ma2': '127.0.0.4'}
MEMBERS = {'node-ma@ma': 'ma', 'node-ma2@ma': 'ma2'}
API_PROCESSES = ('api', 'api2')
RETRY = re.compile(r'database (deadlock|connection lost before the '
                   r'commit) \(attempt \d+ of \d+\)')
READY_TIMEOUT = 60.0


class Deployment:

    def __init__(self, galera, workdir, db_writers=None, extra_default=None,
                 keep_workdir=False, extra_nodes=None, backup=False,
                 service_down_time=3, rabbit_url=None, extra_sections=None):
        self.galera = galera
        self.rabbit_url = rabbit_url
        self.extra_sections = extra_sections or {}
        # more volume nodes (as cluster.NODES), a backup service
        self.extra_nodes = extra_nodes or {}
        self.backup = backup
        self.service_down_time = service_down_time
        self.workdir = workdir
        self.db_writers = db_writers
        self.extra_default = extra_default or {}
        self.keep_workdir = keep_workdir
        self.db_proxy = self.api_proxy = self.cluster = None
        self.started_in = None

    @property
    def url(self):
        return self.api_proxy.url

    def _cluster(self):
        nbd = {'target_protocol': 'nbd'}
        nodes = {}
        for name, address in ADDRESSES.items():
            start = int(util.free_range(50).partition('-')[0])
            nodes[name] = ('node-%s' % name, 'ma', dict(
                nbd, target_ip_address=address,
                target_port_range='%d-%d' % (start, start + 49)))
        # the second member: its own state (exports), the first member's
        # volumes directory (the shared storage)
        nodes['ma2'][2]['volumes_dir'] = '{workdir}/state/volumes/ma'
        nodes.update(self.extra_nodes)
        self.api2_port = util.free_port()
        backup = cluster_mod.posix_backup() if self.backup else {}
        return cluster_mod.Cluster(
            'mysql', workdir=os.path.join(self.workdir, 'services'),
            keep_workdir=self.keep_workdir, nodes=nodes,
            server_url=self.db_proxy.url('cinder', self.galera.password),
            extra_default=self.extra_default,
            rabbit_url=self.rabbit_url, extra_sections=self.extra_sections,
            service_down_time=self.service_down_time,
            backups=backup.get('backups'),
            process_sections=dict(backup.get('process_sections', {}), **{
                'ma': {'DEFAULT': {'cluster': 'aa'}},
                'ma2': {'DEFAULT': {'cluster': 'aa',
                                    'state_path': '{workdir}/state-ma2'}},
                'api2': {'DEFAULT': {
                    'host': 'node-ctl2',
                    'osapi_volume_listen_port': self.api2_port}}}))

    def start(self):
        began = time.monotonic()
        why = haproxy_mod.available()
        if why:
            raise cluster_mod.ServiceUnavailable('HAProxy: %s' % why)
        try:
            self.db_proxy = haproxy_mod.HAProxy(
                self.workdir, [n.port for n in self.galera.nodes],
                writers=self.db_writers, name='haproxy-galera').start()
            os.makedirs(os.path.join(self.workdir, 'services'),
                        exist_ok=True)
            self.cluster = self._cluster()
            self.cluster.start()
            self.cluster.start_process('api2')
            self.api_proxy = haproxy_mod.APIProxy(
                self.workdir, [self.cluster.port, self.api2_port]).start()
            for name in API_PROCESSES:
                self.wait_served_by(name)
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began
        return self

    def port_of(self, name):
        return self.cluster.port if name == 'api' else self.api2_port

    def wait_served_by(self, name, timeout=READY_TIMEOUT):
        """Until API process ``name`` answers and HAProxy's checks count
        it up (two passes of them after it answers)."""
        url = 'http://127.0.0.1:%d/healthcheck' % self.port_of(name)

        def _answers():
            self.cluster.check_alive()
            try:
                return requests.get(url, timeout=2).status_code == 200
            except requests.RequestException:
                return False
        try:
            util.wait_for(_answers, timeout, interval=0.2,
                          what='%s answering' % name)
        except AssertionError as e:
            raise cluster_mod.ClusterError('%s\n%s' % (
                e, self.cluster.logs()))
        time.sleep(3 * haproxy_mod.CHECK_INTER_MS / 1000.0)

    def kill_api(self, name):
        """SIGKILL API process ``name`` (a crash)."""
        return self.cluster.kill(name)

    def restart_api(self, name):
        self.cluster.start_process(name)
        self.wait_served_by(name)

    def retries(self):
        """{process name: transactions run again}, from the whole of each
        log (every run of a restarted process)."""
        counts = collections.Counter()
        for name, proc in self.cluster.processes.items():
            try:
                with open(proc.log_path, errors='replace') as f:
                    counts[name] = len(RETRY.findall(f.read()))
            except OSError:
                pass
        return dict(counts)

    def galera_counters(self):
        """{node name: {counter: value}} of each live Galera node: the
        write transactions it committed (``wsrep_local_commits``: where
        the writes went), those refused at certification
        (``wsrep_local_cert_failures``) and those aborted by a
        replicated one (``wsrep_local_bf_aborts``)."""
        counters = {}
        for node in self.galera.nodes:
            st = node.alive() and node.status()
            if st:
                counters[node.name] = {key: int(st.get(key, 0)) for key in (
                    'wsrep_local_commits', 'wsrep_local_cert_failures',
                    'wsrep_local_bf_aborts')}
        return counters

    @staticmethod
    def counters_since(before, after):
        """``galera_counters()`` ``after`` less ``before``, per node."""
        return {node: {key: value - before.get(node, {}).get(key, 0)
                       for key, value in counts.items()}
                for node, counts in after.items()}

    def check_alive(self):
        self.cluster.check_alive()
        for proxy in (self.db_proxy, self.api_proxy):
            if not proxy.alive():
                raise cluster_mod.ClusterError('%s exited: %s'
                                               % (proxy.cfg, proxy.tail()))

    def logs(self):
        """The services' log tails, then HAProxy's."""
        out = [self.cluster.logs()] if self.cluster else []
        for proxy in (self.db_proxy, self.api_proxy):
            if proxy is not None:
                out.append('----- %s -----\n%s'
                           % (proxy.log, proxy.tail()))
        return '\n'.join(out)

    def stop(self):
        """Stop the API proxy, the services, the database proxy, by pid;
        returns the services' unclean exits ({name: code})."""
        bad = {}
        try:
            if self.api_proxy is not None:
                self.api_proxy.stop()
            if self.cluster is not None:
                try:
                    bad = self.cluster.unclean_exits(
                        self.cluster.stop_processes())
                finally:
                    self.cluster.cleanup()
        finally:
            if self.db_proxy is not None:
                self.db_proxy.stop()
        return bad
