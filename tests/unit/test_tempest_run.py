"""tools/tempest's bookkeeping (tests/harness/tempest_run.py): how a
Tempest result becomes an outcome and a one-line reason, and the list
files it reads."""
import re

from tests.harness import tempest_run

CLS = 'tempest.api.volume.test_x.XTest'

SCHEMA_TRACEBACK = '''Traceback (most recent call last):
  File "/venv/tempest/api/volume/test_x.py", line 40, in test_a
    self.volumes_client.show_volume(vid)
  File "/venv/tempest/lib/common/rest_client.py", line 944, in validate
    raise exceptions.InvalidHTTPResponseBody(msg)
tempest.lib.exceptions.InvalidHTTPResponseBody: HTTP response body is invalid json or xml
Details: HTTP response body is invalid (Additional properties are not allowed ('attach_mode' was unexpected)

Failed validating 'additionalProperties' in schema:
    {'type': 'object'}
'''

MISMATCH_TRACEBACK = '''Traceback (most recent call last):
  File "/venv/tempest/api/volume/test_x.py", line 50, in test_b
    self.assertEqual('attaching', status)
  File "/venv/testtools/testcase.py", line 395, in assertEqual
    self.assertThat(observed, matcher, message)
testtools.matchers._impl.MismatchError: 'attaching' != 'reserved'
'''

TEARDOWN = ("Traceback (most recent call last):\n  ...\n"
            "testtools.runtest.MultipleExceptions: ((<class "
            "'tempest.lib.exceptions.BadRequest'>, Bad request\nDetails: "
            "{'code': 400, 'message': 'still attached'}, <traceback object "
            "at 0x7f>), (<class 'tempest.lib.exceptions.NotFound'>, "
            "Object not found, <traceback object at 0x7e>))\n")


def result(test_id, status, reason=''):
    return {'id': test_id, 'status': status, 'reason': reason,
            'seconds': 0.1}


def test_reason_line_keeps_the_exception_and_tempests_details():
    assert tempest_run.reason_line(SCHEMA_TRACEBACK) == (
        'tempest.lib.exceptions.InvalidHTTPResponseBody: HTTP response '
        'body is invalid json or xml Details: HTTP response body is '
        "invalid (Additional properties are not allowed ('attach_mode' "
        'was unexpected)')
    assert tempest_run.reason_line(MISMATCH_TRACEBACK) == (
        "testtools.matchers._impl.MismatchError: 'attaching' != 'reserved'")
    assert tempest_run.reason_line('Snapshotting is not available.') == \
        'Snapshotting is not available.'
    assert tempest_run.reason_line(TEARDOWN) == (
        "tempest.lib.exceptions.BadRequest: Bad request Details: "
        "{'code': 400, 'message': 'still attached'}; "
        'tempest.lib.exceptions.NotFound: Object not found')
    long = 'x' * 1000
    assert len(tempest_run.reason_line(long)) == \
        tempest_run.REASON_CHARS + 3


def test_outcomes_count_a_class_that_did_not_set_up_against_its_tests():
    ids = [CLS + '.test_a', CLS + '.test_b', CLS + '.test_c',
           'tempest.api.volume.test_y.YTest.test_d',
           'tempest.api.volume.test_z.ZTest.test_e',
           'tempest.api.volume.test_w.WTest.test_f']
    results = [
        # attributes in the reported id are ignored
        result(CLS + '.test_a[id-1,smoke]', 'success'),
        result(CLS + '.test_b', 'fail', MISMATCH_TRACEBACK),
        result(CLS + '.test_c', 'skip', 'Cinder snapshots are disabled'),
        result('setUpClass (tempest.api.volume.test_y.YTest)', 'fail',
               SCHEMA_TRACEBACK),
        result('setUpClass (tempest.api.volume.test_z.ZTest)', 'skip',
               'Backups are disabled'),
        result('tearDownClass (%s)' % CLS, 'fail', TEARDOWN),
    ]
    out, broken = tempest_run.outcomes(ids, results)
    assert out[CLS + '.test_a'] == ('passed', '')
    assert out[CLS + '.test_b'][0] == 'failed'
    assert out[CLS + '.test_c'] == ('skipped',
                                    'Cinder snapshots are disabled')
    outcome, reason = out['tempest.api.volume.test_y.YTest.test_d']
    assert outcome == 'failed'
    assert reason.startswith('class setup failed: tempest.lib.exceptions.'
                             'InvalidHTTPResponseBody')
    assert out['tempest.api.volume.test_z.ZTest.test_e'] == (
        'skipped', 'Backups are disabled')
    assert out['tempest.api.volume.test_w.WTest.test_f'][0] == 'failed'
    assert [fixture for fixture, _ in broken] == [
        'setUpClass (tempest.api.volume.test_y.YTest)',
        'tearDownClass (%s)' % CLS]


def test_the_interop_list_has_56_distinct_tempest_ids():
    ids = tempest_run.read_list(tempest_run.INTEROP_LIST)
    assert len(ids) == len(set(ids)) == 56
    assert all(re.match(r'^tempest\.api\.(volume|compute)\.[\w.]+$', t)
               for t in ids)
    # each selects itself and nothing longer
    t = 'tempest.api.volume.test_volumes_list.VolumesListTestJSON.' \
        'test_volume_list'
    assert t in ids
    assert re.search(tempest_run.exact(t), t + '[id-1,smoke]')
    assert not re.search(tempest_run.exact(t), t + '_by_name[id-2]')


def test_the_exclude_list_is_commented_regexes():
    with open(tempest_run.EXCLUDE_LIST) as f:
        lines = f.read().splitlines()
    entries = tempest_run.read_list(tempest_run.EXCLUDE_LIST)
    for entry in entries:
        re.compile(entry)
        assert entry.startswith('^tempest\\.')
        # a reason comment precedes each block of entries
        i = lines.index(entry)
        while lines[i - 1].strip() and not lines[i - 1].startswith('#'):
            i -= 1
        assert lines[i - 1].startswith('# '), entry
