"""The RBD driver's export calls timed in this process, for
``bench/attach.py --targets rbd --rbd-calls N``: create_export (the omap
record, ``auth add`` of the attachment's key) and remove_export (``auth
del``, the monitors' sessions of the user and a blocklist entry for each,
the barrier) on the bench's cluster, N cycles without a client and N with
a librados client connected with the key, with the CPU per call of this
process and of each Ceph daemon."""
import os
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import ceph_cluster  # noqa: E402
from bench import volume_create as vc  # noqa: E402
from tests.harness import cluster as cluster_mod  # noqa: E402

pct, ms = vc.pct, vc.ms


class TimedDriver:
    """An RBDDriver of this process on the bench's cluster (its own
    section ``rbd``, the volume service's user), whose monitor commands
    and barrier are timed as they pass: create_export and remove_export
    are the driver's own, only watched."""

    def __init__(self, cluster, workdir):
        from oslo_config import cfg
        from cinder_lite import conf as conf_mod
        from cinder_lite.conf import volume as volume_conf
        from cinder_lite.volume.drivers import rbd as rbd_driver
        os.makedirs(os.path.join(workdir, 'state'), exist_ok=True)
        path = cluster_mod.write_conf(
            os.path.join(workdir, 'driver.conf'),
            {'DEFAULT': {'state_path': os.path.join(workdir, 'state')},
             'rbd': cluster.backend()})
        conf = cfg.ConfigOpts()
        conf_mod.register_opts(conf)
        conf(['--config-file', path], project='cinder_lite')
        self.driver = rbd_driver.RBDDriver(
            volume_conf.BackendConf(conf, 'rbd'), 'rbd', 'bench@rbd')
        self.driver.do_setup()
        self.driver.check_for_setup_error()
        self.spent = {}          # part -> [seconds] of the current call
        mon, barrier = self.driver._mon, self.driver._barrier

        def timed_mon(command, *args, **kwargs):
            t0 = time.perf_counter()
            try:
                return mon(command, *args, **kwargs)
            finally:
                self.spent.setdefault(command['prefix'], []).append(
                    time.perf_counter() - t0)

        def timed_barrier():
            t0 = time.perf_counter()
            try:
                return barrier()
            finally:
                self.spent.setdefault('barrier', []).append(
                    time.perf_counter() - t0)
        self.driver._mon, self.driver._barrier = timed_mon, timed_barrier

    def call(self, fn, *args):
        """(seconds, {part: seconds}) of one driver call."""
        self.spent = {}
        t0 = time.perf_counter()
        fn(*args)
        total = time.perf_counter() - t0
        return total, {k: sum(v) for k, v in self.spent.items()}


def _connect_as(info, driver):
    """A librados client with the attachment's key, as a host connects
    (its monitor session is what the cut-off blocklists)."""
    from cinder_lite.common import credentials
    from cinder_lite.volume.drivers import rbd as rbd_driver
    rados = rbd_driver.rados_module()
    client = rados.Rados(
        rados_id=info['auth_username'], conffile=None,
        conf={'mon_host': ','.join('[v1:%s:%s]' % hp for hp in zip(
            info['hosts'], info['ports'])),
              'key': credentials.keyring(driver.conf).cephx_key(
                  info['attachment_id']),
              'keyring': '', 'client_mount_timeout': '10'})
    client.connect(timeout=10)
    ioctx = client.open_ioctx(info['name'].partition('/')[0])
    return client, ioctx


def run(cluster, cycles, workdir):
    """create_export and remove_export of the RBD driver, ``cycles``
    times each without a client (the attach cycle's case: nobody
    connected with the key) and with a librados client connected with
    the key between them (the cut-off then blocklists its session).
    Returns rows: {variant, call: {total: [s], parts: {part: [s]}},
    cpu: {call: {group: s}}}."""
    td = TimedDriver(cluster, workdir)
    driver = td.driver
    groups = {'bench': lambda: [os.getpid()]}
    groups.update(cluster.groups())
    volume = {'id': str(uuid.uuid4()), 'size': 1, 'multiattach': True}
    driver.create_volume(volume)
    out = []
    try:
        for variant in ('no client', 'client connected'):
            res = {'variant': variant, 'cycles': 0,
                   'calls': {c: {'total': [], 'parts': {}} for c in
                             ('create_export', 'remove_export')},
                   'cpu': {c: {g: 0.0 for g in groups} for c in
                           ('create_export', 'remove_export')}}
            for _ in range(cycles):
                att = str(uuid.uuid4())
                connector = {'host': 'bench-rbd', 'ip': '127.0.0.1'}
                for call, fn, args in (
                        ('create_export', driver.create_export,
                         (volume, connector, 'rw', att)),
                        ('remove_export', driver.remove_export,
                         (volume, connector, att, False))):
                    if call == 'remove_export' and variant != 'no client':
                        info = driver.initialize_connection(
                            volume, connector, 'rw', att)['data']
                        info['attachment_id'] = att
                        client, ioctx = _connect_as(info, driver)
                    else:
                        client = None
                    before = {g: cluster_cpu(fn_) for g, fn_ in
                              groups.items()}
                    total, parts = td.call(fn, *args)
                    for g, fn_ in groups.items():
                        res['cpu'][call][g] += cluster_cpu(fn_) - before[g]
                    res['calls'][call]['total'].append(total)
                    for part, spent in parts.items():
                        res['calls'][call]['parts'].setdefault(
                            part, []).append(spent)
                    if client is not None:
                        try:
                            ioctx.close()
                        except Exception:
                            pass       # its handle was cut off: expected
                        client.shutdown()
                res['cycles'] += 1
            out.append(res)
    finally:
        try:
            driver.delete_volume(volume)
        finally:
            driver.stop()
    return out


def cluster_cpu(pids):
    return ceph_cluster.cpu_seconds(pids())


def print_rows(rows):
    print_table = vc.print_table
    print()
    print('RBD driver calls in this process (ms per call, p50 / p95; '
          'parts: the monitor commands and the barrier inside the call, '
          'p50; "other" = the rest: omap record, image open, keyring)')
    table = []
    for r in rows:
        for call, c in r['calls'].items():
            parts = c['parts']
            other = [t - sum(parts[p][i] for p in parts)
                     for i, t in enumerate(c['total'])]
            table.append((r['variant'], call, len(c['total']),
                          '%s / %s' % (ms(pct(c['total'], 50)),
                                       ms(pct(c['total'], 95))),
                          ', '.join('%s %s' % (p, ms(pct(v, 50)))
                                    for p, v in parts.items()) +
                          ', other %s' % ms(pct(other, 50))))
    print_table(('variant', 'call', 'calls', 'ms p50 / p95',
                 'parts (p50 ms)'), table)
    print()
    print('RBD driver calls: CPU ms per call (utime+stime; bench = this '
          'process, the driver and any librados client in it; ceph-* = '
          'whole daemons)')
    groups = list(rows[0]['cpu']['create_export']) if rows else []
    table = []
    for r in rows:
        for call, cpu in r['cpu'].items():
            n = max(1, len(r['calls'][call]['total']))
            table.append((r['variant'], call, n) + tuple(
                '%.2f' % (1000.0 * cpu[g] / n) for g in groups) +
                ('%.2f' % (1000.0 * sum(cpu.values()) / n),))
    print_table(('variant', 'call', 'calls') + tuple(groups) + ('all',),
                table)
