"""Database and message-bus servers of a test's own, for the tests that
stop and restart them (the outage tests).

The machine's RabbitMQ, MariaDB and PostgreSQL are shared by every test
that runs at the same time (pytest-xdist runs two at once) and by whoever
else uses the machine: a test that stops one of them breaks the others.
These servers run under the test's work directory, on free loopback
ports, from the same Debian packages, and go when the test ends.

Each has ``url`` (what a Cluster connects to), ``start()``, ``stop()``
(as an outage: the data stays) and ``destroy()`` (stop and remove);
RabbitCluster is three RabbitMQ nodes of one cluster.

``host`` and ``netns`` put a server on another address inside a network
namespace of the test's own (tests/harness/netns.py): it runs there
(``ip netns exec``), listens on ``host`` only and lets in clients from
``clients`` (a CIDR), and the harness probes it from inside that
namespace, never from the root one.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import uuid

from tests.harness import netns as netns_mod
from tests.harness import util

START_TIMEOUT = 90.0


def _run(argv, user=None, env=None, timeout=120, netns=None):
    if user is not None:
        argv = ['runuser', '-u', user, '--'] + argv
    if netns is not None:
        argv = ['ip', 'netns', 'exec', netns] + argv
    done = subprocess.run(argv, capture_output=True, text=True, env=env,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError('%s failed (%d): %s' % (
            ' '.join(argv), done.returncode,
            (done.stderr or done.stdout).strip()[-2000:]))
    return done


def _port_open(port, host='127.0.0.1', netns=None):
    if netns is not None:
        return netns_mod.port_open(netns, host, port)
    import socket
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def _owned_dir(path, user):
    os.makedirs(path, exist_ok=True)
    shutil.chown(path, user, user)
    # the server runs as ``user``: it must reach its directory
    parent = os.path.dirname(path)
    while parent and parent != '/':
        mode = os.stat(parent).st_mode
        if not mode & 0o001:
            os.chmod(parent, mode | 0o001)
        parent = os.path.dirname(parent)
    return path


class MariaDB:
    """A mariadbd of its own: root without a password over TCP."""

    kind = 'mysql'

    def __init__(self, workdir, host='127.0.0.1', netns=None,
                 clients=None):
        self.dir = _owned_dir(os.path.join(workdir, 'mariadb'), 'mysql')
        self.data = os.path.join(self.dir, 'data')
        self.socket = os.path.join(self.dir, 'mysqld.sock')
        self.host, self.netns = host, netns
        # root's host pattern: 10.1.2.0/24 -> '10.1.2.%'
        self.client_host = host if clients is None else \
            clients.split('/')[0].rsplit('.', 1)[0] + '.%'
        self.port = 3306 if netns else util.free_port()
        self.url = 'mysql+pymysql://root@%s:%d' % (host, self.port)
        self._proc = None
        _run(['mariadb-install-db', '--no-defaults', '--user=mysql',
              '--datadir=' + self.data, '--auth-root-authentication-method'
              '=normal', '--skip-test-db'], timeout=180)

    def start(self):
        log = open(os.path.join(self.dir, 'mariadbd.log'), 'ab')
        prefix = ['ip', 'netns', 'exec', self.netns] if self.netns else []
        self._proc = subprocess.Popen(
            prefix + [
                '/usr/sbin/mariadbd', '--no-defaults', '--user=mysql',
                '--datadir=' + self.data, '--port=%d' % self.port,
                '--bind-address=' + self.host, '--socket=' + self.socket,
                '--pid-file=' + os.path.join(self.dir, 'mariadbd.pid'),
                '--skip-name-resolve', '--innodb-buffer-pool-size=32M',
                '--innodb-log-file-size=16M'],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        util.wait_for(lambda: self._proc.poll() is not None or
                      _port_open(self.port, self.host, self.netns),
                      START_TIMEOUT, interval=0.1,
                      what='a private MariaDB listening')
        if self._proc.poll() is not None:
            with open(os.path.join(self.dir, 'mariadbd.log'),
                      errors='replace') as f:
                raise RuntimeError('mariadbd exited: %s' % f.read()[-2000:])
        # root may connect from its clients without a password (over the
        # server's socket, a file: no network is crossed)
        _run(['mariadb', '--no-defaults', '-S', self.socket, '-uroot', '-e',
              "CREATE USER IF NOT EXISTS 'root'@'{0}'; GRANT ALL ON "
              "*.* TO 'root'@'{0}' WITH GRANT OPTION;".format(
                  self.client_host)])
        return self

    def stop(self):
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(timeout=120)
        self._proc = None

    def destroy(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class PostgreSQL:
    """A postgres of its own (the postgres user, trust on loopback)."""

    kind = 'postgresql'

    def __init__(self, workdir, host='127.0.0.1', netns=None,
                 clients=None):
        self.dir = _owned_dir(os.path.join(workdir, 'postgresql'),
                              'postgres')
        self.data = os.path.join(self.dir, 'data')
        self.host, self.netns = host, netns
        self.port = 5432 if netns else util.free_port()
        self.url = 'postgresql+psycopg://postgres@%s:%d' % (host, self.port)
        self.bindir = sorted(glob.glob('/usr/lib/postgresql/*/bin'))[-1]
        _run([os.path.join(self.bindir, 'initdb'), '-D', self.data,
              '-U', 'postgres', '--auth=trust', '--no-sync'],
             user='postgres', timeout=180)
        if clients is not None:
            with open(os.path.join(self.data, 'pg_hba.conf'), 'a') as f:
                f.write('host all all %s trust\n' % clients)

    def _ctl(self, *args):
        return _run([os.path.join(self.bindir, 'pg_ctl'), '-D', self.data]
                    + list(args), user='postgres', netns=self.netns)

    def start(self):
        self._ctl('-l', os.path.join(self.dir, 'postgres.log'), '-w',
                  '-t', str(int(START_TIMEOUT)), '-o',
                  '-p %d -k %s -c listen_addresses=%s -c fsync=off'
                  % (self.port, self.dir, self.host), 'start')
        return self

    def stop(self):
        if os.path.exists(os.path.join(self.data, 'postmaster.pid')):
            # fast: the open sessions end, as in an outage
            self._ctl('-w', '-m', 'fast', 'stop')

    def destroy(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class RabbitMQ:
    """A RabbitMQ node of its own (guest/guest on loopback).  ``stop_app``
    and ``start_app`` take the broker away and back as an outage does,
    the node and its users staying."""

    def __init__(self, workdir, host='127.0.0.1', netns=None):
        self.dir = _owned_dir(os.path.join(workdir, 'rabbitmq'), 'rabbitmq')
        self.host, self.netns = host, netns
        self.port = 5672 if netns else util.free_port()
        self.node = 'cl-test-%s@localhost' % uuid.uuid4().hex[:8]
        self.url = 'rabbit://guest:guest@%s:%d/' % (host, self.port)
        plugins = os.path.join(self.dir, 'enabled_plugins')
        with open(plugins, 'w') as f:
            f.write('[].\n')
        config = os.path.join(self.dir, 'none')
        if host != '127.0.0.1':
            # guest may log in from other hosts than loopback: the
            # clients are the namespace network's nodes
            config = os.path.join(self.dir, 'rabbitmq.conf')
            with open(config, 'w') as f:
                f.write('loopback_users = none\n')
        self.env = dict(
            os.environ, RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_IP_ADDRESS=host,
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(util.free_port()),
            RABBITMQ_MNESIA_BASE=os.path.join(self.dir, 'mnesia'),
            RABBITMQ_LOG_BASE=self.dir,
            RABBITMQ_PID_FILE=os.path.join(self.dir, 'rabbitmq.pid'),
            RABBITMQ_ENABLED_PLUGINS_FILE=plugins,
            RABBITMQ_CONFIG_FILE=config)
        self._started = False

    def ctl(self, *args):
        return _run(['rabbitmqctl', '-n', self.node] + list(args),
                    env=self.env, netns=self.netns)

    def _listening(self):
        return _port_open(self.port, self.host, self.netns)

    def start(self):
        _run(['rabbitmq-server', '-detached'], env=self.env,
             netns=self.netns)
        self._started = True
        # (until the node has registered, rabbitmqctl cannot find it)
        util.wait_for(self._listening, START_TIMEOUT,
                      interval=0.2, what='a private RabbitMQ listening')
        return self

    def wait_app(self):
        util.wait_for(self._listening, START_TIMEOUT,
                      interval=0.2, what='the private RabbitMQ back')

    def stop_app(self):
        self.ctl('stop_app')

    def start_app(self):
        self.ctl('start_app')

    def destroy(self):
        if self._started:
            try:
                # (given the pid file, stop waits until the node's process
                # has exited; without it, only until the node agreed to)
                self.ctl('stop', os.path.join(self.dir, 'rabbitmq.pid'))
            except RuntimeError:
                pid = self._pid()
                if pid:
                    os.kill(pid, signal.SIGKILL)
            self._started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def _pid(self):
        try:
            with open(os.path.join(self.dir, 'rabbitmq.pid')) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def kill(self):
        """SIGKILL the node, as a machine that dies (its data stays)."""
        pid = self._pid()
        if pid:
            os.kill(pid, signal.SIGKILL)
            util.wait_for(lambda: not _alive(pid), 30, interval=0.1,
                          what='RabbitMQ node %s gone' % self.node)
        util.wait_for(lambda: not self._listening(), 30, interval=0.1,
                      what='RabbitMQ node %s not listening' % self.node)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class RabbitCluster:
    """Three RabbitMQ nodes of one cluster (or ``size``), as clouds run
    the bus: ``url`` names every node (oslo.messaging fails over among
    them), quorum queues are replicated on all of them.  ``kill(i)`` and
    ``restart(i)`` make a node die and come back (it rejoins by
    itself)."""

    def __init__(self, workdir, size=3):
        self.nodes = [RabbitMQ(os.path.join(workdir, 'rabbit-%d' % i))
                      for i in range(size)]
        self.url = 'rabbit://%s/' % ','.join(
            'guest:guest@%s:%d' % (n.host, n.port) for n in self.nodes)

    def start(self):
        # started at once (each node takes a while to boot), then the
        # others join the first
        for n in self.nodes:
            _run(['rabbitmq-server', '-detached'], env=n.env)
            n._started = True
        for n in self.nodes:
            util.wait_for(n._listening, START_TIMEOUT, interval=0.2,
                          what='a RabbitMQ cluster node listening')
        first = self.nodes[0]
        for n in self.nodes[1:]:
            n.ctl('stop_app')
            n.ctl('join_cluster', first.node)
            n.ctl('start_app')
        return self

    def running(self, via=None):
        """The names of the nodes the cluster sees running."""
        node = via if via is not None else self.alive()[0]
        out = node.ctl('cluster_status', '--formatter', 'json').stdout
        return set(json.loads(out)['running_nodes'])

    def alive(self):
        return [n for n in self.nodes if n._listening()]

    def queues(self):
        """name -> (type, leader node name or None), read from a node
        that is up."""
        out = self.alive()[0].ctl(
            'list_queues', 'name', 'type', 'leader', '--quiet',
            '--formatter', 'json').stdout
        return {q['name']: (q['type'], q.get('leader') or None)
                for q in json.loads(out)}

    def node_named(self, name):
        return next(n for n in self.nodes if n.node == name)

    def kill(self, i):
        self.nodes[i].kill()

    def restart(self, i):
        self.nodes[i].start()
        self.nodes[i].ctl('await_startup')

    def destroy(self):
        for n in self.nodes:
            n.destroy()


DATABASES = {MariaDB.kind: MariaDB, PostgreSQL.kind: PostgreSQL}
