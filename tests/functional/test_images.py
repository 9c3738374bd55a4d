"""Volumes and images where no Glance is needed: bad image requests are
refused and change nothing, os-volume_upload_image validates its body
per microversion and gives the volume its status back when Glance cannot
be reached, and the image metadata actions, view and list filter.  (The
volume <-> image round trips with a real Glance are in
tests/integration/test_images.py.)"""
import uuid

import pytest

from tests.harness import stack as stack_mod
from tests.harness import util

I1 = str(uuid.uuid4())


def act(api, vid, body, version=None):
    headers = {'OpenStack-API-Version': 'volume %s' % version} \
        if version else None
    return api.post('/volumes/%s/action' % vid, json=body, headers=headers)


def usage(api):
    quota = api.get('/os-quota-sets/%s?usage=true' % api.project).json()[
        'quota_set']
    return quota['volumes']['in_use'], quota['gigabytes']['in_use']


@pytest.fixture
def closed_glance(tmp_path):
    """A stack whose Glance is an address nobody listens on."""
    port = util.free_port()
    s = stack_mod.Stack(tmp_path / 'state', extra={
        'glance_api_servers': 'http://127.0.0.1:%d' % port,
        'glance_request_timeout': '5',
        'enable_force_upload': 'true'}).start()
    yield s
    s.stop()


# -- volume from image: refused before anything is made -------------------------

def test_image_ref_without_any_glance_is_400(api):
    """noauth and no glance_api_servers: there is no Glance to ask."""
    before = usage(api)
    for key in ('imageRef', 'image_id'):
        resp = api.post('/volumes', json={'volume': {
            'size': 1, key: str(uuid.uuid4())}})
        assert resp.status_code == 400, resp.text
        message = resp.json()['badRequest']['message']
        assert 'Invalid image identifier' in message
        assert 'glance_api_servers' in message
    assert api.get('/volumes').json()['volumes'] == []
    assert usage(api) == before


def test_unreachable_glance_is_400_and_makes_nothing(closed_glance):
    api = closed_glance.client()
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'imageRef': str(uuid.uuid4())}})
    assert resp.status_code == 400, resp.text
    assert 'Invalid image identifier' in resp.text
    assert api.get('/volumes').json()['volumes'] == []
    assert usage(api) == (0, 0)


@pytest.mark.parametrize('ref', ['', '   ', 7, 'x' * 256, {'id': 'x'}])
def test_bad_image_refs_are_400(api, ref):
    resp = api.post('/volumes', json={'volume': {'size': 1,
                                                 'imageRef': ref}})
    assert resp.status_code == 400, resp.text
    assert api.get('/volumes').json()['volumes'] == []


# -- os-volume_upload_image ---------------------------------------------------------

UPLOAD = 'os-volume_upload_image'


@pytest.mark.parametrize('body,version', [
    ({}, None),
    ({'image_name': ''}, None),
    ({'image_name': 'i', 'disk_format': 'iso'}, None),
    ({'image_name': 'i', 'disk_format': 'qcow3'}, None),
    ({'image_name': 'i', 'container_format': 'tar'}, None),
    ({'image_name': 'i', 'force': 'perhaps'}, None),
    ({'image_name': 'i', 'visibility': 'private'}, '3.0'),
    ({'image_name': 'i', 'protected': True}, '3.0'),
    ({'image_name': 'i', 'visibility': 'everyone'}, '3.1'),
    ({'image_name': 'i', 'protected': 'maybe'}, '3.1'),
    ({'image_name': 'i', 'bogus': 1}, None),
    ('image', None),
])
def test_bad_upload_bodies_are_400(api, body, version):
    vol = api.create_volume()
    resp = act(api, vol['id'], {UPLOAD: body}, version)
    assert resp.status_code == 400, resp.text
    assert resp.json()['badRequest']['message']
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'


def test_upload_unknown_volume_is_404(api):
    resp = act(api, str(uuid.uuid4()), {UPLOAD: {'image_name': 'i'}})
    assert resp.status_code == 404, resp.text


def test_upload_without_glance_gives_the_status_back(api, closed_glance):
    for client in (api, closed_glance.client()):
        vol = client.create_volume()
        resp = act(client, vol['id'], {UPLOAD: {'image_name': 'i'}})
        assert resp.status_code == 400, resp.text
        assert client.get('/volumes/%s' % vol['id']).json()['volume'][
            'status'] == 'available'


def test_upload_of_in_use_volume_needs_force(closed_glance):
    api = closed_glance.client()
    vol = api.create_volume()
    resp = act(api, vol['id'], {'os-attach': {'instance_uuid': I1,
                                              'mountpoint': '/dev/vdb'}})
    assert resp.status_code == 202, resp.text
    resp = act(api, vol['id'], {UPLOAD: {'image_name': 'i'}})
    assert resp.status_code == 400, resp.text
    assert 'must be available' in resp.text
    # with force it goes as far as Glance, which is not there: 400, and
    # the volume is in-use again
    resp = act(api, vol['id'], {UPLOAD: {'image_name': 'i', 'force': True}})
    assert resp.status_code == 400, resp.text
    assert 'Glance could not be reached' in resp.text
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'in-use'


def test_force_upload_is_off_by_default(api):
    vol = api.create_volume()
    resp = act(api, vol['id'], {'os-attach': {'instance_uuid': I1,
                                              'mountpoint': '/dev/vdb'}})
    assert resp.status_code == 202
    resp = act(api, vol['id'], {UPLOAD: {'image_name': 'i', 'force': True}})
    assert resp.status_code == 400, resp.text
    assert 'must be available' in resp.text


def test_public_upload_is_for_admins(stack):
    member = stack.client(roles='member,reader')
    vol = member.create_volume()
    resp = act(member, vol['id'], {UPLOAD: {'image_name': 'i',
                                            'visibility': 'public'}}, '3.1')
    assert resp.status_code == 403, resp.text
    assert member.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'


# -- image metadata -------------------------------------------------------------------

def test_image_metadata_actions_view_and_filter(api):
    vol = api.create_volume()
    vid = vol['id']
    other = api.create_volume()
    assert 'volume_image_metadata' not in api.get(
        '/volumes/%s' % vid).json()['volume']
    resp = act(api, vid, {'os-show_image_metadata': None})
    assert resp.status_code == 200 and resp.json() == {'metadata': {}}
    long_value = 'v' * 4000
    resp = act(api, vid, {'os-set_image_metadata': {'metadata': {
        'image_id': 'abc', 'os_distro': 'debian', 'long': long_value}}})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {'metadata': {
        'image_id': 'abc', 'os_distro': 'debian', 'long': long_value}}
    resp = act(api, vid, {'os-set_image_metadata': {'metadata': {
        'os_distro': 'ubuntu'}}})
    assert resp.json()['metadata']['os_distro'] == 'ubuntu'
    shown = api.get('/volumes/%s' % vid).json()['volume']
    assert shown['volume_image_metadata'] == {
        'image_id': 'abc', 'os_distro': 'ubuntu', 'long': long_value}
    detail = {v['id']: v for v in
              api.get('/volumes/detail').json()['volumes']}
    assert 'volume_image_metadata' in detail[vid]
    assert 'volume_image_metadata' not in detail[other['id']]
    # the list filter
    for query, found in (("{'os_distro': 'ubuntu'}", [vid]),
                         ("{'os_distro': 'debian'}", []),
                         ("{'os_distro': 'ubuntu', 'image_id': 'abc'}",
                          [vid])):
        resp = api.get('/volumes?glance_metadata=%s' % query)
        assert resp.status_code == 200, resp.text
        assert [v['id'] for v in resp.json()['volumes']] == found
    resp = api.get('/volumes?glance_metadata=notadict')
    assert resp.status_code == 400
    # unset
    resp = act(api, vid, {'os-unset_image_metadata': {'key': 'long'}})
    assert resp.status_code == 200, resp.text
    resp = act(api, vid, {'os-unset_image_metadata': {'key': 'long'}})
    assert resp.status_code == 404, resp.text
    resp = act(api, vid, {'os-show_image_metadata': {}})
    assert resp.json() == {'metadata': {'image_id': 'abc',
                                        'os_distro': 'ubuntu'}}
    # deleting the volume takes it along
    assert api.delete('/volumes/%s' % vid).status_code == 202
    api.wait_deleted(vid)


@pytest.mark.parametrize('body', [
    {'os-set_image_metadata': {}},
    {'os-set_image_metadata': {'metadata': 'x'}},
    {'os-set_image_metadata': {'metadata': {'k': 1}}},
    {'os-set_image_metadata': {'metadata': {'': 'v'}}},
    {'os-set_image_metadata': {'metadata': {'k' * 256: 'v'}}},
    {'os-set_image_metadata': {'metadata': {'k': 'v'}, 'x': 1}},
    {'os-unset_image_metadata': {}},
    {'os-unset_image_metadata': {'key': ''}},
    {'os-unset_image_metadata': {'key': 3}},
])
def test_bad_image_metadata_bodies_are_400(api, body):
    vol = api.create_volume()
    resp = act(api, vol['id'], body)
    assert resp.status_code == 400, resp.text
    assert act(api, vol['id'], {'os-show_image_metadata': None}).json() == {
        'metadata': {}}


def test_image_metadata_of_another_project_is_404(stack):
    owner = stack.client()
    vol = owner.create_volume()
    stranger = stack.client(project=stack_mod.OTHER_PROJECT,
                            roles='member,reader')
    for body in ({'os-show_image_metadata': None},
                 {'os-set_image_metadata': {'metadata': {'k': 'v'}}},
                 {'os-unset_image_metadata': {'key': 'k'}}):
        assert act(stranger, vol['id'], body).status_code == 404


def test_readers_may_not_change_image_metadata(stack):
    owner = stack.client()
    vol = owner.create_volume()
    reader = stack.client(roles='reader')
    assert act(reader, vol['id'], {'os-show_image_metadata': None}
               ).status_code == 200
    resp = act(reader, vol['id'], {'os-set_image_metadata': {
        'metadata': {'k': 'v'}}})
    assert resp.status_code == 403, resp.text


# -- a volume service restarted in the middle of a copy ---------------------------------

def _interrupt(vid, *changes):
    """Leave the volume as a volume service that stopped in the middle
    of a copy leaves it (``changes``: the events that lead there)."""
    from cinder_lite.db import api as db_api
    from cinder_lite.db import volumes as db_volumes
    with db_api.writer() as session:
        for change in changes:
            db_volumes.transition(session, vid, *change)


def _reconcile_now(stack):
    manager, = stack.volume_service('file').endpoints
    return manager.reconcile_now(max_age=0)


def test_reconcile_of_an_interrupted_download(api, stack):
    import os
    vol = api.create_volume()
    vid = vol['id']
    manager, = stack.volume_service('file').endpoints
    path = manager.driver.path(vid)
    assert os.path.exists(path)
    _interrupt(vid, ('reset_status', 'creating'), ('start_download',))
    assert _reconcile_now(stack) == [
        'volume %s: downloading -> error (image download interrupted; '
        'storage removed)' % vid]
    assert not os.path.exists(path)
    vol = api.get('/volumes/%s' % vid).json()['volume']
    assert vol['status'] == 'error' and vol['bootable'] == 'false'
    messages = api.get('/messages').json()['messages']
    assert [m['event_id'] for m in messages if m['resource_uuid'] == vid] \
        == ['VOLUME_VOLUME_005_001']
    assert api.delete('/volumes/%s' % vid).status_code == 202
    api.wait_deleted(vid)


def test_reconcile_of_an_interrupted_upload(api, stack):
    vol = api.create_volume()
    vid = vol['id']
    assert act(api, vid, {'os-attach': {'instance_uuid': I1,
                                        'mountpoint': '/dev/vdb'}}
               ).status_code == 202
    _interrupt(vid, ('force_upload',))
    # while it is uploading, its status stays
    assert api.get('/volumes/%s' % vid).json()['volume'][
        'status'] == 'uploading'
    assert _reconcile_now(stack) == [
        'volume %s: uploading -> in-use (upload to an image interrupted)'
        % vid]
    assert api.get('/volumes/%s' % vid).json()['volume'][
        'status'] == 'in-use'
    messages = api.get('/messages').json()['messages']
    assert [m['event_id'] for m in messages if m['resource_uuid'] == vid] \
        == ['VOLUME_VOLUME_003_001']
