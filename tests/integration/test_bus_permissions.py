"""The compute nodes' RabbitMQ user of doc/source/deployment.rst, on a vhost of
the machine's RabbitMQ made for this module (users and vhost with unique
names, deleted at the end): it makes a real attach through the API's RPC
server (topic cinder-lite-api, oslo.messaging as our client does) and the
broker refuses it (ACCESS_REFUSED) when it casts to the volume service's
topic.  And in keystone mode, over that broker, messages with a forged
context are refused (tests/harness/bus_callers.py)."""
import shutil
import subprocess
import urllib.parse
import uuid

import amqp
import oslo_messaging as messaging
import pytest

from cinder_lite.cmd import config
from cinder_lite.common import context as cl_context
from cinder_lite.common import rpc
from cinder_lite.connector import client
from cinder_lite.connector import host
from cinder_lite import service
from cinder_lite.scheduler import rpcapi as scheduler_rpcapi
from cinder_lite.volume import rpcapi as volume_rpcapi
from tests.harness import bus_callers
from tests.harness import cluster as cluster_mod
from tests.harness import stack as stack_mod
from tests.harness import util

RUN = uuid.uuid4().hex[:10]
VHOST = 'cl-bus-%s' % RUN
SERVICE_USER = 'cl-bus-services-%s' % RUN
COMPUTE_USER = 'cl-bus-compute-%s' % RUN
PASSWORD = uuid.uuid4().hex
EXCHANGE = 'cinder-lite-bus-%s' % RUN


def compute_permissions(exchange):
    """What doc/source/deployment.rst gives the compute nodes' user, for a
    control_exchange of ``exchange``: (configure, write, read) of
    ``set_permissions`` and (exchange, write, read) of
    ``set_topic_permissions``."""
    return (('^(reply_.*|%s)$' % exchange, '^(reply_.*|%s)$' % exchange,
             '^reply_.*'),
            (exchange, '^cinder-lite-api(\\..+)?$', '^$'))


def _ctl(*args):
    proc = subprocess.run([cluster_mod.RABBITMQCTL] + list(args),
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise AssertionError('rabbitmqctl %s: %s%s' % (
            ' '.join(args), proc.stdout, proc.stderr))
    return proc.stdout


def _url(user, vhost=VHOST):
    parts = urllib.parse.urlsplit(cluster_mod.RABBIT_URL)
    return 'rabbit://%s:%s@%s:%d/%s' % (
        user, PASSWORD, parts.hostname or '127.0.0.1', parts.port or 5672,
        vhost)


@pytest.fixture(scope='module')
def broker():
    """The vhost and its two users; deleted at the end."""
    try:
        cluster_mod.check_rabbit()
    except cluster_mod.ServiceUnavailable as e:
        util.skip_or_fail('RabbitMQ: %s' % e)
    if not cluster_mod.RABBITMQCTL or not shutil.which(
            cluster_mod.RABBITMQCTL):
        util.skip_or_fail('no rabbitmqctl: cannot make a vhost and users')
    try:
        _ctl('add_vhost', VHOST)
    except AssertionError as e:
        util.skip_or_fail('rabbitmqctl cannot manage the broker: %s' % e)
    try:
        _ctl('add_user', SERVICE_USER, PASSWORD)
        _ctl('set_permissions', '-p', VHOST, SERVICE_USER, '.*', '.*', '.*')
        _ctl('add_user', COMPUTE_USER, PASSWORD)
        (conf, write, read), (exchange, t_write, t_read) = \
            compute_permissions(EXCHANGE)
        _ctl('set_permissions', '-p', VHOST, COMPUTE_USER, conf, write, read)
        _ctl('set_topic_permissions', '-p', VHOST, COMPUTE_USER, exchange,
             t_write, t_read)
        yield {'services': _url(SERVICE_USER), 'compute': _url(COMPUTE_USER)}
    finally:
        for user in (SERVICE_USER, COMPUTE_USER):
            subprocess.run([cluster_mod.RABBITMQCTL, 'delete_user', user],
                           capture_output=True, timeout=60)
        _ctl('delete_vhost', VHOST)


@pytest.fixture
def compute_node(broker, tmp_path):
    """This process configured as a compute node: the compute user's
    transport_url and the deployment's control_exchange (the services
    run as processes of their own)."""
    path = tmp_path / 'compute.conf'
    path.write_text('[DEFAULT]\ntransport_url = %s\ncontrol_exchange = %s\n'
                    % (broker['compute'], EXCHANGE))
    conf = config.parse_args(['--config-file', str(path)])
    yield conf
    service.release_bus()
    conf.reset()
    conf.clear()


@pytest.fixture(scope='module')
def services(broker, tmp_path_factory):
    """API, scheduler and volume nodes as processes, with the services'
    user on the vhost."""
    c = cluster_mod.Cluster(cluster_mod.SQLITE,
                            workdir=str(tmp_path_factory.mktemp('bus')),
                            rabbit_url=broker['services'])
    c.control_exchange = EXCHANGE
    try:
        c.start()
    except cluster_mod.ClusterError as e:
        pytest.fail('cluster did not start: %s' % e, pytrace=False)
    yield c
    c.stop()


def test_compute_user_reaches_the_api_and_nothing_else(services,
                                                       compute_node):
    api = stack_mod.Client(services.url)
    api.create_type('ma', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='ma')
    # a real attach through the API's RPC server, as the compute user
    attacher = client.AttachClient(
        client.BusTransport(stack_mod.PROJECT),
        host.get_connector(host='compute-bus', ip='127.0.0.2'))
    att = attacher.attach(vol['id'], mode='rw')
    assert (att['status'], att['attach_mode']) == ('attached', 'rw')
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'in-use'
    # a cast to the volume service's topic, refused by the broker
    # (retry=0: a refusal is final; oslo.messaging would try forever)
    ctxt = cl_context.RequestContext(project_id=stack_mod.PROJECT,
                                     is_admin=True, current=False)
    # (one: a refused publish closes the connection oslo.messaging pools,
    # and its next send with retry=0 hears only that; more topics and
    # the fanout exchanges in the next test, with plain AMQP)
    volume_client = rpc.get_client(volume_rpcapi.TOPIC, '1.0',
                                   server='node-ma@ma')
    with pytest.raises(messaging.MessageDeliveryFailure) as e:
        volume_client.prepare(retry=0).cast(ctxt, 'delete_volume',
                                            volume_id=vol['id'])
    assert 'ACCESS_REFUSED' in str(e.value), repr(e.value)
    assert "access to topic '%s.node-ma@ma'" % volume_rpcapi.TOPIC in str(
        e.value), repr(e.value)
    # nothing happened to the volume
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'in-use'
    assert attacher.detach(att['id']) == []


@pytest.mark.parametrize('exchange,routing_key', [
    (EXCHANGE, volume_rpcapi.TOPIC),
    (EXCHANGE, '%s.node-ma@ma' % volume_rpcapi.TOPIC),
    (EXCHANGE, scheduler_rpcapi.TOPIC),
    (EXCHANGE, 'cinder-lite-api-not'),
    ('%s_fanout' % volume_rpcapi.TOPIC, ''),
    ('%s_fanout' % scheduler_rpcapi.TOPIC, ''),
    ('', volume_rpcapi.TOPIC),            # the default exchange
], ids=lambda value: (value.replace(EXCHANGE, 'control-exchange')
                      if value else 'default'))
def test_amqp_publish_elsewhere_is_refused(broker, services, exchange,
                                           routing_key):
    """The refusal is the broker's, whatever client speaks: a plain AMQP
    publish with the compute user's credentials, to every other topic
    and exchange the services use."""
    parts = urllib.parse.urlsplit(broker['compute'])
    conn = amqp.Connection(host='%s:%d' % (parts.hostname, parts.port),
                           userid=COMPUTE_USER, password=PASSWORD,
                           virtual_host=VHOST)
    conn.connect()
    try:
        channel = conn.channel()
        with pytest.raises(amqp.exceptions.AccessRefused) as e:
            channel.basic_publish(amqp.Message('{}'), exchange=exchange,
                                  routing_key=routing_key)
            # (a refused publish closes the channel: the next command
            # hears it)
            channel.queue_declare('reply_%s' % uuid.uuid4().hex,
                                  auto_delete=True)
        assert 'ACCESS_REFUSED' in str(e.value)
    finally:
        conn.close()


def test_forged_contexts_are_refused_over_rabbitmq(broker, tmp_path):
    """keystone mode on the real broker (the API's RPC server in this
    process, with the services' user): the scenario of
    tests/functional/test_bus_callers.py.  On a vhost of its own: queues
    are named after their topic whatever the exchange, so the services
    of the cluster above would take this stack's messages."""
    vhost = '%s-keystone' % VHOST
    _ctl('add_vhost', vhost)
    tokens = bus_callers.Tokens()
    try:
        _ctl('set_permissions', '-p', vhost, SERVICE_USER, '.*', '.*', '.*')
        s = stack_mod.Stack(tmp_path / 'st', extra={
            'auth_strategy': 'keystone',
            'transport_url': _url(SERVICE_USER, vhost)},
            sections=bus_callers.keystone_sections())
        try:
            s.start()
            bus_callers.forged_contexts_refused(s.url, tokens,
                                                util.wait_for)
        finally:
            s.stop()
    finally:
        tokens.cleanup()
        _ctl('delete_vhost', vhost)
