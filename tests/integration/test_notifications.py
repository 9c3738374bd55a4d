"""Notifications reach RabbitMQ: a listener on the cluster's vhost sees
volume.create/attach/detach/delete start and end, with the attachment id
and mode in the attach and detach payloads."""
import threading
import uuid

from oslo_config import cfg
import oslo_messaging as messaging
import pytest

from cinder_lite.connector import client as attach_client
from cinder_lite.connector import host as host_connector
from tests.harness import stack
from tests.harness import cluster as cluster_mod

TOPIC = 'cl_notifications'
CLUSTER_KINDS = ['mysql']
CLUSTER_OPTIONS = {'extra_sections': {'oslo_messaging_notifications': {
    'driver': 'messagingv2', 'topics': TOPIC}}}


class Collector:
    def __init__(self):
        self.events = []
        self.changed = threading.Condition()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        with self.changed:
            self.events.append((publisher_id, event_type, payload))
            self.changed.notify_all()

    def wait_for(self, event_type, key, value, timeout=30):
        def found():
            return [e for e in self.events
                    if e[1] == event_type and e[2].get(key) == value]
        with self.changed:
            self.changed.wait_for(found, timeout)
            hits = found()
        assert hits, 'no %s with %s=%s; got %s' % (
            event_type, key, value, [e[1] for e in self.events])
        return hits[0]


@pytest.fixture
def collector(cluster):
    conf = cfg.ConfigOpts()
    conf([], project='cinder-lite-test')
    transport = messaging.get_notification_transport(
        conf, url=cluster.transport_url)
    target = messaging.Target(topic=TOPIC,
                              exchange=cluster.control_exchange)
    found = Collector()
    listener = messaging.get_notification_listener(
        transport, [target], [found], executor='threading')
    listener.start()
    yield found
    listener.stop()
    listener.wait()
    transport.cleanup()


def test_volume_and_attachment_lifecycle_is_notified(cluster, collector):
    api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    api.create_type('shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='shared', name='notified')
    start = collector.wait_for('volume.create.start', 'volume_id', vol['id'])
    end = collector.wait_for('volume.create.end', 'volume_id', vol['id'])
    assert start[0] == 'volume.node-ctl'
    assert end[0] == 'volume.%s' % vol['os-vol-host-attr:host'].split(
        '#')[0]
    assert end[2]['status'] == 'available'
    assert end[2]['display_name'] == 'notified'
    assert end[2]['tenant_id'] == cluster_mod.PROJECT
    assert end[2]['multiattach'] is True

    transport = attach_client.RestTransport(cluster.url + '/v3',
                                            cluster_mod.PROJECT)
    host = attach_client.AttachClient(transport, host_connector.get_connector(
        host='compute-1', ip='127.0.0.5'))
    instance = str(uuid.uuid4())
    att = host.attach(vol['id'], instance, mode='ro')
    for event, status in (('volume.attach.start', 'attaching'),
                          ('volume.attach.end', 'attached')):
        _, _, payload = collector.wait_for(event, 'attachment_id', att['id'])
        assert payload['attach_mode'] == 'ro'
        assert payload['attach_status'] == status
        assert payload['instance_uuid'] == instance
        assert payload['attached_host'] == 'compute-1'
        assert payload['volume_id'] == vol['id']

    host.detach(att['id'])
    for event, status in (('volume.detach.start', 'detaching'),
                          ('volume.detach.end', 'detached')):
        _, _, payload = collector.wait_for(event, 'attachment_id', att['id'])
        assert payload['attach_mode'] == 'ro'
        assert payload['attach_status'] == status

    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    collector.wait_for('volume.delete.start', 'volume_id', vol['id'])
    end = collector.wait_for('volume.delete.end', 'volume_id', vol['id'])
    assert end[2]['status'] == 'deleted'
    api.wait_deleted(vol['id'])
