"""A distributed cinder_lite on this machine, for integration tests and
benchmarks.

``Cluster(kind)`` (kind is ``'mysql'``, ``'postgresql'`` or ``'sqlite'``)
creates a fresh, uniquely named database (for ``'sqlite'`` a file in the
work directory that every process shares), picks a unique
``control_exchange`` (so topics of concurrent runs never meet on the shared
RabbitMQ), writes the config files into a temporary directory, runs ``db
sync`` and starts the API, the scheduler and two volume nodes as separate
processes:

* ``ma``   -- host ``node-ma``,   backend ``ma``   (multiattach capable)
* ``noma`` -- host ``node-noma``, backend ``noma`` (``multiattach = false``)

Each process logs to ``<workdir>/<name>.log``.  ``stop()`` ends every
process it started by pid (SIGTERM, then SIGKILL after a bound) and drops
the database.

``Cluster(kind, api_workers=N)`` with N > 1 runs the API as a parent that
forks N worker processes sharing the port (SO_REUSEPORT).  ``wait_ready``
then also waits until N workers are children of the API process and each
has logged ``API listening on ... (pid N)``; ``api_worker_pids()`` returns
them.  The workers are not our children, so they are watched through
/proc: ``check_alive`` reports a worker that died, and stopping or killing
the API also ends (by pid, after checking it is still the same process)
any worker its parent left behind.

This module imports no pytest so the benchmarks can use it too; the pytest
glue (skip or fail when a service is missing) lives in conftest.py.  When
RabbitMQ or the database is not reachable, ``check_services`` and
``Cluster.start`` raise ``ServiceUnavailable``.

RabbitMQ isolation: oslo.messaging names its queues after the topic only
(``cinder-lite-scheduler``, ``cinder-lite-volume.node-ma@ma``) and its
fanout exchanges after the topic too, so a unique ``control_exchange`` alone
does not keep two clusters running at the same time apart (a scheduler of
one run would consume the other's casts, as both queues of the same name
are bound to both exchanges).  Each cluster therefore gets its own RabbitMQ
vhost, made with ``rabbitmqctl`` (vhosts are reused by later clusters of the
same process and deleted when it exits).  Without rabbitmqctl, or with
CINDER_LITE_RABBIT_VHOSTS=0, the vhost of the URL is used and
``Cluster.isolated`` is False.

Only loopback addresses are used.  Overrides (for CI): CINDER_LITE_RABBIT_URL,
CINDER_LITE_MYSQL_URL, CINDER_LITE_POSTGRESQL_URL (server URLs without a
database name), CINDER_LITE_PYTHON (interpreter of the services),
CINDER_LITE_RABBITMQCTL (path of rabbitmqctl).
"""
import atexit
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

import requests

from tests.harness import forkrun
from tests.harness import util

PROJECT = '0123456789abcdef0123456789abcdef'

RABBIT_URL = os.environ.get('CINDER_LITE_RABBIT_URL',
                            'rabbit://guest:guest@127.0.0.1:5672/')
SERVER_URLS = {
    'mysql': os.environ.get('CINDER_LITE_MYSQL_URL',
                            'mysql+pymysql://root@127.0.0.1:3306'),
    'postgresql': os.environ.get('CINDER_LITE_POSTGRESQL_URL',
                                 'postgresql+psycopg://postgres@127.0.0.1:5432'),
}
GUNICORN_WORKERS = 2
# Database servers the tests use by default; 'sqlite' needs no server.
KINDS = tuple(SERVER_URLS)
SQLITE = 'sqlite'
ALL_KINDS = (SQLITE,) + KINDS
SQLITE_FILE = 'cinder-lite.sqlite'

# Volume nodes: name -> (host, backend section, extra backend options)
NODES = {
    'ma': ('node-ma', 'ma', {}),
    'noma': ('node-noma', 'noma', {'multiattach': 'false'}),
}

RABBITMQCTL = os.environ.get('CINDER_LITE_RABBITMQCTL') or \
    shutil.which('rabbitmqctl')
VHOSTS_ENABLED = os.environ.get('CINDER_LITE_RABBIT_VHOSTS', '1') != '0'
VHOST_PREFIX = 'cl-it-'

# Start the services as forks of tests/harness/forkrun.py's server, which
# imported cinder_lite once, instead of as new interpreters (about 1 s of CPU
# saved per start).  The test suite turns it on (tests/conftest.py); the
# benchmarks start real interpreters.
FORK_SERVICES = False
STOP_TIMEOUT = 15.0      # seconds between SIGTERM and SIGKILL
START_TIMEOUT = 60.0     # API answering and every service up
LOG_TAIL_LINES = 40

_live_clusters = set()


class ServiceUnavailable(Exception):
    """RabbitMQ or the database cannot be reached: skip (or fail in CI)."""


class ClusterError(Exception):
    """The cluster did not start or misbehaved; the message carries the
    tails of the service logs."""


# -- reachability ------------------------------------------------------------

def _tcp_probe(host, port, what, timeout=2.0):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as e:
        raise ServiceUnavailable('%s is not reachable at %s:%s (%s)'
                                 % (what, host, port, e))


def check_rabbit(url=RABBIT_URL):
    """Log in to RabbitMQ with the credentials and vhost of ``url``; a
    URL naming several nodes (``rabbit://u:p@h1:1,u:p@h2:2/``, as
    oslo.messaging takes a cluster) is checked node by node."""
    scheme, netloc, path = urllib.parse.urlsplit(url)[:3]
    if ',' in netloc:
        for one in netloc.split(','):
            check_rabbit('%s://%s%s' % (scheme, one, path))
        return
    import amqp
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or '127.0.0.1', parts.port or 5672
    _tcp_probe(host, port, 'RabbitMQ')
    vhost = urllib.parse.unquote(parts.path[1:]) or '/'
    conn = amqp.Connection(host='%s:%d' % (host, port),
                           userid=urllib.parse.unquote(parts.username or
                                                       'guest'),
                           password=urllib.parse.unquote(parts.password or
                                                         'guest'),
                           virtual_host=vhost, connect_timeout=3)
    try:
        conn.connect()
    except Exception as e:
        raise ServiceUnavailable('cannot log in to RabbitMQ at %s:%s vhost '
                                 '%r: %s' % (host, port, vhost, e))
    finally:
        try:
            conn.close()
        except Exception:
            pass


def _admin_connect(kind, server_url=None):
    """A DBAPI connection to the server (no particular database), in
    autocommit mode: the machine's of ``kind``, or ``server_url``'s."""
    import sqlalchemy as sa
    url = sa.engine.make_url(server_url or SERVER_URLS[kind])
    _tcp_probe(url.host or '127.0.0.1',
               url.port or (3306 if kind == 'mysql' else 5432), kind)
    try:
        if kind == 'mysql':
            import pymysql
            return pymysql.connect(host=url.host, port=url.port or 3306,
                                   user=url.username,
                                   password=url.password or '',
                                   autocommit=True, connect_timeout=5)
        import psycopg
        return psycopg.connect(host=url.host, port=url.port or 5432,
                               user=url.username, password=url.password,
                               dbname='postgres', autocommit=True,
                               connect_timeout=5)
    except Exception as e:
        raise ServiceUnavailable('cannot connect to %s at %s: %s'
                                 % (kind, url.render_as_string(), e))


def check_database(kind, server_url=None):
    conn = _admin_connect(kind, server_url)
    conn.close()


def require_services(kind):
    """Skip the calling test (fail it under CINDER_LITE_REQUIRE_SERVICES=1)
    unless RabbitMQ and database ``kind`` are reachable."""
    try:
        check_services(kind)
    except ServiceUnavailable as e:
        util.skip_or_fail('integration (%s): %s' % (kind, e))


def check_services(kind, server_url=None, rabbit_url=RABBIT_URL):
    """Raise ServiceUnavailable unless RabbitMQ and database ``kind`` are
    usable."""
    if kind not in ALL_KINDS:
        raise ValueError('unknown database kind %r' % (kind,))
    check_rabbit(rabbit_url)
    if kind != SQLITE:
        check_database(kind, server_url)


def posix_backup(host='cl-backup'):
    """Keyword arguments of Cluster for one backup service, ``backup``,
    keeping its backups in the POSIX store under the work directory."""
    return {'backups': {'backup': host}, 'process_sections': {'backup': {
        'DEFAULT': {'host': host, 'backup_driver':
                    'cinder_lite.backup.drivers.posix.PosixBackupDriver',
                    'backup_posix_path': '{workdir}/backup'}}}}


def create_database(kind, name, server_url=None):
    conn = _admin_connect(kind, server_url)
    try:
        cur = conn.cursor()
        if kind == 'mysql':
            cur.execute('CREATE DATABASE `%s` CHARACTER SET utf8mb4' % name)
        else:
            cur.execute('CREATE DATABASE "%s"' % name)
    finally:
        conn.close()
    return '%s/%s' % (server_url or SERVER_URLS[kind], name)


def drop_database(kind, name, server_url=None):
    conn = _admin_connect(kind, server_url)
    try:
        cur = conn.cursor()
        if kind == 'mysql':
            cur.execute('DROP DATABASE IF EXISTS `%s`' % name)
        else:
            # FORCE: a process killed with SIGKILL may leave a backend
            # behind for a moment.
            cur.execute('DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name)
    finally:
        conn.close()


@contextlib.contextmanager
def scratch_database(kind, prefix):
    """A fresh database of ``kind`` for a test that speaks SQL itself
    (skipped, or failed under CINDER_LITE_REQUIRE_SERVICES=1, without the
    server): yields its URL, and drops it after."""
    require_services(kind)
    name = '%s_%s' % (prefix, uuid.uuid4().hex[:8])
    url = create_database(kind, name)
    try:
        yield url
    finally:
        drop_database(kind, name)


def sqlite_url(path):
    """``sqlite:////abs/path``: every process opens the same file."""
    return 'sqlite:///' + os.path.abspath(path)


def remove_sqlite(path):
    for suffix in ('', '-wal', '-shm', '-journal'):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass


# -- RabbitMQ vhosts ----------------------------------------------------------

_vhost_lock = threading.Lock()
_free_vhosts = []
_created_vhosts = []
_swept = False


def _rabbitmqctl(*args, timeout=60):
    return subprocess.run([RABBITMQCTL] + list(args), capture_output=True,
                          text=True, timeout=timeout)


def _sweep_stale_vhosts():
    """Delete cl-it-<pid>-* vhosts of processes that no longer exist
    (left behind by a run that was killed)."""
    proc = _rabbitmqctl('list_vhosts', '--quiet', '--no-table-headers')
    for name in proc.stdout.split():
        if not name.startswith(VHOST_PREFIX):
            continue
        try:
            pid = int(name[len(VHOST_PREFIX):].split('-')[0])
        except ValueError:
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            _rabbitmqctl('delete_vhost', name)
        except PermissionError:
            pass


def acquire_vhost(user):
    """A vhost only this process uses, or None when they cannot be made."""
    global _swept
    if not (VHOSTS_ENABLED and RABBITMQCTL):
        return None
    with _vhost_lock:
        if _free_vhosts:
            return _free_vhosts.pop()
        try:
            if not _swept:
                _swept = True
                _sweep_stale_vhosts()
            name = '%s%d-%s' % (VHOST_PREFIX, os.getpid(),
                                uuid.uuid4().hex[:8])
            proc = _rabbitmqctl('add_vhost', name)
            if proc.returncode != 0:
                raise OSError(proc.stderr.strip() or proc.stdout.strip())
            _created_vhosts.append(name)
            proc = _rabbitmqctl('set_permissions', '-p', name, user,
                                '.*', '.*', '.*')
            if proc.returncode != 0:
                raise OSError(proc.stderr.strip() or proc.stdout.strip())
        except (OSError, subprocess.SubprocessError) as e:
            print('cluster: no private RabbitMQ vhost (%s); clusters of '
                  'concurrent runs may see each other\'s messages' % e,
                  file=sys.stderr)
            return None
        return name


def release_vhost(name):
    if name:
        with _vhost_lock:
            _free_vhosts.append(name)


@atexit.register
def _delete_vhosts():
    for name in _created_vhosts:
        try:
            _rabbitmqctl('delete_vhost', name)
        except Exception:
            pass


def with_vhost(url, vhost):
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(
        path='/' + urllib.parse.quote(vhost, safe='')))


# -- helpers -----------------------------------------------------------------

def _forkable(argv):
    """``argv`` is ``python -m cinder_lite.cmd.X ...`` in this interpreter:
    with the test process's environment, a fork of forkrun's server is the
    same process without the imports (FORK_SERVICES)."""
    return (FORK_SERVICES and len(argv) > 2 and argv[0] == sys.executable
            and argv[1] == '-m' and argv[2] in forkrun.PRELOAD)


def python():
    return os.environ.get('CINDER_LITE_PYTHON', sys.executable)


def tail(path, lines=LOG_TAIL_LINES):
    try:
        with open(path, 'rb') as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode('utf-8', 'replace')
    except OSError as e:
        return '(no log: %s)' % e
    return '\n'.join(data.splitlines()[-lines:])


def write_conf(path, sections):
    """``sections``: {section: {option: value}} in order."""
    with open(path, 'w') as f:
        for section, opts in sections.items():
            f.write('[%s]\n' % section)
            for key, value in opts.items():
                f.write('%s = %s\n' % (key, value))
            f.write('\n')
    return path


def proc_stat(pid):
    """(state, ppid, starttime) of ``pid`` from /proc, or None when there
    is no such process."""
    fields = util.stat_fields(pid)
    if fields is None:
        return None
    # from field 3 on: state, ppid, ..., starttime (22)
    return fields[0], int(fields[1]), int(fields[19])


def child_pids(ppid):
    """Pids of the live (not zombie) children of ``ppid``."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        stat = proc_stat(int(entry))
        if stat and stat[1] == ppid and stat[0] != 'Z':
            found.append(int(entry))
    return sorted(found)


class Worker:
    """A process we did not start ourselves (an API worker forked by the
    API parent), identified by pid and start time so a recycled pid is
    never mistaken for it."""

    def __init__(self, pid):
        self.pid = pid
        stat = proc_stat(pid)
        self.starttime = stat[2] if stat else None

    def alive(self):
        stat = proc_stat(self.pid)
        return (stat is not None and stat[0] != 'Z'
                and stat[2] == self.starttime)

    def kill(self, signum=signal.SIGKILL):
        if self.alive():
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def __repr__(self):
        return 'Worker(%d)' % self.pid


class Process:
    """One service process, logging to ``log_path``."""

    def __init__(self, name, argv, log_path, cwd, env=None):
        self.name = name
        self.argv = argv
        self.env = env or {}
        self.log_path = log_path
        self.cwd = cwd
        self.popen = None
        self.term_sent = False
        self.expected_dead = False   # killed on purpose (Cluster.kill)
        self.log_offset = 0          # where this run's log lines begin
        self.workers = []            # Worker objects (API with workers)

    def start(self):
        log = open(self.log_path, 'ab')
        self.log_offset = log.tell()
        env = dict(os.environ, PYTHONUNBUFFERED='1', **self.env)
        try:
            if not self.env and _forkable(self.argv):
                self.popen = forkrun.spawn(self.argv[2], self.argv[3:],
                                           self.cwd, env, log)
            else:
                self.popen = subprocess.Popen(
                    self.argv, stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, cwd=self.cwd, env=env)
        finally:
            log.close()
        return self

    @property
    def pid(self):
        return self.popen.pid if self.popen else None

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    def signal(self, signum):
        if self.alive():
            os.kill(self.popen.pid, signum)

    def terminate(self):
        """Send SIGTERM once.  (A second SIGTERM could hit the process
        while the interpreter finalizes, after the handler is gone, and
        kill it.)"""
        if not self.term_sent and self.alive():
            self.term_sent = True
            self.signal(signal.SIGTERM)

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, then SIGKILL if still running after ``timeout``.
        Returns the exit code (negative: killed by that signal)."""
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            self.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.popen.wait(10)
        return self.popen.returncode

    def kill(self):
        self.signal(signal.SIGKILL)
        if self.popen is not None:
            self.popen.wait(10)
        self.kill_workers()

    def read_log(self):
        """This run's part of the log."""
        try:
            with open(self.log_path, 'rb') as f:
                f.seek(self.log_offset)
                return f.read().decode('utf-8', 'replace')
        except OSError:
            return ''

    def dead_workers(self):
        return [w for w in self.workers if not w.alive()]

    def kill_workers(self, timeout=0.0):
        """Wait up to ``timeout`` for the workers to go (their parent
        stops them), then SIGKILL those left.  Returns the killed ones."""
        deadline = time.monotonic() + timeout
        while any(w.alive() for w in self.workers) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        left = [w for w in self.workers if w.alive()]
        for worker in left:
            worker.kill()
        # SIGKILL is delivered asynchronously: wait (bounded) until they
        # are gone or zombies.
        deadline = time.monotonic() + 10
        while any(w.alive() for w in left) and time.monotonic() < deadline:
            time.sleep(0.02)
        return left


class Cluster:
    """API + scheduler + volume nodes ma and noma over RabbitMQ and
    ``kind``."""

    def __init__(self, kind, workdir=None, api_workers=1, keep_workdir=False,
                 report_interval=1, service_down_time=3, extra_default=None,
                 extra_sections=None, api_server='cinder-lite-api',
                 process_sections=None, api_host='127.0.0.1',
                 node_options=None, extra_nodes=None, server_url=None,
                 rabbit_url=None, backups=None, nodes=None):
        if kind not in ALL_KINDS:
            raise ValueError('unknown database kind %r' % (kind,))
        self.kind = kind
        self.run_id = uuid.uuid4().hex[:12]
        self.db_name = 'cl_it_%s' % self.run_id
        self.control_exchange = 'cl-it-%s' % self.run_id
        self._own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(
            prefix='cinder-lite-%s-' % kind)
        self.keep_workdir = keep_workdir
        self.api_workers = api_workers
        self.report_interval = report_interval
        self.service_down_time = service_down_time
        self.extra_default = extra_default or {}
        self.extra_sections = extra_sections or {}
        # process name -> config sections only that process reads
        # (rewritten by write_configs, read at the process's next start)
        self.process_sections = process_sections or {}
        # the API's listen address; node name -> extra backend options
        self.api_host = api_host
        self.node_options = node_options or {}
        # the volume nodes (NODES unless given, in its form), and more of
        # them (e.g. a second member of a cluster); they start with the
        # others
        self.nodes = dict(NODES if nodes is None else nodes)
        self.nodes.update(extra_nodes or {})
        # backup services started with the others (name -> host; each a
        # 'backup…' process whose options come from process_sections)
        self.backups = dict(backups or {})
        # 'cinder-lite-api', or 'gunicorn' serving cinder_lite.wsgi.api
        # with GUNICORN_WORKERS workers
        self.api_server = api_server
        self.db_url = None
        self.vhost = None
        # a database server and a broker of the test's own
        # (tests/harness/servers.py) instead of the machine's
        self.server_url = server_url
        self.rabbit_url = rabbit_url or RABBIT_URL
        self.transport_url = self.rabbit_url
        self.port = None
        self.processes = {}
        self._db_created = False
        self.leftover_workers = []   # API workers we had to SIGKILL

    @property
    def isolated(self):
        """True when this cluster has a RabbitMQ vhost of its own."""
        return self.vhost is not None

    # -- config ---------------------------------------------------------------
    @property
    def url(self):
        return 'http://%s:%d' % (self.api_host, self.port)

    @property
    def common_conf(self):
        return os.path.join(self.workdir, 'common.conf')

    def node_conf(self, node):
        return os.path.join(self.workdir, '%s.conf' % node)

    def _write_configs(self):
        default = {
            'transport_url': self.transport_url,
            'state_path': os.path.join(self.workdir, 'state'),
            # one deployment key for every process, also those with a
            # state_path of their own (attachment credentials are derived
            # from it by the API and by each volume service)
            'credential_key_file': os.path.join(self.workdir,
                                                'credential.key'),
            'osapi_volume_listen': self.api_host,
            'osapi_volume_listen_port': self.port,
            'osapi_volume_workers': self.api_workers,
            'report_interval': self.report_interval,
            'service_down_time': self.service_down_time,
            'control_exchange': self.control_exchange,
            'host': 'node-ctl',
            # these tests make more volumes per project than Cinder's
            # default quota; test_quotas sets its own limits
            'quota_volumes': -1,
            'quota_gigabytes': -1,
        }
        default.update(self.extra_default)
        sections = {'DEFAULT': default,
                    'database': {'connection': self.db_url}}
        for name, opts in self.extra_sections.items():  # merged, not replaced
            sections.setdefault(name, {}).update(opts)
        self._write_conf(self.common_conf, sections)
        for node, (host, section, opts) in self.nodes.items():
            backend = {'volume_backend_name': section}
            backend.update(opts)
            backend.update(self.node_options.get(node, {}))
            self._write_conf(self.node_conf(node), {
                'DEFAULT': {'host': host, 'enabled_backends': section},
                section: backend})
        self.write_process_confs()

    def _write_conf(self, path, sections):
        """write_conf with ``{workdir}`` in string values replaced by
        this cluster's work directory."""
        write_conf(path, {
            name: {key: value.replace('{workdir}', self.workdir)
                   if isinstance(value, str) else value
                   for key, value in options.items()}
            for name, options in sections.items()})

    def argv(self, module, *extra_conf):
        argv = [python(), '-m', module, '--config-file', self.common_conf]
        for path in extra_conf:
            argv += ['--config-file', path]
        return argv

    def process_conf(self, name):
        return os.path.join(self.workdir, '%s-only.conf' % name)

    def write_process_confs(self):
        for name in {'api', 'scheduler', *self.nodes,
                     *self.process_sections}:
            self._write_conf(self.process_conf(name),
                             self.process_sections.get(name, {}))

    def command(self, module, *args, extra_conf=(), timeout=60):
        """``python -m module`` (a cinder_lite.cmd command) with the common
        config and ``extra_conf`` in the work directory; returns the
        CompletedProcess (text).  Forked from forkrun's server when the
        services are (FORK_SERVICES)."""
        argv = self.argv(module, *extra_conf) + list(args)
        if _forkable(argv):
            return forkrun.run(module, argv[3:], cwd=self.workdir,
                               timeout=timeout)
        return subprocess.run(argv, cwd=self.workdir, capture_output=True,
                              text=True, timeout=timeout)

    def manage(self, *args, timeout=60, check=True):
        """Run cinder-lite-manage with the common config; returns the
        CompletedProcess (text)."""
        proc = self.command('cinder_lite.cmd.manage', *args,
                            timeout=timeout)
        if check and proc.returncode != 0:
            raise ClusterError('manage %s failed (%d):\n%s\n%s' % (
                ' '.join(args), proc.returncode, proc.stdout, proc.stderr))
        return proc

    def sync_database(self):
        """Migrate the cluster's database to the newest schema, in this
        process (what ``cinder-lite-manage db sync`` does, without an
        interpreter start per cluster; the command itself is tested in
        tests/functional/test_manage_cli.py and by .ci/run)."""
        from cinder_lite.db import api as db_api
        from cinder_lite.db import migration
        engine = db_api.create_engine(self.db_url)
        try:
            migration.upgrade(engine=engine)
        finally:
            engine.dispose()

    # -- lifecycle ------------------------------------------------------------
    def _process(self, name):
        log = os.path.join(self.workdir, '%s.log' % name)
        if name == 'api' and self.api_server == 'gunicorn':
            return Process(name, [
                python(), '-m', 'gunicorn', '--workers',
                str(GUNICORN_WORKERS), '--threads', '4', '--bind',
                '%s:%d' % (self.api_host, self.port), '--graceful-timeout',
                '10',
                'cinder_lite.wsgi.api:application'], log, self.workdir,
                env={'CINDER_LITE_CONFIG_FILES': self.common_conf})
        if name == 'api' or (name.startswith('api') and
                             name in self.process_sections):
            # 'api', or more API processes ('api2' …) whose port and host
            # come from process_sections (started by the caller)
            argv = self.argv('cinder_lite.cmd.api', self.process_conf(name))
        elif name.startswith('scheduler'):
            # 'scheduler', or more schedulers ('scheduler2' …) whose host
            # comes from process_sections
            argv = self.argv('cinder_lite.cmd.scheduler',
                             self.process_conf(name))
        elif name in self.nodes:
            argv = self.argv('cinder_lite.cmd.volume', self.node_conf(name),
                             self.process_conf(name))
        elif name.startswith('backup'):
            # a backup service ('backup', 'backup2' …), started by the
            # tests that want one (ensure_running) or with the others
            # (``backups``); its host and store come from process_sections
            argv = self.argv('cinder_lite.cmd.backup',
                             self.process_conf(name))
        else:
            raise KeyError(name)
        return Process(name, argv, log, self.workdir)

    def start_process(self, name):
        """(Re)start one service: 'api', 'scheduler', 'ma' or 'noma'."""
        old = self.processes.get(name)
        if old is not None and old.alive():
            raise ClusterError('%s is already running (pid %d)'
                               % (name, old.pid))
        proc = self._process(name).start()
        self.processes[name] = proc
        return proc

    def start(self, timeout=START_TIMEOUT):
        check_services(self.kind, self.server_url, self.rabbit_url)
        _live_clusters.add(self)
        try:
            os.makedirs(self.workdir, exist_ok=True)
            if self.kind == SQLITE:
                self.db_url = sqlite_url(self.sqlite_path)
            else:
                self.db_url = create_database(self.kind, self.db_name,
                                              self.server_url)
            self._db_created = True
            if self.rabbit_url == RABBIT_URL:
                # (a broker of the test's own is not shared)
                self.vhost = acquire_vhost(urllib.parse.unquote(
                    urllib.parse.urlsplit(RABBIT_URL).username or 'guest'))
            if self.vhost:
                self.transport_url = with_vhost(RABBIT_URL, self.vhost)
            self.port = util.free_port(self.api_host)
            self._write_configs()
            self.sync_database()
            for name in ('scheduler', *self.nodes, *self.backups, 'api'):
                self.start_process(name)
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def sqlite_path(self):
        return os.path.join(self.workdir, SQLITE_FILE)

    # -- API workers ------------------------------------------------------------
    LISTENING = re.compile(r'API listening on (\S+):(\d+) \(pid (\d+)\)')

    def listening_pids(self):
        """Pids that logged 'API listening on <address>:<port> (pid N)'
        for this cluster's port since the API last started."""
        proc = self.processes.get('api')
        if proc is None:
            return set()
        return {int(m.group(3)) for m in
                self.LISTENING.finditer(proc.read_log())
                if int(m.group(2)) == self.port}

    def _api_workers_ready(self):
        """With api_workers > 1: True once that many children of the API
        process exist and each logged that it listens (then remembered in
        ``processes['api'].workers``)."""
        proc = self.processes.get('api')
        if self.api_workers <= 1 or proc is None:
            return True
        if len(proc.workers) == self.api_workers:
            return True
        children = child_pids(proc.pid)
        if len(children) > self.api_workers:
            raise ClusterError('API process %d has %d children, expected %d'
                               % (proc.pid, len(children), self.api_workers))
        if len(children) < self.api_workers or \
                not set(children) <= self.listening_pids():
            return False
        proc.workers = [Worker(pid) for pid in children]
        return True

    def api_worker_pids(self):
        """Pids of the API worker processes (the API process itself when it
        runs without workers)."""
        proc = self.processes['api']
        if self.api_workers <= 1:
            return [proc.pid]
        return [w.pid for w in proc.workers]

    def expected_services(self):
        hosts = {('cinder-scheduler', 'node-ctl')}
        for host, section, _opts in self.nodes.values():
            hosts.add(('cinder-volume', '%s@%s' % (host, section)))
        for host in self.backups.values():
            hosts.add(('cinder-backup', host))
        return hosts

    def admin_auth(self):
        """(project, token) of an administrator (noauth here; a keystone
        cluster overrides it)."""
        return PROJECT, 'admin:%s' % PROJECT

    def _services_up(self, session):
        """(binary, host) of the services os-services shows up; None
        while the API does not answer."""
        project, token = self.admin_auth()
        try:
            resp = session.get(self.url + '/v3/%s/os-services' % project,
                               headers={'X-Auth-Token': token}, timeout=5)
        except requests.RequestException:
            return None
        if resp.status_code != 200:
            return None
        return {(s['binary'], s['host'])
                for s in resp.json()['services'] if s['state'] == 'up'}

    def ensure_running(self, name, binary, host, timeout=60):
        """Start process ``name`` (one of ``process_sections``, e.g.
        'scheduler2') unless it was started, then wait until os-services
        shows its service (``binary``, ``host``) up."""
        if name not in self.processes:
            self.start_process(name)
        session = requests.Session()
        util.wait_for(lambda: (binary, host) in (
            self._services_up(session) or ()), timeout,
            what='%s %s up' % (binary, host))

    def wait_ready(self, timeout=START_TIMEOUT):
        """Until the API answers and os-services shows every service up."""
        session = requests.Session()
        expected = self.expected_services()

        def _ready():
            self.check_alive()
            up = self._services_up(session)
            return up is not None and expected <= up and \
                self._api_workers_ready()

        try:
            util.wait_for(_ready, timeout,
                          what='API and %d services up on %s'
                          % (len(expected), self.url))
        except AssertionError as e:
            raise ClusterError('%s\n%s' % (e, self.logs()))

    def check_alive(self):
        """Raise ClusterError (with logs) if a started process exited."""
        dead = ['%s (rc %s)' % (p.name, p.popen.returncode)
                for p in self.processes.values()
                if p.popen is not None and not p.alive()
                and not p.expected_dead]
        dead += ['%s worker %d' % (p.name, w.pid)
                 for p in self.processes.values()
                 if p.alive() and not p.term_sent
                 for w in p.dead_workers()]
        if dead:
            raise ClusterError('%s exited unexpectedly:\n%s' % (
                ', '.join(dead), self.logs()))

    def kill(self, name):
        """SIGKILL one service (a crash); check_alive ignores it."""
        proc = self.processes[name]
        proc.expected_dead = True
        proc.kill()
        return proc

    def logs(self, lines=LOG_TAIL_LINES):
        out = []
        for name, proc in self.processes.items():
            out.append('----- %s (pid %s) %s -----\n%s' % (
                name, proc.pid, proc.log_path, tail(proc.log_path, lines)))
        return '\n'.join(out)

    def stop_processes(self, timeout=STOP_TIMEOUT):
        """SIGTERM to every process (API first), then wait; SIGKILL what is
        left after ``timeout``.  Returns {name: exit code}."""
        order = sorted(self.processes, key=lambda n: n != 'api')
        for name in order:
            try:
                self.processes[name].terminate()
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        codes = {}
        for name in order:
            proc = self.processes[name]
            try:
                codes[name] = proc.stop(max(0.1, deadline - time.monotonic()))
            except Exception as e:   # keep tearing down the rest
                codes[name] = e
            # A parent that exited (or was killed) without its workers
            # leaves them running: end them too.
            try:
                left = proc.kill_workers(
                    max(0.1, min(2.0, deadline - time.monotonic())))
            except Exception as e:
                codes[name] = e
                continue
            if left:
                self.leftover_workers += left
                if codes[name] == 0:
                    codes[name] = 'left workers %s' % left
        return codes

    def unclean_exits(self, codes):
        """Processes that did not exit 0 although only SIGTERM asked them
        to (killed ones excluded)."""
        return {n: rc for n, rc in codes.items()
                if rc not in (0, None)
                and not self.processes[n].expected_dead}

    def cleanup(self):
        """Drop the database and remove the work directory."""
        if self._db_created and self.kind == SQLITE:
            if not self.keep_workdir:
                remove_sqlite(self.sqlite_path)
            self._db_created = False
        if self._db_created:
            try:
                drop_database(self.kind, self.db_name, self.server_url)
                self._db_created = False
            except Exception as e:
                print('cluster: could not drop %s database %s: %s'
                      % (self.kind, self.db_name, e), file=sys.stderr)
        if self._own_workdir and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        release_vhost(self.vhost)
        self.vhost = None
        _live_clusters.discard(self)

    def stop(self, timeout=STOP_TIMEOUT):
        """Stop every process, drop the database, remove the work
        directory.  Returns {name: exit code}."""
        try:
            return self.stop_processes(timeout)
        finally:
            self.cleanup()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


@atexit.register
def _stop_leftovers():
    # Last resort when the caller never reached its teardown.
    for cluster in list(_live_clusters):
        try:
            cluster.stop()
        except Exception:
            pass
