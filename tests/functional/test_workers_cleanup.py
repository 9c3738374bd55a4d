"""POST /workers/cleanup (3.24) on the embedded stack: a service that is
up settles now what it left in a transition; a lone volume service that
is down is ``unavailable``; bad requests change nothing."""
import uuid

import sqlalchemy as sa

from cinder_lite.db import api as db_api
from cinder_lite.db import models
from tests.harness.clients import cinder
from tests.harness.clients import table
from tests.harness import stack as stack_mod
from tests.harness import util

V324 = {'OpenStack-API-Version': 'volume 3.24'}


def _left_creating(api, host):
    """A volume as a volume service that stopped mid-create leaves it:
    recorded ``creating`` on its backend, changed a moment ago (so the
    periodic reconciliation, which waits reconcile_after, leaves it)."""
    vtype = api.get('/types/default').json()['volume_type']
    volume_id = str(uuid.uuid4())
    now = models.utcnow()
    with db_api.writer() as session:
        session.execute(sa.insert(models.Volume).values(
            id=volume_id, project_id=stack_mod.PROJECT, user_id='admin',
            size=1, status='creating', volume_type_id=vtype['id'],
            host=host, cluster_name=None, availability_zone='nova',
            multiattach=False, bootable=False, attach_seq=0,
            readonly=False, deleted=False, created_at=now,
            updated_at=now))
    return volume_id


def test_cleanup_of_a_live_service_rolls_forward_now(stack):
    api = stack.client()
    made = api.create_volume()
    host = api.get('/volumes/%s' % made['id']).json()['volume'][
        'os-vol-host-attr:host']
    backend = host.partition('#')[0]
    volume_id = _left_creating(api, host)
    # nothing is down: by default only down services are cleaned
    resp = api.post('/workers/cleanup', headers=V324)
    assert resp.status_code == 202, resp.text
    assert resp.json() == {'cleaning': [], 'unavailable': []}
    assert api.get('/volumes/%s' % volume_id).json()['volume'][
        'status'] == 'creating'
    resp = api.post('/workers/cleanup', headers=V324, json={
        'is_up': 'true', 'binary': 'cinder-volume'})
    assert resp.status_code == 202, resp.text
    listed = resp.json()
    assert listed['unavailable'] == []
    assert [s['host'] for s in listed['cleaning']] == [backend]
    service = listed['cleaning'][0]
    assert set(service) == {'id', 'host', 'binary', 'cluster_name'}
    assert service['binary'] == 'cinder-volume'
    api.wait_volume(volume_id, 'available')
    assert api.delete('/volumes/%s' % volume_id).status_code == 202
    api.wait_deleted(volume_id)


def test_cleanup_of_one_resource(stack):
    api = stack.client()
    made = api.create_volume()
    host = api.get('/volumes/%s' % made['id']).json()['volume'][
        'os-vol-host-attr:host']
    kept, cleaned = _left_creating(api, host), _left_creating(api, host)
    resp = api.post('/workers/cleanup', headers=V324, json={
        'is_up': True, 'resource_id': cleaned, 'resource_type': 'volume'})
    assert resp.status_code == 202, resp.text
    assert len(resp.json()['cleaning']) == 1
    api.wait_volume(cleaned, 'available')
    assert api.get('/volumes/%s' % kept).json()['volume']['status'] == \
        'creating'
    # an available volume is pending nothing
    resp = api.post('/workers/cleanup', headers=V324, json={
        'is_up': True, 'resource_id': made['id']})
    assert resp.status_code == 400
    assert resp.json()['badRequest']['message'] == (
        'Invalid input received: There is no resource with UUID %s '
        'pending cleanup.' % made['id'])


def test_a_lone_service_down_is_unavailable(stack):
    api = stack.client()
    made = api.create_volume()
    host = api.get('/volumes/%s' % made['id']).json()['volume'][
        'os-vol-host-attr:host']
    backend = host.partition('#')[0]
    volume_id = _left_creating(api, host)
    stack.stop_backend(backend.partition('@')[2])
    resp = api.post('/workers/cleanup', headers=V324, json={})
    assert resp.status_code == 202, resp.text
    body = resp.json()
    assert body['cleaning'] == []
    assert [s['host'] for s in body['unavailable']] == [backend]
    assert body['unavailable'][0]['binary'] == 'cinder-volume'
    assert api.get('/volumes/%s' % volume_id).json()['volume'][
        'status'] == 'creating'


def test_bad_requests(stack):
    api = stack.client()
    assert stack.client(version='3.23').post(
        '/workers/cleanup').status_code == 404
    for body in ({'binary': 'nova-compute'}, {'is_up': 'maybe'},
                 {'service_id': 'x'}, {'resource_id': 'not-a-uuid'},
                 {'bogus': 1}, {'host': ''}, [1]):
        resp = api.post('/workers/cleanup', headers=V324, json=body)
        assert resp.status_code == 400, body
    resp = api.post('/workers/cleanup', headers=V324, json={
        'resource_type': 'backup'})
    assert resp.status_code == 400
    assert resp.json()['badRequest']['message'] == (
        'Invalid input received: Resource type Backup not valid, must be '
        'Volume or Snapshot')
    member = stack.client(roles='member,reader')
    assert member.post('/workers/cleanup', headers=V324).status_code == 403


def test_cinder_work_cleanup(stack):
    out = cinder(stack, 'work-cleanup', '--is-up', 'true', '--binary',
                 'cinder-volume')
    assert 'Following services will be cleaned:' in out
    rows = table(out)
    assert rows[0] == ['ID', 'Cluster Name', 'Host', 'Binary']
    assert [r[3] for r in rows[1:]] == ['cinder-volume']


def test_cleanup_of_a_backup_service(stack):
    """A backup left ``creating`` by its service: the cleanup asked of
    the (live) backup service settles it now, as its reconciliation
    would after reconcile_after."""
    api = stack.client()
    vol = api.create_volume()
    services = api.get('/os-services?binary=cinder-backup').json()[
        'services']
    backup_host = services[0]['host']
    backup_id = str(uuid.uuid4())
    now = models.utcnow()
    with db_api.writer() as session:
        session.execute(sa.update(models.Volume).where(
            models.Volume.id == vol['id']).values(status='backing-up'))
        session.execute(sa.insert(models.Backup).values(
            id=backup_id, volume_id=vol['id'],
            project_id=stack_mod.PROJECT, user_id='admin',
            status='creating', host=backup_host, size=1,
            volume_status='available', deleted=False, created_at=now,
            updated_at=now))
    resp = api.post('/workers/cleanup', headers=V324, json={
        'is_up': True, 'binary': 'cinder-backup'})
    assert resp.status_code == 202, resp.text
    assert [s['host'] for s in resp.json()['cleaning']] == [backup_host]

    def settled():
        return api.get('/backups/%s' % backup_id).json()['backup'][
            'status'] == 'error'
    util.wait_for(settled, timeout=20, what='backup settled')
    api.wait_volume(vol['id'], 'available')
