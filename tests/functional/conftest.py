"""Fixtures of the functional tests that need more than the embedded
stack: a real Glance (glance-api alone, tests/harness/glance.py) and a
stack that makes volumes from its images."""
import pytest

from tests.harness import cluster as cluster_mod
from tests.harness import glance as glance_mod
from tests.harness import stack as stack_mod
from tests.harness import util


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
def glance_stack(tmp_path, glance):
    """An embedded stack that finds Glance at ``glance``."""
    s = stack_mod.Stack(tmp_path / 'state', extra={
        'glance_api_servers': glance.url}).start()
    yield s
    s.stop()
