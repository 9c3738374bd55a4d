"""The single-node Ceph cluster the RBD benches start for themselves
(tests/harness/ceph.py), the RBD backend section that uses it, and the
CPU of its daemons.

A bench calls :func:`start` once, gives :func:`backend` as the options of
a backend section, and calls ``stop()`` on the cluster at the end."""
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.harness import ceph as ceph_mod  # noqa: E402
from tests.harness import util  # noqa: E402

CLK_TCK = os.sysconf('SC_CLK_TCK')
DAEMONS = ('mon', 'mgr', 'osd')


class Cluster:
    """A started cluster in a directory of its own, removed by stop()."""

    def __init__(self, announce=None):
        missing = ceph_mod.missing_programs()
        if missing:
            raise RuntimeError('Ceph is not installed (%s missing)'
                               % ', '.join(missing))
        self.path = tempfile.mkdtemp(prefix='cinder-lite-bench-ceph-')
        t0 = time.perf_counter()
        try:
            self.cluster = ceph_mod.start_for_tests(
                os.path.join(self.path, 'c'))
        except BaseException:
            shutil.rmtree(self.path, ignore_errors=True)
            raise
        self.started_in = time.perf_counter() - t0
        if announce:
            announce('ceph', 'single-node cluster up in %.1f s (%s)'
                     % (self.started_in, self.cluster.conf))

    @property
    def conf(self):
        return self.cluster.conf

    @property
    def pool(self):
        return self.cluster.pool

    @property
    def admin_keyring(self):
        return self.cluster.admin_keyring

    def backend(self, **extra):
        """The RBD driver's backend options on the cluster's pool,
        connecting as the volume service's user (not admin)."""
        return dict({'volume_driver':
                     'cinder_lite.volume.drivers.rbd.RBDDriver',
                     'rbd_pool': self.cluster.pool,
                     'rbd_user': ceph_mod.SERVICE_USER,
                     'rbd_ceph_conf': self.cluster.conf,
                     'rbd_keyring_conf': self.cluster.service_keyring},
                    **extra)

    def pids(self, daemon):
        """Pids of the cluster's ``daemon`` (mon, mgr, osd) processes."""
        return [p.pid for name, p in self.cluster.procs.items()
                if name.split('.')[0] == daemon and p.poll() is None]

    def groups(self):
        """{group name: pids callable} of the daemons, for CPU samplers;
        marked ``*``: whole servers, their background work included."""
        return {'ceph-%s*' % d: (lambda d=d: self.pids(d)) for d in DAEMONS}

    def rbd(self, *args, timeout=600):
        """The ``rbd`` command as client.admin; its stdout."""
        return self.cluster.run('rbd', '--conf', self.cluster.conf,
                                '--keyring', self.cluster.admin_keyring,
                                *args, timeout=timeout)

    def admin(self):
        """A librados client as client.admin and an ioctx of the pool."""
        from cinder_lite.volume.drivers import rbd as rbd_driver
        rados = rbd_driver.rados_module()
        client = rados.Rados(rados_id='admin', conffile=self.cluster.conf,
                             conf={'keyring': self.cluster.admin_keyring})
        client.connect(timeout=20)
        return client, client.open_ioctx(self.cluster.pool)

    def stop(self):
        try:
            self.cluster.stop()
        finally:
            shutil.rmtree(self.path, ignore_errors=True)


def cpu_seconds(pids):
    """utime+stime of ``pids`` (seconds; vanished ones count 0)."""
    total = 0
    for pid in pids:
        fields = util.stat_fields(pid)
        if fields is not None:
            total += int(fields[11]) + int(fields[12])    # utime, stime
    return total / float(CLK_TCK)
