"""Parsing ``tgtadm --mode target --op show`` (the layout tgt 1.0.85
prints)."""
from cinder_lite.volume.targets import iscsi

SHOW = """Target 1: iqn.2026-11.org.cinder-lite:volume-v1
    System information:
        Driver: iscsi
        State: ready
    I_T nexus information:
        I_T nexus: 3
            Initiator: iqn.2026-11.org.cinder-lite:host-a alias: none
            Connection: 0
                IP Address: 127.0.0.2
    LUN information:
        LUN: 0
            Type: controller
            Readonly: No
            Backing store path: None
        LUN: 1
            Type: disk
            Size: 1074 MB, Block size: 512
            Readonly: No
            Backing store type: rdwr
            Backing store path: /var/lib/cinder-lite/volumes/file/volume-v1
    Account information:
    ACL information:
        iqn.2026-11.org.cinder-lite:host-a
Target 2: iqn.2026-11.org.cinder-lite:volume-v1-ro
    System information:
        Driver: iscsi
        State: ready
    I_T nexus information:
    LUN information:
        LUN: 1
            Readonly: Yes
            Backing store path: /var/lib/cinder-lite/volumes/file/volume-v1
    Account information:
    ACL information:
        127.0.0.4
        iqn.2026-11.org.cinder-lite:host-c
"""


def test_parse_show():
    targets = iscsi.parse_show(SHOW)
    rw = targets['iqn.2026-11.org.cinder-lite:volume-v1']
    ro = targets['iqn.2026-11.org.cinder-lite:volume-v1-ro']
    assert rw['tid'] == 1 and ro['tid'] == 2
    assert rw['nexus'] == [{
        'id': 3, 'initiator': 'iqn.2026-11.org.cinder-lite:host-a',
        'connections': [{'cid': 0, 'address': '127.0.0.2'}]}]
    assert rw['luns'][1] == {
        'path': '/var/lib/cinder-lite/volumes/file/volume-v1',
        'readonly': False}
    assert rw['acl'] == ['iqn.2026-11.org.cinder-lite:host-a']
    assert ro['nexus'] == [] and ro['luns'][1]['readonly'] is True
    assert ro['acl'] == ['127.0.0.4', 'iqn.2026-11.org.cinder-lite:host-c']


def test_parse_nothing():
    assert iscsi.parse_show('') == {}


ACCOUNTS = """Target 1: iqn.2026-11.org.cinder-lite:volume-v2
    System information:
        Driver: iscsi
        State: ready
    I_T nexus information:
    LUN information:
    Account information:
        cinder-lite-guard
        attachment-8ba805a2-cd73-4ae7-b6b7-327bf017fc91
        attachment-41c5ba51-50c9-4011-8848-03cef718cc96
        mutual-user (outgoing)
    ACL information:
        iqn.2026-11.org.cinder-lite:host-a
"""


def test_parse_accounts_in_tgts_order():
    target = iscsi.parse_show(ACCOUNTS)[
        'iqn.2026-11.org.cinder-lite:volume-v2']
    # the order tgt keeps them in (_unbind_account depends on it); an
    # outgoing (mutual CHAP) account is not one a host logs in with
    assert target['accounts'] == [
        'cinder-lite-guard',
        'attachment-8ba805a2-cd73-4ae7-b6b7-327bf017fc91',
        'attachment-41c5ba51-50c9-4011-8848-03cef718cc96']
    assert target['acl'] == ['iqn.2026-11.org.cinder-lite:host-a']
    assert iscsi.parse_accounts(
        'Account list:\n    cinder-lite-guard\n    attachment-x\n') == {
            'cinder-lite-guard', 'attachment-x'}
    assert iscsi.parse_accounts('Account list:\n') == set()


def test_errors_never_show_a_password():
    shown = iscsi._shown(('--mode', 'account', '--op', 'new', '--user', 'u',
                          '--password', 'the-secret'))
    assert 'the-secret' not in shown and '--user u' in shown
