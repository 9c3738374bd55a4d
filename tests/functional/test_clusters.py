"""A volume service in a cluster (``[DEFAULT] cluster``), over the real
API on SQLite and the in-memory bus: its backend is ``cluster@section``,
volumes live there and are reached through the cluster's RPC server,
attachments record the member holding their export; a service that was
alone and joins a cluster brings its volumes and attachments along."""
import uuid

from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from tests.harness import stack as stack_mod
from tests.harness import util

V361 = {'OpenStack-API-Version': 'volume 3.61'}
V354 = {'OpenStack-API-Version': 'volume 3.54'}
CONNECTOR = {'host': 'compute-1', 'ip': '127.0.0.2'}


def _export_host(attachment_id):
    with db_api.reader() as session:
        return db_attachments.get(session, attachment_id).export_host


def _attach(api, volume_id):
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': volume_id, 'instance_uuid': str(uuid.uuid4()),
        'connector': CONNECTOR}}, headers=V354)
    assert resp.status_code == 200, resp.text
    attachment = resp.json()['attachment']
    resp = api.post('/attachments/%s/action' % attachment['id'],
                    json={'os-complete': None}, headers=V354)
    assert resp.status_code == 204, resp.text
    return attachment


def _detach_and_delete(api, volume_id, attachment_id):
    resp = api.delete('/attachments/%s' % attachment_id, headers=V354)
    assert resp.status_code == 200, resp.text
    api.wait_volume(volume_id, 'available')
    assert api.delete('/volumes/%s' % volume_id).status_code == 202
    api.wait_deleted(volume_id)


def test_a_cluster_member_serves_the_cluster_backend(tmp_path):
    s = stack_mod.Stack(tmp_path, extra={'cluster': 'aa'}).start()
    try:
        api = s.client()
        services = api.get('/os-services', headers={
            'OpenStack-API-Version': 'volume 3.7'}).json()['services']
        assert {s['host']: s['cluster'] for s in services} == {
            'testnode': None, 'testnode@file': 'aa@file'}
        pools = api.get('/scheduler-stats/get_pools').json()['pools']
        assert [p['name'] for p in pools] == ['aa@file#file']

        vol = api.create_volume()
        shown = api.get('/volumes/%s' % vol['id'],
                        headers=V361).json()['volume']
        assert shown['os-vol-host-attr:host'] == 'aa@file#file'
        assert shown['cluster_name'] == 'aa@file#file'
        # extend goes to the cluster's RPC server
        resp = api.post('/volumes/%s/action' % vol['id'],
                        json={'os-extend': {'new_size': 2}})
        assert resp.status_code == 202, resp.text
        util.wait_for(lambda: api.get('/volumes/%s' % vol['id'])
                      .json()['volume']['size'] == 2,
                      what='extended')
        api.wait_volume(vol['id'], 'available')

        # retype judges the cluster's capabilities (its members' report)
        api.create_type('shared', {'multiattach': '<is> True'})
        resp = api.post('/volumes/%s/action' % vol['id'], json={
            'os-retype': {'new_type': 'shared'}})
        assert resp.status_code == 202, resp.text
        assert api.get('/volumes/%s' % vol['id']).json()['volume'][
            'multiattach'] is True

        attachment = _attach(api, vol['id'])
        assert attachment['connection_info']['driver_volume_type'] == \
            'local'
        assert _export_host(attachment['id']) == 'testnode@file'
        _detach_and_delete(api, vol['id'], attachment['id'])
    finally:
        s.stop()


def test_a_service_joining_a_cluster_brings_its_volumes(tmp_path):
    s = stack_mod.Stack(tmp_path).start()
    try:
        api = s.client()
        vol = api.create_volume()
        attachment = _attach(api, vol['id'])
        # as a row written before exports were recorded per service
        with db_api.writer() as session:
            db_attachments.update(session, attachment['id'],
                                  {'export_host': None})
    finally:
        s.stop()

    s = stack_mod.Stack(tmp_path, extra={'cluster': 'aa'}).start()
    try:
        api = s.client()
        shown = api.get('/volumes/%s' % vol['id'],
                        headers=V361).json()['volume']
        assert shown['os-vol-host-attr:host'] == 'aa@file#file'
        assert shown['cluster_name'] == 'aa@file#file'
        assert shown['status'] == 'in-use'
        assert _export_host(attachment['id']) == 'testnode@file'
        _detach_and_delete(api, vol['id'], attachment['id'])
    finally:
        s.stop()
