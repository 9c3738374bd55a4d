"""The CHAP values of our initiator (RFC 7143 section 6.1 binary values;
the MD5 response of RFC 1994)."""
import pytest

from cinder_lite.iscsi import session


def test_chap_binary_values():
    assert session._chap_binary('0x0a1B') == b'\x0a\x1b'
    assert session._chap_binary('0xabc') == b'\x0a\xbc'
    assert session._chap_binary('0bAAEC') == b'\x00\x01\x02'
    for bad in ('abcd', '0xzz', '0b!!', ''):
        with pytest.raises(ValueError):
            session._chap_binary(bad)


def test_the_connector_takes_chap_from_connection_info():
    from cinder_lite.common import credentials
    from cinder_lite.common import exception
    from cinder_lite.connector import devices
    info = {'auth_method': 'CHAP', 'auth_username': 'attachment-x',
            'auth_password': 's' * 32}
    assert devices._chap(info) == ('attachment-x', 's' * 32)
    assert devices._chap({'target_iqn': 'iqn.x'}) is None
    for bad, words in (
            (dict(info, auth_password=credentials.MASK), 'masked'),
            (dict(info, auth_username=None), 'no auth_username'),
            (dict(info, auth_method='kerberos'), 'only CHAP')):
        with pytest.raises(exception.InvalidInput) as e:
            devices._chap(bad)
        assert words in str(e.value)
