"""Snapshots and clones by reflink, on a filesystem that has one: an XFS
made with ``reflink=1`` in a file of the test's directory and mounted
through a loop device (root, mkfs.xfs from xfsprogs).  The copy must be
a reflink (the two files share their blocks), hold the source's bytes of
that instant, and stay unchanged when the source is written afterwards
(the filesystem copies a shared block on write).  Elsewhere (ext4,
tmpfs) the same code falls back to the sparse copy the other snapshot
tests run through.

Skipped where the machine cannot mount a loop device, failed instead
under CINDER_LITE_REQUIRE_SERVICES=1, as in CI."""
import logging
import os
import subprocess
import uuid

import pytest

from cinder_lite.volume.drivers import copy as file_copy
from tests.harness import dataplane as dp
from tests.harness import util

MiB = 1024 ** 2
GiB = 1024 ** 3


@pytest.fixture
def xfs(tmp_path):
    """A mounted XFS with reflink, about 1.5 GiB of room."""
    util.need('mkfs.xfs', 'mount', 'umount', 'filefrag')
    if os.geteuid() != 0:
        util.skip_or_fail('mounting a loop device needs root')
    image = tmp_path / 'xfs.img'
    with open(image, 'wb') as f:
        f.truncate(1536 * MiB)
    subprocess.run(['mkfs.xfs', '-q', '-m', 'reflink=1', str(image)],
                   check=True)
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    done = subprocess.run(['mount', '-o', 'loop', str(image), str(mnt)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        util.skip_or_fail('cannot mount a loop device here: %s'
                          % done.stderr.strip())
    try:
        yield mnt
    finally:
        subprocess.run(['umount', str(mnt)], check=True)


class Said(logging.Handler):
    """Keeps what a logger said (its INFO lines included)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def shared_extents(path):
    """How many of ``path``'s extents filefrag marks as shared."""
    out = subprocess.run(['filefrag', '-v', path], check=True,
                         capture_output=True, text=True).stdout
    return sum('shared' in line.split(':')[-1]
               for line in out.splitlines() if ':' in line)


def test_copy_file_reflinks_and_the_copy_keeps_its_instant(xfs):
    src, dst = str(xfs / 'src'), str(xfs / 'dst')
    first = os.urandom(MiB)
    with open(src, 'wb') as f:
        f.write(first)
        f.seek(8 * MiB)
        f.write(first)
    assert file_copy.copy_file(src, dst, 16 * MiB) == file_copy.REFLINK
    assert os.path.getsize(dst) == 16 * MiB
    assert shared_extents(dst) >= 1
    with open(src, 'r+b') as f:
        f.write(b'\xff' * MiB)          # after the copy
    with open(dst, 'rb') as f:
        assert f.read(MiB) == first
        f.seek(8 * MiB)
        assert f.read(MiB) == first
        assert f.read(8 * MiB).strip(b'\0') == b''


def test_snapshot_and_clone_of_an_attached_volume_share_blocks(xfs):
    """Through the product: a volume on the XFS written over NBD, a
    forced snapshot while attached, a volume from it and a clone; each
    file shares blocks with the volume's, and holds its instant."""
    util.need('nbdkit')
    s = dp.start(xfs, dp.nbd_backend())
    try:
        said = Said()
        driver_log = logging.getLogger('cinder_lite.volume.drivers.file')
        driver_log.addHandler(said)
        api = s.client()
        vol = api.create_volume(size=1)
        client = dp.attacher(s, 'a')
        att, dev = client.attach_device(vol['id'], str(uuid.uuid4()),
                                        mode='rw')
        before, kept = os.urandom(64 * 1024), os.urandom(64 * 1024)
        dev.write(0, before)
        dev.write(MiB, kept)        # never written again: stays shared
        dev.flush()
        resp = api.post('/snapshots', json={'snapshot': {
            'volume_id': vol['id'], 'force': True}})
        assert resp.status_code == 202, resp.text
        sid = resp.json()['snapshot']['id']
        util.wait_for(lambda: api.get('/snapshots/%s' % sid).json()[
            'snapshot']['status'] == 'available', what='snapshot')
        after = os.urandom(64 * 1024)
        dev.write(0, after)
        dev.flush()
        client.detach(att['id'], dev)

        snap_file = os.path.join(os.path.dirname(dp.volume_path(
            s, vol['id'])), 'snapshot-%s' % sid)
        assert shared_extents(snap_file) >= 1
        made = {}
        for name, source in (('restored', {'snapshot_id': sid}),
                             ('clone', {'source_volid': vol['id']})):
            resp = api.post('/volumes', json={'volume': dict(source)})
            assert resp.status_code == 202, resp.text
            made[name] = api.wait_volume(resp.json()['volume']['id'],
                                         'available')
        for name, expected in (('restored', before), ('clone', after)):
            path = dp.volume_path(s, made[name]['id'])
            assert os.path.getsize(path) == GiB
            assert shared_extents(path) >= 1
            with open(path, 'rb') as f:
                assert f.read(len(expected)) == expected
                f.seek(MiB)
                assert f.read(len(kept)) == kept
        # the driver says how each copy was made: all three by reflink
        driver_log.removeHandler(said)
        made_by = [m for m in said.messages if m.startswith('made ')]
        assert len(made_by) == 3, made_by
        assert all(' by reflink of ' in m for m in made_by), made_by
    finally:
        dp.stop(s)
