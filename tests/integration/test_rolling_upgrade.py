"""Rolling upgrade: services pinned to an older RPC API version with
``[upgrade_levels]`` keep working against newer volume services.

Volume RPC 1.2 made create_volume carry the volume; a scheduler capped at
1.1 (as one not upgraded yet would be) sends the 1.0 form and the volume
service reads the volume instead.  An API capped at 1.0 (from before
attachments) cannot send connect (1.1): it says so with a 503 and leaves
nothing half done; once the cap is lifted the same request works.
"""
import uuid

from tests.harness import stack
from tests.harness import cluster as cluster_mod

CLUSTER_KINDS = ['mysql']
CLUSTER_OPTIONS = {'process_sections': {
    'scheduler': {'upgrade_levels': {'volume_version_cap': '1.1'}}}}
OLD_FORM = 'the request did not carry the volume'


def _restart(cluster, name, sections):
    cluster.process_sections[name] = sections
    cluster.write_process_confs()
    assert cluster.processes[name].stop() == 0
    cluster.start_process(name)
    cluster.wait_ready()


def _created_from_old_form(cluster, volume_id):
    return any(OLD_FORM in line and volume_id in line
               for node in cluster_mod.NODES
               for line in cluster.processes[node].read_log().splitlines())


def test_pinned_scheduler_and_api(cluster):
    api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    old = api.create_volume()
    assert _created_from_old_form(cluster, old['id'])

    _restart(cluster, 'scheduler', {})
    new = api.create_volume()
    assert not _created_from_old_form(cluster, new['id'])

    _restart(cluster, 'api', {'upgrade_levels': {'volume_version_cap':
                                                 '1.0'}})
    assert api.create_volume()['status'] == 'available'
    connector = {'host': 'compute-1', 'ip': '127.0.0.5',
                 'initiator': 'iqn.2026-11.org.example:compute-1'}
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': new['id'], 'instance_uuid': str(uuid.uuid4()),
        'connector': connector}})
    assert resp.status_code == 503, resp.text
    assert 'volume_version_cap is 1.0' in resp.json()[
        'serviceUnavailable']['message']
    (att,) = api.get('/attachments?volume_id=%s' % new['id']).json()[
        'attachments']
    assert att['status'] == 'error_attaching'
    assert api.delete('/attachments/%s' % att['id']).status_code == 200

    _restart(cluster, 'api', {})
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': new['id'], 'instance_uuid': str(uuid.uuid4()),
        'connector': connector}})
    assert resp.status_code == 200, resp.text
    att = resp.json()['attachment']
    assert att['connection_info']['driver_volume_type'] == 'local'
    assert api.delete('/attachments/%s' % att['id']).status_code == 200
