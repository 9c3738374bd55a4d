"""Strangers on the storage network against the iSCSI target: from a
loopback address no host uses, with an initiator name copied from an
attached host (or guessed), every login is refused at tgt when it brings
no credentials, another attachment's, a read-only attachment's on the
read-write target, or those of an attachment that was detached, taken
over or fenced.  The attached hosts' own credentials open what they
should (the control: a refusal here is CHAP's, not the ACL's), and the
fence API says a host is cut off only when its credentials open nothing.

Also a consumer not of our own: ``qemu-img``/``qemu-io`` (qemu's iscsi
block driver on libiscsi, Debian's qemu-block-extra) open the LUN with
exactly what connection_info says: portal, target, LUN, CHAP user and
password, and the connector's initiator name."""
import errno
import shutil
import subprocess
import uuid

import pytest

from cinder_lite.common import credentials
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite import iscsi
from tests.harness import dataplane as dp

STRANGER = '127.0.0.9'
# connector/host.py's fallback name for a host called host-b
GUESSED = 'iqn.2026-11.org.cinder-lite:host-b'


def _login(info, initiator, chap, iqn=None):
    """A login to ``iqn`` (the target ``info`` names by default) from
    STRANGER as ``initiator`` with ``chap`` (username, secret) or none."""
    session = iscsi.IscsiSession(info['target_portal'],
                                 iqn or info['target_iqn'], info['target_lun'],
                                 initiator, timeout=5,
                                 source_address=STRANGER, chap=chap)
    return session.connect()


def _refused(info, initiator, chap, iqn=None):
    with pytest.raises(iscsi.IscsiError) as e:
        _login(info, initiator, chap, iqn).close()
    assert e.value.errno == errno.EACCES, e.value
    return str(e.value)


def _chap(attachment):
    """The attachment's CHAP credentials; None when it has none."""
    info = attachment['connection_info']
    if not info.get('auth_username'):
        return None
    return info['auth_username'], info['auth_password']


def _targets(info):
    rw = info['target_iqn'][:-3] if info['target_iqn'].endswith('-ro') \
        else info['target_iqn']
    return rw, rw + '-ro'


@pytest.fixture
def shared(iscsi_stack):
    api = iscsi_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    return iscsi_stack, api


def _writer_and_reader(s, api):
    """A shared volume, host a attached read-write and host c
    read-only: (volume, a, c, a's attachment, c's attachment)."""
    vol = api.create_volume(volume_type='shared')
    a, c = dp.attacher(s, 'a'), dp.attacher(s, 'c')
    return (vol, a, c, a.attach(vol['id'], str(uuid.uuid4()), mode='rw'),
            c.attach(vol['id'], str(uuid.uuid4()), mode='ro'))


def test_connection_info_says_chap_per_attachment(shared):
    s, api = shared
    vol, a, c, rw, ro = _writer_and_reader(s, api)
    infos = [rw['connection_info'], ro['connection_info']]
    for att, info in zip((rw, ro), infos):
        assert info['auth_method'] == 'CHAP'
        assert att['id'] in info['auth_username']
        assert len(info['auth_password']) >= 12
    assert infos[0]['auth_password'] != infos[1]['auth_password']
    # a reader of the project sees it masked, in a show and a list; the
    # database and the bus hold it masked only; the owner (a member)
    # sees it, and it opens the target
    reader = s.client(user='r', roles='reader')
    shown = reader.get('/attachments/%s' % rw['id'])
    assert shown.status_code == 200, shown.text
    assert shown.json()['attachment']['connection_info'][
        'auth_password'] == credentials.MASK
    listed = reader.get('/attachments/detail').json()['attachments']
    assert {x['connection_info'].get('auth_password') for x in listed} \
        == {credentials.MASK}
    with db_api.reader() as session:
        for att in (rw, ro):
            recorded = db_attachments.get(session, att['id'])
            assert recorded.connection_info['auth_password'] == \
                credentials.MASK
    member = s.client(user='m', roles='member')
    assert member.get('/attachments/%s' % rw['id']).json()['attachment'][
        'connection_info']['auth_password'] == infos[0]['auth_password']
    _login(infos[0], a.connector['initiator'], _chap(rw)).close()
    a.detach(rw['id'])
    c.detach(ro['id'])


def test_strangers_are_refused_at_the_target(shared):
    s, api = shared
    vol = api.create_volume(volume_type='shared')
    other_vol = api.create_volume(volume_type='shared')
    a, b, c = (dp.attacher(s, n) for n in 'abc')
    rw = a.attach(vol['id'], str(uuid.uuid4()), mode='rw')
    ro = c.attach(vol['id'], str(uuid.uuid4()), mode='ro')
    other = b.attach(other_vol['id'], str(uuid.uuid4()), mode='rw')
    gone = b.attach(vol['id'], str(uuid.uuid4()), mode='rw')
    info = rw['connection_info']
    rw_iqn, ro_iqn = _targets(info)
    copied = a.connector['initiator']
    # the control: host a's own credentials open its target from anywhere
    # with its name (the ACL is by name): what is refused below is refused
    # for its credentials
    _login(info, copied, _chap(rw)).close()

    # no credentials, with a copied or a guessed name, on both targets
    for name in (copied, GUESSED, c.connector['initiator']):
        for iqn in (rw_iqn, ro_iqn):
            _refused(info, name, None, iqn)
    # a wrong secret for a real user
    _refused(info, copied, (_chap(rw)[0], 'x' * 32))
    # another attachment's credentials (another volume's)
    for name in (copied, b.connector['initiator']):
        _refused(info, name, _chap(other))
    # the read-only attachment's credentials on the read-write target
    for name in (copied, c.connector['initiator']):
        _refused(info, name, _chap(ro), rw_iqn)
    # a detached attachment's: host b's initiator name is off the ACL,
    # host a's still on it; neither opens with b's old credentials
    b.detach(gone['id'])
    for name in (copied, b.connector['initiator']):
        for iqn in (rw_iqn, ro_iqn):
            _refused(info, name, _chap(gone), iqn)
    _login(info, copied, _chap(rw)).close()
    for att, host in ((rw, a), (ro, c), (other, b)):
        host.detach(att['id'])


def test_a_taken_over_writer_keeps_nothing_that_opens(iscsi_stack):
    api = iscsi_stack.client()
    api.create_type('single', {'multiattach': '<is> True', 'mode': 'RO'})
    vol = api.create_volume(volume_type='single')
    writer, reader = dp.attacher(iscsi_stack, 'a'), dp.attacher(
        iscsi_stack, 'b')
    w_att, w_dev = writer.attach_device(vol['id'], str(uuid.uuid4()))
    r_att, r_dev = reader.attach_device(vol['id'], str(uuid.uuid4()))
    assert (w_att['attach_mode'], r_att['attach_mode']) == ('rw', 'ro')
    new_att, new_dev = reader.takeover(r_att['id'], r_dev)
    info = new_att['connection_info']
    rw_iqn, ro_iqn = _targets(info)
    # the new writer's credentials open the read-write target; the old
    # writer's open nothing, with its own name or the new writer's
    _login(info, reader.connector['initiator'], _chap(new_att)).close()
    for name in (writer.connector['initiator'],
                 reader.connector['initiator']):
        for iqn in (rw_iqn, ro_iqn):
            _refused(info, name, _chap(w_att), iqn)
    w_dev.close()
    reader.detach(new_att['id'], new_dev)
    live = api.get('/attachments?volume_id=%s' % vol['id']).json()
    for att in live['attachments']:
        api.delete('/attachments/%s' % att['id'])


def test_a_fenced_host_keeps_nothing_that_opens_and_status_says_so(shared):
    s, api = shared
    vol, a, c, rw, ro = _writer_and_reader(s, api)
    status = _status(api, 'host-c', vol['id'])
    assert status['reachable'] is True and status['logins'], status
    resp = api.post('/os-host-fences/host-c/action',
                    json={'os-fence': {'volume_id': vol['id']}})
    assert resp.status_code == 200, resp.text
    info = ro['connection_info']
    rw_iqn, ro_iqn = _targets(info)
    for name in (c.connector['initiator'], a.connector['initiator']):
        for iqn in (rw_iqn, ro_iqn):
            _refused(info, name, _chap(ro), iqn)
    status = _status(api, 'host-c', vol['id'])
    assert status['reachable'] is False and status['logins'] == [], status
    # host a was not fenced: its credentials open, and status says so
    _login(rw['connection_info'], a.connector['initiator'],
           _chap(rw)).close()
    assert _status(api, 'host-a', vol['id'])['reachable'] is True
    resp = api.post('/os-host-fences/host-c/action',
                    json={'os-unfence': {'volume_id': vol['id']}})
    assert resp.status_code == 200, resp.text
    # unfenced, the same credentials open again (derived again, the same)
    _login(info, c.connector['initiator'], _chap(ro)).close()
    a.detach(rw['id'])
    c.detach(ro['id'])


def _status(api, host, volume_id):
    resp = api.get('/os-host-fences/%s?volume_id=%s' % (host, volume_id))
    assert resp.status_code == 200, resp.text
    return resp.json()['host_fence']['volumes'][0]


def _qemu_iscsi():
    formats = subprocess.run(['qemu-img', '--help'], capture_output=True,
                             text=True).stdout
    if not shutil.which('qemu-io') or ' iscsi' not in formats:
        pytest.skip('qemu has no iscsi block driver (qemu-block-extra)')


def _qemu(program, info, initiator, *args, password=None):
    """``program`` (qemu-img or qemu-io) on the LUN ``info`` names, as
    ``initiator``, with its CHAP user and password (``password`` instead
    of the attachment's when given), as qemu's iscsi driver takes them
    (its iscsi:// URL form has no initiator name: qemu would log in
    with a name of its own, which no ACL has)."""
    spec = ('driver=iscsi,transport=tcp,portal=%s,target=%s,lun=%d,'
            'user=%s,password=%s,initiator-name=%s' % (
                info['target_portal'], info['target_iqn'],
                info['target_lun'], info['auth_username'],
                password or info['auth_password'], initiator))
    # qemu-img SUBCOMMAND --image-opts SPEC; qemu-io --image-opts -c ... SPEC
    cut = 1 if program == 'qemu-img' else 0
    argv = [program] + list(args[:cut]) + ['--image-opts'] + \
        list(args[cut:]) + [spec]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_qemu_opens_the_lun_with_what_connection_info_says(shared):
    _qemu_iscsi()
    s, api = shared
    vol, a, c, rw, ro = _writer_and_reader(s, api)
    rw_info, ro_info = rw['connection_info'], ro['connection_info']
    writer, reader = a.connector['initiator'], c.connector['initiator']
    done = _qemu('qemu-img', rw_info, writer, 'info')
    assert done.returncode == 0 and 'virtual size: 1 GiB' in done.stdout, \
        done.stderr
    done = _qemu('qemu-io', rw_info, writer, '-c',
                 'write -P 0x5a 0 64k', '-c', 'read -P 0x5a 0 64k')
    assert done.returncode == 0 and 'Pattern verification failed' not in \
        done.stdout, done.stdout + done.stderr
    # the reader reads the writer's bytes; the target tells qemu the LUN
    # is write protected, so qemu will not open it for writing (that tgt
    # refuses the writes themselves is test_libiscsi's)
    done = _qemu('qemu-io', ro_info, reader, '-r', '-c',
                 'read -P 0x5a 0 64k')
    assert done.returncode == 0 and 'Pattern verification failed' not in \
        done.stdout, done.stdout + done.stderr
    done = _qemu('qemu-io', ro_info, reader, '-c', 'write -P 0x11 0 4k')
    assert done.returncode != 0 and 'write protected' in done.stderr, \
        done.stdout + done.stderr
    # a wrong password, or the reader's credentials on the writer's
    # target, open nothing
    done = _qemu('qemu-img', rw_info, writer, 'info', password='x' * 32)
    assert done.returncode != 0
    wrong = dict(ro_info, target_iqn=rw_info['target_iqn'])
    done = _qemu('qemu-io', wrong, reader, '-c', 'write -P 0x11 0 4k')
    assert done.returncode != 0 and 'wrote' not in done.stdout
    with open(dp.volume_path(s, vol['id']), 'rb') as f:
        assert f.read(4096) == b'\x5a' * 4096
    a.detach(rw['id'])
    c.detach(ro['id'])
