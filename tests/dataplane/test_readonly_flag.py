"""A volume made read-only with os-update_readonly_flag is attached
read-only, and the target refuses the host's writes (over NBD and
iSCSI), as for any read-only attachment; once the flag is cleared the
next attachment writes."""
import errno
import hashlib
import uuid

import pytest

from cinder_lite import nbd
from cinder_lite import iscsi
from tests.harness import dataplane as dp

BLOCK = 4096
PROTOCOLS = {
    # see test_shared_volumes: over TLS nbdkit 1.32.5 loses the connection
    # after refusing a write
    'nbd': ('nbd_stack', nbd.NbdError, {errno.EPERM, errno.ENOTCONN}),
    'iscsi': ('iscsi_stack', iscsi.IscsiError, {errno.EROFS}),
}


def _flag(api, vid, readonly):
    resp = api.post('/volumes/%s/action' % vid, json={
        'os-update_readonly_flag': {'readonly': readonly}})
    assert resp.status_code == 202, resp.text


@pytest.mark.parametrize('protocol', sorted(PROTOCOLS))
def test_readonly_volume_is_read_only_at_the_target(request, protocol):
    fixture, refused, refused_errno = PROTOCOLS[protocol]
    s = request.getfixturevalue(fixture)
    api = s.client()
    vol = api.create_volume()
    path = dp.volume_path(s, vol['id'])
    with open(path, 'r+b') as f:
        f.write(b'before')
    _flag(api, vol['id'], True)
    host = dp.attacher(s, 'a')
    # no mode asked, as Nova asks: the flag decides
    att, dev = host.attach_device(vol['id'], str(uuid.uuid4()))
    assert att['attach_mode'] == 'ro'
    assert att['connection_info']['access_mode'] == 'ro'
    assert dev.read_only
    assert dev.read(0, 6) == b'before'
    with open(path, 'rb') as f:
        digest = hashlib.sha256(f.read(16 * BLOCK)).digest()
    with pytest.raises(refused) as e:
        dev.write(0, b'\xff' * BLOCK)
    assert e.value.errno in refused_errno
    with open(path, 'rb') as f:
        assert hashlib.sha256(f.read(16 * BLOCK)).digest() == digest
    host.detach(att['id'], dev)
    _flag(api, vol['id'], False)
    att, dev = host.attach_device(vol['id'], str(uuid.uuid4()))
    assert att['attach_mode'] == 'rw' and not dev.read_only
    dev.write(0, b'after!')
    dev.flush()
    host.detach(att['id'], dev)
    with open(path, 'rb') as f:
        assert f.read(6) == b'after!'
