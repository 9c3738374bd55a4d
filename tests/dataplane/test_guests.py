"""Guest kernels on shared volumes (tests/harness/guests.py): QEMU TCG
guests whose disks are cinder_lite attachments, opened by QEMU's own
block drivers with the credentials the connection_info carries.  What the
guest's kernel sees is asserted: writes of one guest read by the other,
read-only refused, and the active/passive takeover of the multi-attach
blueprint with the old writer cut off at the target."""
import os
import uuid

import pytest

from tests.harness import dataplane as dp
from tests.harness import guests as guests_mod
from tests.harness import util

SINGLE_WRITER = {'multiattach': '<is> True', 'mode': 'RO'}


@pytest.fixture
def guests(tmp_path):
    why = guests_mod.available()
    if why:
        util.skip_or_fail('guests: %s' % why)
    started = []

    def start(name, role, disks):
        g = guests_mod.Guest(name, str(tmp_path), role, disks)
        started.append(g)
        return g.start()
    yield start
    for g in started:
        g.stop()


def test_two_guests_share_a_volume_and_the_reader_cannot_write(
        nbd_stack, guests):
    s, api = nbd_stack, nbd_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vid = api.create_volume(volume_type='shared')['id']
    ha, hb = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    w_att = ha.attach(vid, str(uuid.uuid4()))
    r_att = hb.attach(vid, str(uuid.uuid4()), mode='ro')
    assert (w_att['attach_mode'], r_att['attach_mode']) == ('rw', 'ro')
    last = 'A %010d' % 10
    a = guests('a', guests_mod.writer_role('A', 10),
               [guests_mod.NbdDisk(w_att['connection_info'])])
    b = guests('b', guests_mod.reader_role(10, until=last) +
               guests_mod.writer_role('B', 1, first=11),
               [guests_mod.NbdDisk(r_att['connection_info'],
                                   read_only=True)])
    assert a.wait_done() == 0, a.text()
    assert b.wait_done() == 0, b.text()
    assert 'FOUND yes' in b.text().splitlines(), b.text()
    assert [n for _, n in guests_mod.acknowledged(a, 'A')] == \
        list(range(1, 11)), a.text()
    # the reader's kernel read the writer's last record off the export...
    assert ('SEEN ' + last) in b.text().splitlines(), b.text()
    # ... and its write was refused: the export is read-only, so QEMU
    # shows the guest a read-only disk and the kernel refuses the write
    assert guests_mod.acknowledged(b, 'B') == []
    assert [n for _, n, _ in guests_mod.refused(b, 'B')] == [11], b.text()
    path = dp.volume_path(s, vid)
    assert guests_mod.records(path, 11) == {
        n: 'A %010d' % n for n in range(1, 11)}
    ha.detach(w_att['id'])
    hb.detach(r_att['id'])


def test_qemu_cannot_open_a_read_only_export_for_writing(nbd_stack, guests):
    """The read-only export says so in its handshake: QEMU asked for a
    writable disk on it does not start, and a guest cannot get one."""
    s, api = nbd_stack, nbd_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vid = api.create_volume(volume_type='shared')['id']
    hb = dp.attacher(s, 'b')
    r_att = hb.attach(vid, str(uuid.uuid4()), mode='ro')
    b = guests('b', 'exit 0', [guests_mod.NbdDisk(r_att['connection_info'],
                                                  read_only=False)])
    assert b.proc.wait(timeout=120) != 0
    assert 'read-only' in b.qemu_log().lower(), b.qemu_log()
    hb.detach(r_att['id'])
