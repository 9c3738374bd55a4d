"""Volumes from Glance images (the test Glance, tests/harness/glance.py):
the image's ``cinder_img_volume_type`` property names the type of a
volume made from it without one (Cinder's behaviour), and a volume from
a qcow2 image, backed up and restored to a new volume, holds what the
image holds (``qemu-img compare`` against the image file); os-reimage
(3.68) writes another image over a volume, also a reserved one, with
Cinder's refusals."""
import os
import shutil
import subprocess
import uuid

from tests.harness import backups as bk
from tests.harness import clients
from tests.harness import util
from tests.harness.volumes import create_available as create_from
from tests.harness.volumes import read
from tests.harness.volumes import volume_file
from tests.harness.volumes import write

MiB = 1024 ** 2


def _raw_image(tmp_path, name, size=MiB):
    path = tmp_path / name
    path.write_bytes(util.pattern(size, name.encode()))
    return str(path)


def _type_of(api, vid):
    return api.get('/volumes/%s' % vid).json()['volume']['volume_type']


def test_the_image_names_the_type_of_its_volumes(glance_stack, glance,
                                                 tmp_path):
    api = glance_stack.client()
    gold = api.create_type('gold')
    api.create_type('silver')
    path = _raw_image(tmp_path, 'typed.raw')
    by_name = glance.make_image('typed', path, 'raw',
                                cinder_img_volume_type='gold')
    by_id = glance.make_image('typed-by-id', path, 'raw',
                              cinder_img_volume_type=gold['id'])
    plain = glance.make_image('untyped', path, 'raw')

    vol = create_from(api, size=1, imageRef=by_name['id'])
    assert _type_of(api, vol['id']) == 'gold'
    assert vol['volume_image_metadata']['cinder_img_volume_type'] == 'gold'
    vol = create_from(api, size=1, imageRef=by_id['id'])
    assert _type_of(api, vol['id']) == 'gold'
    # the request's type wins
    vol = create_from(api, size=1, imageRef=by_name['id'],
                      volume_type='silver')
    assert _type_of(api, vol['id']) == 'silver'
    # without the property: the default type
    default = api.get('/types/default').json()['volume_type']['name']
    vol = create_from(api, size=1, imageRef=plain['id'])
    assert _type_of(api, vol['id']) == default

    # a type that is not there: 404 as Cinder, nothing made
    missing = glance.make_image('typed-missing', path, 'raw',
                                cinder_img_volume_type='no-such-type')
    before = len(api.get('/volumes').json()['volumes'])
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'imageRef': missing['id']}})
    assert resp.status_code == 404, resp.text
    assert 'no-such-type' in resp.text
    assert len(api.get('/volumes').json()['volumes']) == before


def test_a_backup_of_a_volume_from_an_image_restores_the_image(
        glance_stack, glance, tmp_path):
    """Issue 46 item 5: image -> volume -> backup -> restore to a new
    volume; the restored volume is the image (qemu-img compare reads the
    qcow2 image as the guest would see it)."""
    api = glance_stack.client()
    raw = tmp_path / 'disk.raw'
    # data, a hole, data again: the backup keeps both
    with open(raw, 'wb') as f:
        f.write(util.pattern(3 * MiB + 512, b'image head'))
        f.seek(40 * MiB)
        f.write(util.pattern(2 * MiB, b'image tail'))
    qcow2 = tmp_path / 'disk.qcow2'
    subprocess.run(['qemu-img', 'convert', '-f', 'raw', '-O', 'qcow2',
                    str(raw), str(qcow2)], check=True)
    image = glance.make_image('backed-up', str(qcow2), 'qcow2')
    src = create_from(api, size=1, imageRef=image['id'])

    backup = bk.backup(api, src['id'])
    restored = bk.restored(api, backup['id'])
    assert restored['id'] != src['id']

    for vid in (src['id'], restored['id']):
        done = subprocess.run(
            ['qemu-img', 'compare', '-f', 'qcow2', '-F', 'raw',
             str(qcow2), volume_file(glance_stack, vid)],
            capture_output=True, text=True)
        assert done.returncode == 0, (vid, done.stdout, done.stderr)
    # and byte for byte the restored volume is its source
    with open(volume_file(glance_stack, src['id']), 'rb') as a, \
            open(volume_file(glance_stack, restored['id']), 'rb') as b:
        while True:
            x, y = a.read(1 << 22), b.read(1 << 22)
            assert x == y
            if not x:
                break


def _reimage(api, vid, image_id, expect=202, version='3.68', **extra):
    resp = api.post('/volumes/%s/action' % vid, json={'os-reimage': dict(
        extra, image_id=image_id)},
        headers={'OpenStack-API-Version': 'volume %s' % version})
    assert resp.status_code == expect, resp.text
    return resp


def _volume(api, vid):
    return api.get('/volumes/%s' % vid).json()['volume']


def _compare(image_file, fmt, stack, vid):
    done = subprocess.run(['qemu-img', 'compare', '-f', fmt, '-F', 'raw',
                           image_file, volume_file(stack, vid)],
                          capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def test_os_reimage(glance_stack, glance, tmp_path):
    stack = glance_stack
    api = stack.client()
    first = glance.make_image('first', _raw_image(tmp_path, 'first.raw',
                                                  4 * MiB), 'raw')
    raw = _raw_image(tmp_path, 'second.raw', 2 * MiB)
    second_file = str(tmp_path / 'second.qcow2')
    subprocess.run(['qemu-img', 'convert', '-f', 'raw', '-O', 'qcow2', raw,
                    second_file], check=True)
    second = glance.make_image('second', second_file, 'qcow2',
                               os_distro='second-os')
    vol = create_from(api, size=1, imageRef=first['id'])
    write(stack, vol['id'], 500 * MiB, b'written by the old server')

    # before 3.68 there is no such action
    _reimage(api, vol['id'], second['id'], expect=404, version='3.67')
    _reimage(api, vol['id'], second['id'])
    vol = api.wait_volume(vol['id'], 'available')
    assert _compare(second_file, 'qcow2', stack, vol['id'])[0] == 0
    # nothing of the old data is left past the image
    assert read(stack, vol['id'], 500 * MiB, 25) == bytes(25)
    meta = vol['volume_image_metadata']
    assert meta['image_id'] == second['id']
    assert meta['image_name'] == 'second'
    assert meta['os_distro'] == 'second-os'

    # refusals change nothing
    big = glance.make_image('big', raw, 'raw', min_disk=5)
    resp = _reimage(api, vol['id'], big['id'], expect=400)
    assert 'minDisk' in resp.text
    _reimage(api, vol['id'], '0' * 8 + '-0000-4000-8000-' + '0' * 12,
             expect=404)
    _reimage(api, vol['id'], 'not-a-uuid', expect=400)
    _reimage(api, vol['id'], second['id'], expect=400, extra_key=1)
    reader = stack.client(user='r', roles='reader')
    _reimage(reader, vol['id'], second['id'], expect=403)
    assert _volume(api, vol['id'])['status'] == 'available'

    # reserved (Nova rebuilding its server): only with reimage_reserved
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4())}})
    assert resp.status_code == 200, resp.text
    att = resp.json()['attachment']['id']
    assert _volume(api, vol['id'])['status'] == 'reserved'
    resp = _reimage(api, vol['id'], first['id'], expect=400)
    assert ('Volume %s status must be available or error, but current '
            'status is reserved.' % vol['id']) in resp.text
    _reimage(api, vol['id'], first['id'], reimage_reserved=True)
    util.wait_for(lambda: _volume(api, vol['id'])['volume_image_metadata'][
        'image_id'] == first['id'] and _volume(api, vol['id'])[
            'status'] == 'reserved', what='re-imaged, reserved')
    assert read(stack, vol['id'], 0, 4 * MiB) == util.pattern(
        4 * MiB, b'first.raw')
    # attached to two servers: a conflict
    api.create_type('shared', {'multiattach': '<is> True'})
    shared = create_from(api, size=1, imageRef=first['id'],
                         volume_type='shared')
    for _ in range(2):
        resp = api.post('/attachments', json={'attachment': {
            'volume_uuid': shared['id'],
            'instance_uuid': str(uuid.uuid4())}})
        assert resp.status_code == 200, resp.text
    resp = _reimage(api, shared['id'], second['id'], expect=409,
                    reimage_reserved=True)
    assert 'attached to more than one server' in resp.text
    assert api.delete('/attachments/%s' % att).status_code == 200

    # an error volume may be re-imaged; it is available afterwards
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-reset_status': {'status': 'error'}})
    assert resp.status_code == 202, resp.text
    _reimage(api, vol['id'], second['id'])
    api.wait_volume(vol['id'], 'available')
    assert _compare(second_file, 'qcow2', stack, vol['id'])[0] == 0

    # the image cannot be downloaded (the conversion directory is a
    # file): error, with a message
    conversion = os.path.join(stack.state_path, 'conversion')
    shutil.rmtree(conversion, ignore_errors=True)
    with open(conversion, 'w') as f:
        f.write('in the way')
    _reimage(api, vol['id'], second['id'])
    api.wait_volume(vol['id'], 'error')
    os.unlink(conversion)
    messages = [m for m in api.get('/messages').json()['messages']
                if m['resource_uuid'] == vol['id']]
    assert [m['event_id'] for m in messages] == ['VOLUME_VOLUME_016_001']

    # cinderclient's reimage
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-reset_status': {'status': 'available'}})
    assert resp.status_code == 202, resp.text
    result = clients.run_cinder(stack, 'reimage', vol['id'], first['id'],
                                version='3.68')
    assert result.returncode == 0, (result.stdout, result.stderr)
    util.wait_for(lambda: _volume(api, vol['id'])['volume_image_metadata'][
        'image_id'] == first['id'] and _volume(api, vol['id'])[
            'status'] == 'available', what='re-imaged by cinderclient')
