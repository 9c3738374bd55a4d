"""A service answering a call while its database is out of reach.

Raised as itself, SQLAlchemy's error crossed the bus as oslo.messaging's
RemoteError, which the API cannot tell from a bug: an attach made while
the database restarted was answered 500 (tests/integration/
test_attach_outages.py, a CI run under load).  Every endpoint our RPC
servers serve now raises DatabaseUnavailable instead, one of our domain
errors, which crosses as itself and the API answers 503
(``service.DatabaseGuard``).

An RPC server of this process on RabbitMQ, on an exchange of its own,
whose endpoint opens a connection to a MariaDB port nothing listens on:
the error is the driver's own.
"""
import uuid

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from cinder_lite.cmd import config
from cinder_lite.common import context as cl_context
from cinder_lite.common import exception
from cinder_lite.common import rpc
from cinder_lite import service
from tests.harness import cluster as cluster_mod
from tests.harness import util

RUN = uuid.uuid4().hex[:10]
TOPIC = 'cinder-lite-test-db-%s' % RUN
SERVER = 'node-db@%s' % RUN


class Bug(Exception):
    """An error of a module the bus does not carry as itself."""


class Endpoint:

    target = messaging.Target(version='1.0')

    def __init__(self, port):
        self.engine = sa.create_engine(
            'mysql+pymysql://root@127.0.0.1:%d/cinder_lite' % port)

    def read(self, ctxt):
        with self.engine.connect() as conn:
            return conn.execute(sa.text('SELECT 1')).scalar()

    def fail(self, ctxt):
        raise Bug('not a database error')

    def refuse(self, ctxt):
        raise exception.InvalidInput(reason='refused as asked')


@pytest.fixture
def server(tmp_path):
    try:
        cluster_mod.check_rabbit()
    except cluster_mod.ServiceUnavailable as e:
        util.skip_or_fail('RabbitMQ: %s' % e)
    path = tmp_path / 'rpc.conf'
    path.write_text('[DEFAULT]\ntransport_url = %s\ncontrol_exchange = '
                    'cinder-lite-test-%s\n' % (cluster_mod.RABBIT_URL, RUN))
    conf = config.parse_args(['--config-file', str(path)])
    # a port nothing listens on: connecting is refused at once
    port = int(util.free_range(1).partition('-')[0])
    # an RPC server as the services make theirs (no services row: the
    # database is the one out of reach)
    svc = service.RPCService(conf, 'cinder-lite-test', TOPIC, SERVER,
                             [Endpoint(port)], 'nova', register=False)
    svc.start()
    try:
        yield rpc.get_client(TOPIC, '1.0', server=SERVER, timeout=30)
    finally:
        svc.stop()
        svc.wait()
        service.release_bus()
        conf.reset()
        conf.clear()


def _ctxt():
    return cl_context.RequestContext(project_id='p', is_admin=True,
                                     current=False)


def test_a_database_out_of_reach_crosses_as_database_unavailable(server):
    with pytest.raises(exception.DatabaseUnavailable) as e:
        server.call(_ctxt(), 'read')
    # which service, and that the caller may retry; not the driver's words
    assert e.value.message == (
        'Service %s could not answer: its database is unavailable; retry '
        'later' % SERVER)
    assert isinstance(e.value, exception.ServiceUnavailable)


def test_other_errors_cross_as_before(server):
    # a bug stays a RemoteError (the API answers 500 and logs it)
    with pytest.raises(messaging.RemoteError) as e:
        server.call(_ctxt(), 'fail')
    assert e.value.exc_type == 'Bug'
    # a domain error crosses as itself
    with pytest.raises(exception.InvalidInput) as e:
        server.call(_ctxt(), 'refuse')
    assert 'refused as asked' in str(e.value)
