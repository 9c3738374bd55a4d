"""Volumes from Glance images and volumes uploaded as images (issue 29),
against the real Glance of the shared OpenStack deployment
(tests/harness/openstack.py, the ``openstack_cloud`` fixture; this module
runs on its worker, see SHARED_WORKER in tests/conftest.py).

Images are built here from known bytes (raw, and qcow2 with qemu-img),
uploaded to Glance by a member of project ``images``, and the volumes'
bytes are read back from the backend's storage files.  Every call to
cinder_lite is made with the member's Keystone token: cinder_lite finds
Glance in that token's catalog and calls it with the token.

Skipped without the OpenStack virtualenv (tools/openstack-venv), failed
instead under CINDER_LITE_REQUIRE_SERVICES=1, as in CI.
"""
import glob
import json
import os
import subprocess
import tempfile

import pytest

from tests.harness import openstack
from tests.harness import util

MiB = 1024 ** 2
GiB = 1024 ** 3
WAIT = 120
SHARED_TYPE = 'images-shared'


def qcow2_of(raw, virtual_size=None):
    """qcow2 bytes holding ``raw`` (at offset 0) in a disk of
    ``virtual_size`` bytes (default: len(raw))."""
    with tempfile.TemporaryDirectory() as where:
        src = os.path.join(where, 'src.raw')
        dst = os.path.join(where, 'dst.qcow2')
        with open(src, 'wb') as f:
            f.write(raw)
            if virtual_size:
                f.truncate(virtual_size)
        subprocess.run(['qemu-img', 'convert', '-f', 'raw', '-O', 'qcow2',
                        src, dst], check=True)
        with open(dst, 'rb') as f:
            return f.read()


@pytest.fixture(scope='module')
def cloud(openstack_cloud):
    util.need('qemu-img')
    stack = openstack_cloud
    stack.make_project('images', {'images-member': ['member', 'reader']})
    stack.admin().volume('POST', '/types', {'volume_type': {
        'name': SHARED_TYPE, 'extra_specs': {'multiattach': '<is> True'}}},
        expect=200)
    return stack


@pytest.fixture(scope='module')
def member(cloud):
    return cloud.client('images-member', openstack.USER_PASSWORD, 'images')


def make_image(c, name, data, disk_format='raw', **properties):
    image = c.image('POST', '/v2/images', dict(
        properties, name=name, disk_format=disk_format,
        container_format='bare'), expect=201).json()
    c.image('PUT', '/v2/images/%s/file' % image['id'], data=data,
            expect=204)
    return c.image('GET', '/v2/images/%s' % image['id'], expect=200).json()


@pytest.fixture(scope='module')
def raw_data():
    return util.pattern(3 * MiB + 512, b'raw')


@pytest.fixture(scope='module')
def raw_image(member, raw_data):
    return make_image(member, 'raw-image', raw_data, os_distro='debian',
                      hw_disk_bus='scsi', custom_note='from a test')


@pytest.fixture(scope='module')
def qcow2_data():
    return util.pattern(2 * MiB, b'qcow2')


@pytest.fixture(scope='module')
def qcow2_image(member, qcow2_data):
    return make_image(member, 'qcow2-image', qcow2_of(qcow2_data),
                      disk_format='qcow2', os_distro='cirros')


def volume(c, vid):
    return c.volume('GET', '/volumes/%s' % vid, expect=200).json()['volume']


def wait_status(c, vid, wanted, seen=None):
    def reached():
        status = volume(c, vid)['status']
        if seen is not None and (not seen or seen[-1] != status):
            seen.append(status)
        assert status not in ('error',) or 'error' in wanted, status
        return status in wanted and status
    return util.wait_for(reached, WAIT, interval=0.05,
                         what='volume %s %s' % (vid, '/'.join(wanted)))


def create_from(c, image_ref, size=1, **extra):
    return c.volume('POST', '/volumes', {'volume': dict(
        extra, size=size, imageRef=image_ref)})


def storage_of(cloud, vid):
    """The backend file of volume ``vid``."""
    found = glob.glob(os.path.join(cloud.cinder.workdir, '**',
                                   'volume-%s' % vid), recursive=True)
    assert len(found) == 1, found
    return found[0]


def assert_holds(path, data, size_gib):
    assert os.path.getsize(path) == size_gib * GiB
    with open(path, 'rb') as f:
        assert f.read(len(data)) == data
        # and nothing but zeros after it (a sample of the rest)
        f.seek(len(data))
        assert f.read(MiB).strip(b'\0') == b''


def logged(cloud, text):
    """True when a log of cinder_lite's services has ``text``."""
    for path in glob.glob(os.path.join(cloud.cinder.workdir, '**', '*.log'),
                          recursive=True):
        with open(path, errors='replace') as f:
            if text in f.read():
                return True
    return False


def delete(c, vid):
    c.volume('DELETE', '/volumes/%s' % vid, expect=202)
    util.wait_for(lambda: c.volume('GET', '/volumes/%s' % vid)
                  .status_code == 404, WAIT, interval=0.1,
                  what='volume %s deleted' % vid)


def usage(c):
    quota = c.volume('GET', '/os-quota-sets/%s?usage=true' % c.project_id,
                     expect=200).json()['quota_set']
    return quota['volumes']['in_use'], quota['gigabytes']['in_use']


# -- volume from image ---------------------------------------------------------

def test_volume_from_raw_image_holds_its_bytes_and_metadata(
        cloud, member, raw_image, raw_data):
    resp = create_from(member, raw_image['id'], name='from-raw')
    assert resp.status_code == 202, resp.text
    vid = resp.json()['volume']['id']
    wait_status(member, vid, ('available',))
    # through downloading, as Cinder (too short for polling to see with
    # an image this small: the volume service's log says it)
    assert logged(cloud, 'volume %s: creating -> downloading' % vid)
    assert logged(cloud, 'volume %s: downloading -> available' % vid)
    vol = volume(member, vid)
    assert vol['bootable'] == 'true'
    meta = vol['volume_image_metadata']
    assert meta['image_id'] == raw_image['id']
    assert meta['image_name'] == 'raw-image'
    assert meta['disk_format'] == 'raw'
    assert meta['container_format'] == 'bare'
    assert meta['checksum'] == raw_image['checksum']
    assert meta['size'] == str(len(raw_data))
    assert meta['min_disk'] == '0' and meta['min_ram'] == '0'
    assert meta['os_distro'] == 'debian'
    assert meta['hw_disk_bus'] == 'scsi'
    assert meta['custom_note'] == 'from a test'
    # Glance's own keys are not properties
    assert not {'status', 'visibility', 'owner', 'os_hash_value',
                'virtual_size', 'id', 'name'} & set(meta)
    assert_holds(storage_of(cloud, vid), raw_data, 1)
    # the list view shows it too
    listed = member.volume('GET', '/volumes/detail', expect=200).json()
    assert [v['volume_image_metadata']['image_id']
            for v in listed['volumes'] if v['id'] == vid] == [
                raw_image['id']]
    delete(member, vid)


def test_volume_from_qcow2_image_is_converted(cloud, member, qcow2_image,
                                              qcow2_data):
    resp = create_from(member, qcow2_image['id'], size=2)
    assert resp.status_code == 202, resp.text
    vid = resp.json()['volume']['id']
    wait_status(member, vid, ('available',))
    vol = volume(member, vid)
    assert vol['bootable'] == 'true'
    assert vol['volume_image_metadata']['disk_format'] == 'qcow2'
    assert_holds(storage_of(cloud, vid), qcow2_data, 2)
    delete(member, vid)


def test_image_by_name_and_by_url(member, raw_image):
    for ref in ('raw-image',
                'http://glance.example.com/v2/images/%s' % raw_image['id']):
        resp = create_from(member, ref)
        assert resp.status_code == 202, resp.text
        vid = resp.json()['volume']['id']
        wait_status(member, vid, ('available',))
        assert volume(member, vid)['volume_image_metadata'][
            'image_id'] == raw_image['id']
        delete(member, vid)


def test_multiattach_volume_from_image(cloud, member, raw_image, raw_data):
    resp = create_from(member, raw_image['id'], volume_type=SHARED_TYPE)
    assert resp.status_code == 202, resp.text
    vid = resp.json()['volume']['id']
    wait_status(member, vid, ('available',))
    vol = volume(member, vid)
    assert vol['multiattach'] is True and vol['bootable'] == 'true'
    assert_holds(storage_of(cloud, vid), raw_data, 1)
    delete(member, vid)


def test_unknown_image_is_400_and_makes_nothing(member):
    before = usage(member)
    for ref in ('0bd8b6a4-5a8f-4b39-9c1a-6b8e3b0b9f00', 'no-such-image'):
        resp = create_from(member, ref)
        assert resp.status_code == 400, resp.text
        assert 'Invalid image identifier' in resp.json()['badRequest'][
            'message']
    assert usage(member) == before


def test_image_bigger_than_the_volume_is_refused(cloud, member):
    """A qcow2 image of 2 GiB virtual size (a few KiB of file) does not
    fit a 1 GiB volume: 400 when Glance knows its virtual size, else the
    volume service finds it and the volume is error, with a message."""
    image = make_image(member, 'big-sparse', qcow2_of(b'x' * 4096, 2 * GiB),
                       disk_format='qcow2')
    before = usage(member)
    resp = create_from(member, image['id'], size=1)
    if image.get('virtual_size'):
        assert resp.status_code == 400, resp.text
        assert "doesn't fit in a volume of size 1GB" in resp.text
        assert usage(member) == before
    else:
        assert resp.status_code == 202, resp.text
        vid = resp.json()['volume']['id']
        wait_status(member, vid, ('error',))
        assert not glob.glob(os.path.join(cloud.cinder.workdir, '**',
                                          'volume-%s*' % vid),
                             recursive=True)
        delete(member, vid)
    # and into a volume that is big enough it goes
    resp = create_from(member, image['id'], size=2)
    assert resp.status_code == 202, resp.text
    vid = resp.json()['volume']['id']
    wait_status(member, vid, ('available',))
    delete(member, vid)
    assert usage(member) == before


def corrupt_qcow2():
    """A qcow2 file whose header passes Glance's format check but that
    qemu-img cannot open (its refcount table offset points nowhere)."""
    data = bytearray(qcow2_of(util.pattern(MiB, b'junk')))
    data[0x30:0x38] = b'\xff' * 8
    return bytes(data)


def test_corrupt_image_leaves_error_and_a_message(cloud, member):
    """An image whose data qemu-img cannot read: the volume becomes
    error, its storage is removed, the owner gets a message, and deleting
    it gives the quota back."""
    image = make_image(member, 'corrupt', corrupt_qcow2(),
                       disk_format='qcow2')
    before = usage(member)
    resp = create_from(member, image['id'])
    assert resp.status_code == 202, resp.text
    vid = resp.json()['volume']['id']
    wait_status(member, vid, ('error',))
    vol = volume(member, vid)
    assert vol['bootable'] == 'false'
    assert not glob.glob(os.path.join(cloud.cinder.workdir, '**',
                                      'volume-%s*' % vid), recursive=True)
    messages = member.volume('GET', '/messages', expect=200).json()[
        'messages']
    mine = [m for m in messages if m['resource_uuid'] == vid]
    assert mine and mine[0]['event_id'] == 'VOLUME_VOLUME_005_001', mine
    delete(member, vid)
    assert usage(member) == before


# -- volume to image -------------------------------------------------------------

def upload(c, vid, version=None, **body):
    kwargs = {'version': version} if version else {}
    return c.volume('POST', '/volumes/%s/action' % vid,
                    {'os-volume_upload_image': body}, **kwargs)


def wait_image_active(c, image_id):
    def active():
        image = c.image('GET', '/v2/images/%s' % image_id,
                        expect=200).json()
        assert image['status'] not in ('killed', 'deleted'), image
        return image['status'] == 'active' and image
    return util.wait_for(active, WAIT, interval=0.2,
                         what='image %s active' % image_id)


def image_bytes(c, image_id):
    resp = c.image('GET', '/v2/images/%s/file' % image_id, expect=200)
    return resp.content


def raw_of(data, fmt):
    """The raw disk an image file of format ``fmt`` holds."""
    if fmt == 'raw':
        return data
    with tempfile.TemporaryDirectory() as where:
        src = os.path.join(where, 'src')
        dst = os.path.join(where, 'dst')
        with open(src, 'wb') as f:
            f.write(data)
        subprocess.run(['qemu-img', 'convert', '-f', fmt, '-O', 'raw', src,
                        dst], check=True)
        with open(dst, 'rb') as f:
            return f.read()


@pytest.mark.parametrize('disk_format', ['raw', 'qcow2'])
def test_volume_to_image_and_back(cloud, member, raw_image, raw_data,
                                  disk_format):
    """A volume made from an image is uploaded as a new image (its
    properties come along, Glance's core ones do not), and a volume made
    from that image holds the same bytes."""
    resp = create_from(member, raw_image['id'], name='source')
    vid = resp.json()['volume']['id']
    wait_status(member, vid, ('available',))
    resp = upload(member, vid, image_name='uploaded-%s' % disk_format,
                  disk_format=disk_format)
    assert resp.status_code == 202, resp.text
    body = resp.json()['os-volume_upload_image']
    assert body['id'] == vid and body['status'] == 'uploading'
    assert body['image_name'] == 'uploaded-%s' % disk_format
    assert body['disk_format'] == disk_format
    assert body['container_format'] == 'bare'
    assert body['size'] == 1
    assert body['visibility'] == 'private' and body['protected'] is False
    assert body['volume_type']['name']
    image_id = body['image_id']
    try:
        seen = []
        wait_status(member, vid, ('available',), seen)
        image = wait_image_active(member, image_id)
        assert image['disk_format'] == disk_format
        assert image['os_distro'] == 'debian'
        assert image['hw_disk_bus'] == 'scsi'
        assert image['custom_note'] == 'from a test'
        # the source image's id, name and checksum are not the new one's
        assert 'image_id' not in image and 'image_name' not in image
        disk = raw_of(image_bytes(member, image_id), disk_format)
        assert len(disk) == GiB
        assert disk[:len(raw_data)] == raw_data
        assert disk[len(raw_data):].strip(b'\0') == b''
        # and back into a volume
        resp = create_from(member, image_id, name='copy')
        assert resp.status_code == 202, resp.text
        copy = resp.json()['volume']['id']
        wait_status(member, copy, ('available',))
        meta = volume(member, copy)['volume_image_metadata']
        assert meta['image_id'] == image_id
        assert meta['os_distro'] == 'debian'
        assert_holds(storage_of(cloud, copy), raw_data, 1)
        delete(member, copy)
    finally:
        member.image('DELETE', '/v2/images/%s' % image_id)
    delete(member, vid)


def test_upload_visibility_and_protection_from_3_1(member):
    vid = member.volume('POST', '/volumes', {'volume': {'size': 1}},
                        expect=202).json()['volume']['id']
    wait_status(member, vid, ('available',))
    # 3.0: not in the body
    resp = upload(member, vid, version='3.0', image_name='v',
                  visibility='shared')
    assert resp.status_code == 400, resp.text
    resp = upload(member, vid, version='3.1', image_name='v',
                  visibility='shared', protected=True)
    assert resp.status_code == 202, resp.text
    body = resp.json()['os-volume_upload_image']
    assert body['visibility'] == 'shared' and body['protected'] is True
    image = wait_image_active(member, body['image_id'])
    assert image['visibility'] == 'shared' and image['protected'] is True
    # a member may not publish
    resp = upload(member, vid, version='3.1', image_name='v',
                  visibility='public')
    assert resp.status_code == 403, resp.text
    wait_status(member, vid, ('available',))
    member.session.patch(
        member.endpoints['image'] + '/v2/images/%s' % body['image_id'],
        json=[{'op': 'replace', 'path': '/protected', 'value': False}],
        headers={'X-Auth-Token': member.token, 'Content-Type':
                 'application/openstack-images-v2.1-json-patch'},
        timeout=30).raise_for_status()
    member.image('DELETE', '/v2/images/%s' % body['image_id'], expect=204)
    delete(member, vid)


def test_upload_of_in_use_volume_with_force(member):
    vid = member.volume('POST', '/volumes', {'volume': {'size': 1}},
                        expect=202).json()['volume']['id']
    wait_status(member, vid, ('available',))
    member.volume('POST', '/volumes/%s/action' % vid, {'os-attach': {
        'instance_uuid': '6f1b5a55-0d6c-4a8e-9f5e-2d7f3c1a9b10',
        'mountpoint': '/dev/vdb'}}, expect=202)
    wait_status(member, vid, ('in-use',))
    resp = upload(member, vid, image_name='busy')
    assert resp.status_code == 400, resp.text
    resp = upload(member, vid, image_name='busy', force=True)
    assert resp.status_code == 202, resp.text
    image_id = resp.json()['os-volume_upload_image']['image_id']
    wait_status(member, vid, ('in-use',))
    wait_image_active(member, image_id)
    member.image('DELETE', '/v2/images/%s' % image_id, expect=204)
    member.volume('POST', '/volumes/%s/action' % vid, {'os-detach': {}},
                  expect=202)
    wait_status(member, vid, ('available',))
    delete(member, vid)


# -- Nova: boot from an image-backed volume -----------------------------------------

@pytest.fixture(scope='module')
def flavor(cloud):
    return cloud.admin().compute('POST', '/flavors', {'flavor': {
        'name': 'images-bfv', 'ram': 64, 'vcpus': 1, 'disk': 0}},
        expect=200).json()['flavor']['id']


def server_of(c, sid):
    return c.compute('GET', '/servers/%s' % sid, expect=200).json()[
        'server']


def wait_server(c, sid):
    def active():
        s = server_of(c, sid)
        assert s['status'] != 'ERROR', s.get('fault')
        return s['status'] == 'ACTIVE' and s
    return util.wait_for(active, WAIT, interval=0.3,
                         what='server %s ACTIVE' % sid)


def volumes_of_server(c, sid):
    return [a['volumeId'] for a in c.compute(
        'GET', '/servers/%s/os-volume_attachments' % sid,
        expect=200).json()['volumeAttachments']]


@pytest.mark.parametrize('volume_type', [None, SHARED_TYPE])
def test_nova_boots_servers_from_image_backed_volumes(
        cloud, member, flavor, raw_image, raw_data, volume_type):
    """``source_type=image, destination_type=volume``: Nova asks
    cinder_lite for a volume made from the image (one per server, two
    servers in one request with min_count), waits for it and boots from
    it; delete_on_termination removes the volumes with the servers.  A
    shareable type comes in the block device mapping (compute 2.67)."""
    bdm = {'boot_index': 0, 'uuid': raw_image['id'], 'source_type': 'image',
           'destination_type': 'volume', 'volume_size': 1,
           'delete_on_termination': True}
    if volume_type:
        bdm['volume_type'] = volume_type
    resp = member.compute('POST', '/servers', {'server': {
        'name': 'from-image', 'flavorRef': flavor, 'networks': 'none',
        'min_count': 2, 'max_count': 2, 'block_device_mapping_v2': [bdm]}},
        version='2.67')
    assert resp.status_code == 202, resp.text
    servers = [s['id'] for s in member.compute(
        'GET', '/servers?name=from-image', expect=200).json()['servers']]
    assert len(servers) == 2
    vids = []
    for sid in servers:
        wait_server(member, sid)
        attached = volumes_of_server(member, sid)
        assert len(attached) == 1
        vol = volume(member, attached[0])
        assert vol['status'] == 'in-use' and vol['bootable'] == 'true'
        assert vol['volume_image_metadata']['image_id'] == raw_image['id']
        assert vol['multiattach'] is bool(volume_type)
        assert_holds(storage_of(cloud, vol['id']), raw_data, 1)
        vids.append(vol['id'])
    assert len(set(vids)) == 2
    for sid in servers:
        member.compute('DELETE', '/servers/%s' % sid, expect=204)
    for sid in servers:
        util.wait_for(lambda: member.compute(
            'GET', '/servers/%s' % sid).status_code == 404, WAIT,
            interval=0.3, what='server %s deleted' % sid)
    for vid in vids:
        util.wait_for(lambda: member.volume(
            'GET', '/volumes/%s' % vid).status_code == 404, WAIT,
            interval=0.3, what='volume %s deleted by Nova' % vid)


def test_nova_refuses_one_volume_for_several_servers_in_one_request(
        member, flavor, raw_image):
    """What Nova 34 refuses: several servers in one request (min_count
    > 1) whose block device mapping names an existing volume, even a
    shareable one, are a 400 from Nova's API ("Cannot attach one or more
    volumes to multiple instances"), before cinder_lite is asked
    anything; the volume stays available with no attachment.  (A shared
    boot volume is attached to each server in its own request, as
    test_nova.py does.)"""
    resp = create_from(member, raw_image['id'], volume_type=SHARED_TYPE)
    assert resp.status_code == 202, resp.text
    vid = resp.json()['volume']['id']
    wait_status(member, vid, ('available',))
    bdm = {'boot_index': 0, 'uuid': vid, 'source_type': 'volume',
           'destination_type': 'volume', 'delete_on_termination': False}
    resp = member.compute('POST', '/servers', {'server': {
        'name': 'one-volume-two-servers', 'flavorRef': flavor,
        'networks': 'none', 'min_count': 2, 'max_count': 2,
        'block_device_mapping_v2': [bdm]}}, version='2.67')
    assert resp.status_code == 400, resp.text
    assert ('Cannot attach one or more volumes to multiple instances'
            in resp.json()['badRequest']['message'])
    vol = volume(member, vid)
    assert vol['status'] == 'available' and vol['attachments'] == []
    assert member.compute('GET', '/servers?name=one-volume-two-servers',
                          expect=200).json()['servers'] == []
    delete(member, vid)


def test_nova_snapshots_a_volume_backed_server_and_boots_from_it(
        cloud, member, flavor, raw_image, raw_data):
    """Nova's ``createImage`` of a server booted from a volume: Nova asks
    cinder_lite for a forced snapshot of the root volume and records it
    in a Glance image's block device mapping; a server booted from that
    image gets a new volume made from the snapshot, holding its bytes."""
    bdm = {'boot_index': 0, 'uuid': raw_image['id'], 'source_type': 'image',
           'destination_type': 'volume', 'volume_size': 1,
           'delete_on_termination': True}
    first = member.compute('POST', '/servers', {'server': {
        'name': 'bfv-origin', 'flavorRef': flavor, 'networks': 'none',
        'block_device_mapping_v2': [bdm]}}, version='2.67',
        expect=202).json()['server']['id']
    wait_server(member, first)
    root, = volumes_of_server(member, first)

    image_id = member.compute('POST', '/servers/%s/action' % first, {
        'createImage': {'name': 'bfv-snapshot'}}, version='2.67',
        expect=202).json()['image_id']

    def active():
        image = member.image('GET', '/v2/images/%s' % image_id,
                             expect=200).json()
        return image['status'] == 'active' and image
    image = util.wait_for(active, WAIT, interval=0.3,
                          what='image %s active' % image_id)
    mapping, = json.loads(image['block_device_mapping'])
    assert mapping['source_type'] == 'snapshot'
    snap = member.volume('GET', '/snapshots/%s' % mapping['snapshot_id'],
                         expect=200).json()['snapshot']
    assert snap['volume_id'] == root and snap['status'] == 'available'
    assert snap['size'] == 1

    second = member.compute('POST', '/servers', {'server': {
        'name': 'bfv-restored', 'flavorRef': flavor, 'networks': 'none',
        'imageRef': image_id}}, version='2.67',
        expect=202).json()['server']['id']
    wait_server(member, second)
    restored, = volumes_of_server(member, second)
    vol = volume(member, restored)
    assert restored != root
    assert vol['snapshot_id'] == snap['id'] and vol['status'] == 'in-use'
    assert vol['bootable'] == 'true'
    assert_holds(storage_of(cloud, restored), raw_data, 1)

    for sid in (first, second):
        member.compute('DELETE', '/servers/%s' % sid, expect=204)
    util.wait_for(lambda: member.volume(
        'GET', '/volumes/%s' % restored).status_code == 404, WAIT,
        interval=0.3, what='volume %s deleted by Nova' % restored)
    # Nova's delete_on_termination of the root is refused while the
    # snapshot lives (as Cinder): the root is detached and stays
    wait_status(member, root, ('available',))
    member.volume('DELETE', '/snapshots/%s' % snap['id'], expect=202)
    util.wait_for(lambda: member.volume(
        'GET', '/snapshots/%s' % snap['id']).status_code == 404, WAIT,
        interval=0.1, what='snapshot %s deleted' % snap['id'])
    delete(member, root)
    member.image('DELETE', '/v2/images/%s' % image_id, expect=204)
