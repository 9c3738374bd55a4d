"""Manage and unmanage on the file backend, as Cinder serves them:
``/os-volume-manage`` of a file the backend directory holds (adopted
under the volume's name, sized in whole GiB, charged to the quota),
``/manageable_volumes`` (what no volume owns, and what one does, not
safe), ``os-unmanage`` (the record goes, the file stays, the quota is
given back; refused while attached or with snapshots), the same for
snapshots, the refusals and failures (user messages), Cinder's admin
policies, and a managed volume read back over NBD."""
import json
import os
import uuid

import pytest

from cinder_lite.volume import quota_api
from tests.harness import attach as attach_mod
from tests.harness import dataplane
from tests.harness.snapshots import snapshot
from tests.harness.snapshots import usage
from tests.harness.snapshots import wait_gone
from tests.harness.snapshots import wait_snapshot
from tests.harness import stack as stack_mod
from tests.harness import util
from tests.harness.volumes import volume_file

GiB = 1024 ** 3
HOST = 'testnode@file'
POOL = 'testnode@file#file'
P = stack_mod.PROJECT


def exact():
    assert quota_api.audit() == []


def backend_dir(stack):
    return os.path.join(stack.state_path, 'volumes', 'file')


def put_file(stack, name, size, data=b''):
    path = os.path.join(backend_dir(stack), name)
    with open(path, 'wb') as f:
        f.truncate(size)
        f.write(data)
    return path


def manage(api, ref, expect=202, **extra):
    body = {'volume': dict({'host': POOL, 'ref': ref}, **extra)}
    resp = api.post('/os-volume-manage', json=body)
    assert resp.status_code == expect, resp.text
    return resp.json().get('volume', resp.json())


def manageable(api, kind='volumes', query='host=%s' % HOST, detail=True):
    resp = api.get('/manageable_%s%s?%s' % (kind, '/detail' if detail
                                            else '', query))
    assert resp.status_code == 200, resp.text
    return resp.json()['manageable-%s' % kind]


def wait_error_message(api, resource_id):
    def found():
        msgs = [m for m in api.get('/messages').json()['messages']
                if m['resource_uuid'] == resource_id]
        return msgs or None
    return util.wait_for(found, what='a message on %s' % resource_id)


def test_manage_a_file(stack, api):
    before = usage(api)
    put_file(stack, 'legacy.img', GiB + 5, b'old data')
    put_file(stack, '.hidden', 10)
    listed = manageable(api)
    assert listed == [{'reference': {'source-name': 'legacy.img'},
                       'size': 2, 'safe_to_manage': True,
                       'reason_not_safe': None, 'cinder_id': None,
                       'extra_info': None}]
    assert manageable(api, detail=False) == [
        {'reference': {'source-name': 'legacy.img'}, 'size': 2,
         'safe_to_manage': True}]

    made = manage(api, {'source-name': 'legacy.img'}, name='adopted',
                  description='from before', bootable=True,
                  metadata={'k': 'v'})
    assert made['status'] == 'creating' and made['name'] == 'adopted'
    vol = api.wait_volume(made['id'], 'available')
    assert vol['size'] == 2 and vol['bootable'] == 'true'
    assert vol['os-vol-host-attr:host'] == POOL
    assert vol['metadata'] == {'k': 'v'}
    assert vol['volume_type'] == '__DEFAULT__'
    # adopted under the volume's own name, grown to whole GiB
    assert not os.path.exists(os.path.join(backend_dir(stack),
                                           'legacy.img'))
    path = volume_file(stack, vol['id'])
    assert os.path.getsize(path) == 2 * GiB
    with open(path, 'rb') as f:
        assert f.read(8) == b'old data'
    after = usage(api)
    assert after['volumes'] == before['volumes'] + 1
    assert after['gigabytes'] == before['gigabytes'] + 2
    exact()
    # now owned: not safe, and named
    assert manageable(api) == [{
        'reference': {'source-name': 'volume-%s' % vol['id']}, 'size': 2,
        'safe_to_manage': False, 'reason_not_safe': 'already managed',
        'cinder_id': vol['id'], 'extra_info': None}]
    # ... and refused at once
    manage(api, {'source-name': 'volume-%s' % vol['id']}, expect=400)
    manage(api, {'source-id': vol['id']}, expect=400)

    # a managed volume is a volume: extend, attach, delete
    assert api.post('/volumes/%s/action' % vol['id'],
                    json={'os-extend': {'new_size': 3}}).status_code == 202
    api.wait_volume(vol['id'], 'available')
    att = attach_mod.attach(api, vol['id'])
    assert api.delete('/attachments/%s' % att['id']).status_code == 200
    api.wait_volume(vol['id'], 'available')
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])
    assert not os.path.exists(path)
    assert usage(api) == before
    exact()


def test_unmanage_then_manage_again(stack, api):
    vol = api.create_volume(size=1)
    with open(volume_file(stack, vol['id']), 'r+b') as f:
        f.write(b'kept')
    before = usage(api)
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-unmanage': None})
    assert resp.status_code == 202, resp.text
    api.wait_deleted(vol['id'])
    after = usage(api)
    assert after['volumes'] == before['volumes'] - 1
    assert after['gigabytes'] == before['gigabytes'] - 1
    exact()
    # the file stays, and is on offer
    assert os.path.exists(volume_file(stack, vol['id']))
    ref = {'source-name': 'volume-%s' % vol['id']}
    assert manageable(api) == [{'reference': ref, 'size': 1,
                                'safe_to_manage': True,
                                'reason_not_safe': None, 'cinder_id': None,
                                'extra_info': None}]
    # Tempest's way: host, type and zone of the original
    again = manage(api, ref, volume_type=vol['volume_type'],
                   availability_zone=vol['availability_zone'])
    again = api.wait_volume(again['id'], 'available')
    assert again['size'] == 1
    with open(volume_file(stack, again['id']), 'rb') as f:
        assert f.read(4) == b'kept'
    assert not os.path.exists(volume_file(stack, vol['id']))
    assert usage(api) == before
    exact()


def test_unmanage_refusals(stack, api):
    vol = api.create_volume(size=1)
    att = attach_mod.attach(api, vol['id'], conn=attach_mod.connector())
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-unmanage': {}})
    assert resp.status_code == 400, resp.text
    assert 'attached' in resp.json()['badRequest']['message']
    assert api.delete('/attachments/%s' % att['id']).status_code == 200
    api.wait_volume(vol['id'], 'available')
    snap = snapshot(api, vol['id'])
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-unmanage': None})
    assert resp.status_code == 400, resp.text
    assert 'snapshots' in resp.json()['badRequest']['message']
    member = stack.client(user='u', roles='member')
    resp = member.post('/volumes/%s/action' % vol['id'],
                       json={'os-unmanage': None})
    assert resp.status_code == 403, resp.text
    resp = member.post('/snapshots/%s/action' % snap['id'],
                       json={'os-unmanage': None})
    assert resp.status_code == 403, resp.text
    assert api.post('/volumes/%s/action' % uuid.uuid4(),
                    json={'os-unmanage': None}).status_code == 404
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'


def test_manage_refusals_and_failures(stack, api):
    put_file(stack, 'x.img', GiB)
    member = stack.client(user='u', roles='member')
    resp = member.post('/os-volume-manage', json={
        'volume': {'host': POOL, 'ref': {'source-name': 'x.img'}}})
    assert resp.status_code == 403, resp.text
    assert member.get('/manageable_volumes?host=%s' % HOST
                      ).status_code == 403
    for body in ({}, {'volume': {'host': POOL}},
                 {'volume': {'ref': {'source-name': 'x.img'}}},
                 {'volume': {'host': POOL, 'cluster': 'c@file',
                             'ref': {'source-name': 'x.img'}}},
                 {'volume': {'host': POOL, 'ref': {}}},
                 {'volume': {'host': POOL, 'ref': {'name': 'x.img'}}},
                 {'volume': {'host': POOL, 'ref': 'x.img'}},
                 {'volume': {'host': 'nowhere@file',
                             'ref': {'source-name': 'x.img'}}},
                 {'volume': {'host': POOL, 'availability_zone': 'elsewhere',
                             'ref': {'source-name': 'x.img'}}}):
        resp = api.post('/os-volume-manage', json=body)
        assert resp.status_code == 400, (body, resp.text)
    resp = api.post('/os-volume-manage', json={'volume': {
        'host': POOL, 'volume_type': 'nosuchtype',
        'ref': {'source-name': 'x.img'}}})
    assert resp.status_code == 404, resp.text
    assert api.get('/volumes').json()['volumes'] == []
    exact()

    # a reference the backend does not have: error, with a message
    before = usage(api)
    for name in ('missing.img', '../x.img', 'volume-x.creating'):
        made = manage(api, {'source-name': name})
        vol = api.wait_volume(made['id'], 'error')
        msg = wait_error_message(api, vol['id'])[0]
        assert 'invalid backend reference' in msg['user_message'] or \
            msg['user_message'], msg
        assert api.delete('/volumes/%s' % vol['id']).status_code == 202
        api.wait_deleted(vol['id'])
    assert os.path.exists(os.path.join(backend_dir(stack), 'x.img'))
    assert usage(api) == before

    # over the gigabytes quota: error, nothing adopted
    assert api.put('/os-quota-sets/%s' % P, json={
        'quota_set': {'gigabytes': 1}}).status_code == 200
    put_file(stack, 'big.img', 3 * GiB)
    made = manage(api, {'source-name': 'big.img'})
    api.wait_volume(made['id'], 'error')
    assert os.path.exists(os.path.join(backend_dir(stack), 'big.img'))
    assert usage(api)['gigabytes'] == 0
    exact()


def test_manageable_lists(stack, api):
    for name, size in (('a.img', GiB), ('b.img', 3 * GiB),
                       ('c.img', 2 * GiB)):
        put_file(stack, name, size)
    names = [e['reference']['source-name'] for e in manageable(api)]
    # Cinder's default order: reference, descending
    assert names == ['c.img', 'b.img', 'a.img']
    names = [e['reference']['source-name'] for e in manageable(
        api, query='host=%s&sort=size:asc' % HOST)]
    assert names == ['a.img', 'c.img', 'b.img']
    page = manageable(api, query='host=%s&sort=reference:asc&limit=1'
                      % HOST)
    assert [e['reference']['source-name'] for e in page] == ['a.img']
    marker = json.dumps(page[0]['reference'])
    page = manageable(api, query='host=%s&sort=reference:asc&limit=1&'
                      'marker=%s' % (HOST, marker))
    assert [e['reference']['source-name'] for e in page] == ['b.img']
    page = manageable(api, query='host=%s&sort=reference:asc&offset=2'
                      % HOST)
    assert [e['reference']['source-name'] for e in page] == ['c.img']
    # at 3.17, by cluster: none here
    for query in ('', 'host=%s&sort=name' % HOST,
                  'host=%s&sort=size:up' % HOST,
                  'host=%s&marker=notjson' % HOST,
                  'host=%s&marker={"source-name":"z"}' % HOST,
                  'host=%s&cluster=c@file' % HOST):
        resp = api.get('/manageable_volumes?%s' % query)
        assert resp.status_code == 400, (query, resp.text)
    assert api.get('/manageable_volumes?host=nowhere@file'
                   ).status_code == 404
    assert api.get('/manageable_snapshots?host=%s' % HOST).json() == {
        'manageable-snapshots': []}


def test_snapshot_unmanage_and_manage(stack, api):
    vol = api.create_volume(size=1)
    snap = snapshot(api, vol['id'], name='s')
    with open(volume_file(stack, snap['id'], 'snapshot'), 'r+b') as f:
        f.write(b'then')
    before = usage(api)
    resp = api.post('/snapshots/%s/action' % snap['id'],
                    json={'os-unmanage': {}})
    assert resp.status_code == 202, resp.text
    wait_gone(api, snap['id'])
    assert usage(api)['snapshots'] == before['snapshots'] - 1
    exact()
    ref = {'source-name': 'snapshot-%s' % snap['id']}
    assert manageable(api, 'snapshots') == [{
        'reference': ref, 'size': 1, 'safe_to_manage': True,
        'source_reference': None, 'reason_not_safe': None,
        'cinder_id': None, 'extra_info': None}]
    # not among the volumes
    assert manageable(api) == [{
        'reference': {'source-name': 'volume-%s' % vol['id']}, 'size': 1,
        'safe_to_manage': False, 'reason_not_safe': 'already managed',
        'cinder_id': vol['id'], 'extra_info': None}]
    # the volume may be in use meanwhile (Tempest's second case)
    att = attach_mod.attach(api, vol['id'])
    resp = api.post('/os-snapshot-manage', json={'snapshot': {
        'volume_id': vol['id'], 'ref': ref, 'name': 'again',
        'description': 'd', 'metadata': {'a': 'b'}}})
    assert resp.status_code == 202, resp.text
    made = resp.json()['snapshot']
    assert made['status'] == 'creating'
    again = wait_snapshot(api, made['id'])
    assert (again['size'], again['name'], again['description'],
            again['metadata'], again['volume_id']) == (
        1, 'again', 'd', {'a': 'b'}, vol['id'])
    with open(volume_file(stack, again['id'], 'snapshot'), 'rb') as f:
        assert f.read(4) == b'then'
    assert usage(api) == before
    exact()
    assert manageable(api, 'snapshots')[0]['cinder_id'] == again['id']
    # refusals
    resp = api.post('/os-snapshot-manage', json={'snapshot': {
        'volume_id': vol['id'],
        'ref': {'source-name': 'snapshot-%s' % again['id']}}})
    assert resp.status_code == 400, resp.text
    resp = api.post('/os-snapshot-manage', json={'snapshot': {
        'volume_id': str(uuid.uuid4()), 'ref': ref}})
    assert resp.status_code == 404, resp.text
    resp = api.post('/os-snapshot-manage', json={'snapshot': {
        'ref': ref}})
    assert resp.status_code == 400, resp.text
    member = stack.client(user='u', roles='member')
    assert member.post('/os-snapshot-manage', json={'snapshot': {
        'volume_id': vol['id'], 'ref': ref}}).status_code == 403
    resp = api.post('/os-snapshot-manage', json={'snapshot': {
        'volume_id': vol['id'], 'ref': {'source-name': 'nope'}}})
    assert resp.status_code == 202, resp.text
    wait_snapshot(api, resp.json()['snapshot']['id'], 'error')
    assert api.delete('/attachments/%s' % att['id']).status_code == 200


@pytest.fixture
def nbd_stack(tmp_path):
    s = dataplane.start(tmp_path, dataplane.nbd_backend())
    yield s
    dataplane.stop(s)


def test_managed_volume_over_nbd(nbd_stack):
    """Data written outside cinder_lite, managed, attached over NBD from
    another host address and read back."""
    s = nbd_stack
    api = s.client()
    content = os.urandom(4096)
    path = os.path.join(s.state_path, 'volumes', 'file', 'outside.raw')
    with open(path, 'wb') as f:
        f.truncate(GiB)
        f.seek(GiB // 2)
        f.write(content)
    made = manage(api, {'source-name': 'outside.raw'})
    vol = api.wait_volume(made['id'], 'available')
    host = dataplane.attacher(s, 'a')
    att, dev = host.attach_device(vol['id'])
    assert att['connection_info']['driver_volume_type'] == 'nbd'
    assert dev.read(GiB // 2, 4096) == content
    dev.write(0, b'new')
    host.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')
    with open(dataplane.volume_path(s, vol['id']), 'rb') as f:
        assert f.read(3) == b'new'
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


def _crashed_in(vid, status, kind='volume'):
    """Leave a record as a volume service that died mid-way leaves it."""
    from cinder_lite.db import api as db_api
    from cinder_lite.db import snapshots as db_snapshots
    from cinder_lite.db import volumes as db_volumes
    records = db_volumes if kind == 'volume' else db_snapshots
    with db_api.writer() as session:
        records.update(session, vid, {'status': status})


def test_reconcile_rolls_manage_and_unmanage_forward(stack, api):
    manager, = stack.volume_service('file').endpoints
    adopted = api.create_volume(size=1)
    lost = api.create_volume(size=1)
    gone = api.create_volume(size=1)
    snap = snapshot(api, adopted['id'])
    before = usage(api)
    # adopted already (the file has the volume's name): finished
    _crashed_in(adopted['id'], 'managing')
    # never adopted (no file of its name): error_managing, a message
    os.unlink(volume_file(stack, lost['id']))
    _crashed_in(lost['id'], 'managing')
    _crashed_in(gone['id'], 'unmanaging')
    _crashed_in(snap['id'], 'managing', 'snapshot')
    changes = manager.reconcile_now(max_age=0)
    assert sorted(changes) == sorted([
        'volume %s: managing -> available (manage rolled forward)'
        % adopted['id'],
        'volume %s: managing -> error_managing (manage rolled forward)'
        % lost['id'],
        'volume %s: unmanaging -> deleted (unmanage rolled forward)'
        % gone['id'],
        'snapshot %s: managing -> available' % snap['id']]), changes
    assert api.get('/volumes/%s' % lost['id']).json()['volume'][
        'status'] == 'error'
    assert wait_error_message(api, lost['id'])
    assert api.get('/volumes/%s' % gone['id']).status_code == 404
    assert os.path.exists(volume_file(stack, gone['id']))
    after = usage(api)
    assert after['volumes'] == before['volumes'] - 1
    # (the volume in error keeps what it was recorded with)
    assert after['gigabytes'] == before['gigabytes'] - 1
    exact()
    assert manager.reconcile_now(max_age=0) == []
