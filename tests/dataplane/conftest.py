"""The data-path stacks: a file backend exporting over NBD or iSCSI
(tests/harness/dataplane.py), checked for leftovers when they stop."""
import pytest

from tests.harness import dataplane as dp
from tests.harness import util


@pytest.fixture
def nbd_stack(tmp_path):
    util.need('nbdkit')
    s = dp.start(tmp_path, dp.nbd_backend())
    yield s
    dp.stop(s)
    assert util.processes('nbdkit', s.state_path) == []


@pytest.fixture
def iscsi_stack(tmp_path):
    util.need('tgtd', 'tgtadm')
    backend = dp.iscsi_backend()
    s = dp.start(tmp_path, backend)
    s.tgt_control = backend['target_control_port']
    yield s
    dp.stop(s)
    # the service stopped with no export left: its tgtd is gone
    assert util.processes('tgtd', 'portal=127.0.0.1:%d'
                          % backend['target_port']) == []
