"""Volumes made from snapshots and from volumes (``snapshot_id`` and
``source_volid`` in POST /volumes): the bytes of the source at the
snapshot's moment (or now, for a clone), any size at least the
source's, the source's type unless another is asked for, the source's
backend and zone (another backend is refused with a 400), quotas, and a
source that stays until its copies are made."""
import os
import uuid

import pytest

from cinder_lite.volume import quota_api
from tests.harness import attach as attach_mod
from tests.harness import stack as stack_mod
from tests.harness.snapshots import snapshot
from tests.harness.snapshots import usage
from tests.harness.volumes import read
from tests.harness.volumes import volume_file
from tests.harness.volumes import write

MiB = 1024 ** 2
GiB = 1024 ** 3


def create_from(api, expect=202, **volume):
    resp = api.post('/volumes', json={'volume': volume})
    assert resp.status_code == expect, resp.text
    return resp.json().get('volume', resp.json())


def test_from_snapshot_holds_the_bytes_of_its_moment(api, stack):
    src = api.create_volume(size=1, metadata={'m': '1'})
    first = os.urandom(MiB)
    write(stack, src['id'], 0, first)
    write(stack, src['id'], GiB - 4096, b'tail' * 1024)
    snap = snapshot(api, src['id'])
    # written after the snapshot: not in it
    write(stack, src['id'], 0, b'\0' * MiB)
    new = create_from(api, snapshot_id=snap['id'], size=2, name='restored')
    assert new['snapshot_id'] == snap['id'] and new['source_volid'] is None
    new = api.wait_volume(new['id'], 'available')
    assert new['size'] == 2 and new['snapshot_id'] == snap['id']
    assert new['volume_type'] == src['volume_type']
    assert new['availability_zone'] == src['availability_zone']
    assert new['os-vol-host-attr:host'] == src['os-vol-host-attr:host']
    assert read(stack, new['id'], 0, MiB) == first
    assert read(stack, new['id'], GiB - 4096, 4096) == b'tail' * 1024
    assert read(stack, new['id'], GiB, MiB) == b'\0' * MiB
    assert os.path.getsize(volume_file(stack, new['id'])) == 2 * GiB
    # sparse: the copy holds the data, not the holes
    assert os.stat(volume_file(stack, new['id'])).st_blocks * 512 < 8 * MiB
    # size omitted: the snapshot's
    same = api.wait_volume(create_from(api, snapshot_id=snap['id'])['id'],
                           'available')
    assert same['size'] == 1
    assert usage(api)['volumes'] == 3 and usage(api)['gigabytes'] == 5
    assert quota_api.audit() == []


def test_clone_holds_the_bytes_of_now(api, stack):
    src = api.create_volume(size=1)
    data = os.urandom(MiB)
    write(stack, src['id'], 5 * MiB, data)
    clone = create_from(api, source_volid=src['id'], size=1)
    assert clone['source_volid'] == src['id']
    clone = api.wait_volume(clone['id'], 'available')
    assert read(stack, clone['id'], 5 * MiB, MiB) == data
    # the source may be deleted once the clone is made; the clone keeps
    # its bytes and the record of its source
    assert api.delete('/volumes/%s' % src['id']).status_code == 202
    api.wait_deleted(src['id'])
    assert read(stack, clone['id'], 5 * MiB, MiB) == data
    shown = attach_mod.volume(api, clone['id'])
    assert shown['source_volid'] == src['id']


def test_size_and_state_rules(api, stack):
    src = api.create_volume(size=2)
    snap = snapshot(api, src['id'])
    for key, value, what in (('snapshot_id', snap['id'], 'snapshot'),
                             ('source_volid', src['id'], 'source volume')):
        resp = api.post('/volumes', json={'volume': {key: value,
                                                     'size': 1}})
        assert resp.status_code == 400, resp.text
        assert 'cannot be smaller than the %s size 2GB' % what in \
            resp.json()['badRequest']['message']
    # an unusable snapshot
    api.post('/snapshots/%s/action' % snap['id'],
             json={'os-reset_status': {'status': 'error'}})
    resp = api.post('/volumes', json={'volume': {'snapshot_id': snap['id']}})
    assert resp.status_code == 400
    assert "Originating snapshot status must be one of 'available'" in \
        resp.text
    api.post('/volumes/%s/action' % src['id'],
             json={'os-reset_status': {'status': 'error'}})
    resp = api.post('/volumes', json={'volume': {'source_volid': src['id']}})
    assert resp.status_code == 400
    assert 'Originating source volume status' in resp.text
    # another project's source is not found
    other = stack.client(project=stack_mod.OTHER_PROJECT, user='u',
                         roles='member')
    resp = other.post('/volumes', json={'volume': {'source_volid':
                                                   src['id']}})
    assert resp.status_code == 404
    assert len(api.get('/volumes').json()['volumes']) == 1
    assert quota_api.audit() == []


def test_type_rules(api, stack):
    src = api.create_volume()
    snap = snapshot(api, src['id'])
    shared = api.create_type('shared', {'multiattach': '<is> True'})
    new = create_from(api, snapshot_id=snap['id'], volume_type='shared')
    new = api.wait_volume(new['id'], 'available')
    assert new['multiattach'] is True and new['volume_type'] == 'shared'
    # the multiattach policy holds for sources too
    reader_like = stack.client(user='r', roles='reader')
    resp = reader_like.post('/volumes', json={'volume': {
        'snapshot_id': snap['id'], 'volume_type': shared['id']}})
    assert resp.status_code == 403
    resp = api.post('/volumes', json={'volume': {
        'snapshot_id': snap['id'], 'volume_type': 'nope'}})
    assert resp.status_code == 404
    resp = api.post('/volumes', json={'volume': {
        'snapshot_id': snap['id'], 'availability_zone': 'elsewhere'}})
    assert resp.status_code == 400
    assert 'same availability zone' in resp.text


def test_a_snapshot_keeps_its_volume(api, stack):
    src = api.create_volume()
    snap = snapshot(api, src['id'])
    new = api.wait_volume(create_from(api, snapshot_id=snap['id'])['id'],
                          'available')
    # the snapshot keeps its volume: refused until the snapshot goes
    assert api.delete('/volumes/%s' % src['id']).status_code == 400
    assert api.delete('/snapshots/%s' % snap['id']).status_code == 202
    assert api.delete('/volumes/%s' % new['id']).status_code == 202


@pytest.fixture
def two(tmp_path):
    s = stack_mod.Stack(tmp_path / 'state', backends={
        'file': {'volume_backend_name': 'one'},
        'other': {'volume_backend_name': 'two'}}).start()
    yield s
    s.stop()


def test_another_backend_is_refused(two):
    api = two.client()
    api.create_type('on-one', {'volume_backend_name': 'one'})
    api.create_type('on-two', {'volume_backend_name': 'two'})
    src = api.create_volume(volume_type='on-one')
    snap = snapshot(api, src['id'])
    for key, value in (('snapshot_id', snap['id']),
                       ('source_volid', src['id'])):
        resp = api.post('/volumes', json={'volume': {
            key: value, 'volume_type': 'on-two'}})
        assert resp.status_code == 400, resp.text
        assert 'copies between backends are not supported' in \
            resp.json()['badRequest']['message']
        new = api.wait_volume(create_from(
            api, **{key: value, 'volume_type': 'on-one'})['id'],
            'available')
        assert new['os-vol-host-attr:host'] == src['os-vol-host-attr:host']
    assert len(api.get('/volumes').json()['volumes']) == 3
    assert quota_api.audit() == []


def test_unknown_sources_are_404(api):
    for key in ('snapshot_id', 'source_volid'):
        resp = api.post('/volumes', json={'volume': {
            key: str(uuid.uuid4()), 'size': 1}})
        assert resp.status_code == 404, resp.text


def test_copies_of_a_bootable_volume_boot(api):
    """As Cinder: a clone of a bootable volume, and a volume from a
    snapshot of one, are bootable (Tempest's
    test_create_from_bootable_volume)."""
    src = api.create_volume()
    path = '/volumes/%s/action' % src['id']
    assert api.post(path, json={'os-set_bootable': {
        'bootable': True}}).status_code == 200
    snap = snapshot(api, src['id'])
    plain = api.create_volume()
    for made in (create_from(api, source_volid=src['id']),
                 create_from(api, snapshot_id=snap['id'])):
        new = api.wait_volume(made['id'], 'available')
        assert new['bootable'] == 'true'
    clone = api.wait_volume(create_from(api, source_volid=plain['id'])['id'],
                            'available')
    assert clone['bootable'] == 'false'
