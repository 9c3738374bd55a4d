"""POST /workers/cleanup (3.24) with separate processes (PostgreSQL and
MariaDB, RabbitMQ): ``node-ma@ma`` and ``node-ma2@ma`` are cluster
``aa``, ``node-noma@noma`` runs alone.  ``reconcile_after`` is long, so
that only the cleanup settles what the killed services left:

* ma2 is killed holding an attachment it connected and nobody completed
  (``attaching``) and the cluster has a volume left ``creating``: the
  cleanup names ma2 ``cleaning``, and ma, the live member, rolls the
  create forward and completes the attachment; ma2 back, its export is
  there again and the attachment detaches;
* noma is killed with a volume left ``creating``: nobody else reaches its
  backend, so it is ``unavailable`` and the volume stays; noma back, its
  own reconciliation settles it (here: a cleanup it is asked itself).
"""
import datetime
import socket
import uuid

import sqlalchemy as sa

from cinder_lite.connector import host as host_connector
from cinder_lite.db import models
from tests.harness import cluster as cluster_mod
from tests.harness import util

CLUSTER_KINDS = ['postgresql', 'mysql']
ADDRESSES = {'ma': '127.0.0.3', 'ma2': '127.0.0.4'}
NBD = {'target_protocol': 'nbd', 'target_port_range': '11300-11399'}
CLUSTER_OPTIONS = {
    'extra_default': {'reconcile_after': 3600, 'reconcile_interval': 1},
    'node_options': {'ma': dict(NBD, target_ip_address=ADDRESSES['ma'])},
    'extra_nodes': {'ma2': ('node-ma2', 'ma', dict(
        NBD, target_ip_address=ADDRESSES['ma2'],
        volumes_dir='{workdir}/state/volumes/ma'))},
    'process_sections': {
        'ma': {'DEFAULT': {'cluster': 'aa'}},
        'ma2': {'DEFAULT': {'cluster': 'aa',
                            'state_path': '{workdir}/state-ma2'}}},
}
POOL = 'aa@ma#ma'
V324 = {'OpenStack-API-Version': 'volume 3.24'}
V354 = {'OpenStack-API-Version': 'volume 3.54'}


def _left_creating(cluster, api, host, cluster_name=None):
    """A volume as a service killed mid-create leaves it: recorded
    ``creating`` on its backend, changed a moment ago."""
    vtype = api.get('/types/default').json()['volume_type']
    volume_id = str(uuid.uuid4())
    now = datetime.datetime.utcnow()
    engine = sa.create_engine(cluster.db_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.insert(models.Volume).values(
                id=volume_id, project_id=cluster_mod.PROJECT,
                user_id='admin', size=1, status='creating',
                volume_type_id=vtype['id'], host=host,
                cluster_name=cluster_name, availability_zone='nova',
                multiattach=False, bootable=False, attach_seq=0,
                readonly=False, deleted=False, created_at=now,
                updated_at=now))
    finally:
        engine.dispose()
    return volume_id


def _status(api, volume_id):
    return api.get('/volumes/%s' % volume_id).json()['volume']['status']


def _listening(address):
    try:
        socket.create_connection(address, timeout=1).close()
        return True
    except OSError:
        return False


def _wait_down(api, host):
    util.wait_for(lambda: any(
        s['host'] == host and s['state'] == 'down'
        for s in api.get('/os-services').json()['services']),
        timeout=30, what='%s seen down' % host)


def _connect_on_ma2(cluster, api, volume_id):
    """An attachment of ``volume_id`` connected (connection handed out)
    through ma2 and never completed."""
    for n in range(40):
        connector = host_connector.get_connector(
            host='compute-%d' % n, ip='127.0.1.%d' % (n + 1))
        resp = api.post('/attachments', headers=V354, json={'attachment': {
            'volume_uuid': volume_id, 'instance_uuid': str(uuid.uuid4()),
            'connector': connector, 'mode': 'rw'}})
        assert resp.status_code == 200, resp.text
        attachment = resp.json()['attachment']
        info = attachment['connection_info']
        if info['host'] == ADDRESSES['ma2']:
            return attachment, (info['host'], info['port'])
        assert api.delete('/attachments/%s' % attachment['id'],
                          headers=V354).status_code == 200
    raise AssertionError('no attachment landed on ma2')


def test_cleanup_through_the_live_member(cluster, api):
    vtype = api.create_type('wc-shared', {'multiattach': '<is> True',
                                          'volume_backend_name': 'ma'})
    vol = api.create_volume(volume_type=vtype['name'])
    attachment, address = _connect_on_ma2(cluster, api, vol['id'])
    assert attachment['status'] == 'attaching'
    assert _status(api, vol['id']) == 'attaching'
    cluster.kill('ma2')
    _wait_down(api, 'node-ma2@ma')
    lost = _left_creating(cluster, api, POOL, POOL)

    # before 3.24 there is no such resource
    assert api.post('/workers/cleanup', headers={
        'OpenStack-API-Version': 'volume 3.23'}).status_code == 404
    resp = api.post('/workers/cleanup', headers=V324, json={
        'cluster_name': 'aa'})
    assert resp.status_code == 202, resp.text
    body = resp.json()
    assert [(s['host'], s['binary'], s['cluster_name'])
            for s in body['cleaning']] == [
        ('node-ma2@ma', 'cinder-volume', 'aa@ma')]
    assert body['unavailable'] == []
    api.wait_volume(lost, 'available')
    util.wait_for(lambda: api.get(
        '/attachments/%s' % attachment['id'], headers=V354).json()[
        'attachment']['status'] == 'attached', timeout=30,
        what='attachment completed by the cleanup')
    api.wait_volume(vol['id'], 'in-use')
    log = cluster.processes['ma'].read_log()
    assert 'workers cleanup of node-ma2@ma requested' in log
    assert 'reconcile: volume %s: creating -> available' % lost in log

    cluster.start_process('ma2')
    cluster.wait_ready()
    # the member back makes the export of the attached attachment again
    util.wait_for(lambda: _listening(address), timeout=30,
                  what='export restored on ma2')
    assert api.delete('/attachments/%s' % attachment['id'],
                      headers=V354).status_code == 200
    util.wait_for(lambda: not _listening(address), timeout=10,
                  what='export stopped')
    api.wait_volume(vol['id'], 'available')
    for volume_id in (vol['id'], lost):
        assert api.delete('/volumes/%s' % volume_id).status_code == 202
        api.wait_deleted(volume_id)


def test_a_lone_service_is_unavailable_until_back(cluster, api):
    made = api.create_volume(volume_type=api.create_type(
        'wc-noma', {'volume_backend_name': 'noma'})['name'])
    host = api.get('/volumes/%s' % made['id']).json()['volume'][
        'os-vol-host-attr:host']
    assert host.startswith('node-noma@noma#')
    lost = _left_creating(cluster, api, host)
    cluster.kill('noma')
    _wait_down(api, 'node-noma@noma')
    resp = api.post('/workers/cleanup', headers=V324, json={
        'binary': 'cinder-volume', 'resource_id': lost})
    assert resp.status_code == 202, resp.text
    body = resp.json()
    assert body['cleaning'] == []
    assert [s['host'] for s in body['unavailable']] == ['node-noma@noma']
    assert _status(api, lost) == 'creating'

    cluster.start_process('noma')
    cluster.wait_ready()
    resp = api.post('/workers/cleanup', headers=V324, json={
        'is_up': True, 'host': 'node-noma', 'resource_id': lost})
    assert resp.status_code == 202, resp.text
    assert [s['host'] for s in resp.json()['cleaning']] == \
        ['node-noma@noma']
    api.wait_volume(lost, 'available')
    for volume_id in (made['id'], lost):
        assert api.delete('/volumes/%s' % volume_id).status_code == 202
        api.wait_deleted(volume_id)
