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
