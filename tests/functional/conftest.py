"""Fixtures of the functional tests that need more than the embedded
stack: a stack that makes volumes from the images of a real Glance (the
``glance`` fixture of tests/conftest.py, shared with the RBD tests)."""
import pytest

from tests.harness import stack as stack_mod


@pytest.fixture
def glance_stack(tmp_path, glance):
    """An embedded stack that finds Glance at ``glance``."""
    s = stack_mod.Stack(tmp_path / 'state', extra={
        'glance_api_servers': glance.url}).start()
    yield s
    s.stop()
