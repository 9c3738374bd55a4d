#!/usr/bin/env python
"""The stateful fuzzer (tests/stateful/) against the clustered deployment
(tests/harness/clustered.py, issue 52): two API processes behind
HAProxy, a Galera cluster of three nodes of its own behind HAProxy with
writes on one node (``--writers 1``, two backups) or on all three
(``--writers all``), the volume services ``node-ma@ma`` and
``node-ma2@ma`` of cluster ``aa``, ``node-noma@noma`` and a backup
service.  Prints the fuzzer's summary and verdict, the transactions run
again per process (db.api.run_writer) and each Galera node's commits,
certification failures and aborts; exits 1 when the fuzzer found
something.

    python bench/clustered_fuzz.py --writers all --steps 900 --threads 6

The suite runs a shorter one on the same deployment with a RabbitMQ
cluster of quorum queues (tests/integration/test_clustered_fuzz.py);
this script runs it longer, with one writer node or three.  Run as root (the
Galera nodes run as the ``mysql`` user).
"""
import argparse
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests import stateful  # noqa: E402
from tests.harness import cluster as cluster_mod  # noqa: E402
from tests.harness import clustered  # noqa: E402
from tests.harness import galera as galera_mod  # noqa: E402
from tests.harness import servers  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--writers', choices=['1', 'all'], default='all')
    parser.add_argument('--steps', type=int, default=900)
    parser.add_argument('--threads', type=int, default=6)
    parser.add_argument('--seed', type=int, default=3)
    args = parser.parse_args(argv)
    why = galera_mod.available()
    if why:
        print('Galera cannot run here: %s' % why, file=sys.stderr)
        return 2
    where = tempfile.mkdtemp(prefix='cinder-lite-clustered-fuzz-')
    galera = galera_mod.GaleraCluster(
        servers._owned_dir(os.path.join(where, 'galera'), 'mysql'))
    d = None
    try:
        galera.start()
        os.makedirs(os.path.join(where, 'deployment'))
        d = clustered.Deployment(
            galera, os.path.join(where, 'deployment'),
            db_writers=1 if args.writers == '1' else None,
            extra_nodes={'noma': cluster_mod.NODES['noma']}, backup=True,
            # a heartbeat late on a loaded machine must not make a
            # backend look down
            service_down_time=30)
        d.start()
        print('clustered deployment started in %.1f s' % d.started_in)
        retries_before = d.retries()
        galera_before = d.galera_counters()
        fz = stateful.fuzz(d.url, args.steps, threads=args.threads,
                           seed=args.seed)
        print(fz.summary())
        print(fz.verdict())
        retries = d.retries()
        print('transactions run again (db.api.run_writer): %d, per '
              'process %r' % (
                  sum(retries.values()) - sum(retries_before.values()),
                  {name: retries[name] - retries_before.get(name, 0)
                   for name in retries}))
        print('Galera nodes: %r' % d.counters_since(
            galera_before, d.galera_counters()))
        if fz.unexpected():
            print(fz.report())
            return 1
        return 0
    finally:
        if d is not None:
            d.stop()
        galera.destroy()
        shutil.rmtree(where, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
