"""The API's RPC endpoint (topic cinder-lite-api) checks who speaks:
in keystone mode every message's token is validated as a REST request's
and the caller is whoever Keystone says (tests/harness/bus_callers.py);
in noauth mode the bus is trusted, and the API says so at start."""
import logging

import pytest

from cinder_lite.connector import client
from cinder_lite.connector import host
from tests.harness import bus_callers
from tests.harness import stack as stack_mod
from tests.harness import util


class _Records(logging.Handler):
    """What the API's bus_auth logs (on its own logger: the stack's
    config sets up the root logger's handlers again as it starts)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def bus_auth_log():
    logger = logging.getLogger('cinder_lite.api.bus_auth')
    handler = _Records()
    logger.addHandler(handler)
    yield handler.records
    logger.removeHandler(handler)


@pytest.fixture
def keystone(tmp_path):
    tokens = bus_callers.Tokens()
    s = stack_mod.Stack(tmp_path / 'st', extra={
        'auth_strategy': 'keystone'},
        sections=bus_callers.keystone_sections()).start()
    s.tokens = tokens
    yield s
    s.stop()
    tokens.cleanup()


def test_forged_contexts_are_refused_in_keystone_mode(keystone):
    bus_callers.forged_contexts_refused(keystone.url, keystone.tokens,
                                        util.wait_for)


def test_keystone_mode_says_nothing_of_trusting_the_bus(tmp_path,
                                                       bus_auth_log):
    tokens = bus_callers.Tokens()
    s = stack_mod.Stack(tmp_path / 'st', extra={
        'auth_strategy': 'keystone'},
        sections=bus_callers.keystone_sections()).start()
    try:
        assert not [r for r in bus_auth_log
                    if r.levelno >= logging.WARNING]
    finally:
        s.stop()
        tokens.cleanup()


def test_noauth_trusts_the_bus_and_says_so(tmp_path, bus_auth_log):
    s = stack_mod.Stack(tmp_path / 'st').start()
    try:
        warnings = [r for r in bus_auth_log
                    if r.levelno >= logging.WARNING]
        assert len(warnings) == 1, warnings
        assert warnings[0].levelno == logging.WARNING
        assert 'trusts every context on the bus' in warnings[0].getMessage()
        # and it does: a context that says nothing of roles attaches
        api = s.client()
        api.create_type('ma', {'multiattach': '<is> True'})
        vol = api.create_volume(volume_type='ma')
        attacher = client.AttachClient(
            client.BusTransport(stack_mod.PROJECT),
            host.get_connector(host='compute-noauth', ip='127.0.0.2'))
        att = attacher.attach(vol['id'])
        assert att['status'] == 'attached'
        assert attacher.detach(att['id']) == []
        # said once, at start, not per message
        assert len([r for r in bus_auth_log
                    if r.levelno >= logging.WARNING]) == 1
    finally:
        s.stop()
