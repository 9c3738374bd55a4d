"""Read a subunit v2 stream of a Tempest run and write one JSON list of
``{"id", "status", "reason", "seconds"}`` (status: success, fail, skip,
...; reason: the skip reason, or the failure's traceback).

It runs with Tempest's own interpreter (python-subunit and testtools come
with Tempest), so it imports nothing of cinder_lite:

    TEMPEST_VENV/bin/python tests/harness/tempest_results.py IN OUT
"""
import json
import sys

import subunit
import testtools


def read(path):
    results = []

    def on_test(test):
        details = test['details']
        reason = ''
        for key in ('reason', 'traceback'):
            if key in details:
                reason = details[key].as_text()
                break
        start, stop = test['timestamps']
        seconds = (stop - start).total_seconds() if start and stop else None
        results.append({'id': test['id'], 'status': test['status'],
                        'reason': reason, 'seconds': seconds})

    with open(path, 'rb') as stream:
        case = subunit.ByteStreamToStreamResult(stream,
                                                non_subunit_name='stdout')
        result = testtools.StreamToDict(on_test)
        result.startTestRun()
        try:
            case.run(result)
        finally:
            result.stopTestRun()
    return results


def main():
    results = read(sys.argv[1])
    with open(sys.argv[2], 'w') as f:
        json.dump(results, f, indent=1)


if __name__ == '__main__':
    main()
