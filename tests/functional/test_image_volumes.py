"""Volumes from Glance images (the test Glance, tests/harness/glance.py):
the image's ``cinder_img_volume_type`` property names the type of a
volume made from it without one (Cinder's behaviour), and a volume from
a qcow2 image, backed up and restored to a new volume, holds what the
image holds (``qemu-img compare`` against the image file)."""
import subprocess

from tests.harness import backups as bk
from tests.harness import util
from tests.harness.volumes import create_available as create_from
from tests.harness.volumes import volume_file

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
