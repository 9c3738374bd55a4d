"""Strangers on the storage network, against the NBD target: from an
address no attachment was made for (127.0.0.4), every attempt to open an
export of the volume is refused by nbdkit itself (the TLS handshake, or
the export name): no TLS; TLS with another attachment's key; the
read-only attachment's key against the read-write export; the key of a
detached attachment, of a writer that was taken over, of a fenced host;
the right key with another export name.  And a real consumer, QEMU,
reads and writes an export over TLS with exactly what connection_info
says; the read-only attachment's writes fail at the target."""
import errno
import hashlib
import os
import subprocess
import uuid

import pytest

from cinder_lite import nbd
from tests.harness import dataplane as dp
from tests.harness import util

STRANGER = '127.0.0.4'
SINGLE_WRITER = {'multiattach': '<is> True', 'mode': 'RO'}


def _digest(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).digest()


def _refused(info, identity=None, key=None, export=None, port=None):
    """Try to open the export of ``info`` as a stranger would; fail the
    test (after writing over the volume, as a stranger would) when it
    opens.  Returns the refusal."""
    client = nbd.NbdClient(
        info['host'], port or info['port'],
        info['export_name'] if export is None else export, timeout=10,
        source_address=STRANGER, tls_identity=identity, tls_key=key)
    try:
        client.connect()
    except nbd.NbdError as e:
        return e
    try:
        client.write(0, b'a stranger was here')
        client.flush()
    finally:
        client.close()
    pytest.fail('a stranger opened %s:%s (identity %s, export %r)' % (
        info['host'], port or info['port'], identity, export))


def _key(info):
    return info['tls_psk_identity'], info['tls_psk_key']


def _exports(s, volume_id):
    return [r for r in dp.backend_target(s).exports().values()
            if r['volume_id'] == volume_id]


def _status(api, host, volume_id):
    resp = api.get('/os-host-fences/%s?volume_id=%s' % (host, volume_id))
    assert resp.status_code == 200, resp.text
    return resp.json()['host_fence']['volumes'][0]


def test_strangers_are_refused_by_every_export(nbd_stack):
    s, api = nbd_stack, nbd_stack.client()
    api.create_type('single', SINGLE_WRITER)
    vol = api.create_volume(volume_type='single')
    vid = vol['id']
    path = dp.volume_path(s, vid)
    ha, hb, hc = (dp.attacher(s, n) for n in 'abc')
    w_att, w_dev = ha.attach_device(vid, str(uuid.uuid4()))
    r_att, r_dev = hb.attach_device(vid, str(uuid.uuid4()))
    assert (w_att['attach_mode'], r_att['attach_mode']) == ('rw', 'ro')
    w_info, r_info = w_att['connection_info'], r_att['connection_info']
    for info in (w_info, r_info):
        assert info['tls'] is True
        assert len(info['tls_psk_key']) == 64
        assert info['tls_psk_identity'] != ''
    assert w_info['tls_psk_key'] != r_info['tls_psk_key']
    w_dev.write(0, b'the writer was here')
    w_dev.flush()
    assert r_dev.read(0, 19) == b'the writer was here'
    # the PSK file of each export: 0600, its attachment's identity alone
    for att, info in ((w_att, w_info), (r_att, r_info)):
        psk = os.path.join(dp.backend_target(s).state_dir,
                           '%s.psk' % att['id'])
        assert os.stat(psk).st_mode & 0o777 == 0o600
        with open(psk) as f:
            assert f.read() == '%s:%s\n' % _key(info)
    before = _digest(path)

    # no TLS
    for info in (w_info, r_info):
        e = _refused(info)
        assert 'TLS' in str(e), e
    # another attachment's key; the read-only one against the writer's
    _refused(w_info, *_key(r_info))
    _refused(r_info, *_key(w_info))
    # a made-up identity with a real key, a real identity with a made-up
    # key
    _refused(w_info, 'attachment-%s' % uuid.uuid4(), w_info['tls_psk_key'])
    _refused(w_info, w_info['tls_psk_identity'], '00' * 32)
    # the right key, another export name (the name the issue tried, the
    # default one, another volume's)
    for name in ('not-the-export-name', '', str(uuid.uuid4())):
        e = _refused(w_info, *_key(w_info), export=name)
        assert e.errno == errno.ENOENT, e

    # a detached attachment's key opens nothing, its old port included
    c_att, c_dev = hc.attach_device(vid, str(uuid.uuid4()))
    c_info = c_att['connection_info']
    hc.detach(c_att['id'], c_dev)
    for info in (w_info, r_info, c_info):
        _refused(info, *_key(c_info))
    _refused(w_info, *_key(c_info), port=c_info['port'])

    # a writer taken over: its key opens no export of the volume
    new_att, new_dev = hb.takeover(r_att['id'], r_dev)
    new_info = new_att['connection_info']
    assert new_att['attach_mode'] == 'rw'
    assert _key(new_info) == _key(r_info)
    for record in _exports(s, vid):
        _refused(dict(new_info, port=record['port']), *_key(w_info))
    target = dp.backend_target(s)
    assert target.reach(vid, [w_att['id']], [])['reachable'] is False
    assert target.reach(vid, [r_att['id']], [])['exports'] == [r_att['id']]
    assert _digest(path) == before
    new_dev.write(0, b'the new writer')
    new_dev.flush()
    w_dev.close()  # its attachment went with the takeover
    hb.detach(new_att['id'], new_dev)


def test_a_fenced_host_opens_no_export_and_status_says_so(nbd_stack):
    s, api = nbd_stack, nbd_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vid = api.create_volume(volume_type='shared')['id']
    path = dp.volume_path(s, vid)
    ha, hb = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    a_att, a_dev = ha.attach_device(vid)
    b_att, b_dev = hb.attach_device(vid)
    a_info, b_info = a_att['connection_info'], b_att['connection_info']
    assert _status(api, 'host-b', vid)['reachable'] is True
    assert _status(api, 'host-b', vid)['exports'] == [b_att['id']]
    resp = api.post('/os-host-fences/host-b/action', json={
        'os-fence': {'volume_id': vid, 'reason': 'node b lost'}})
    assert resp.status_code == 200, resp.text
    b_dev.close()
    before = _digest(path)
    # b's key opens neither a's export nor its own old port
    _refused(a_info, *_key(b_info))
    _refused(b_info, *_key(b_info))
    _refused(a_info)
    status = _status(api, 'host-b', vid)
    assert (status['fenced'], status['reachable'], status['exports']) == (
        True, False, [])
    assert _status(api, 'host-a', vid)['reachable'] is True
    assert _digest(path) == before
    a_dev.write(0, b'a goes on')
    a_dev.flush()
    ha.detach(a_att['id'], a_dev)
    hb.detach(b_att['id'])


def _qemu_io(tmp_path, info, *commands, read_only=False, tls=True):
    """qemu-io on the export of ``info``, with exactly its keys."""
    keydir = tmp_path / ('keys-%s' % uuid.uuid4().hex[:8])
    keydir.mkdir(mode=0o700)
    (keydir / 'keys.psk').write_text(nbd.psk_line(*_key(info)))
    os.chmod(keydir / 'keys.psk', 0o600)
    opts = 'driver=nbd,host=%s,port=%d,export=%s' % (
        info['host'], info['port'], info['export_name'])
    argv = ['qemu-io']
    if tls:
        argv += ['--object', 'tls-creds-psk,id=tls0,dir=%s,username=%s,'
                 'endpoint=client' % (keydir, info['tls_psk_identity'])]
        opts += ',tls-creds=tls0'
    if read_only:
        argv.append('-r')
    argv += ['--image-opts', opts]
    for command in commands:
        argv += ['-c', command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_qemu_reads_and_writes_over_tls_with_the_connection_info(
        nbd_stack, tmp_path):
    util.need('qemu-io')
    s, api = nbd_stack, nbd_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vid = api.create_volume(volume_type='shared')['id']
    path = dp.volume_path(s, vid)
    ha, hb = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    w_att = ha.attach(vid, str(uuid.uuid4()))
    r_att = hb.attach(vid, str(uuid.uuid4()), mode='ro')
    w_info, r_info = w_att['connection_info'], r_att['connection_info']

    done = _qemu_io(tmp_path, w_info, 'write -P 0x5a 0 64k',
                    'flush', 'read -P 0x5a 0 64k')
    assert done.returncode == 0 and 'Pattern verification failed' not in \
        done.stdout, done.stdout + done.stderr
    with open(path, 'rb') as f:
        assert f.read(65536) == b'\x5a' * 65536
    done = _qemu_io(tmp_path, r_info, 'read -P 0x5a 0 64k', read_only=True)
    assert done.returncode == 0 and 'Pattern verification failed' not in \
        done.stdout, done.stdout + done.stderr
    # without TLS QEMU is refused at the handshake
    done = _qemu_io(tmp_path, w_info, 'read 0 4k', tls=False)
    assert done.returncode != 0
    assert 'TLS' in done.stdout + done.stderr
    # the read-only attachment's writes: refused, by QEMU (the export says
    # read-only) and, sent anyway, by nbdkit
    before = _digest(path)
    done = _qemu_io(tmp_path, r_info, 'write -P 0xee 0 4k')
    assert 'wrote' not in done.stdout, done.stdout
    client = nbd.NbdClient(r_info['host'], r_info['port'],
                           r_info['export_name'],
                           source_address=dp.HOSTS['b'],
                           tls_identity=r_info['tls_psk_identity'],
                           tls_key=r_info['tls_psk_key']).connect()
    assert client.read_only
    with pytest.raises(nbd.NbdError) as e:
        client.write(0, b'\xee' * 4096)
        client.flush()
    assert e.value.errno in (errno.EPERM, errno.ENOTCONN)
    client.close()
    assert _digest(path) == before
    ha.detach(w_att['id'])
    hb.detach(r_att['id'])
