import pytest

from tests.harness import stack as stack_mod


@pytest.fixture
def stack(tmp_path):
    """A fresh embedded cinder_lite with one file backend."""
    s = stack_mod.Stack(tmp_path / 'state').start()
    yield s
    s.stop()


@pytest.fixture
def api(stack):
    return stack.client()
