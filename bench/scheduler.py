#!/usr/bin/env python
"""Scheduling with many backends reporting, in-process, with the
scheduler's and the API's own classes (part of ``bench/scale.py``).

For each backend count B (``--backends``, default 100,1000,10000): a fresh
SQLite database with the project's schema gets B ``cinder-volume``
services rows, each up, with the capabilities a file backend reports
(its own ``volume_backend_name``, random capacity, a third of them
multiattach, two availability zones).  Then:

* ``start``: the first decision of a scheduler that just started (it
  reads the services table);
* ``report``: ``update_from_report`` of one backend's capabilities, what
  every heartbeat of every volume service costs each scheduler;
* ``decide``: one placement as ``SchedulerManager.create_volume`` makes
  it, in a writer transaction, without recording the host: no extra
  specs, a multiattach type, a type pinned to one backend name, and a
  size no backend holds (the refusal, with its reason);
* ``api check``: what ``POST /volumes`` asks before it records a volume
  (``check_backends``: is a live backend able to hold this type?).

Floor: SQLite ``SELECT 1`` in a transaction, the same engine.

    .venv/bin/python bench/scheduler.py --backends 100,1000,10000
"""
import argparse
import os
import random
import shutil
import sys
import tempfile
import time

import sqlalchemy as sa
from oslo_config import cfg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import volume_create as vc  # noqa: E402
from cinder_lite.common import exception  # noqa: E402
from cinder_lite.db import api as db_api  # noqa: E402
from cinder_lite.db import migration  # noqa: E402
from cinder_lite.db import models  # noqa: E402
from cinder_lite import conf as cl_conf  # noqa: E402
from cinder_lite.scheduler import manager  # noqa: E402
from cinder_lite.volume import admission  # noqa: E402


pct = vc.pct
timed = vc.timed


def log(msg):
    print('[scheduler] %s' % msg, file=sys.stderr, flush=True)


def capabilities(rng, i):
    return {'volume_backend_name': 'b%d' % i,
            'vendor_name': 'cinder_lite', 'driver_version': '1.0',
            'storage_protocol': 'file',
            'total_capacity_gb': 1000.0,
            'free_capacity_gb': float(rng.randrange(10, 1000)),
            'provisioned_capacity_gb': float(rng.randrange(0, 1000)),
            'max_over_subscription_ratio': 20.0,
            'reserved_percentage': 0,
            'thin_provisioning_support': True,
            'thick_provisioning_support': False,
            'multiattach': i % 3 == 0, 'shared_targets': False}


def seed(engine, n, rng, zones=('east', 'nova'), full=False):
    """``n`` cinder-volume services rows, up, each with ``capabilities``,
    in ``zones`` in turn; ``full``: none with room for a volume (no free
    capacity, thick provisioning)."""
    now = models.utcnow()
    rows = []
    for i in range(n):
        caps = capabilities(rng, i)
        if full:
            caps.update(free_capacity_gb=0.0,
                        thin_provisioning_support=False,
                        thick_provisioning_support=True)
        rows.append({'uuid': '00000000-0000-4000-8000-%012d' % i,
                     'host': 'node%d@b%d' % (i, i),
                     'binary': 'cinder-volume',
                     'topic': 'cinder-lite-volume', 'backend': 'b%d' % i,
                     'report_count': 1, 'disabled': False,
                     'availability_zone': zones[i % len(zones)],
                     'heartbeat_at': now, 'created_at': now,
                     'capabilities': caps})
    if rows:
        with engine.begin() as conn:
            conn.execute(sa.insert(models.Service.__table__), rows)


def conf_for(path):
    conf = cfg.ConfigOpts()
    cl_conf.register_opts(conf)
    conf([], project='cinder-lite', default_config_files=[])
    conf.set_override('connection', 'sqlite:///%s' % path, 'database')
    # the seeded heartbeats stay fresh for the whole run
    conf.set_override('service_down_time', 3600)
    return conf


def decide(mgr, spec):
    with db_api.writer() as session:
        try:
            if hasattr(mgr.host_manager, 'choose'):
                return mgr.host_manager.choose(session, spec,
                                               manager.choose_backend)
            # the scheduler before the index: every row, every decision
            return manager.choose_backend(
                mgr.host_manager.live_backends(session), spec)
        except exception.NoValidBackend:
            return None


def run(n, samples, rng):
    work = tempfile.mkdtemp(prefix='cinder-lite-sched-')
    try:
        conf = conf_for(os.path.join(work, 'db.sqlite'))
        engine = db_api.configure(conf)
        migration.upgrade()
        seed(engine, n, rng)
        results = {}
        mgr = manager.SchedulerManager(conf)
        t0 = time.perf_counter()
        decide(mgr, {'size': 1, 'availability_zone': None,
                     'extra_specs': {}})
        results['start: first decision (reads the table)'] = [
            time.perf_counter() - t0]
        for i in range(n):
            # every backend reports once (what the fan-out does)
            mgr.host_manager.update_from_report(
                'node%d@b%d' % (i, i), 'nova' if i % 2 else 'east',
                capabilities(rng, i), models.utcnow().isoformat())
        hosts = ['node%d@b%d' % (i, i) for i in range(n)]

        def report():
            i = rng.randrange(n)
            mgr.host_manager.update_from_report(
                hosts[i], 'nova' if i % 2 else 'east', capabilities(rng, i),
                models.utcnow().isoformat())
        results['report: ingest one capability report'] = timed(
            report, max(samples * 10, 1000))
        specs = [
            ('decide: no extra specs', {}, 1),
            ('decide: multiattach type', {'multiattach': '<is> True'}, 1),
            ('decide: type pinned to one backend name',
             {'volume_backend_name': 'b%d' % (n // 2)}, 1),
            ('decide: no backend holds it (refusal)', {}, 100000),
        ]
        for name, extra, size in specs:
            spec = {'size': size, 'availability_zone': None,
                    'extra_specs': extra}
            results[name] = timed(lambda: decide(mgr, spec), samples)
        vtype = {'name': 'bench', 'extra_specs': {
            'multiattach': '<is> True'}}

        def api_check():
            with db_api.reader() as session:
                admission.check_backends(session, {'size': 1}, vtype,
                                         conf)
        results['api check: a live backend for the type?'] = timed(
            api_check, samples)

        def floor():
            with engine.begin() as conn:
                conn.execute(sa.text('SELECT 1')).scalar()
        results['floor: SELECT 1 in a transaction'] = timed(floor,
                                                            samples * 3)
        return results
    finally:
        db_api.dispose()
        shutil.rmtree(work, ignore_errors=True)


def ms(value):
    if value != value:
        return '-'
    return ('%.3f' if value < 0.001 else '%.2f' if value < 0.1
            else '%.0f') % (value * 1000.0)


def report_table(runs):
    counts = [n for n, _ in runs]
    names = list(runs[0][1])
    headers = ['measure (ms)'] + ['%s p50 / p99' % '{:,}'.format(n)
                                  for n in counts]
    rows = [[name] + ['%s / %s' % (ms(pct(r[name], 50)),
                                   ms(pct(r[name], 99)))
                      for _, r in runs] for name in names]
    if len(runs) > 1:
        # what grows with the cloud: the p50 at the most backends over
        # the p50 at the fewest (the API's check, 631ac61: x18)
        headers.append('p50 x (%s / %s)' % ('{:,}'.format(counts[-1]),
                                            '{:,}'.format(counts[0])))
        for row, name in zip(rows, names):
            first, last = pct(runs[0][1][name], 50), pct(runs[-1][1][name],
                                                         50)
            row.append('%.1f' % (last / first) if first else '-')
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    line = ' | '.join('%%-%ds' % widths[0] if i == 0 else '%%%ds' % w
                      for i, w in enumerate(widths))
    print('\nscheduling with B backends reporting (in-process, SQLite; '
          'load average %s)' % ' '.join('%.2f' % x
                                        for x in os.getloadavg()))
    print(line % tuple(headers))
    print('-+-'.join('-' * w for w in widths))
    for row in rows:
        print(line % tuple(row))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--backends', default='100,1000,10000')
    p.add_argument('--samples', type=int, default=200)
    p.add_argument('--seed', type=int, default=1)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    runs = []
    for n in [int(x) for x in args.backends.split(',') if x.strip()]:
        log('%d backends' % n)
        runs.append((n, run(n, args.samples, rng)))
    report_table(runs)
    return 0


if __name__ == '__main__':
    sys.exit(main())
