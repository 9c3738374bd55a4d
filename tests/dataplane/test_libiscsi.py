"""An independent initiator against cinder_lite's iSCSI export: libiscsi's
``iscsi-test-cu`` (Debian package libiscsi-bin) runs SCSI block-command
and persistent-reservation tests on the read-write target of a shared
volume, as two attached initiators, and writes on the read-only target,
logged in with the CHAP credentials connection_info gives; without them
the target lets it in nowhere.

Every test runs alone, so the pass/fail of each is known; the failures
must be exactly the deviations of tgt that ``doc/source/fencing.rst`` lists, so
a change in either direction shows up here."""
import re
import subprocess

import pytest

from tests.harness import util

PROGRAM = 'iscsi-test-cu'
INITIATOR = 'iqn.2007-10.com.github:sahlberg:libiscsi:iscsi-test'
INITIATOR_2 = INITIATOR + '-2'
READER = 'iqn.2026-11.org.cinder-lite:libiscsi-reader'
# block commands an attached host depends on
SBC = ('SCSI.Read10', 'SCSI.Write10', 'SCSI.Inquiry', 'SCSI.ReadCapacity16',
       'SCSI.Verify10', 'SCSI.WriteSame10', 'SCSI.ModeSense6',
       'SCSI.TestUnitReady')
PR = ('SCSI.PrinReadKeys', 'SCSI.PrinReportCapabilities',
      'SCSI.PrinServiceactionRange', 'SCSI.ProutRegister',
      'SCSI.ProutReserve', 'SCSI.ProutClear', 'SCSI.ProutPreempt')
# tgt's deviations (doc/source/fencing.rst): READ FULL STATUS (service action
# 3) is refused; after a reservation is released tgt sends the other
# registrants a UNIT ATTENTION (reservations released) that the ownership
# tests do not expect
KNOWN_FAILURES = {
    'SCSI.PrinServiceactionRange.Range',
    'SCSI.ProutReserve.OwnershipEA', 'SCSI.ProutReserve.OwnershipWE',
    'SCSI.ProutReserve.OwnershipEARO', 'SCSI.ProutReserve.OwnershipWERO',
}
SUMMARY = re.compile(r'^\s*tests\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)', re.M)


def _tests_of(families):
    listed = subprocess.run([PROGRAM, '--list'], capture_output=True,
                            text=True, timeout=60, check=True).stdout
    names = [line.strip() for line in listed.splitlines()]
    return [n for n in names if n.count('.') == 2
            and n.rsplit('.', 1)[0] in families]


def _run(url, test, initiator=INITIATOR):
    done = subprocess.run(
        [PROGRAM, '-i', initiator, '-I', INITIATOR_2, '--dataloss',
         '--test=' + test, url], capture_output=True, text=True, timeout=300)
    match = SUMMARY.search(done.stdout)
    assert match, 'no summary from %s:\n%s\n%s' % (test, done.stdout[-2000:],
                                                   done.stderr[-2000:])
    ran, passed, failed = (int(match.group(i)) for i in (2, 3, 4))
    return ran, passed, failed, done.stdout


@pytest.fixture
def attached(iscsi_stack):
    util.need(PROGRAM)
    api = iscsi_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='shared')
    atts = []
    for n, (initiator, mode) in enumerate(((INITIATOR, 'rw'),
                                           (INITIATOR_2, 'rw'),
                                           (READER, 'ro'))):
        resp = api.post('/attachments', json={'attachment': {
            'volume_uuid': vol['id'], 'mode': mode, 'connector': {
                'host': 'libiscsi-%d' % n, 'initiator': initiator,
                'ip': '127.0.0.1'}}})
        assert resp.status_code == 200, resp.text
        atts.append(resp.json()['attachment'])
    # with the attachment's CHAP credentials, as libiscsi's URLs take
    # them (user%password@); both initiators of the suite log in with the
    # first attachment's
    urls = ['iscsi://%s%%%s@%s/%s/1' % (
        a['connection_info']['auth_username'],
        a['connection_info']['auth_password'],
        a['connection_info']['target_portal'],
        a['connection_info']['target_iqn']) for a in atts]
    yield urls[0], urls[2]
    plain = 'iscsi://%s/%s/1' % (atts[0]['connection_info']['target_portal'],
                                 atts[0]['connection_info']['target_iqn'])
    done = subprocess.run(['iscsi-inq', '-i', INITIATOR, plain],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0, done.stdout
    for a in atts:
        assert api.delete('/attachments/%s' % a['id']).status_code == 200


def test_libiscsi_block_and_reservation_tests_on_the_rw_target(attached):
    rw_url, _ro_url = attached
    results = {}
    for test in _tests_of(SBC + PR):
        ran, passed, failed, out = _run(rw_url, test)
        assert ran == 1, out
        results[test] = passed == 1
    failed = {t for t, ok in results.items() if not ok}
    passed = {t for t, ok in results.items() if ok}
    print('libiscsi on the read-write target: %d passed, %d failed (%s)'
          % (len(passed), len(failed), ', '.join(sorted(failed))))
    assert failed == KNOWN_FAILURES
    sbc = [t for t in results if t.rsplit('.', 1)[0] in SBC]
    assert len(sbc) >= 40 and all(results[t] for t in sbc)


def test_libiscsi_writes_on_the_ro_target_are_refused_by_it(attached):
    _rw_url, ro_url = attached
    out = subprocess.run(
        [PROGRAM, '-i', READER, '--dataloss', '--Verbose-scsi',
         '--test=SCSI.Write10', ro_url], capture_output=True, text=True,
        timeout=300).stdout
    tried = re.findall(r'Send WRITE10 \(Expecting SUCCESS\)', out)
    refused = re.findall(r'WRITE10 command failed with status 2 / sense key '
                         r'DATA PROTECTION\(0x07\) / ASCQ WRITE_PROTECTED',
                         out)
    assert len(tried) > 100 and len(refused) == len(tried), out[-3000:]
    assert 'WRITE10 returned SUCCESS' not in out
    # reads go on
    ran, passed, _failed, out = _run(ro_url, 'SCSI.Read10.Simple', READER)
    assert (ran, passed) == (1, 1), out
