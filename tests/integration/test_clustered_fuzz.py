"""The stateful fuzzer (tests/stateful/) against the clustered deployment
(tests/harness/clustered.py, issue 52): two API processes behind
HAProxy, Galera's three nodes behind HAProxy with writes on one node
(two backups) and on all three,
the volume services ``node-ma@ma`` and ``node-ma2@ma`` of cluster
``aa``, ``node-noma@noma`` and a backup service.  The concurrent
sequences go through HAProxy to both APIs, whose transactions commit
through all three nodes: the fuzzer's invariants must hold (no plain
volume with two instances, no lost or doubled attachment, counters
that match), every transaction refused at certification run again
(db.api.run_writer), the retries counted and printed."""
import os
import shutil
import tempfile

import pytest

from tests import stateful
from tests.harness import cluster as cluster_mod
from tests.harness import clustered

SEED = 3
THREADS = 6
STEPS = 900


@pytest.fixture(scope='module', params=[1, None],
                ids=['one-writer', 'all-writers'])
def deployment(galera, request):
    """The clustered deployment, its database through HAProxy to one
    Galera node (two backups) or to all three."""
    where = tempfile.mkdtemp(prefix='cinder-lite-clustered-')
    noma = cluster_mod.NODES['noma']
    d = clustered.Deployment(galera, where, db_writers=request.param,
                             extra_nodes={'noma': noma}, backup=True,
                             # a heartbeat late on a loaded machine must
                             # not make a backend look down (as in
                             # test_stateful_fuzz.py)
                             service_down_time=30)
    try:
        try:
            d.start()
        except (cluster_mod.ClusterError,
                cluster_mod.ServiceUnavailable) as e:
            pytest.fail('the clustered deployment did not start: %s' % e,
                        pytrace=False)
        print('clustered deployment started in %.1f s' % d.started_in)
        yield d
    finally:
        bad = d.stop()
        if os.environ.get('CINDER_LITE_KEEP_WORKDIR') != '1':
            shutil.rmtree(where, ignore_errors=True)
    assert not bad, 'services did not stop cleanly on SIGTERM: %r' % bad


def test_stateful_fuzz_behind_haproxy(deployment):
    d = deployment
    d.check_alive()
    retries_before = d.retries()
    galera_before = d.galera_counters()
    fz = stateful.fuzz(d.url, STEPS, threads=THREADS, seed=SEED)
    print(fz.summary())
    print(fz.verdict())
    d.check_alive()
    retries = d.retries()
    print('transactions run again (db.api.run_writer): %d, per process %r'
          % (sum(retries.values()) - sum(retries_before.values()),
             {name: retries[name] - retries_before.get(name, 0)
              for name in retries}))
    galera = d.counters_since(galera_before, d.galera_counters())
    print('Galera nodes: %r' % galera)
    if d.db_writers is None:
        # the writes went through all three nodes
        assert all(c['wsrep_local_commits'] > 0
                   for c in galera.values()), galera
    assert not fz.unexpected(), '%s\n%s\n%s' % (
        fz.summary(), fz.report(), fz.verdict())
