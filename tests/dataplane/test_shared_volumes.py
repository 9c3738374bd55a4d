"""Shared volumes proved with bytes, over NBD and over iSCSI: two hosts
attach one multiattach volume read-write and read each other's writes, a
third attaches read-only and its raw write is refused by the target, not
by its client; detaching one host leaves the others working; the last
detach removes every export."""
import errno
import hashlib
import os
import uuid

import pytest

from cinder_lite import nbd
from cinder_lite import iscsi
from tests.harness import dataplane as dp
from tests.harness import util

BLOCK = 4096


def nbd_exports(s, volume_id):
    return len(util.processes('nbdkit', dp.volume_path(s, volume_id)))


def iscsi_exports(s, volume_id):
    """ACL entries of the volume's targets (one per attached initiator);
    the RO target's LUN must be read-only in tgt."""
    count = 0
    for iqn, target in dp.tgt_targets(s.tgt_control).items():
        if volume_id in iqn:
            assert target['luns'][1]['readonly'] == iqn.endswith('-ro')
            count += len(target['acl'])
    return count


PROTOCOLS = {
    # nbdkit refuses the write of a read-only export with EPERM; over TLS
    # (1.32.5) it then skips the refused payload with read(2) on the raw
    # socket, not through GnuTLS, and loses the connection: the client
    # sees EPERM or the connection ended (ENOTCONN), the data unchanged
    'nbd': ('nbd_stack', nbd_exports, nbd.NbdError,
            {errno.EPERM, errno.ENOTCONN}),
    'iscsi': ('iscsi_stack', iscsi_exports, iscsi.IscsiError,
              {errno.EROFS}),
}


@pytest.mark.parametrize('protocol', sorted(PROTOCOLS))
def test_three_hosts_share_a_volume_and_ro_is_enforced_by_the_target(
        request, protocol):
    fixture, exports, refused, refused_errno = PROTOCOLS[protocol]
    s = request.getfixturevalue(fixture)
    api = s.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='shared')
    path = dp.volume_path(s, vol['id'])
    modes = {'a': 'rw', 'b': 'rw', 'c': 'ro'}
    clients = {n: dp.attacher(s, n) for n in modes}
    atts, devs = {}, {}
    for n, mode in modes.items():
        atts[n], devs[n] = clients[n].attach_device(
            vol['id'], str(uuid.uuid4()), mode=mode)
        info = atts[n]['connection_info']
        assert info['driver_volume_type'] == protocol
        assert info['access_mode'] == mode
    assert exports(s, vol['id']) == 3
    assert devs['c'].read_only and not devs['a'].read_only
    # each writer writes a random block and a token; the other reads them
    blocks = {n: os.urandom(BLOCK) for n in ('a', 'b')}
    offsets = {'a': 0, 'b': BLOCK}
    for n in ('a', 'b'):
        devs[n].write(offsets[n], blocks[n])
        devs[n].write(8 * BLOCK + offsets[n], b'token-%s' % n.encode())
        devs[n].flush()
    assert devs['b'].read(offsets['a'], BLOCK) == blocks['a']
    assert devs['a'].read(offsets['b'], BLOCK) == blocks['b']
    assert devs['c'].read(8 * BLOCK, 7) == b'token-a'
    assert devs['c'].read(8 * BLOCK + BLOCK, 7) == b'token-b'
    # the read-only host's raw write is refused by the target
    with open(path, 'rb') as f:
        before = hashlib.sha256(f.read(16 * BLOCK)).digest()
    with pytest.raises(refused) as e:
        devs['c'].write(0, b'\xff' * BLOCK)
    assert e.value.errno in refused_errno
    with open(path, 'rb') as f:
        assert hashlib.sha256(f.read(16 * BLOCK)).digest() == before
    if protocol == 'nbd':
        # the connection the refused write ended, opened again
        devs['c'].close()
        devs['c'] = clients['c'].open(atts['c'])
    # detaching one host leaves the others working
    clients['a'].detach(atts['a']['id'], devs['a'])
    assert exports(s, vol['id']) == 2
    devs['b'].write(2 * BLOCK, b'still here')
    devs['b'].flush()
    assert devs['c'].read(2 * BLOCK, 10) == b'still here'
    # the last detach removes every export
    for n in ('b', 'c'):
        clients[n].detach(atts[n]['id'], devs[n])
    assert exports(s, vol['id']) == 0
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'
