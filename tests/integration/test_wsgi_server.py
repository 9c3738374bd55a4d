"""The API under gunicorn (cinder_lite.wsgi.api:application, two worker
processes) in front of the scheduler and volume services: the same
requests work, /healthcheck answers without a token, every response
carries a request id."""
import uuid

import requests

from cinder_lite.connector import client as attach_client
from cinder_lite.connector import host as host_connector
from tests.harness import stack
from tests.harness import cluster as cluster_mod

CLUSTER_KINDS = ['postgresql']
CLUSTER_OPTIONS = {'api_server': 'gunicorn'}


def test_api_under_gunicorn(cluster):
    api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    workers = cluster_mod.child_pids(cluster.processes['api'].pid)
    assert len(workers) == cluster_mod.GUNICORN_WORKERS

    health = requests.get(cluster.url + '/healthcheck', timeout=10)
    assert health.status_code == 200
    assert health.text == 'database reachable'
    assert health.headers['x-openstack-request-id'].startswith('req-')
    # the dashboard comes with the WSGI app
    page = requests.get(cluster.url + '/dashboard/', timeout=10)
    assert page.status_code == 200 and 'app.js' in page.text

    api.create_type('shared', {'multiattach': '<is> True'})
    vols = [api.create_volume(volume_type='shared') for _ in range(3)]
    listed = api.get('/volumes/detail')
    assert listed.status_code == 200
    assert {v['id'] for v in vols} <= {
        v['id'] for v in listed.json()['volumes']}
    assert listed.headers['x-openstack-request-id'].startswith('req-')

    transport = attach_client.RestTransport(cluster.url + '/v3',
                                            cluster_mod.PROJECT)
    hosts = [attach_client.AttachClient(transport, host_connector.get_connector(
        host='compute-%d' % i, ip='127.0.0.%d' % (5 + i))) for i in (0, 1)]
    atts = [h.attach(vols[0]['id'], str(uuid.uuid4())) for h in hosts]
    assert all(a['status'] == 'attached' for a in atts)
    assert api.get('/volumes/%s' % vols[0]['id']).json()['volume'][
        'status'] == 'in-use'
    for h, a in zip(hosts, atts):
        h.detach(a['id'])
    for vol in vols:
        assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    for vol in vols:
        api.wait_deleted(vol['id'])
