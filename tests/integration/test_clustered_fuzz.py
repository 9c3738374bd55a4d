"""The stateful fuzzer (tests/stateful/) against the control plane laid
out as clouds run it (tests/harness/clustered.py, issue 52): three
Galera nodes behind HAProxy with writes spread over all three, three
RabbitMQ nodes of one cluster with the RPC servers' queues quorum queues,
two API processes behind another HAProxy, the scheduler, volume services
``node-ma@ma`` and ``node-ma2@ma`` of cluster ``aa``, ``node-noma@noma``
and a backup service.

The fuzzer's invariants hold as on one server (no 5xx, no plain volume
with two instances, no attachment lost or counted twice, nothing left in
transition once the burst is over); the transactions that certification
failures made run again (db.api.run_writer) and what each Galera node
committed and refused are printed.  ``bench/clustered_fuzz.py`` runs
the same longer, with one writer or three.
"""
import os
import shutil
import tempfile

import pytest

from cinder_lite.volume import rpcapi as volume_rpcapi
from tests import stateful
from tests.harness import cluster as cluster_mod
from tests.harness import clustered
from tests.harness import servers

SEED = 3
THREADS = 4
STEPS = 150
START_BUDGET_S = 120


@pytest.fixture(scope='module')
def deployment(galera):
    where = tempfile.mkdtemp(prefix='cinder-lite-clustered-fuzz-')
    broker = servers.RabbitCluster(where)
    d = clustered.Deployment(
        galera, os.path.join(where, 'deployment'), db_writers=None,
        extra_nodes={'noma': cluster_mod.NODES['noma']}, backup=True,
        broker=broker,
        # a heartbeat late on a loaded machine must not make a backend
        # look down
        service_down_time=30)
    try:
        try:
            broker.start()
            os.makedirs(d.workdir)
            d.start()
        except (cluster_mod.ClusterError, cluster_mod.ServiceUnavailable,
                RuntimeError, AssertionError) as e:
            pytest.fail('the clustered deployment did not start: %s' % e,
                        pytrace=False)
        print('clustered deployment (RabbitMQ cluster included) started '
              'in %.1f s (Galera %.1f s before)'
              % (d.started_in, galera.started_in))
        yield d
    finally:
        try:
            bad = d.stop()
        finally:
            broker.destroy()
            shutil.rmtree(where, ignore_errors=True)
    assert not bad, 'services did not stop cleanly on SIGTERM: %r' % bad


def test_bus_queues_are_quorum_queues(deployment):
    queues = deployment.broker.queues()
    rpc = {name: kind for name, (kind, _) in queues.items()
           if name.startswith(volume_rpcapi.TOPIC) and
           'fanout' not in name}
    assert rpc, sorted(queues)
    assert set(rpc.values()) == {'quorum'}, rpc


def test_fuzz_with_writes_on_three_galera_nodes(deployment):
    deployment.check_alive()
    retries_before = deployment.retries()
    galera_before = deployment.galera_counters()
    fz = stateful.fuzz(deployment.url, STEPS, threads=THREADS, seed=SEED)
    print(fz.summary())
    print(fz.verdict())
    retries = deployment.retries()
    print('transactions run again (db.api.run_writer): %r' % {
        name: retries[name] - retries_before.get(name, 0)
        for name in retries})
    galera = deployment.counters_since(galera_before,
                                       deployment.galera_counters())
    print('Galera nodes: %r' % galera)
    deployment.check_alive()
    assert not fz.unexpected(), '%s\n%s\n%s' % (
        fz.summary(), fz.report(), fz.verdict())
    # the writes went to all three nodes
    assert len(galera) == 3, galera
    assert all(c['wsrep_local_commits'] > 0 for c in galera.values()), \
        galera
