"""Guest kernels on shared volumes (tests/harness/guests.py): QEMU TCG
guests whose disks are cinder_lite attachments, opened by QEMU's own
block drivers with the credentials the connection_info carries.  What the
guest's kernel sees is asserted: writes of one guest read by the other,
read-only refused, and the active/passive takeover of the multi-attach
blueprint with the old writer cut off at the target."""
import time
import uuid

import pytest

from tests.harness import dataplane as dp
from tests.harness import guests as guests_mod
from tests.harness import util

SINGLE_WRITER = {'multiattach': '<is> True', 'mode': 'RO'}


@pytest.fixture(params=['nbd', 'iscsi'])
def proto_stack(request):
    return request.getfixturevalue(request.param + '_stack')


def _disk(attachment, host, read_only=False):
    return guests_mod.disk(attachment['connection_info'], host.connector,
                           read_only)


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
        proto_stack, guests):
    s, api = proto_stack, proto_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vid = api.create_volume(volume_type='shared')['id']
    ha, hb = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    w_att = ha.attach(vid, str(uuid.uuid4()))
    r_att = hb.attach(vid, str(uuid.uuid4()), mode='ro')
    assert (w_att['attach_mode'], r_att['attach_mode']) == ('rw', 'ro')
    last = 'A %010d' % 10
    a = guests('a', guests_mod.writer_role('A', 10),
               [_disk(w_att, ha)])
    b = guests('b', guests_mod.reader_role(10, until=last) +
               guests_mod.writer_role('B', 1, first=11),
               [_disk(r_att, hb, read_only=True)])
    assert a.wait_done() == 0, a.text()
    assert b.wait_done() == 0, b.text()
    assert 'FOUND yes' in b.text().splitlines(), b.text()
    assert [n for _, n in guests_mod.acknowledged(a, 'A')] == \
        list(range(1, 11)), a.text()
    # the reader's kernel read the writer's last record off the export...
    assert ('SEEN ' + last) in b.text().splitlines(), b.text()
    # ... and its write was refused: the target says the disk is
    # read-only (NBD: the export's flag; iSCSI: the LUN write protected),
    # so QEMU shows the guest a read-only disk and the kernel refuses it
    assert guests_mod.acknowledged(b, 'B') == []
    assert [n for _, n, _ in guests_mod.refused(b, 'B')] == [11], b.text()
    path = dp.volume_path(s, vid)
    assert guests_mod.records(path, 11) == {
        n: 'A %010d' % n for n in range(1, 11)}
    ha.detach(w_att['id'])
    hb.detach(r_att['id'])


def test_qemu_cannot_open_a_read_only_attachment_for_writing(
        proto_stack, guests):
    """The read-only export says so (NBD: in its handshake; iSCSI: the
    LUN is write protected): QEMU asked for a writable disk on it does
    not start, and a guest cannot get one.  That the targets refuse the
    writes themselves, sent anyway, is test_strangers_nbd's and
    test_libiscsi's."""
    s, api = proto_stack, proto_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vid = api.create_volume(volume_type='shared')['id']
    hb = dp.attacher(s, 'b')
    r_att = hb.attach(vid, str(uuid.uuid4()), mode='ro')
    b = guests('b', 'exit 0', [_disk(r_att, hb, read_only=False)])
    assert b.proc.wait(timeout=120) != 0
    said = b.qemu_log().lower()
    assert 'read-only' in said or 'write protected' in said, said
    hb.detach(r_att['id'])


SECTORS = 400


def test_the_passive_guest_takes_over_and_the_old_writer_is_cut_off(
        proto_stack, guests):
    """Guest A (read-write) appends a record every 100 ms; guest B
    (read-only) watches.  A hangs (its QEMU stopped); B's host sees A's
    records stop, takes over (os-takeover), plugs the read-write disk the
    takeover gives into B, and B goes on appending.  A wakes: its next
    writes fail at the target, and the disk holds every write A had
    acknowledged and none of A's after B's first."""
    s, api = proto_stack, proto_stack.client()
    protocol = 'iscsi' if hasattr(s, 'tgt_control') else 'nbd'
    api.create_type('single', SINGLE_WRITER)
    vid = api.create_volume(volume_type='single')['id']
    ha, hb = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    w_att = ha.attach(vid, str(uuid.uuid4()))
    r_att = hb.attach(vid, str(uuid.uuid4()))
    assert (w_att['attach_mode'], r_att['attach_mode']) == ('rw', 'ro')
    a = guests('a', guests_mod.writer_role('A', SECTORS - 100),
               [_disk(w_att, ha)])
    b = guests('b', guests_mod.passive_role(SECTORS, 20),
               [_disk(r_att, hb, read_only=True)])
    # both run: A writes, B sees A's records
    util.wait_for(lambda: len(guests_mod.acknowledged(a, 'A')) >= 10,
                  180, what='10 writes of A')
    util.wait_for(lambda: any(line.startswith('SEEN A ')
                              for _, line in b.lines), 120,
                  what='B sees A')
    a.pause()
    paused_at = time.monotonic()
    # B's cluster manager: A's heartbeat (its records) is stale once no
    # new one came for a second
    detection = 1.0
    util.wait_for(lambda: time.monotonic() - max(
        [paused_at] + [t for t, _ in guests_mod.acknowledged(a, 'A')])
        >= detection, 30, what='stale heartbeat of A')
    acked_before = guests_mod.acknowledged(a, 'A')
    asked = time.monotonic()
    taken = hb.transport.takeover(r_att['id'])
    answered = time.monotonic()
    assert taken['attach_mode'] == 'rw'
    _disk(taken, hb).plug(b, 'rw')
    plugged = time.monotonic()
    took, _line = b.wait_line('TOOK OVER', 120)
    util.wait_for(lambda: len(guests_mod.acknowledged(b, 'B')) == 20, 180,
                  what='20 writes of B')
    b_acks = guests_mod.acknowledged(b, 'B')
    b_first = b_acks[0][1]

    a.resume()
    resumed = time.monotonic()
    if protocol == 'nbd':
        # the export A had is gone: QEMU's NBD client fails the requests
        # and the guest's kernel reports the I/O errors
        util.wait_for(lambda: len(guests_mod.refused(a, 'A')) >= 3, 120,
                      what='A refused')
    else:
        # the session A had is ended and its CHAP account deleted: QEMU's
        # iSCSI driver (libiscsi) tries to log in again, is refused, and
        # keeps the guest's requests waiting instead of failing them
        time.sleep(8)
    a.stop()
    a_acks = guests_mod.acknowledged(a, 'A')
    a_refused = guests_mod.refused(a, 'A')
    on_disk = guests_mod.records(dp.volume_path(s, vid), SECTORS)

    # no acknowledged write of A lost; every one of them is before B's
    # first (at most the one A's kernel had sent when it hung is
    # acknowledged after: it landed before the takeover)
    lost = [n for _, n in a_acks if on_disk.get(n) != 'A %010d' % n]
    assert lost == [], (lost, on_disk)
    assert all(n < b_first for _, n in a_acks), (a_acks, b_first)
    assert len(a_acks) - len(acked_before) <= 1, a.text()
    # no write of A landed after B took over: B's records are all there
    a_after = [n for n, r in on_disk.items() if r.startswith('A ')
               and n >= b_first]
    assert a_after == [], a_after
    assert [on_disk.get(n) for _, n in b_acks] == [
        'B %010d' % n for _, n in b_acks]
    # A's kernel saw its writes fail (the target cut it off), or (iSCSI)
    # its writes wait on a login the target refuses
    if protocol == 'nbd':
        assert a_refused and all(n >= b_first - 1 for _, n, _ in a_refused)
    else:
        assert not [t for t, _ in a_acks if t > resumed + 1], (
            a.text(), a.qemu_log())
    gap = b_acks[0][0] - acked_before[-1][0] - detection
    print('takeover seen by guests: A last acknowledged write -> B first '
          'write %.2f s beyond a %.1f s detection (takeover request %.2f s, '
          'plug %.2f s, B sees its disk %.2f s later, first write %.2f s '
          'later); A writes lost 0 of %d; A writes after B took over 0 '
          '(refused %d)' % (
              gap, detection, answered - asked, plugged - answered,
              took - plugged, b_acks[0][0] - took, len(a_acks),
              len(a_refused)))
    # the takeover ended the old writer's attachment
    assert api.get('/attachments/%s' % w_att['id']).status_code == 404
    hb.detach(r_att['id'])
