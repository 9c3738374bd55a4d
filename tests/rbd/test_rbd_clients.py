"""Consumers of RBD attachments other than our librbd device: QEMU (the
rbd block driver of qemu-block-extra, through ``qemu-io`` and
``qemu-img``) given nothing but an attachment's connection_info, as
os-brick hands it to a hypervisor that is not libvirt: the keyring in a
0600 file and a ceph.conf of ``[global]`` and ``mon_host``.

What the OSDs hold a read-only attachment to, whatever QEMU is told:
QEMU's rbd driver opens images read-write, so with the default caps of a
read-only key it cannot open the image at all; with
``rbd_read_only_keys_watch`` the key may register the watch a read-write
open makes, QEMU opens and reads, and the OSDs refuse its writes.  A
detached attachment's key opens nothing, and a read-only key cuts no
client.

And the volume service as qemu-img's user: volumes from Glance images
(raw and qcow2, both through a file: an RBD image has no path to write a
raw image into) and volumes uploaded as images, through the real Glance
alone (tests/harness/glance.py), as tests/functional/test_image_copies.py
does on the file backend."""
import contextlib
import errno
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

from cinder_lite.volume.drivers import rbd as rbd_driver
from tests.conftest import rbd_backend
from tests.harness import dataplane as dp
from tests.harness import stack as stack_mod
from tests.harness import util
from tests.harness.volumes import create_available as create_from
from tests.rbd.test_rbd import _as_attachment

KiB = 1024
MiB = 1024 ** 2
GiB = 1024 ** 3
# how long a connect with a removed key may wait for the monitors
MOUNT_TIMEOUT = 5


@pytest.fixture(autouse=True)
def _qemu():
    util.need('qemu-io')
    util.need('qemu-img')


@pytest.fixture
def watch_stack(ceph, tmp_path):
    """A stack whose read-only keys may watch the header (the backend
    option ``rbd_read_only_keys_watch``)."""
    s = stack_mod.Stack(tmp_path / 'st', backends={'rbd': rbd_backend(
        ceph, rbd_read_only_keys_watch=True)}).start()
    yield s
    left = s.volume_service('rbd').endpoints[0].driver.list_exports()
    s.stop()
    assert left == [], 'exports left behind: %s' % left


def qemu_spec(info, directory):
    """qemu's name of the attachment's image, from its connection_info
    only: the keyring in a file only its owner reads and a ceph.conf
    that names the monitors (in ``[global]``: Ceph 16 refuses a key
    before any section)."""
    user = info['auth_username']
    keyring = os.path.join(directory, 'ceph.client.%s.keyring' % user)
    fd = os.open(keyring, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write(info['keyring'])
    conf = os.path.join(directory, 'ceph-%s.conf' % user)
    with open(conf, 'w') as f:
        f.write('[global]\nmon_host = %s\nclient_mount_timeout = %d\n'
                'admin_socket =\nlog_file =\n' % (
                    ','.join('[v1:%s:%s]' % hp for hp in zip(
                        info['hosts'], info['ports'])), MOUNT_TIMEOUT))
    assert os.stat(keyring).st_mode & 0o777 == 0o600
    return 'rbd:%s:id=%s:conf=%s:keyring=%s' % (info['name'], user, conf,
                                                keyring)


def qemu_io(spec, *commands, read_only=False, cache=None, timeout=60):
    args = ['qemu-io', '-f', 'raw']
    if read_only:
        args.append('-r')
    if cache:
        # qemu's rbd driver turns librbd's cache off for ``none``
        args += ['-t', cache]
    for command in commands:
        args += ['-c', command]
    return subprocess.run(args + [spec], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def api(rbd_stack):
    api = rbd_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    return api


def test_qemu_writes_through_rw_and_cannot_open_ro(
        rbd_stack, api, tmp_path):
    vol = api.create_volume(volume_type='shared')
    ha, hb = dp.attacher(rbd_stack, 'a'), dp.attacher(rbd_stack, 'b')
    rw_att, rw_dev = ha.attach_device(vol['id'])
    ro_att, ro_dev = hb.attach_device(vol['id'], mode='ro')
    rw_spec = qemu_spec(rw_att['connection_info'], str(tmp_path))
    ro_spec = qemu_spec(ro_att['connection_info'], str(tmp_path))

    done = qemu_io(rw_spec, 'write -P 0x61 0 4k', 'flush')
    assert done.returncode == 0, done.stderr
    assert 'wrote 4096/4096 bytes' in done.stdout
    assert rw_dev.read(0, 4 * KiB) == b'a' * 4 * KiB
    assert ro_dev.read(0, 4 * KiB) == b'a' * 4 * KiB

    # QEMU opens read-write even when told -r: a key that may not watch
    # the header opens nothing, so it writes nothing
    for read_only in (False, True):
        done = qemu_io(ro_spec, 'write -P 0x62 0 4k', 'flush',
                       read_only=read_only)
        assert 'wrote' not in done.stdout
        assert done.returncode != 0 or 'Operation not permitted' in \
            done.stderr + done.stdout, (done.stdout, done.stderr)
    done = subprocess.run(['qemu-img', 'info', ro_spec], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0
    assert 'Operation not permitted' in done.stderr, done.stderr
    assert rw_dev.read(0, 4 * KiB) == b'a' * 4 * KiB

    hb.detach(ro_att['id'], ro_dev)
    # detached: its key opens nothing, and says so within the mount
    # timeout
    done = qemu_io(rw_spec, 'read -P 0x61 0 4k')
    assert done.returncode == 0, done.stderr
    ha.detach(rw_att['id'], rw_dev)
    started = time.monotonic()
    done = subprocess.run(['qemu-img', 'info', rw_spec], capture_output=True,
                          text=True, timeout=120)
    took = time.monotonic() - started
    assert done.returncode != 0, done.stdout
    assert took < MOUNT_TIMEOUT + 20, took
    api.wait_volume(vol['id'], 'available')


def test_qemu_reads_through_a_watching_ro_key_and_cannot_write(
        watch_stack, tmp_path):
    api = watch_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='shared')
    ha, hb = dp.attacher(watch_stack, 'a'), dp.attacher(watch_stack, 'b')
    rw_att, rw_dev = ha.attach_device(vol['id'])
    ro_att, ro_dev = hb.attach_device(vol['id'], mode='ro')
    rw_dev.write(0, b'a' * 8 * KiB)
    rw_dev.flush()
    ro_spec = qemu_spec(ro_att['connection_info'], str(tmp_path))

    done = qemu_io(ro_spec, 'read -P 0x61 0 8k')
    assert done.returncode == 0, done.stderr
    assert 'read 8192/8192 bytes' in done.stdout, done.stdout
    writes = ('write -P 0x62 0 4k', 'flush', 'write -P 0x62 4k 4k',
              'flush')
    # librbd's cache off: every write reaches the OSDs, which refuse it
    done = qemu_io(ro_spec, *writes, cache='none')
    assert 'wrote' not in done.stdout, done.stdout
    assert done.stdout.count('Operation not permitted') >= 2, (
        done.stdout, done.stderr)
    assert rw_dev.read(0, 8 * KiB) == b'a' * 8 * KiB
    # with it on (qemu's default), a write after the first flush may
    # land in the cache and be reported done: what counts is that the
    # OSDs hold none of it
    qemu_io(ro_spec, *writes)
    assert rw_dev.read(0, 8 * KiB) == b'a' * 8 * KiB
    done = qemu_io(ro_spec, 'read -P 0x61 0 8k', cache='none')
    assert done.returncode == 0 and 'read 8192/8192 bytes' in done.stdout, (
        done.stdout, done.stderr)
    info = subprocess.run(['qemu-img', 'info', '--output=json', ro_spec],
                          capture_output=True, text=True, timeout=60)
    assert info.returncode == 0, info.stderr

    hb.detach(ro_att['id'], ro_dev)
    ha.detach(rw_att['id'], rw_dev)
    api.wait_volume(vol['id'], 'available')


@pytest.mark.parametrize('mode', ['ro', 'rw'])
def test_no_attachment_key_can_blocklist_anyone(rbd_stack, api, mode):
    """mon ``profile rbd`` lets a key blocklist any client address (so
    that librbd can break a dead writer's exclusive lock); an attachment's
    key gets ``allow r``: it cannot cut the other hosts, nor the volume
    service."""
    vol = api.create_volume(volume_type='shared')
    hb = dp.attacher(rbd_stack, 'b')
    att, dev = hb.attach_device(vol['id'], mode=mode)
    cluster, _ = _as_attachment(att['connection_info'])
    try:
        rc, _, err = cluster.mon_command(json.dumps({
            'prefix': 'osd blocklist', 'blocklistop': 'add',
            'addr': '127.0.0.9:0/4242', 'expire': 60.0}), b'')
    finally:
        cluster.shutdown()
    assert rc == -errno.EACCES, err
    assert dev.read(0, 1) == b'\0'
    hb.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')


def test_the_next_writer_of_a_single_writer_image_gets_its_lock(
        rbd_stack, ceph, api):
    """A plain volume keeps the exclusive lock; its writer is cut off
    (detached, its host never closing the device) while it holds the
    lock: the next writer, whose key may blocklist no one, writes at
    once, because the cut-off broke the cut client's lock."""
    vol = api.create_volume()
    ha, hb = dp.attacher(rbd_stack, 'a'), dp.attacher(rbd_stack, 'b')
    a_att, a_dev = ha.attach_device(vol['id'])
    a_dev.write(0, b'a holds the lock')
    a_dev.flush()
    ha.transport.delete(a_att['id'])         # a never closes its device
    api.wait_volume(vol['id'], 'available')
    b_att, b_dev = hb.attach_device(vol['id'])
    b_dev.write(0, b'b took the lock')
    b_dev.flush()
    assert b_dev.read(0, 15) == b'b took the lock'
    rbd = rbd_driver.rbd_module()
    with pytest.raises(rbd.Error):
        a_dev.write(0, b'a again')
    a_dev.close()
    hb.detach(b_att['id'], b_dev)
    api.wait_volume(vol['id'], 'available')


# -- images ----------------------------------------------------------------

@pytest.fixture
def glance_rbd_stack(ceph, glance, tmp_path):
    s = stack_mod.Stack(tmp_path / 'st', backends={'rbd': rbd_backend(ceph)},
                        extra={'glance_api_servers': glance.url}).start()
    yield s
    s.stop()


@contextlib.contextmanager
def _admin_image(ceph, volume_id, read_only=True):
    """The RBD image of a volume, opened as admin."""
    rados = rbd_driver.rados_module()
    rbd = rbd_driver.rbd_module()
    cluster = rados.Rados(conffile=ceph.conf,
                          conf={'keyring': ceph.admin_keyring})
    cluster.connect(timeout=30)
    try:
        with cluster.open_ioctx(ceph.pool) as ioctx:
            with rbd.Image(ioctx, 'volume-%s' % volume_id,
                           read_only=read_only) as image:
                yield image
    finally:
        cluster.shutdown()


def image_bytes(ceph, volume_id, offset, length):
    """What the RBD image of a volume holds, read as admin."""
    with _admin_image(ceph, volume_id) as image:
        return image.read(offset, length)


def write_image(ceph, volume_id, offset, data):
    with _admin_image(ceph, volume_id, read_only=False) as image:
        image.write(data, offset)
        image.flush()


def to_qcow2(raw_path, qcow2_path):
    subprocess.run(['qemu-img', 'convert', '-f', 'raw', '-O', 'qcow2',
                    raw_path, qcow2_path], check=True, timeout=120)


def raw_of(data, fmt):
    if fmt == 'raw':
        return data
    with tempfile.TemporaryDirectory() as where:
        src, dst = os.path.join(where, 'in'), os.path.join(where, 'out')
        with open(src, 'wb') as f:
            f.write(data)
        subprocess.run(['qemu-img', 'convert', '-f', fmt, '-O', 'raw', src,
                        dst], check=True, timeout=120)
        with open(dst, 'rb') as f:
            return f.read()


@pytest.mark.parametrize('disk_format', ['raw', 'qcow2'])
def test_a_volume_from_an_image_holds_its_bytes(glance_rbd_stack, glance,
                                                ceph, tmp_path, disk_format):
    api = glance_rbd_stack.client()
    # data, a hole of zeros, data that ends inside a block
    data = util.pattern(MiB, b'head') + bytes(3 * MiB) + \
        util.pattern(MiB + 100, b'tail')
    raw = tmp_path / 'disk.raw'
    raw.write_bytes(data)
    path = raw
    if disk_format == 'qcow2':
        path = tmp_path / 'disk.qcow2'
        to_qcow2(str(raw), str(path))
    image = glance.make_image('rbd-%s' % disk_format, str(path), disk_format)
    vol = create_from(api, size=1, imageRef=image['id'])
    assert vol['volume_image_metadata']['image_id'] == image['id']
    assert vol['bootable'] == 'true'
    assert image_bytes(ceph, vol['id'], 0, len(data)) == data
    # past the image: the zeros of a new volume
    assert image_bytes(ceph, vol['id'], len(data), MiB) == bytes(MiB)
    # nothing left in the conversion directory
    conversions = glance_rbd_stack.conf.image_conversion_dir
    assert not os.path.isdir(conversions) or os.listdir(conversions) == []
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


# qcow2 only: a raw upload runs the same qemu-img convert and then sends
# the whole GiB to Glance (35 s here, against 0.5 s for qcow2)
@pytest.mark.parametrize('disk_format', ['qcow2'])
def test_an_uploaded_rbd_volume_is_an_image_of_its_bytes(
        glance_rbd_stack, glance, ceph, disk_format):
    api = glance_rbd_stack.client()
    vol = api.create_volume(size=1)
    head, tail = util.pattern(MiB, b'head'), util.pattern(4096, b'tail')
    write_image(ceph, vol['id'], 0, head)
    write_image(ceph, vol['id'], GiB - 4096, tail)
    resp = api.post('/volumes/%s/action' % vol['id'], json={
        'os-volume_upload_image': {'image_name': 'from-rbd-%s' % disk_format,
                                   'disk_format': disk_format}})
    assert resp.status_code == 202, resp.text
    image_id = resp.json()['os-volume_upload_image']['image_id']

    def uploaded():
        status = api.get('/volumes/%s' % vol['id']).json()['volume'][
            'status']
        assert status in ('uploading', 'available'), status
        return status == 'available'
    util.wait_for(uploaded, 300, interval=0.5, what='the upload')

    def active():
        image = glance.call('GET', '/images/%s' % image_id, 200).json()
        assert image['status'] not in ('killed', 'deleted'), image
        return image['status'] == 'active' and image
    image = util.wait_for(active, 120, interval=0.2, what='image active')
    assert image['disk_format'] == disk_format
    disk = raw_of(glance.call('GET', '/images/%s/file' % image_id,
                              200).content, disk_format)
    assert len(disk) == GiB
    assert disk[:MiB] == head
    assert disk[-4096:] == tail
    assert disk[MiB:-4096].count(0) == GiB - MiB - 4096
    glance.call('DELETE', '/images/%s' % image_id, 204)
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


def test_a_dead_writer_s_lock_is_broken_when_it_is_detached(
        rbd_stack, api):
    """The writer of a plain volume dies holding the exclusive lock (its
    process killed: no monitor session any more, its watch and lock left
    behind).  Its detach blocklists the clients no live session accounts
    for and breaks their lock: the next writer, whose key may blocklist
    no one, writes at once."""
    vol = api.create_volume()
    ha, hb = dp.attacher(rbd_stack, 'a'), dp.attacher(rbd_stack, 'b')
    a_att = ha.attach(vol['id'])
    script = (
        'import json, os, signal, sys\n'
        'from cinder_lite.connector import devices\n'
        'dev = devices.connect(json.load(sys.stdin))\n'
        'dev.write(0, b"the dead writer")\n'
        'dev.flush()\n'
        'os.kill(os.getpid(), signal.SIGKILL)\n')
    done = subprocess.run([sys.executable, '-c', script],
                          input=json.dumps(a_att['connection_info']),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -9, done.stderr
    ha.transport.delete(a_att['id'])
    api.wait_volume(vol['id'], 'available')
    b_att, b_dev = hb.attach_device(vol['id'])
    assert b_dev.read(0, 15) == b'the dead writer'
    b_dev.write(0, b'the next writer')
    b_dev.flush()
    hb.detach(b_att['id'], b_dev)
    api.wait_volume(vol['id'], 'available')


def test_os_reimage_on_rbd(glance_rbd_stack, glance, ceph, tmp_path):
    """os-reimage (3.68) of an RBD volume: the image is cleared (a
    discard of the whole image) and the new image written; nothing of the
    old data stays past its end."""
    api = glance_rbd_stack.client()
    data = util.pattern(2 * MiB + 100, b'second image')
    raw = tmp_path / 'second.raw'
    raw.write_bytes(data)
    qcow2 = tmp_path / 'second.qcow2'
    to_qcow2(str(raw), str(qcow2))
    image = glance.make_image('rbd-reimage', str(qcow2), 'qcow2')
    vol = api.create_volume(size=1)
    write_image(ceph, vol['id'], 0, util.pattern(4 * MiB, b'old data'))
    write_image(ceph, vol['id'], 700 * MiB, b'old far data')
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-reimage': {'image_id': image['id']}},
                    headers={'OpenStack-API-Version': 'volume 3.68'})
    assert resp.status_code == 202, resp.text
    util.wait_for(lambda: api.get('/volumes/%s' % vol['id']).json()[
        'volume'].get('volume_image_metadata', {}).get('image_id') ==
        image['id'], what='re-imaged')
    vol = api.wait_volume(vol['id'], 'available')
    assert image_bytes(ceph, vol['id'], 0, len(data)) == data
    assert image_bytes(ceph, vol['id'], len(data), 2 * MiB) == \
        bytes(2 * MiB)
    assert image_bytes(ceph, vol['id'], 700 * MiB, 12) == bytes(12)
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])
