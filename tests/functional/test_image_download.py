"""The download of a volume's image, through the real Glance alone
(tests/harness/glance.py; skipped without the OpenStack virtualenv of
tools/openstack-venv, failed instead under CINDER_LITE_REQUIRE_SERVICES=1):
a raw image is written in place into the volume, a qcow2 one through a
file and qemu-img; their blocks of zeros are holes in the volume either
way.  An image whose bytes are not the ones Glance hashed is refused
whichever way it goes: the volume is error, its storage removed, the
owner told why, and nothing is left in the conversion directory."""
import glob
import logging
import os
import subprocess

import pytest

from cinder_lite.common import sparse
from cinder_lite.db import api as db_api
from cinder_lite.db import messages as db_messages
from tests.harness import util
from tests.harness.volumes import create_available as create_from
from tests.harness.volumes import data_extents
from tests.harness.volumes import interrupt_and_reconcile
from tests.harness.volumes import read
from tests.harness.volumes import volume_file
from tests.harness.volumes import write

MiB = 1024 ** 2
BLOCK = sparse.BLOCK
# the disk of the images: data, zeros, data that ends inside a block,
# zeros to an end that is not a whole block
LAYOUT = [('data', 0, MiB), ('zeros', MiB, 4 * MiB),
          ('data', 4 * MiB, 4 * MiB + BLOCK + 100),
          ('zeros', 4 * MiB + BLOCK + 100, 6 * MiB + 7)]
DATA = [(start, end) for kind, start, end in LAYOUT if kind == 'data']
# where a volume from them may have data: the blocks of the data
BLOCKS = [(0, MiB), (4 * MiB, 4 * MiB + 2 * BLOCK)]


def disk():
    out = bytearray()
    for kind, start, end in LAYOUT:
        out += util.pattern(end - start, b'%d' % start) if kind == 'data' \
            else bytes(end - start)
    return bytes(out)


@pytest.fixture
def images(glance, tmp_path):
    data = disk()
    raw = tmp_path / 'disk.raw'
    raw.write_bytes(data)
    qcow2 = tmp_path / 'disk.qcow2'
    subprocess.run(['qemu-img', 'convert', '-f', 'raw', '-O', 'qcow2',
                    str(raw), str(qcow2)], check=True)
    return data, {
        'raw': glance.make_image('zeros-raw', str(raw), 'raw'),
        'qcow2': glance.make_image('zeros-qcow2', str(qcow2), 'qcow2')}


def written_how(caplog, vid):
    lines = [r.getMessage() for r in caplog.records
             if r.name == 'cinder_lite.volume.flows.create'
             and r.getMessage().startswith('volume %s: image ' % vid)]
    assert len(lines) == 1, lines
    return lines[0].rsplit(' written ', 1)[1]


@pytest.mark.parametrize('fmt,how', [('raw', 'in place'),
                                     ('qcow2', 'by qemu-img')])
def test_an_image_with_zeros_makes_a_sparse_volume(glance_stack,
                                                   images, caplog, fmt,
                                                   how, monkeypatch):
    caplog.set_level(logging.INFO, logger='cinder_lite.volume.flows.create')
    stack = glance_stack
    api = stack.client()
    data, made = images
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.readlink('/proc/self/fd/%d' % fd))
        return real_fsync(fd)
    monkeypatch.setattr(os, 'fsync', fsync)
    vol = create_from(api, size=1, imageRef=made[fmt]['id'])
    assert vol['bootable'] == 'true'
    assert written_how(caplog, vol['id']) == how
    path = volume_file(stack, vol['id'])
    # the image's data is on disk before the volume is available
    assert os.path.realpath(path) in synced
    assert os.path.getsize(path) == 1024 * MiB
    assert read(stack, vol['id'], 0, 8 * MiB) == data + bytes(
        8 * MiB - len(data))
    extents = data_extents(path)
    if extents != [(0, 1024 * MiB)]:     # the filesystem keeps holes
        # (qemu-img finds zeros in smaller pieces than 64 KiB)
        assert all(within(e, BLOCKS) for e in extents), extents
        assert all(within(d, extents) for d in DATA), extents
    assert left_to_convert(stack) == []


def within(extent, extents):
    return any(s <= extent[0] and extent[1] <= e for s, e in extents)


def left_to_convert(stack):
    path = os.path.join(stack.state_path, 'conversion')
    return os.listdir(path) if os.path.exists(path) else []


def test_a_raw_image_written_again_leaves_nothing_of_before(
        glance_stack, images):
    """A create rolled forward downloads the image again into the
    volume: where the image has zeros the volume has zeros again, not
    what was there."""
    stack = glance_stack
    api = stack.client()
    data, made = images
    vol = create_from(api, size=1, imageRef=made['raw']['id'])
    write(stack, vol['id'], 2 * MiB, b'\xee' * MiB)
    write(stack, vol['id'], 512 * MiB, b'\xee' * MiB)
    assert interrupt_and_reconcile(stack, vol['id']) == [
        'volume %s: creating -> available (create rolled forward)'
        % vol['id']]
    assert read(stack, vol['id'], 0, 8 * MiB) == data + bytes(
        8 * MiB - len(data))
    assert read(stack, vol['id'], 512 * MiB, MiB) == bytes(MiB)


def refusal(stack, api, vid):
    """The volume is error without storage; the reason the owner was
    given."""
    api.wait_volume(vid, 'error')
    assert not glob.glob(volume_file(stack, vid) + '*')
    assert left_to_convert(stack) == []
    messages = api.get('/messages?resource_uuid=%s' % vid).json()[
        'messages']
    assert [m['event_id'] for m in messages] == ['VOLUME_VOLUME_005_001']
    with db_api.reader() as session:
        found, = db_messages.list_messages(
            session, filters={'resource_uuid': vid})
        return found.detail


@pytest.mark.parametrize('fmt', ['raw', 'qcow2'])
def test_an_image_changed_in_the_store_is_refused(glance_stack, glance,
                                                  images, fmt):
    """Glance's stored file changed behind its back (same length): the
    hash Glance recorded does not match what it serves."""
    stack = glance_stack
    api = stack.client()
    _, made = images
    image = made[fmt]
    stored = glance.path('images', image['id'])
    with open(stored, 'r+b') as f:
        f.seek(image['size'] // 2)
        byte = f.read(1)
        f.seek(image['size'] // 2)
        f.write(bytes([byte[0] ^ 0xff]))
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'imageRef': image['id']}})
    assert resp.status_code == 202, resp.text
    detail = refusal(stack, api, resp.json()['volume']['id'])
    assert 'its %s hash does not match' % image['os_hash_algo'] in detail


def test_a_raw_image_that_is_qcow2_is_refused(glance_stack, glance,
                                              tmp_path):
    """Written in place, a raw image is still checked with qemu-img: a
    qcow2 file that Glance calls raw is refused."""
    stack = glance_stack
    api = stack.client()
    path = tmp_path / 'small.qcow2'
    subprocess.run(['qemu-img', 'create', '-f', 'qcow2', str(path), '64M'],
                   check=True, capture_output=True)
    image = glance.make_image('qcow2-said-raw', str(path), 'raw')
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'imageRef': image['id']}})
    assert resp.status_code == 202, resp.text
    detail = refusal(stack, api, resp.json()['volume']['id'])
    assert 'the image file is qcow2, not raw' in detail
