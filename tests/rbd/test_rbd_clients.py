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
detached attachment's key opens nothing."""
import os
import subprocess
import time

import pytest

from tests.conftest import rbd_backend
from tests.harness import dataplane as dp
from tests.harness import stack as stack_mod
from tests.harness import util

KiB = 1024
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


def qemu_io(spec, *commands, read_only=False, timeout=60):
    args = ['qemu-io', '-f', 'raw']
    if read_only:
        args.append('-r')
    for command in commands:
        args += ['-c', command]
    return subprocess.run(args + [spec], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def api(rbd_stack):
    api = rbd_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    return api


def test_qemu_writes_through_a_read_write_attachment_and_cannot_open_a_read_only_one(  # noqa: E501
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


def test_qemu_reads_through_a_read_only_key_that_may_watch_and_the_osds_refuse_its_writes(  # noqa: E501
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
    done = qemu_io(ro_spec, 'write -P 0x62 0 4k', 'flush',
                   'write -P 0x62 4k 4k', 'flush')
    assert 'wrote' not in done.stdout, done.stdout
    assert 'Operation not permitted' in done.stdout + done.stderr, (
        done.stdout, done.stderr)
    assert rw_dev.read(0, 8 * KiB) == b'a' * 8 * KiB
    info = subprocess.run(['qemu-img', 'info', '--output=json', ro_spec],
                          capture_output=True, text=True, timeout=60)
    assert info.returncode == 0, info.stderr

    hb.detach(ro_att['id'], ro_dev)
    ha.detach(rw_att['id'], rw_dev)
    api.wait_volume(vol['id'], 'available')
