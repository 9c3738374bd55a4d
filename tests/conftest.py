"""The whole suite: the embedded stack fixtures, and how pytest-xdist
shares the modules out (README.rst's command runs two workers with
``--dist loadfile``: each module runs whole on one worker, so its
module-scoped cluster starts once)."""
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from tests.harness import ceph as ceph_mod
from tests.harness import cluster as cluster_mod
from tests.harness import glance as glance_mod
from tests.harness import stack as stack_mod
from tests.harness import util

# The clusters' services are forks of a process that imported cinder_lite
# once (tests/harness/forkrun.py), not new interpreters: about 1 s of CPU
# less per start, some 170 starts per run.  CINDER_LITE_FORK_SERVICES=0
# starts real interpreters, as the benchmarks do.
cluster_mod.FORK_SERVICES = \
    os.environ.get('CINDER_LITE_FORK_SERVICES', '1') != '0'

# The modules that take longest, started first so that the workers end
# together (longest first is the classic rule for sharing jobs between
# machines).  Measured with --durations; order only, nothing else.
SLOW_FIRST = (
    'tests/integration/test_tempest.py',
    'tests/integration/test_nova.py',
    # the Ceph modules, one worker's share (CEPH_MODULES)
    'tests/dataplane/test_guests.py',
    'tests/integration/test_crash.py',
    'tests/integration/test_stateful_fuzz.py',
    'tests/integration/test_quotas.py',
    'tests/integration/test_db_outage.py',
    'tests/integration/test_active_active.py',
    'tests/integration/test_netns_faults.py',
    'tests/integration/test_kill_mid_copy.py',
    'tests/integration/test_attach_outages.py',
    'tests/integration/test_api_node_killed.py',
    'tests/integration/test_two_schedulers.py',
    'tests/integration/test_manage.py',
    'tests/functional/test_process.py',
    'tests/functional/test_dashboard.py',
    'tests/functional/test_readme.py',
    'tests/functional/test_fuzz.py',
    'tests/functional/test_manage_cli.py',
    'tests/functional/test_stateful_fuzz.py',
    'tests/functional/test_transfers.py',
    'tests/functional/test_sequences.py',
    'tests/functional/test_attachments.py',
    'tests/functional/test_packaging.py',
    'tests/functional/test_images.py',
    'tests/functional/test_volume_actions.py',
    'tests/functional/test_bad_input.py',
    'tests/functional/test_snapshot_clients.py',
    'tests/functional/test_image_copies.py',
)


# Modules that must run on the same worker, because they share what a
# session-scoped fixture starts: the OpenStack deployment of
# tests/integration/conftest.py; and the modules with RBD stacks, which
# share the run's one Ceph pool: a stack's exports are the pool's records
# of its service host (every stack's is testnode@rbd), and some tests
# count the pool's images, so two of them at once on two workers would
# see each other's.
# (every module under tests/rbd/, and these)
CEPH_MODULES = (
    'tests/dataplane/test_drain.py', 'tests/dataplane/test_fence_agent.py',
    'tests/dataplane/test_guests.py', 'tests/dataplane/test_takeover.py')
# The modules on the run's Galera cluster (the session-scoped ``galera``
# fixture of tests/integration/conftest.py: three mariadbd of about
# 130 MB each, one cluster per worker that asks for it).
GALERA_MODULES = (
    'tests/integration/test_galera.py',
    'tests/integration/test_galera_backups.py',
    'tests/integration/test_galera_haproxy.py',
    'tests/integration/test_galera_admin.py',
    'tests/integration/test_galera_backups.py',
    'tests/integration/test_galera_moves.py',
    'tests/integration/test_galera_services.py',
    'tests/integration/test_api_node_killed.py',
    'tests/integration/test_clustered_fuzz.py',
    # (a Galera cluster and a RabbitMQ cluster of the bench's own)
    'tests/integration/test_bench_attach_clustered.py')
SHARED_WORKER = dict({
    'tests/integration/test_nova.py': 'openstack',
    'tests/integration/test_images.py': 'openstack',
    'tests/integration/test_tempest.py': 'openstack',
}, **{path: 'ceph' for path in CEPH_MODULES},
    **{path: 'galera' for path in GALERA_MODULES})


def pytest_collection_modifyitems(config, items):
    """Slow modules first (the order of the collection is the order in
    which the workers are given the modules)."""
    rank = {path: i for i, path in enumerate(SLOW_FIRST)}
    order = {item: (rank.get(item.nodeid.split('::', 1)[0], len(rank)),
                    index) for index, item in enumerate(items)}
    items.sort(key=order.__getitem__)


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, with the modules of SHARED_WORKER kept
    together.  (pytest-xdist's own way, ``--dist loadgroup`` and the
    ``xdist_group`` mark, rewrites node ids in a way pytest 9.2 no longer
    honours.)"""
    if config.getvalue('dist') != 'loadfile':
        return None
    from xdist.scheduler import LoadFileScheduling
    # pytest-xdist hands the modules out by their number of tests, most
    # first, unless told otherwise: the order above would be lost (the
    # fuzzers and the README's walk-through, two tests each and the
    # longest, went last and ran alone at the end)
    config.option.loadscopereorder = False

    class SharedWorkerScheduling(LoadFileScheduling):

        def _split_scope(self, nodeid):
            path = super()._split_scope(nodeid)
            if path.startswith('tests/rbd/'):
                return 'ceph'
            return SHARED_WORKER.get(path, path)

    return SharedWorkerScheduling(config, log)


# -- one Ceph cluster per run ------------------------------------------------
# The process that runs the session (pytest-xdist's controller, or pytest
# itself without workers) starts the cluster of the RBD tests in the
# background before any worker exists, when the run holds such tests; the
# workers find it through CEPH_ENV.  A run of one module without it starts
# a cluster of its own in the ``ceph`` fixture.
CEPH_ENV = 'CINDER_LITE_TEST_CEPH'
CEPH_PATHS = ('tests/rbd', 'tests/dataplane', 'tests/integration')
_ceph_run = {}


def _wants_ceph(config):
    if ceph_mod.missing_programs() or CEPH_ENV in os.environ:
        return False
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for arg in config.args or ['tests']:
        path = os.path.relpath(os.path.abspath(arg.split('::')[0]), root)
        if path in ('.', 'tests') or path.startswith(CEPH_PATHS):
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    config = session.config
    if hasattr(config, 'workerinput') or not _wants_ceph(config):
        return
    path = tempfile.mkdtemp(prefix='cinder-lite-ceph-')
    log = open(os.path.join(path, 'harness.log'), 'wb')
    _ceph_run['proc'] = subprocess.Popen(
        [sys.executable, '-m', 'tests.harness.ceph', os.path.join(path, 'c')],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    log.close()
    _ceph_run['path'] = path
    os.environ[CEPH_ENV] = os.path.join(path, 'c')


def pytest_sessionfinish(session):
    proc = _ceph_run.pop('proc', None)
    if proc is not None:
        proc.terminate()
        try:
            # (each daemon gets 20 s to stop before it is killed)
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        # the OSD's file and the logs (kept when the run failed)
        if session.testsfailed == 0:
            shutil.rmtree(_ceph_run.pop('path'), ignore_errors=True)


@pytest.fixture(scope='session')
def ceph(tmp_path_factory):
    """The run's Ceph cluster (tests/harness/ceph.py): its conf, admin
    keyring, pool and the volume service's keyring."""
    missing = ceph_mod.missing_programs()
    if missing:
        util.skip_or_fail('Ceph is not installed (%s)' % ', '.join(missing))
    from cinder_lite.volume.drivers import rbd as rbd_driver
    try:
        rbd_driver.rbd_module()
    except ImportError as e:
        util.skip_or_fail(str(e))
    if CEPH_ENV in os.environ:
        yield ceph_mod.wait_described(os.environ[CEPH_ENV])
        return
    cluster = ceph_mod.start_for_tests(tmp_path_factory.mktemp('ceph'))
    try:
        yield cluster
    finally:
        cluster.stop()


def rbd_backend(ceph, **extra):
    """A backend section of the RBD driver on the run's pool, connecting
    as the volume service's user."""
    return dict({'volume_driver': 'cinder_lite.volume.drivers.rbd.RBDDriver',
                 'rbd_pool': ceph.pool, 'rbd_user': ceph_mod.SERVICE_USER,
                 'rbd_ceph_conf': ceph.conf,
                 'rbd_keyring_conf': ceph.service_keyring}, **extra)


@pytest.fixture
def rbd_stack(ceph, tmp_path):
    """An embedded cinder_lite whose one backend, ``rbd``, is the pool of
    the run's cluster; no export may be left when it stops."""
    s = stack_mod.Stack(tmp_path / 'st',
                        backends={'rbd': rbd_backend(ceph)}).start()
    yield s
    driver = s.volume_service('rbd').endpoints[0].driver
    left = driver.list_exports()
    s.stop()
    assert left == [], 'exports left behind: %s' % left


@pytest.fixture(scope='module')
def glance(tmp_path_factory):
    """glance-api of tools/openstack-venv, one per module; skipped
    without that virtualenv, failed instead under
    CINDER_LITE_REQUIRE_SERVICES=1."""
    util.need('qemu-img')
    server = glance_mod.Glance(tmp_path_factory.mktemp('glance'))
    try:
        server.start()
    except cluster_mod.ServiceUnavailable as e:
        util.skip_or_fail(str(e))
    yield server
    server.stop()


@pytest.fixture
def stack(tmp_path):
    """A fresh embedded cinder_lite with one file backend."""
    s = stack_mod.Stack(tmp_path / 'state').start()
    yield s
    s.stop()


@pytest.fixture
def api(stack):
    return stack.client()
