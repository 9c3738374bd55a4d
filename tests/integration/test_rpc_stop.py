"""How long a stopping service waits for its idle RabbitMQ consumers.

An idle consumer blocks in the broker's socket for heartbeat_timeout_threshold
/ heartbeat_rate / 2 seconds at a time, and a stop waits for that wait to
end (once for the RPC server, once for the reply queue).  With
oslo.messaging's default rate that was 5 s for an idle API;
``cinder_lite.common.rpc`` sets the rate's default so the wait is half a
second.  This reads the wait off a real connection to RabbitMQ: it notices
when oslo.messaging stops deriving it from the rate (the behaviour itself
is measured by stopping processes, not asserted on a clock)."""
from oslo_config import cfg
import oslo_messaging as messaging

from cinder_lite.common import rpc
from tests.harness import cluster as cluster_mod
from tests.harness import util


def _poll_wait(conf):
    transport = messaging.get_rpc_transport(conf,
                                            url=cluster_mod.RABBIT_URL)
    try:
        rpc.rabbit_defaults(conf)
        with transport._driver._get_connection(purpose='listen') as conn:
            return conn.connection._poll_timeout
    finally:
        transport.cleanup()


def _conf():
    conf = cfg.ConfigOpts()
    conf([], project='cinder-lite-test')
    return conf


def test_an_idle_consumer_checks_for_a_stop_twice_a_second():
    try:
        cluster_mod.check_rabbit()
    except cluster_mod.ServiceUnavailable as e:
        util.skip_or_fail('RabbitMQ: %s' % e)
    assert _poll_wait(_conf()) == 0.5


def test_the_operators_heartbeat_rate_wins():
    try:
        cluster_mod.check_rabbit()
    except cluster_mod.ServiceUnavailable as e:
        util.skip_or_fail('RabbitMQ: %s' % e)
    conf = _conf()
    # registered by the driver when its transport is made; an operator's
    # value in the configuration file is an override of the same option
    messaging.get_rpc_transport(conf, url=cluster_mod.RABBIT_URL).cleanup()
    conf.set_override('heartbeat_rate', 3, group='oslo_messaging_rabbit')
    assert _poll_wait(conf) == 10.0
