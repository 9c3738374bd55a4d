"""Manage and unmanage in the distributed mode (API, scheduler and volume
processes over RabbitMQ, on MariaDB and PostgreSQL): a file written
outside cinder_lite on node ``ma``'s backend is listed by that node's
volume service, managed, attached over NBD from another address and
read back; unmanaged again, the file stays and the quota is given back;
a snapshot unmanaged and managed again keeps its data."""
import os

from tests.harness import dataplane
from tests.harness import util
from tests.harness.snapshots import snapshot
from tests.harness.snapshots import usage
from tests.harness.snapshots import wait_gone
from tests.harness.snapshots import wait_snapshot

CLUSTER_OPTIONS = {'extra_sections': {'ma': {
    'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1',
    'target_port_range': util.free_range(20)}}}

GiB = 1024 ** 3
MA_POOL = 'node-ma@ma#ma'


def backend_dir(cluster):
    return os.path.join(cluster.workdir, 'state', 'volumes', 'ma')


def manageable(api, kind='volumes'):
    resp = api.get('/manageable_%s/detail?host=node-ma@ma' % kind)
    assert resp.status_code == 200, resp.text
    return {e['reference']['source-name']: e
            for e in resp.json()['manageable-%s' % kind]}


def test_manage_attach_unmanage(cluster, api):
    dataplane_host = dataplane.attacher(cluster, 'a')
    content = os.urandom(4096)
    path = os.path.join(backend_dir(cluster), 'outside-%s.raw'
                        % cluster.run_id)
    with open(path, 'wb') as f:
        f.truncate(GiB)
        f.seek(4096)
        f.write(content)
    listed = manageable(api)
    name = os.path.basename(path)
    assert listed[name]['safe_to_manage'] is True, listed
    assert listed[name]['size'] == 1
    before = usage(api)
    resp = api.post('/os-volume-manage', json={'volume': {
        'host': MA_POOL, 'ref': {'source-name': name}, 'name': 'adopted'}})
    assert resp.status_code == 202, resp.text
    vol = api.wait_volume(resp.json()['volume']['id'], 'available')
    assert (vol['size'], vol['os-vol-host-attr:host']) == (1, MA_POOL)
    assert manageable(api)['volume-%s' % vol['id']]['cinder_id'] == \
        vol['id']
    after = usage(api)
    assert after['volumes'] == before['volumes'] + 1
    assert after['gigabytes'] == before['gigabytes'] + 1

    att, dev = dataplane_host.attach_device(vol['id'])
    assert att['connection_info']['driver_volume_type'] == 'nbd'
    assert dev.read(4096, 4096) == content
    dev.write(0, b'written through cinder_lite')
    dataplane_host.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')

    # a snapshot of it, unmanaged and managed again
    snap = snapshot(api, vol['id'])
    resp = api.post('/snapshots/%s/action' % snap['id'],
                    json={'os-unmanage': None})
    assert resp.status_code == 202, resp.text
    wait_gone(api, snap['id'])
    ref = {'source-name': 'snapshot-%s' % snap['id']}
    assert manageable(api, 'snapshots')[ref['source-name']][
        'safe_to_manage'] is True
    resp = api.post('/os-snapshot-manage', json={'snapshot': {
        'volume_id': vol['id'], 'ref': ref}})
    assert resp.status_code == 202, resp.text
    again = wait_snapshot(api, resp.json()['snapshot']['id'])
    assert again['size'] == 1
    assert api.delete('/snapshots/%s' % again['id']).status_code == 202
    wait_gone(api, again['id'])

    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-unmanage': None})
    assert resp.status_code == 202, resp.text
    api.wait_deleted(vol['id'])
    assert usage(api) == before
    kept = os.path.join(backend_dir(cluster), 'volume-%s' % vol['id'])
    with open(kept, 'rb') as f:
        assert f.read(27) == b'written through cinder_lite'
    os.unlink(kept)
