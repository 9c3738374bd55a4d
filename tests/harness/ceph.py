"""A single-node Ceph cluster of our own for the RBD tests and benches:
one monitor, one manager and ``osds`` OSDs (BlueStore on sparse files),
everything bound to 127.0.0.1, every file under one directory, every
daemon a child we started (stopped by pid).  One cluster serves a whole
test run (the session fixture ``ceph_cluster`` in tests/conftest.py).

Brought up by hand as the Ceph documentation's "manual deployment" does
(monmaptool, ``ceph-mon --mkfs``, ``ceph osd new``, ``ceph-osd --mkfs``),
without systemd and without ``/etc/ceph`` or ``/var/lib/ceph``.  What this
machine kind taught (doc/source/rbd.rst, "A cluster for tests"):

- ports below 32768: the ephemeral range starts there, and a client's
  outgoing port must not take the monitor's;
- wait for ``num_up_osds``, not HEALTH_OK (a new OSD is not "down");
- a manager must run, or the pool reports no capacity;
- admin sockets carry ``$pid`` (clients of one name in many processes);
- stop the OSDs before the monitor (an OSD otherwise waits to be marked
  down).

``python -m tests.harness.ceph DIR`` starts one in DIR and prints the
path of its ceph.conf and admin keyring (for benches and a try by hand);
it stops on Ctrl-C.
"""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

POOL = 'volumes'
BACKUP_POOL = 'backups'
BACKUP_USER = 'cinder-lite-backup'
# the application tag of the backup pool (a pool with none makes the
# cluster warn POOL_APP_NOT_ENABLED)
BACKUP_APPLICATION = 'cinder-backup'
PROGRAMS = ('ceph-mon', 'ceph-mgr', 'ceph-osd', 'ceph', 'rbd', 'monmaptool',
            'ceph-authtool')
# 4 GiB of sparse file per OSD: enough for the tests' volumes (thin)
OSD_BYTES = 4 * 1024 ** 3


def missing_programs():
    return [p for p in PROGRAMS if shutil.which(p) is None]


def _free_ports(count):
    """``count`` consecutive ports below the ephemeral range, free now."""
    rng = random.Random()
    for _ in range(200):
        start = rng.randrange(10000, 32000 - count)
        try:
            socks = []
            for port in range(start, start + count):
                s = socket.socket()
                socks.append(s)
                s.bind(('127.0.0.1', port))
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
        return start
    raise RuntimeError('no %d free ports below 32000' % count)


class CephCluster:

    def __init__(self, path, osds=1):
        self.path = os.path.abspath(path)
        self.osds = osds
        self.fsid = str(uuid.uuid4())
        self.conf = os.path.join(self.path, 'ceph.conf')
        self.admin_keyring = os.path.join(self.path, 'admin.keyring')
        self.pool = POOL
        self.procs = {}
        self.mon_port = None

    # -- running commands ----------------------------------------------------
    def env(self):
        env = dict(os.environ)
        env['CEPH_CONF'] = self.conf
        return env

    def run(self, *args, input=None, timeout=60, check=True):
        """A command of the cluster's tools as client.admin; its stdout."""
        proc = subprocess.run(
            list(args), input=input, capture_output=True, text=True,
            timeout=timeout, env=self.env())
        if check and proc.returncode:
            raise RuntimeError('%s: exit %d: %s' % (
                ' '.join(args), proc.returncode, proc.stderr.strip()))
        return proc.stdout

    def ceph(self, *args, **kw):
        return self.run('ceph', '--conf', self.conf, '--keyring',
                        self.admin_keyring, '--connect-timeout', '20',
                        *args, **kw)

    def ceph_json(self, *args):
        return json.loads(self.ceph(*args, '--format', 'json'))

    # -- bring-up ------------------------------------------------------------
    def _write_conf(self):
        # the messenger ports of every daemon and client come from this
        # range: the monitor's two first, then what the others bind
        start = _free_ports(64)
        self.mon_port = start
        run = os.path.join(self.path, 'run')
        log = os.path.join(self.path, 'log')
        for d in (run, log, 'mon', 'mgr', 'osd'):
            os.makedirs(os.path.join(self.path, d), exist_ok=True)
        lines = [
            '[global]',
            'fsid = %s' % self.fsid,
            'mon_host = [v2:127.0.0.1:%d,v1:127.0.0.1:%d]' % (start,
                                                           start + 1),
            'mon_initial_members = a',
            'auth_cluster_required = cephx',
            'auth_service_required = cephx',
            'auth_client_required = cephx',
            'public_network = 127.0.0.0/8',
            'cluster_network = 127.0.0.0/8',
            'ms_bind_ipv6 = false',
            'ms_bind_port_min = %d' % (start + 2),
            'ms_bind_port_max = %d' % (start + 63),
            'osd_pool_default_size = 1',
            'osd_pool_default_min_size = 1',
            'osd_pool_default_pg_num = 8',
            'osd_pool_default_pgp_num = 8',
            'osd_crush_chooseleaf_type = 0',
            'mon_allow_pool_size_one = true',
            'mon_allow_pool_delete = true',
            'mon_data_avail_warn = 1',
            'mon_data_avail_crit = 0',
            'mon_warn_on_pool_no_redundancy = false',
            'mon_warn_on_insecure_global_id_reclaim_allowed = false',
            'auth_allow_insecure_global_id_reclaim = false',
            'run_dir = %s' % run,
            'admin_socket = %s/$cluster-$name.$pid.asok' % run,
            'log_file = %s/$cluster-$name.log' % log,
            'mon_cluster_log_file = %s/cluster.log' % log,
            'log_to_stderr = false',
            'err_to_stderr = true',
            'osd_objectstore = bluestore',
            'bluestore_block_create = true',
            'bluestore_block_size = %d' % OSD_BYTES,
            'osd_memory_target = 939524096',
            'bluestore_cache_autotune = false',
            'bluestore_cache_size = 67108864',
            'osd_op_num_shards = 2',
            'osd_op_num_threads_per_shard = 1',
            'mgr_initial_modules = ',
            'mon_data = %s/mon/$cluster-$id' % self.path,
            'mgr_data = %s/mgr/$cluster-$id' % self.path,
            'osd_data = %s/osd/$cluster-$id' % self.path,
            '',
            '[client]',
            # librbd's in-process cache would hide a fence from a test that
            # reads back what it wrote; consumers set their own
            'rbd_cache = false',
            '',
        ]
        with open(self.conf, 'w') as f:
            f.write('\n'.join(lines))

    def _spawn(self, name, *args):
        log = open(os.path.join(self.path, 'log', '%s.out' % name), 'ab')
        proc = subprocess.Popen(
            list(args) + ['--conf', self.conf, '-f'], stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=self.env(), start_new_session=True)
        log.close()
        self.procs[name] = proc
        return proc

    def start(self, timeout=120):
        os.makedirs(self.path, exist_ok=True)
        self._write_conf()
        mon_keyring = os.path.join(self.path, 'mon.keyring')
        self.run('ceph-authtool', '--create-keyring', mon_keyring,
                 '--gen-key', '-n', 'mon.', '--cap', 'mon', 'allow *')
        self.run('ceph-authtool', '--create-keyring', self.admin_keyring,
                 '--gen-key', '-n', 'client.admin',
                 '--cap', 'mon', 'allow *', '--cap', 'osd', 'allow *',
                 '--cap', 'mgr', 'allow *', '--cap', 'mds', 'allow *')
        os.chmod(self.admin_keyring, 0o600)
        self.run('ceph-authtool', mon_keyring, '--import-keyring',
                 self.admin_keyring)
        monmap = os.path.join(self.path, 'monmap')
        self.run('monmaptool', '--create', '--addv', 'a',
                 '[v2:127.0.0.1:%d,v1:127.0.0.1:%d]' % (self.mon_port,
                                                       self.mon_port + 1),
                 '--fsid', self.fsid, monmap)
        self.run('ceph-mon', '--conf', self.conf, '--mkfs', '-i', 'a',
                 '--monmap', monmap, '--keyring', mon_keyring)
        self._spawn('mon.a', 'ceph-mon', '-i', 'a')
        deadline = time.monotonic() + timeout
        self._wait(lambda: self.ceph('mon', 'stat', check=False,
                                     timeout=30), deadline, 'the monitor')
        # the manager: without it the pools report no capacity
        mgr_dir = os.path.join(self.path, 'mgr', 'ceph-x')
        os.makedirs(mgr_dir, exist_ok=True)
        self.ceph('auth', 'get-or-create', 'mgr.x', 'mon', 'allow profile mgr',
                  'osd', 'allow *', 'mds', 'allow *',
                  '-o', os.path.join(mgr_dir, 'keyring'))
        self._spawn('mgr.x', 'ceph-mgr', '-i', 'x')
        for _ in range(self.osds):
            self._add_osd()
        self._wait(lambda: self.ceph_json('osd', 'stat').get(
            'num_up_osds') == self.osds, deadline, 'the OSDs to be up')
        self.ceph('osd', 'pool', 'create', self.pool, '8')
        self.ceph('osd', 'pool', 'set', self.pool, 'size', '1',
                  '--yes-i-really-mean-it')
        self.run('rbd', '--conf', self.conf, '--keyring', self.admin_keyring,
                 'pool', 'init', self.pool)
        # capacity is what the manager reports: wait for it
        self._wait(lambda: self.ceph_json('df')['stats'].get(
            'total_bytes'), deadline, 'the manager to report capacity')
        return self

    def _add_osd(self):
        osd_uuid = str(uuid.uuid4())
        osd_id = self.ceph('osd', 'new', osd_uuid).strip()
        data = os.path.join(self.path, 'osd', 'ceph-%s' % osd_id)
        os.makedirs(data, exist_ok=True)
        self.ceph('auth', 'get-or-create', 'osd.%s' % osd_id, 'osd', 'allow *',
                  'mon', 'allow profile osd', 'mgr', 'allow profile osd',
                  '-o', os.path.join(data, 'keyring'))
        self.run('ceph-osd', '--conf', self.conf, '-i', osd_id, '--mkfs',
                 '--osd-uuid', osd_uuid, timeout=120)
        self._spawn('osd.%s' % osd_id, 'ceph-osd', '-i', osd_id)

    def _wait(self, predicate, deadline, what):
        while True:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError('%s exited (%s) while waiting for %s; '
                                       'see %s/log' % (name, proc.returncode,
                                                       what, self.path))
            try:
                if predicate():
                    return
            except (RuntimeError, subprocess.TimeoutExpired, ValueError,
                    KeyError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError('timed out waiting for %s (logs in %s/log)'
                                   % (what, self.path))
            time.sleep(0.3)

    # -- what tests and backends use -----------------------------------------
    def make_key(self, name, caps):
        """A keyring file for ``client.<name>`` with ``caps`` (pairs of
        daemon type and cap string); its path."""
        path = os.path.join(self.path, 'client.%s.keyring' % name)
        args = []
        for daemon, cap in caps:
            args += [daemon, cap]
        # written aside and renamed: the test workers of a run share the
        # cluster, and one of them may be reading the keyring another
        # makes again (``-o`` truncates it first)
        tmp = '%s.tmp-%d' % (path, os.getpid())
        self.ceph('auth', 'get-or-create', 'client.%s' % name, *args,
                  '-o', tmp)
        os.chmod(tmp, 0o600)
        os.rename(tmp, path)
        return path

    def client_conf(self, name, keyring, tag=''):
        """A ceph.conf of this cluster whose ``client.<name>`` finds its
        key in ``keyring`` (as an operator's /etc/ceph/ceph.conf does for
        a service that names only the conf file and the user); its path
        (``tag`` tells apart two confs of one user)."""
        with open(self.conf) as f:
            text = f.read()
        path = os.path.join(self.path, 'client.%s%s.conf' % (
            name, '-' + tag if tag else ''))
        tmp = '%s.tmp-%d' % (path, os.getpid())
        with open(tmp, 'w') as f:
            f.write(text.rstrip('\n') + '\n\n[client.%s]\nkeyring = %s\n'
                    % (name, keyring))
        os.rename(tmp, path)
        return path

    def make_backup_user(self, pool=BACKUP_POOL, name=BACKUP_USER):
        """The backup pool (made when missing) and the backup service's
        user with backup_caps on it: ``(conf, keyring)`` paths, the conf
        naming the keyring for that user."""
        self.ceph('osd', 'pool', 'create', pool, '8')
        self.ceph('osd', 'pool', 'application', 'enable', pool,
                  BACKUP_APPLICATION)
        keyring = self.make_key(name, backup_caps(pool))
        return self.client_conf(name, keyring), keyring

    def stop(self):
        """OSDs first, then the manager, then the monitor."""
        order = sorted(self.procs, key=lambda n: (
            0 if n.startswith('osd.') else 1 if n.startswith('mgr.') else 2))
        for name in order:
            proc = self.procs[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs = {}


SERVICE_USER = 'cinder-lite'
ATTACHMENT_PREFIX = 'cinder-lite'


def service_caps(pool, prefix=ATTACHMENT_PREFIX):
    """The caps of the volume service's Ceph user that doc/source/rbd.rst tells
    operators to grant: the tests' volume services connect with these,
    never as admin, so a cap the driver needs beyond them fails a test."""
    entity = 'client.%s.' % prefix
    mon = ', '.join(
        ['profile rbd'] +
        ['allow command "auth %s" with entity prefix %s' % (verb, entity)
         for verb in ('add', 'get', 'del')] +
        ['allow command "osd blocklist" with blocklistop=add',
         'allow command "osd blocklist ls"',
         'allow command "sessions"',
         'allow command "mon dump"',
         'allow command "df"'])
    return [('mon', mon), ('osd', 'profile rbd pool=%s' % pool),
            ('mgr', 'profile rbd pool=%s' % pool)]


def backup_caps(pool):
    """The caps of the backup service's Ceph user that doc/source/rbd.rst tells
    operators to grant: a read of the cluster maps, and what an RBD
    client may do in the backup pool (its objects, omap included, and
    the rbd class: the backup images of differential backups), nothing
    else; the tests' backup services connect with these.  (The volumes
    it reads it reaches with a key of each backup's own.)"""
    return [('mon', 'allow r'), ('osd', 'profile rbd pool=%s' % pool)]


def start_for_tests(path):
    """A started cluster with the volume service's user made."""
    cluster = CephCluster(path)
    try:
        cluster.start()
        cluster.service_keyring = cluster.make_key(
            SERVICE_USER, service_caps(cluster.pool))
    except BaseException:
        cluster.stop()
        raise
    return cluster


class Described:
    """A cluster another process runs, as its ``ready`` file describes
    it."""

    def __init__(self, description):
        self.conf = description['conf']
        self.admin_keyring = description['admin_keyring']
        self.service_keyring = description['service_keyring']
        self.pool = description['pool']
        self.path = description['path']

    ceph = CephCluster.ceph
    ceph_json = CephCluster.ceph_json
    run = CephCluster.run
    env = CephCluster.env
    make_key = CephCluster.make_key
    client_conf = CephCluster.client_conf
    make_backup_user = CephCluster.make_backup_user


def wait_described(path, timeout=240):
    """The cluster ``python -m tests.harness.ceph PATH`` runs, once it
    is up; RuntimeError with its reason when it could not start."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name in ('ready', 'failed'):
            try:
                with open(os.path.join(path, name)) as f:
                    text = f.read()
            except FileNotFoundError:
                continue
            if name == 'failed':
                raise RuntimeError('the test cluster did not start: %s'
                                   % text)
            return Described(json.loads(text))
        time.sleep(0.2)
    raise RuntimeError('the test cluster in %s was not up within %d s'
                       % (path, timeout))


def main(argv):
    """Run a cluster in DIR until SIGTERM or SIGINT; DIR/ready describes
    it once it is up (DIR/failed says why it is not)."""
    if len(argv) != 2:
        sys.exit('usage: python -m tests.harness.ceph DIR')
    path = argv[1]
    os.makedirs(path, exist_ok=True)
    # SIGTERM unwinds like Ctrl-C: the daemons are stopped on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    started = time.monotonic()
    try:
        cluster = start_for_tests(path)
    except BaseException as e:
        with open(os.path.join(path, 'failed'), 'w') as f:
            f.write('%s: %s' % (type(e).__name__, e))
        raise
    try:
        description = {'conf': cluster.conf, 'pool': cluster.pool,
                       'admin_keyring': cluster.admin_keyring,
                       'service_keyring': cluster.service_keyring,
                       'path': cluster.path}
        tmp = os.path.join(path, 'ready.tmp')
        with open(tmp, 'w') as f:
            json.dump(description, f)
        os.rename(tmp, os.path.join(path, 'ready'))
        print('ceph cluster up in %.1f s: conf %s, admin keyring %s, pool '
              '%s' % (time.monotonic() - started, cluster.conf,
                      cluster.admin_keyring, cluster.pool), flush=True)
        # until told to stop, or until the process that started this one
        # is gone (a test run killed outright leaves no cluster behind)
        parent = os.getppid()
        while os.getppid() == parent:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


if __name__ == '__main__':
    main(sys.argv)
