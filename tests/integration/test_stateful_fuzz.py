"""The model-based, concurrent fuzzer (tests/stateful/) against a
distributed cinder_lite -- API with two worker processes, scheduler,
volume nodes ma and noma, a backup service, as separate processes over
RabbitMQ -- on MariaDB and on PostgreSQL (a fresh database each, dropped
afterwards).  Skipped
with the reason when a service is missing, failed instead under
CINDER_LITE_REQUIRE_SERVICES=1 (see conftest.py).

Shorter than the functional run (each database under about 40 s with the
cluster's start); what it adds is real READ COMMITTED row locking between
processes under the same sequences."""
from tests import stateful
from tests.harness import cluster as cluster_mod

CLUSTER_KINDS = cluster_mod.KINDS
# no service stops here: a heartbeat late on a loaded machine must not
# make a backend look down (tests/harness/cluster.py uses 3 s)
# make a backup service (the plans take backups)
CLUSTER_OPTIONS = dict(cluster_mod.posix_backup(), api_workers=2,
                       service_down_time=30)

SEED = 3
THREADS = 6
STEPS = 900


def test_stateful_fuzz(cluster):
    cluster.check_alive()
    fz = stateful.fuzz(cluster.url, STEPS, threads=THREADS, seed=SEED)
    print(fz.summary())
    print(fz.verdict())
    cluster.check_alive()
    assert not fz.unexpected(), '%s\n%s\n%s' % (
        fz.summary(), fz.report(), fz.verdict())
