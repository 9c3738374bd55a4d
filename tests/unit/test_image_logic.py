"""What a Glance image gives a volume and a volume an image: the
properties a volume keeps, the deny list on upload, the size checks,
the check of a downloaded file with qemu-img, and where Glance is."""
import os
import subprocess

import pytest

from cinder_lite.common import context as cl_context
from cinder_lite.common import exception
from cinder_lite.volume import glance
from cinder_lite.volume import image

GiB = 1024 ** 3

GLANCE_IMAGE = {
    'id': '5b0b7a55-0d6c-4a8e-9f5e-2d7f3c1a9b10', 'name': 'debian',
    'status': 'active', 'visibility': 'private', 'protected': False,
    'os_hidden': False, 'checksum': 'abc', 'os_hash_algo': 'sha512',
    'os_hash_value': 'f00', 'owner': 'p', 'size': 3 * 1024 ** 2,
    'virtual_size': 3 * 1024 ** 2, 'container_format': 'bare',
    'disk_format': 'qcow2', 'created_at': 't', 'updated_at': 't',
    'tags': ['a'], 'min_ram': 0, 'min_disk': 0, 'self': '/v2/images/x',
    'file': '/v2/images/x/file', 'schema': '/v2/schemas/image',
    'stores': 'fs', 'os_distro': 'debian', 'hw_disk_bus': 'scsi',
    'hw_numa_nodes': 2, 'gone': None,
}


def test_a_volume_keeps_the_properties_and_cinders_attributes():
    meta = image.volume_image_metadata(GLANCE_IMAGE)
    assert meta == {
        'image_id': GLANCE_IMAGE['id'], 'image_name': 'debian',
        'checksum': 'abc', 'container_format': 'bare',
        'disk_format': 'qcow2', 'min_disk': '0', 'min_ram': '0',
        'size': str(3 * 1024 ** 2), 'os_distro': 'debian',
        'hw_disk_bus': 'scsi', 'hw_numa_nodes': '2'}


def test_attributes_win_over_properties_of_the_same_name():
    meta = image.volume_image_metadata(dict(GLANCE_IMAGE,
                                            image_id='forged'))
    assert meta['image_id'] == GLANCE_IMAGE['id']


def test_upload_leaves_out_core_keys_reserved_namespaces_and_given_keys():
    own = {'image_id': 'x', 'image_name': 'n', 'checksum': 'c',
           'container_format': 'bare', 'disk_format': 'raw',
           'min_disk': '0', 'min_ram': '0', 'size': '1', 'name': 'n',
           'os_distro': 'debian', 'os_glance_importing_to_stores': 'fs',
           'img_signature': 's', 'img_signature_hash_method': 'SHA-256',
           'signature_verified': 'True', 'os_glance': 'x',
           'os_glancefoo': 'v', 'os_glanc': 'kept', 'secret_key': 'v',
           'secret:x': 'v',
           'visibility': 'public', 'status': 'active', 'owner': 'x'}
    core = ['checksum', 'container_format', 'disk_format', 'image_name',
            'image_id', 'min_disk', 'min_ram', 'name', 'size']
    assert image.upload_properties(own, core, ('secret',),
                                   given={'visibility': 'private'}) == {
        'os_distro': 'debian', 'os_glanc': 'kept'}
    assert image.upload_properties(None, core) == {}


@pytest.mark.parametrize('changes,size,words', [
    ({'status': 'queued'}, 1, 'is not active'),
    ({'size': GiB + 1, 'virtual_size': None}, 1,
     'Size of specified image 2GB is larger than volume size 1GB'),
    ({'min_disk': 3}, 2, 'cannot be smaller than the image minDisk size'),
    ({'virtual_size': 2 * GiB}, 1,
     "virtual size is 2GB and doesn't fit in a volume of size 1GB"),
])
def test_images_that_do_not_fit_are_refused(changes, size, words):
    with pytest.raises(exception.Invalid) as e:
        image.check_fits(dict(GLANCE_IMAGE, **changes), size)
    assert words in e.value.message


def test_an_image_that_fits_exactly_is_taken():
    image.check_fits(dict(GLANCE_IMAGE, size=GiB, virtual_size=GiB), 1)
    assert image.minimum_volume_size(dict(GLANCE_IMAGE,
                                          virtual_size=GiB + 1)) == 2


def test_values_become_text():
    assert image.as_text(True) == 'True'
    assert image.as_text(3) == '3'
    assert image.as_text({'b': [1], 'a': 'x'}) == '{"a": "x", "b": [1]}'


# -- the downloaded file ------------------------------------------------------------

def qemu_img(*args):
    subprocess.run(('qemu-img',) + args, check=True, capture_output=True)


@pytest.fixture
def files(tmp_path):
    if subprocess.run(['which', 'qemu-img'],
                      capture_output=True).returncode:
        pytest.skip('qemu-img is not installed')
    raw = tmp_path / 'disk.raw'
    raw.write_bytes(os.urandom(65536))
    qcow2 = tmp_path / 'disk.qcow2'
    qemu_img('convert', '-f', 'raw', '-O', 'qcow2', str(raw), str(qcow2))
    big = tmp_path / 'big.qcow2'
    qemu_img('create', '-f', 'qcow2', str(big), '2G')
    backed = tmp_path / 'backed.qcow2'
    qemu_img('create', '-f', 'qcow2', '-b', str(raw), '-F', 'raw',
             str(backed))
    return {'raw': str(raw), 'qcow2': str(qcow2), 'big': str(big),
            'backed': str(backed)}


def test_a_file_of_the_format_glance_says_passes(files):
    assert image.check_image_file(
        files['qcow2'], dict(GLANCE_IMAGE, disk_format='qcow2'), 1) == \
        'qcow2'
    assert image.check_image_file(
        files['raw'], dict(GLANCE_IMAGE, disk_format='raw'), 1) == 'raw'


@pytest.mark.parametrize('name,disk_format,words', [
    ('qcow2', 'raw', 'the image file is qcow2, not raw'),
    ('raw', 'qcow2', 'the image file is raw, not qcow2'),
    ('backed', 'qcow2', 'backing file'),
    ('big', 'qcow2', "doesn't fit in a volume of size 1GB"),
    ('raw', 'aki', 'disk format aki is not supported'),
])
def test_files_that_are_not_what_glance_says_are_refused(files, name,
                                                         disk_format, words):
    with pytest.raises(exception.ImageUnacceptable) as e:
        image.check_image_file(files[name],
                               dict(GLANCE_IMAGE, disk_format=disk_format),
                               1)
    assert words in e.value.message


def test_an_unreadable_file_is_an_image_service_error(tmp_path, files):
    junk = tmp_path / 'junk.qcow2'
    data = bytearray(open(files['qcow2'], 'rb').read())
    data[0x30:0x38] = b'\xff' * 8
    junk.write_bytes(bytes(data))
    with pytest.raises(exception.ImageServiceError):
        image.check_image_file(str(junk), GLANCE_IMAGE, 1)


# -- where Glance is --------------------------------------------------------------------

class Conf:
    glance_api_servers = []
    glance_catalog_info = 'image:glance:publicURL'


def test_glance_from_the_configuration_first():
    conf = Conf()
    conf.glance_api_servers = ['glance.example.com:9292',
                               'https://g2.example.com']
    assert glance.endpoints(conf, None) == [
        'http://glance.example.com:9292', 'https://g2.example.com']


def test_glance_from_the_callers_catalog():
    catalog = [
        {'type': 'compute', 'name': 'nova',
         'endpoints': [{'publicURL': 'http://nova'}]},
        {'type': 'image', 'name': 'glance',
         'endpoints': [{'publicURL': 'http://glance', 'region': 'R',
                        'internalURL': 'http://glance-int'}]}]
    ctxt = cl_context.RequestContext(service_catalog=catalog,
                                     current=False)
    # only what the services call is kept
    assert [e['type'] for e in ctxt.service_catalog] == ['image']
    assert glance.endpoints(Conf(), ctxt) == ['http://glance']
    conf = Conf()
    conf.glance_catalog_info = 'image::internalURL'
    assert glance.endpoints(conf, ctxt) == ['http://glance-int']
    # the catalog travels with the context over the bus, the token too
    again = cl_context.RequestContext.from_dict(dict(
        ctxt.to_dict(), auth_token='t'), current=False)
    assert again.service_catalog == ctxt.service_catalog
    assert again.auth_token == 't'


def test_v3_catalog_entries_are_read_too():
    ctxt = cl_context.RequestContext(current=False, service_catalog=[
        {'type': 'image', 'name': 'glance', 'endpoints': [
            {'interface': 'admin', 'url': 'http://admin'},
            {'interface': 'public', 'url': 'http://public'}]}])
    assert glance.endpoints(Conf(), ctxt) == ['http://public']


def test_no_glance_anywhere_is_said_so():
    with pytest.raises(exception.ImageServiceError) as e:
        glance.endpoints(Conf(), cl_context.RequestContext(current=False))
    assert 'glance_api_servers' in e.value.message
