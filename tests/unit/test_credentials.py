"""Per-attachment credentials: derived from the deployment key, masked
where they are recorded, shown again only through the keyring."""
import base64
import os
import stat
import struct

import pytest

from cinder_lite.common import credentials


def test_the_key_file_is_made_private_and_kept(tmp_path):
    path = tmp_path / 'state' / 'credential.key'
    first = credentials.Keyring(str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    again = credentials.Keyring(str(path))
    assert again.secret('a1', 'auth_password') == \
        first.secret('a1', 'auth_password')
    assert not list(path.parent.glob('*.tmp'))


def test_secrets_differ_by_attachment_purpose_and_key(tmp_path):
    ring = credentials.Keyring(str(tmp_path / 'k'))
    other = credentials.Keyring(str(tmp_path / 'other'))
    made = {ring.secret('a1', 'auth_password'),
            ring.secret('a2', 'auth_password'),
            ring.secret('a1', 'tls_psk_key'),
            other.secret('a1', 'auth_password')}
    assert len(made) == 4
    assert len(ring.secret('a1', 'tls_psk_key')) == 64


def test_a_key_file_others_can_read_is_refused(tmp_path):
    path = tmp_path / 'k'
    credentials.Keyring(str(path))
    os.chmod(path, 0o644)
    with pytest.raises(RuntimeError, match='readable by others'):
        credentials.Keyring(str(path))


def test_conceal_masks_every_secret_and_reveal_makes_it_again(tmp_path):
    ring = credentials.Keyring(str(tmp_path / 'k'))
    info = {'target_iqn': 'iqn.x', 'auth_method': 'CHAP',
            'auth_username': 'u1',
            'auth_password': ring.secret('a1', 'auth_password'),
            'tls_psk_key': ring.secret('a1', 'tls_psk_key')}
    hidden = credentials.conceal(info)
    assert hidden['auth_password'] == credentials.MASK
    assert hidden['tls_psk_key'] == credentials.MASK
    assert hidden['auth_username'] == 'u1'
    assert info['auth_password'] != credentials.MASK  # a copy
    assert ring.reveal(hidden, 'a1') == info
    assert ring.reveal(hidden, 'a2') != info
    plain = {'host': '127.0.0.1', 'port': 10809}
    assert credentials.conceal(plain) is plain
    assert ring.reveal(plain, 'a1') is plain


def test_a_cephx_key_is_encoded_as_ceph_encodes_one(tmp_path):
    ring = credentials.Keyring(str(tmp_path / 'k'))
    key = ring.cephx_key('a1')
    raw = base64.b64decode(key)
    # CryptoKey: u16 type (1: AES), u32 sec, u32 nsec, u16 length, secret
    assert struct.unpack('<HIIH', raw[:12]) == (1, 0, 0, 16)
    assert raw[12:] == bytes.fromhex(ring.secret('a1', 'keyring'))
    assert key.startswith('AQ') and len(key) == 40   # as ceph-authtool's
    assert ring.cephx_key('a2') != key
    text = ring.cephx_keyring('a1', 'client.cinder-lite.a1')
    assert text == '[client.cinder-lite.a1]\n\tkey = %s\n' % key
    assert credentials.cephx_key_of(text) == key
    assert credentials.cephx_key_of('') is None
    assert credentials.cephx_key_of(credentials.MASK) is None


def test_an_rbd_keyring_is_masked_and_made_again_for_its_user(tmp_path):
    ring = credentials.Keyring(str(tmp_path / 'k'))
    info = {'driver_volume_type': 'rbd', 'auth_username': 'cinder-lite.a1',
            'keyring': credentials.MASK}
    shown = ring.reveal(info, 'a1')
    assert shown['keyring'] == ring.cephx_keyring(
        'a1', 'client.cinder-lite.a1')
    assert credentials.conceal(shown) == info
