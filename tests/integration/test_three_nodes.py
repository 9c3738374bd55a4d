"""A three-node rehearsal on one machine: the controller (API and
scheduler) on 127.0.0.2, storage node ``ma`` exporting over NBD on
127.0.0.3 and ``noma`` over iSCSI on 127.0.0.4, compute hosts on
127.0.0.5 and 127.0.0.6 reading and writing through the exports; all
separate processes over RabbitMQ and MariaDB.  One storage node is
stopped and started again while volumes are in use on both."""
import os
import uuid

import pytest

from cinder_lite.connector import client as attach_client
from cinder_lite.connector import host as host_connector
from tests.harness import stack
from tests.harness import cluster as cluster_mod
from tests.harness import util

CLUSTER_KINDS = ['mysql']
_ISCSI_PORT = util.free_port('127.0.0.4')
_NBD_PORT = min(util.free_port('127.0.0.3'), 65525)
CLUSTER_OPTIONS = {
    'api_host': '127.0.0.2',
    'node_options': {
        'ma': {'target_protocol': 'nbd', 'target_ip_address': '127.0.0.3',
               'target_port_range': '%d-%d' % (_NBD_PORT, _NBD_PORT + 9)},
        'noma': {'target_protocol': 'iscsi',
                 'target_ip_address': '127.0.0.4',
                 'target_port': _ISCSI_PORT,
                 'target_control_port': _ISCSI_PORT % 32768},
    }}


def _compute(cluster, address):
    transport = attach_client.RestTransport(cluster.url + '/v3',
                                            cluster_mod.PROJECT)
    return attach_client.AttachClient(transport, host_connector.get_connector(
        host='compute-%s' % address.rsplit('.', 1)[1], ip=address))


@pytest.fixture(autouse=True)
def _data_path_programs():
    util.need('nbdkit', 'tgtd')


def test_storage_node_restart_while_volumes_are_used(cluster):
    api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    for node in ('ma', 'noma'):
        api.create_type('on-' + node, {'volume_backend_name': node})
    vol_a = api.create_volume(volume_type='on-ma')
    vol_b = api.create_volume(volume_type='on-noma')
    assert vol_a['os-vol-host-attr:host'].startswith('node-ma@')
    assert vol_b['os-vol-host-attr:host'].startswith('node-noma@')
    c5, c6 = _compute(cluster, '127.0.0.5'), _compute(cluster, '127.0.0.6')
    att_a, dev_a = c5.attach_device(vol_a['id'], str(uuid.uuid4()))
    att_b, dev_b = c6.attach_device(vol_b['id'], str(uuid.uuid4()))
    assert att_a['connection_info']['host'] == '127.0.0.3'
    assert att_b['connection_info']['target_portal'] == '127.0.0.4:%d' % (
        _ISCSI_PORT)
    data_a, data_b = os.urandom(65536), os.urandom(65536)
    dev_a.write(0, data_a)
    dev_b.write(0, data_b)
    for dev in (dev_a, dev_b):
        dev.flush()

    # storage node noma goes away
    assert cluster.processes['noma'].stop() == 0
    util.wait_for(lambda: _state(api, 'node-noma@noma') == 'down',
                  timeout=30, what='noma down')
    # ma's volume keeps working, and so does noma's: its target daemon
    # outlives the service
    dev_a.write(65536, data_b)
    dev_a.flush()
    assert dev_a.read(65536, 65536) == data_b
    assert dev_b.read(0, 65536) == data_b
    # new volumes go to the node that is up
    vol_c = api.create_volume()
    assert vol_c['os-vol-host-attr:host'].startswith('node-ma@')
    # detaching from a node that is down is refused, nothing changes
    assert c6.transport.session.delete(
        c6.transport.base + '/attachments/%s' % att_b['id']
    ).status_code == 503
    assert api.get('/attachments/%s' % att_b['id']).json()['attachment'][
        'status'] == 'attached'

    # noma comes back, adopts its exports, and serves again
    cluster.start_process('noma')
    cluster.wait_ready()
    assert dev_b.read(0, 65536) == data_b
    c6.detach(att_b['id'], dev_b)
    att_b2, dev_b2 = c5.attach_device(vol_b['id'], str(uuid.uuid4()))
    assert dev_b2.read(0, 65536) == data_b
    c5.detach(att_b2['id'], dev_b2)
    c5.detach(att_a['id'], dev_a)
    for vol in (vol_a, vol_b, vol_c):
        assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    for vol in (vol_a, vol_b, vol_c):
        api.wait_deleted(vol['id'])


def _state(api, host):
    for svc in api.get('/os-services').json()['services']:
        if svc['host'] == host:
            return svc['state']
    return None
