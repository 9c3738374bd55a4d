import pytest

from cinder_lite.common import iscsi_name


@pytest.mark.parametrize('name', [
    'iqn.1994-05.com.redhat:185ce16b55ad',
    'iqn.2026-11.org.cinder-lite:volume-0b8f',
    'iqn.2001-04.com.example',
    'eui.02004567A425678D',
    'naa.52004567BA64678D',
    'naa.62004567BA64678D0123456789ABCDEF',
])
def test_valid_names(name):
    assert iscsi_name.valid(name)


@pytest.mark.parametrize('name', [
    None, 7, '', 'compute-1', 'iqn.', 'iqn.2026.org.example',
    'iqn.2026-11.org.example:has space', 'iqn.2026-11.-bad', 'eui.123',
    'naa.123', 'iqn.2026-11.org.example:' + 'x' * 200,
])
def test_invalid_names(name):
    assert not iscsi_name.valid(name)
