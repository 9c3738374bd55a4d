"""Revert to snapshot (3.40) in the distributed mode, on MariaDB and on
PostgreSQL: the volume service of the volume's node writes the
snapshot's bytes back over RabbitMQ, Cinder's refusals hold, and a
revert sent to a volume service that was killed converges once the
service is back (never left ``reverting``)."""
import os
import time

from tests.harness import util

HOST_ATTR = 'os-vol-host-attr:host'
CLUSTER_OPTIONS = {'extra_default': {'reconcile_after': 2,
                                     'reconcile_interval': 1}}
MiB = 1024 ** 2


def _path(cluster, volume, kind='volume', rid=None):
    section = volume[HOST_ATTR].partition('@')[2].partition('#')[0]
    return os.path.join(cluster.workdir, 'state', 'volumes', section,
                        '%s-%s' % (kind, rid or volume['id']))


def _write(path, offset, data):
    with open(path, 'r+b') as f:
        f.seek(offset)
        f.write(data)


def _bytes(path):
    with open(path, 'rb') as f:
        return f.read()


def _snapshot(api, vid):
    resp = api.post('/snapshots', json={'snapshot': {'volume_id': vid}})
    assert resp.status_code == 202, resp.text
    sid = resp.json()['snapshot']['id']
    util.wait_for(lambda: api.get('/snapshots/%s' % sid).json()[
        'snapshot']['status'] == 'available', what='snapshot available')
    return sid


def _revert(api, vid, sid):
    return api.post('/volumes/%s/action' % vid,
                    json={'revert': {'snapshot_id': sid}})


def test_revert_over_the_bus(cluster, api):
    vol = api.create_volume(size=1)
    path = _path(cluster, vol)
    _write(path, 0, b'at the snapshot' * 1000)
    _write(path, 600 * MiB, b'far')
    first = _snapshot(api, vol['id'])
    latest = _snapshot(api, vol['id'])
    _write(path, 0, b'overwritten' * 1000)
    _write(path, 900 * MiB, b'after')
    resp = _revert(api, vol['id'], first)
    assert resp.status_code == 400, resp.text
    assert 'not the latest one' in resp.text
    resp = _revert(api, vol['id'], latest)
    assert resp.status_code == 202, resp.text
    api.wait_volume(vol['id'], 'available')
    assert _bytes(path) == _bytes(_path(cluster, vol, 'snapshot', latest))
    assert api.get('/snapshots/%s' % latest).json()['snapshot'][
        'status'] == 'available'


def test_a_revert_sent_to_a_killed_service_converges(cluster, api):
    vol = api.create_volume(size=1)
    path = _path(cluster, vol)
    _write(path, 0, b'kept in the snapshot')
    sid = _snapshot(api, vol['id'])
    _write(path, 0, b'changed after it')
    node = 'ma' if vol[HOST_ATTR].startswith('node-ma@') else 'noma'
    cluster.kill(node)
    try:
        # within service_down_time the API still takes the node for up:
        # the revert is recorded and cast to a queue nobody reads
        resp = _revert(api, vol['id'], sid)
        assert resp.status_code == 202, resp.text
        assert api.get('/volumes/%s' % vol['id']).json()['volume'][
            'status'] == 'reverting'
        time.sleep(3)
    finally:
        cluster.start_process(node)
        cluster.wait_ready()

    def settled():
        status = api.get('/volumes/%s' % vol['id']).json()['volume'][
            'status']
        return status if status != 'reverting' else None
    status = util.wait_for(settled, timeout=60, what='revert settled')
    assert api.get('/snapshots/%s' % sid).json()['snapshot'][
        'status'] == 'available'
    if status == 'available':
        # the queued revert was served once the service was back
        with open(path, 'rb') as f:
            assert f.read(20) == b'kept in the snapshot'
    else:
        # reconciliation came first: error, with the reason
        assert status == 'error'
        messages = [m for m in api.get('/messages').json()['messages']
                    if m['resource_uuid'] == vol['id']]
        assert messages and 'interrupted' in messages[0]['user_message']
