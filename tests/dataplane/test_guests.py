"""Guest kernels on shared volumes (tests/harness/guests.py): QEMU TCG
guests whose disks are cinder_lite attachments, opened by QEMU's own
block drivers with the credentials the connection_info carries.  What the
guest's kernel sees is asserted: writes of one guest read by the other,
read-only refused, and the active/passive takeover of the multi-attach
blueprint with the old writer cut off at the target."""
import uuid

import pytest

from tests.harness import dataplane as dp
from tests.harness import guests as guests_mod
from tests.harness import util


@pytest.fixture(params=['nbd', 'iscsi', 'rbd'])
def proto_stack(request, tmp_path):
    if request.param != 'rbd':
        yield request.getfixturevalue(request.param + '_stack')
        return
    # RBD: read-only keys may watch the header, so that QEMU's librbd
    # opens the image with them (``rbd_read_only_keys_watch``)
    from tests.conftest import rbd_backend
    from tests.harness import stack as stack_mod
    ceph = request.getfixturevalue('ceph')
    s = stack_mod.Stack(tmp_path / 'st', backends={'rbd': rbd_backend(
        ceph, rbd_read_only_keys_watch=True)}).start()
    yield s
    left = s.volume_service('rbd').endpoints[0].driver.list_exports()
    s.stop()
    assert left == [], 'exports left behind: %s' % left


def _disk(attachment, host, read_only=False):
    return guests_mod.disk(attachment['connection_info'], host.connector,
                           read_only)


@pytest.fixture
def guests(tmp_path):
    why = guests_mod.available()
    if why:
        util.skip_or_fail('guests: %s' % why)
    started = []

    def start(name, role, disks, **kw):
        g = guests_mod.Guest(name, str(tmp_path), role, disks, **kw)
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
    assert guests_mod.read_records(s, vid, 11) == {
        n: 'A %010d' % n for n in range(1, 11)}
    ha.detach(w_att['id'])
    hb.detach(r_att['id'])


def test_a_read_only_attachment_gives_a_guest_no_write(
        proto_stack, guests):
    """A guest whose QEMU is asked for a writable disk on a read-only
    attachment.  NBD and iSCSI say read-only to QEMU (the export's flag
    in the handshake; the LUN write protected), and QEMU does not start.
    RBD says nothing of the kind: QEMU opens the image with the
    read-only key, and the guest's write is refused by the OSDs (the
    key's caps), so the guest's kernel reports the I/O error of the
    storage.  That the NBD and iSCSI targets refuse writes sent anyway is
    test_strangers_nbd's and test_libiscsi's."""
    s, api = proto_stack, proto_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vid = api.create_volume(volume_type='shared')['id']
    hb = dp.attacher(s, 'b')
    r_att = hb.attach(vid, str(uuid.uuid4()), mode='ro')
    b = guests('b', guests_mod.writer_role('B', 1),
               [_disk(r_att, hb, read_only=False)])
    if 'rbd' in s.backends:
        assert b.wait_done() == 0, b.text()
        assert guests_mod.acknowledged(b, 'B') == []
        (_t, n, why), = guests_mod.refused(b, 'B')
        assert n == 1 and 'error' in why.lower(), b.text()
        # the guest's kernel had the error from the device
        assert 'I/O error, dev vda' in b.text(), b.text()
    else:
        assert b.proc.wait(timeout=120) != 0
        # what QEMU says after echoing the option it could not honour
        # (the option itself holds "read-only": false)
        said = b.qemu_log().strip().rsplit('}: ', 1)[-1]
        if hasattr(s, 'tgt_control'):
            # the read-only target's LUN is write protected (MODE SENSE)
            assert said == 'LUN is write protected', b.qemu_log()
        else:
            # the export's handshake flags it read-only: QEMU's NBD
            # client refuses to open it writable (EACCES)
            assert said == 'Could not open image: Permission denied', \
                b.qemu_log()
    hb.detach(r_att['id'])
    assert guests_mod.read_records(s, vid, 1) == {}


def _assert_cut_off(run):
    """The invariants of an active/passive run, whatever cut A off."""
    a_acks, b_acks, on_disk = run.a_acks, run.b_acks, run.on_disk
    b_first = b_acks[0][1]
    # no acknowledged write of A lost; every one of them is before B's
    # first (at most the one A's kernel had sent when it hung is
    # acknowledged after: it landed before the cut)
    assert run.lost() == [], (run.lost(), on_disk)
    assert all(n < b_first for _, n in a_acks), (a_acks, b_first)
    assert len(a_acks) - len(run.acked_before) <= 1, run.a_console
    # no write of A landed after B took over: B's records are all there
    assert run.a_after() == [], run.a_after()
    assert [on_disk.get(n) for _, n in b_acks] == [
        'B %010d' % n for _, n in b_acks]
    # A's kernel saw its writes fail (the target cut it off), or (iSCSI)
    # its writes wait on a login the target refuses
    if run.protocol in ('nbd', 'rbd'):
        assert run.a_refused and all(n >= b_first - 1
                                     for _, n, _ in run.a_refused)
        # (the guest's kernel says so: the error came from the device)
        assert 'I/O error, dev vda' in run.a_console, run.a_console[-2000:]
    else:
        assert not [t for t, _ in a_acks if t > run.times['resumed'] + 1], (
            run.a_console)
    print(run.summary())


def _trail(api, attachment_id):
    return [(e['to_status'], e['attach_mode'], e['reason'])
            for e in api.get('/os-attachment-events?attachment_id=%s'
                             % attachment_id).json()['attachment_events']]


def test_the_passive_guest_takes_over_and_the_old_writer_is_cut_off(
        proto_stack, guests):
    """Guest A (read-write) appends a record every 100 ms; guest B
    (read-only) watches.  A hangs (its QEMU stopped); B's host sees A's
    records stop, takes over (os-takeover), plugs the read-write disk the
    takeover gives into B, and B goes on appending.  A wakes: its next
    writes fail at the target, and the disk holds every write A had
    acknowledged and none of A's after B's first."""
    s, api = proto_stack, proto_stack.client()
    run = guests_mod.active_passive(s, guests, b_writes=10)
    _assert_cut_off(run)
    # the takeover ended the old writer's attachment, and the audit
    # trail (the dashboard's volume page shows it) says who took over
    assert api.get('/attachments/%s' % run.writer_attachment
                   ).status_code == 404
    assert ('detached', 'rw', 'taken over by %s' % run.reader_attachment) \
        in _trail(api, run.writer_attachment)
    assert ('attached', 'rw', 'took over as the writer') in _trail(
        api, run.reader_attachment)


def test_pacemaker_fences_the_hung_node_and_the_standby_takes_over(
        proto_stack, guests):
    """The same cluster run as Pacemaker runs it: a multi-writer volume,
    both attachments read-write, B's kernel holding its disk read-only
    while A is active.  A hangs; B's cluster manager runs
    ``fence_cinder_lite`` (action off, options on stdin, as
    pacemaker-fenced does) against A's host, and once it exited 0 B's
    kernel makes the disk writable and B appends.  A wakes: its next
    writes fail at the target, nothing of A's lies after B's first."""
    s, api = proto_stack, proto_stack.client()
    run = guests_mod.active_passive(s, guests, b_writes=10, via='fence')
    _assert_cut_off(run)
    # the fence held to the end: the agent's status says off (2)
    assert run.fence_status[:2] == (2, 'Status: OFF\n'), run.fence_status
    assert ('attached', 'rw', 'host host-a fenced: %s'
            % guests_mod.FENCE_REASON) in _trail(api, run.writer_attachment)
