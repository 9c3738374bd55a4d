"""The whole suite: the embedded stack fixtures, and how pytest-xdist
shares the modules out (README.rst's command runs two workers with
``--dist loadfile``: each module runs whole on one worker, so its
module-scoped cluster starts once)."""
import os

import pytest

from tests.harness import cluster as cluster_mod
from tests.harness import stack as stack_mod

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
    'tests/integration/test_crash.py',
    'tests/integration/test_stateful_fuzz.py',
    'tests/integration/test_quotas.py',
    'tests/integration/test_db_outage.py',
    'tests/integration/test_active_active.py',
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
# tests/integration/conftest.py.
SHARED_WORKER = {
    'tests/integration/test_nova.py': 'openstack',
    'tests/integration/test_images.py': 'openstack',
    'tests/integration/test_tempest.py': 'openstack',
}


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
            return SHARED_WORKER.get(path, path)

    return SharedWorkerScheduling(config, log)


@pytest.fixture
def stack(tmp_path):
    """A fresh embedded cinder_lite with one file backend."""
    s = stack_mod.Stack(tmp_path / 'state').start()
    yield s
    s.stop()


@pytest.fixture
def api(stack):
    return stack.client()
