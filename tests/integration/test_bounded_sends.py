"""Sends to the scheduler, the backup service and the API's RPC server
are bounded (``cinder_lite.common.rpc.bounded``): with the broker away,
a request that must send answers 503 with the reason within the bound
instead of waiting for the broker, and leaves nothing behind it.

The deployment (API, scheduler, volume nodes and a backup service over
PostgreSQL) runs on a RabbitMQ node of its own
(tests/harness/servers.py), stopped with ``rabbitmqctl stop_app`` while:

* ``POST /volumes`` (a cast to the scheduler) answers 503 ``… the message
  bus did not take create_volume …`` within ``rpc.SEND_GRACE`` seconds
  and the volume is not left ``creating``;
* ``POST /backups`` (a cast to the backup services) answers 503 within
  the same bound and the backup is not left ``creating``;
* ``DELETE /backups/{id}`` answers 503 within the bound and the backup
  is ``available`` again (not ``deleting`` for good);
* an attach over the bus from a compute node (this process, through
  ``cinder_lite.api.rpcapi``) raises ServiceUnavailable within
  ``[upgrade_levels] api_rpc_timeout`` plus ``rpc.SEND_GRACE``.

Once the broker is back, the same requests work.
"""
import time
import uuid

import pytest

from cinder_lite.cmd import config
from cinder_lite.common import exception
from cinder_lite.common import rpc
from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from cinder_lite import service
from tests.harness import backups as backups_mod
from tests.harness import cluster as cluster_mod
from tests.harness import util

CLUSTER_KINDS = ['postgresql']
PRIVATE_SERVERS = ('broker',)
# a create cast while the scheduler's queue is not yet declared again
# after the broker's restart is dropped by the broker: the scheduler's
# reconciliation schedules it after reconcile_after (kept above
# volume_rpc_timeout plus 10 s)
CLUSTER_OPTIONS = dict(cluster_mod.posix_backup(), extra_default={
    'volume_rpc_timeout': 10, 'reconcile_after': 22,
    'reconcile_interval': 2})
API_RPC_TIMEOUT = 4
# what a request may take past its bound on a busy 2-core machine
SLACK_S = 5.0


@pytest.fixture
def compute_node(cluster, tmp_path):
    """This process configured as a compute node of the deployment: its
    broker and control exchange, and a short api_rpc_timeout."""
    path = tmp_path / 'compute.conf'
    path.write_text('[DEFAULT]\ntransport_url = %s\ncontrol_exchange = %s\n'
                    '[upgrade_levels]\napi_rpc_timeout = %d\n'
                    % (cluster.transport_url, cluster.control_exchange,
                       API_RPC_TIMEOUT))
    conf = config.parse_args(['--config-file', str(path)])
    yield conf
    service.release_bus()
    conf.reset()
    conf.clear()


def _timed(call, *args, **kwargs):
    begin = time.monotonic()
    resp = call(*args, **kwargs)
    took = time.monotonic() - begin
    # (shown with -s: the figures of doc/source/reliability.rst)
    print('%s %s -> %d in %.2f s: %s' % (call.__name__.upper(), args[0],
                                         resp.status_code, took,
                                         resp.text[:300]))
    return resp, took


def _unavailable(resp, took, method, bound):
    assert resp.status_code == 503, resp.text
    message = resp.json()['serviceUnavailable']['message']
    assert method in message and 'message bus' in message, message
    assert took < bound + SLACK_S, took


def _attach_once(api, attacher, volume_id):
    """An attach over the bus, or None (and nothing left) while the API's
    queue is not declared again after the broker's restart."""
    instance = str(uuid.uuid4())
    try:
        return attacher.attach(volume_id, instance)
    except exception.ServiceUnavailable:
        # (a create that went out late may have made a reservation)
        for att in api.get('/attachments?instance_id=%s' % instance).json()[
                'attachments']:
            api.delete('/attachments/%s' % att['id'])
        return None


def test_sends_give_up_while_the_broker_is_away(cluster, api, compute_node):
    vol = api.create_volume()
    kept = backups_mod.backup(api, vol['id'])
    attacher = client.AttachClient(
        client.BusTransport(cluster_mod.PROJECT),
        host_connector.get_connector(host='bus-host', ip='127.0.2.9'))
    # the compute node reaches the API over the bus before the outage
    with pytest.raises(exception.AttachmentNotFound):
        attacher.transport.get(str(uuid.uuid4()))
    name = 'outage-%s' % uuid.uuid4().hex[:8]

    cluster.broker.stop_app()
    try:
        resp, took = _timed(api.post, '/volumes', json={'volume': {
            'size': 1, 'name': name}})
        _unavailable(resp, took, 'create_volume', rpc.SEND_GRACE)
        resp, took = _timed(api.post, '/backups', json={'backup': {
            'volume_id': vol['id'], 'name': name}})
        _unavailable(resp, took, 'create_backup', rpc.SEND_GRACE)
        resp, took = _timed(api.delete, '/backups/%s' % kept['id'])
        _unavailable(resp, took, 'delete_backup', rpc.SEND_GRACE)
        begin = time.monotonic()
        with pytest.raises(exception.ServiceUnavailable) as e:
            attacher.attach(vol['id'], str(uuid.uuid4()))
        took = time.monotonic() - begin
        print('attach over the bus -> %s in %.2f s' % (e.value, took))
        assert 'attachment_create' in str(e.value), e.value
        assert took < API_RPC_TIMEOUT + rpc.SEND_GRACE + SLACK_S, took
        # nothing left behind by the refused requests
        assert [v for v in api.get('/volumes/detail').json()['volumes']
                if v['name'] == name] == []
        assert [b for b in api.get('/backups/detail').json()['backups']
                if b['name'] == name] == []
        assert backups_mod.show(api, kept['id'])['status'] == 'available'
    finally:
        cluster.broker.start_app()
    cluster.wait_ready(timeout=90)

    # the same requests work once the broker is back
    made = api.create_volume(name=name, wait=False)
    util.wait_for(lambda: api.get('/volumes/%s' % made['id']).json()[
        'volume']['status'] == 'available' or None, timeout=60,
        what='volume %s available' % made['id'])
    att = util.wait_for(lambda: _attach_once(api, attacher, made['id']),
                        timeout=60, interval=1,
                        what='an attach over the bus')
    assert att['status'] == 'attached'
    attacher.detach(att['id'])
    again = backups_mod.backup(api, vol['id'], name=name)
    for backup in (again, kept):
        assert api.delete('/backups/%s' % backup['id']).status_code == 202
        backups_mod.wait_gone(api, backup['id'])
    assert [a for a in api.get('/attachments').json()['attachments']] == []
    for volume in (vol, made):
        assert api.delete('/volumes/%s' % volume['id']).status_code == 202
        api.wait_deleted(volume['id'])
