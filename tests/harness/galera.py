"""A three-node MariaDB Galera cluster of the test's own, on loopback.

Clouds run their control plane's database as a Galera cluster, where row
locks are not replicated: two transactions on two nodes that lock the
same row both get their lock, and the one that commits second fails its
certification with a deadlock (MariaDB error 1213).  The tests that
write through several nodes at once need such a cluster; this module
starts one.

``GaleraCluster(workdir).start()`` writes one ``my.cnf`` per node (its
datadir, socket, client port, Galera group port, IST and rsync SST
ports, every port a free one), makes each datadir with
``mariadb-install-db``, starts node 1 with ``--wsrep-new-cluster`` and
nodes 2 and 3 joining it by state transfer (rsync), and waits until all
three are ``Synced`` in a cluster of size 3.  The nodes run as the
``mysql`` user and their directories belong to it: run as root, the
rsync state transfer of a joiner fails ("Permission denied") and it
aborts.  ``root`` keeps its local (socket) login; clients connect over
TCP as ``cinder`` with a password, made on node 1 before the others
join (they receive it with the state transfer).

``nodes[i].url`` is node i's server URL (no database name), as
``tests.harness.cluster.Cluster(server_url=...)`` takes it; ``stop()``
ends every mariadbd by pid (SIGTERM, SIGKILL after a bound) and
``destroy()`` also removes the directories.  ``kill(i)`` and
``restart(i)`` take one node away (SIGKILL, as a crash) and back (it
rejoins by IST or SST).

Requires Debian's ``galera-4`` (``/usr/lib/galera/libgalera_smm.so``),
``mariadb-server`` and ``rsync``: ``available()`` says what is missing.
"""
import os
import secrets
import shutil
import signal
import subprocess
import time
import uuid

from tests.harness import servers
from tests.harness import util

PROVIDER = '/usr/lib/galera/libgalera_smm.so'
MARIADBD = '/usr/sbin/mariadbd'
SIZE = 3
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
USER = 'cinder'


def available():
    """None when a Galera cluster can be started here, else why not."""
    for path in (PROVIDER, MARIADBD):
        if not os.path.exists(path):
            return '%s is missing (apt-get install galera-4 mariadb-server)' \
                % path
    if shutil.which('rsync') is None:
        return 'rsync is missing (the state transfer uses it)'
    if os.geteuid() != 0:
        return 'the nodes are started as the mysql user: needs root'
    return None


class Node:
    """One mariadbd of the cluster."""

    def __init__(self, cluster, index):
        self.cluster = cluster
        self.index = index
        self.name = 'node%d' % index
        self.dir = servers._owned_dir(
            os.path.join(cluster.dir, self.name), 'mysql')
        self.data = os.path.join(self.dir, 'data')
        self.socket = os.path.join(self.dir, 'mysqld.sock')
        self.cnf = os.path.join(self.dir, 'my.cnf')
        self.log = os.path.join(self.dir, 'mariadbd.log')
        # (three bootstraps sharing /tmp collide on their temporary
        # tables' names: each node has its own)
        self.tmp = servers._owned_dir(os.path.join(self.dir, 'tmp'),
                                      'mysql')
        self.port = util.free_port()
        self.group_port = util.free_port()
        self.ist_port = util.free_port()
        self.sst_port = util.free_port()
        self.proc = None

    @property
    def url(self):
        return 'mysql+pymysql://%s:%s@127.0.0.1:%d' % (
            USER, self.cluster.password, self.port)

    def write_cnf(self):
        members = ','.join('127.0.0.1:%d' % n.group_port
                           for n in self.cluster.nodes)
        provider_options = ';'.join((
            'gmcast.listen_addr=tcp://127.0.0.1:%d' % self.group_port,
            'ist.recv_addr=127.0.0.1:%d' % self.ist_port,
            'gcache.size=64M',
            # loopback: no need for the WAN timeouts
            'evs.suspect_timeout=PT5S', 'evs.inactive_timeout=PT10S'))
        options = [
            ('datadir', self.data), ('socket', self.socket),
            ('tmpdir', self.tmp),
            ('port', self.port), ('bind-address', '127.0.0.1'),
            ('pid-file', os.path.join(self.dir, 'mariadbd.pid')),
            ('log-error', self.log), ('skip-name-resolve', None),
            ('innodb_buffer_pool_size', '32M'),
            ('innodb_log_file_size', '16M'),
            ('innodb_flush_log_at_trx_commit', '2'),
            ('max_connections', '300'),
            ('binlog_format', 'ROW'),
            ('default_storage_engine', 'InnoDB'),
            ('innodb_autoinc_lock_mode', '2'),
            ('wsrep_on', 'ON'), ('wsrep_provider', PROVIDER),
            ('wsrep_cluster_name', self.cluster.name),
            ('wsrep_cluster_address', 'gcomm://' + members),
            ('wsrep_node_name', self.name),
            ('wsrep_node_address', '127.0.0.1'),
            ('wsrep_provider_options', '"%s"' % provider_options),
            ('wsrep_sst_method', 'rsync'),
            ('wsrep_sst_receive_address', '127.0.0.1:%d' % self.sst_port),
            ('wsrep_slave_threads', '2'),
        ]
        lines = ['[mysqld]'] + [
            key if value is None else '%s = %s' % (key, value)
            for key, value in options]
        with open(self.cnf, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        shutil.chown(self.cnf, 'mysql', 'mysql')

    def install(self):
        return subprocess.Popen(
            ['mariadb-install-db', '--no-defaults', '--user=mysql',
             '--datadir=' + self.data,
             '--auth-root-authentication-method=normal', '--skip-test-db'],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=dict(os.environ, TMPDIR=self.tmp))

    def start(self, new_cluster=False):
        if self.alive():
            raise RuntimeError('%s is already running (pid %d)'
                               % (self.name, self.proc.pid))
        argv = [MARIADBD, '--defaults-file=' + self.cnf]
        if new_cluster:
            argv.append('--wsrep-new-cluster')
        out = open(os.path.join(self.dir, 'stdout.log'), 'ab')
        try:
            # as mysql from the start (not root dropping to it): the SST
            # scripts it runs inherit the user
            self.proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, cwd=self.dir, user='mysql',
                group='mysql', extra_groups=[], start_new_session=True)
        finally:
            out.close()
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def connect(self, **kwargs):
        """A pymysql connection as root over the node's socket."""
        import pymysql
        return pymysql.connect(unix_socket=self.socket, user='root',
                               autocommit=True, connect_timeout=3, **kwargs)

    def status(self):
        """wsrep status variables (name -> value), None while the node
        does not answer."""
        try:
            conn = self.connect()
        except Exception:
            return None
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep_%'")
                return dict(cur.fetchall())
        except Exception:
            return None
        finally:
            conn.close()

    def synced(self, size=None):
        st = self.status()
        if not st or st.get('wsrep_local_state_comment') != 'Synced' or \
                st.get('wsrep_ready') != 'ON':
            return False
        return size is None or int(st.get('wsrep_cluster_size', 0)) == size

    def tail(self, chars=3000):
        text = ''
        for path in (self.log, os.path.join(self.dir, 'stdout.log')):
            try:
                with open(path, errors='replace') as f:
                    text += f.read()[-chars:]
            except OSError:
                pass
        return text

    def stop(self, timeout=STOP_TIMEOUT):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        return self.proc.returncode

    def kill(self):
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


class GaleraCluster:
    """Three Galera nodes under ``workdir``."""

    def __init__(self, workdir, size=SIZE):
        self.name = 'cl-test-%s' % uuid.uuid4().hex[:8]
        self.dir = servers._owned_dir(os.path.join(workdir, 'galera'),
                                      'mysql')
        self.password = secrets.token_hex(12)
        self.nodes = []
        for index in range(1, size + 1):
            self.nodes.append(Node(self, index))
        for node in self.nodes:
            node.write_cnf()
        self.started_in = None

    @property
    def urls(self):
        return [n.url for n in self.nodes]

    def _wait(self, predicate, what, nodes):
        def _check():
            for node in nodes:
                if not node.alive():
                    raise RuntimeError('%s exited (%s) while %s:\n%s' % (
                        node.name, node.proc.returncode, what,
                        node.tail()))
            return predicate()
        try:
            util.wait_for(_check, START_TIMEOUT, interval=0.2, what=what)
        except AssertionError as e:
            raise RuntimeError('%s\n%s' % (e, '\n'.join(
                '--- %s\n%s' % (n.name, n.tail()) for n in nodes)))

    def start(self):
        began = time.monotonic()
        installs = [(n, n.install()) for n in self.nodes]
        for node, proc in installs:
            out, _ = proc.communicate(timeout=180)
            if proc.returncode != 0:
                raise RuntimeError('mariadb-install-db for %s failed: %s'
                                   % (node.name, out[-2000:]))
        try:
            first = self.nodes[0]
            first.start(new_cluster=True)
            self._wait(lambda: first.synced(), 'node1 bootstrapping',
                       [first])
            conn = first.connect()
            try:
                with conn.cursor() as cur:
                    cur.execute("CREATE USER '%s'@'127.0.0.1' IDENTIFIED "
                                "BY '%s'" % (USER, self.password))
                    cur.execute("GRANT ALL ON *.* TO '%s'@'127.0.0.1' "
                                "WITH GRANT OPTION" % USER)
            finally:
                conn.close()
            for node in self.nodes[1:]:
                node.start()
            size = len(self.nodes)
            self._wait(lambda: all(n.synced(size) for n in self.nodes),
                       'the cluster of %d synced' % size, self.nodes)
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began
        return self

    def kill(self, index):
        """SIGKILL node ``index`` (0-based), as a crash."""
        self.nodes[index].kill()

    def restart(self, index):
        """Start node ``index`` again; it rejoins and syncs."""
        node = self.nodes[index]
        node.start()
        self._wait(lambda: all(n.synced(len(self.nodes))
                               for n in self.nodes),
                   '%s rejoining' % node.name, [node])

    def size(self):
        """wsrep_cluster_size as the first live node sees it."""
        for node in self.nodes:
            st = node.alive() and node.status()
            if st:
                return int(st['wsrep_cluster_size'])
        return 0

    def pids(self):
        return [n.pid for n in self.nodes if n.alive()]

    def stop(self):
        """Stop every node by pid, the last started first."""
        errors = []
        for node in reversed(self.nodes):
            try:
                node.stop()
            except Exception as e:
                errors.append('%s: %s' % (node.name, e))
        if errors:
            raise RuntimeError('; '.join(errors))

    def destroy(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
