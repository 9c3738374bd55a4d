"""Copies of volumes made from images carry the image's metadata, as in
Cinder: a clone takes its source's ``volume_image_metadata`` as it is
now, a snapshot keeps its volume's as it was when it was taken and gives
it to the volumes made from it; the copies are bootable when the source
is.  A copy is a copy, never a download, whatever image metadata it
carries: what a volume is made from is recorded on it (``image_id``,
``snapshot_id``, ``source_volid``).

The volume from an image is made through the real Glance, alone
(tests/harness/glance.py; skipped without the OpenStack virtualenv of
tools/openstack-venv, failed instead under
CINDER_LITE_REQUIRE_SERVICES=1); the rest needs no Glance."""
import os


from tests.harness import util
from tests.harness.snapshots import snapshot
from tests.harness.volumes import create_available as create_from
from tests.harness.volumes import interrupt_and_reconcile
from tests.harness.volumes import read
from tests.harness.volumes import write

MiB = 1024 ** 2
GiB = 1024 ** 3


def act(api, vid, body):
    resp = api.post('/volumes/%s/action' % vid, json=body)
    assert resp.status_code == 200, resp.text
    return resp


def shown(api, vid):
    return api.get('/volumes/%s' % vid).json()['volume']


# -- with Glance: a volume made from an image ---------------------------------

def test_copies_of_a_volume_from_an_image(glance_stack, glance, tmp_path):
    stack = glance_stack
    api = stack.client()
    data = util.pattern(3 * MiB + 512, b'image')
    path = tmp_path / 'disk.raw'
    path.write_bytes(data)
    image = glance.make_image('copied-image', str(path), 'raw',
                              os_distro='debian', hw_disk_bus='scsi')
    src = create_from(api, size=1, imageRef=image['id'])
    meta = src['volume_image_metadata']
    assert meta['image_id'] == image['id']
    assert meta['image_name'] == 'copied-image'
    assert meta['disk_format'] == 'raw' and meta['os_distro'] == 'debian'
    assert src['bootable'] == 'true'
    assert read(stack, src['id'], 0, len(data)) == data
    # written after the download: a copy has it, the image has not
    later = os.urandom(MiB)
    write(stack, src['id'], 8 * MiB, later)
    snap = snapshot(api, src['id'])
    # after the snapshot: the source's image metadata changes, and its
    # bytes
    act(api, src['id'], {'os-set_image_metadata': {'metadata': {
        'os_distro': 'ubuntu'}}})
    newer = os.urandom(MiB)
    write(stack, src['id'], 16 * MiB, newer)
    # the image is gone from Glance: a copy that downloaded would fail
    glance.call('DELETE', '/images/%s' % image['id'], 204)

    clone = create_from(api, source_volid=src['id'])
    assert clone['volume_image_metadata'] == dict(meta, os_distro='ubuntu')
    assert clone['volume_image_metadata'] == shown(
        api, src['id'])['volume_image_metadata']
    assert clone['bootable'] == 'true'
    assert read(stack, clone['id'], 0, 32 * MiB) == read(
        stack, src['id'], 0, 32 * MiB)
    assert read(stack, clone['id'], 16 * MiB, MiB) == newer

    restored = create_from(api, snapshot_id=snap['id'], size=2)
    # the image metadata the source had when the snapshot was taken
    assert restored['volume_image_metadata'] == meta
    assert restored['bootable'] == 'true'
    assert read(stack, restored['id'], 0, len(data)) == data
    assert read(stack, restored['id'], 8 * MiB, MiB) == later
    assert read(stack, restored['id'], 16 * MiB, MiB) == b'\0' * MiB

    # a copy of a copy, likewise
    again = create_from(api, source_volid=restored['id'])
    assert again['volume_image_metadata'] == meta
    assert again['bootable'] == 'true'
    # the list filter finds them all by the image
    resp = api.get("/volumes?glance_metadata={'image_id': '%s'}"
                   % image['id'])
    assert resp.status_code == 200, resp.text
    assert sorted(v['id'] for v in resp.json()['volumes']) == sorted(
        [src['id'], clone['id'], restored['id'], again['id']])
    # deleting the snapshot, then the source, leaves the copies theirs
    assert api.delete('/snapshots/%s' % snap['id']).status_code == 202
    util.wait_for(lambda: api.get('/snapshots/%s' % snap['id'])
                  .status_code == 404, what='snapshot deleted')
    assert api.delete('/volumes/%s' % src['id']).status_code == 202
    api.wait_deleted(src['id'])
    assert shown(api, clone['id'])['volume_image_metadata'] == dict(
        meta, os_distro='ubuntu')
    assert shown(api, restored['id'])['volume_image_metadata'] == meta


def test_a_create_from_an_image_rolled_forward_downloads_again(
        glance_stack, glance, tmp_path):
    """The volume service reads the volume back: the image it is made
    from is recorded on it."""
    stack = glance_stack
    api = stack.client()
    data = util.pattern(2 * MiB, b'again')
    path = tmp_path / 'disk.raw'
    path.write_bytes(data)
    image = glance.make_image('again', str(path), 'raw')
    vol = create_from(api, size=1, imageRef=image['id'])
    write(stack, vol['id'], 0, b'\0' * MiB)
    assert interrupt_and_reconcile(stack, vol['id']) == [
        'volume %s: creating -> available (create rolled forward)'
        % vol['id']]
    vol = shown(api, vol['id'])
    assert vol['status'] == 'available' and vol['bootable'] == 'true'
    assert read(stack, vol['id'], 0, len(data)) == data


# -- without Glance ---------------------------------------------------------

def test_copies_of_a_volume_without_image_metadata_have_none(api, stack):
    src = api.create_volume()
    data = os.urandom(MiB)
    write(stack, src['id'], 0, data)
    snap = snapshot(api, src['id'])
    for new in (create_from(api, source_volid=src['id']),
                create_from(api, snapshot_id=snap['id'])):
        assert 'volume_image_metadata' not in new
        assert 'volume_image_metadata' not in shown(api, new['id'])
        assert new['bootable'] == 'false'
        assert act(api, new['id'], {'os-show_image_metadata': None}
                   ).json() == {'metadata': {}}
        assert read(stack, new['id'], 0, MiB) == data


def test_copies_never_download(api, stack):
    """A volume whose image metadata names an image (set by the
    os-set_image_metadata action here), in a cloud without Glance: its
    clone and a volume from its snapshot are copies that carry that
    metadata, also when the volume service reads them back."""
    src = api.create_volume()
    act(api, src['id'], {'os-set_image_metadata': {'metadata': {
        'image_id': 'c0ffee00-0000-4000-8000-000000000029',
        'image_name': 'named-only', 'disk_format': 'qcow2'}}})
    assert api.post('/volumes/%s/action' % src['id'], json={
        'os-set_bootable': {'bootable': True}}).status_code == 200
    meta = shown(api, src['id'])['volume_image_metadata']
    data = os.urandom(MiB)
    write(stack, src['id'], 3 * MiB, data)
    snap = snapshot(api, src['id'])
    copies = [create_from(api, source_volid=src['id']),
              create_from(api, snapshot_id=snap['id'])]
    for new in copies:
        assert new['volume_image_metadata'] == meta
        assert new['bootable'] == 'true'
        assert read(stack, new['id'], 3 * MiB, MiB) == data
    for new in copies:
        assert interrupt_and_reconcile(stack, new['id']) == [
            'volume %s: creating -> available (create rolled forward)'
            % new['id']]
        new = shown(api, new['id'])
        assert new['status'] == 'available'
        assert new['volume_image_metadata'] == meta
        assert read(stack, new['id'], 3 * MiB, MiB) == data
    assert api.get('/messages').json()['messages'] == []
