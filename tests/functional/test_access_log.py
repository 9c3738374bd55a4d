"""One access log line per request (issue 15): refusals are in the log
with the request id their client saw."""
import logging

from tests import stack as stack_mod


def _lines(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == 'cinder_lite.api.access']


def test_every_request_is_logged_with_its_outcome(stack, caplog):
    caplog.set_level(logging.INFO, logger='cinder_lite.api.access')
    api = stack.client()
    missing = api.get('/volumes/%s' % ('0' * 8 + '-0000-4000-8000-' +
                                       '0' * 12))
    assert missing.status_code == 404
    request_id = missing.headers['x-openstack-request-id']
    (line,) = [x for x in _lines(caplog) if request_id in x]
    assert line.startswith('GET /v3/%s/volumes/' % stack_mod.PROJECT)
    assert ' 404 ' in line
    assert line.endswith('(request %s, project %s, version 3.71)' % (
        request_id, stack_mod.PROJECT))
    api.get('/volumes?limit=1', headers={
        'OpenStack-API-Version': 'volume 3.44'})
    assert any(x.startswith('GET /v3/%s/volumes?limit=1 200 '
                            % stack_mod.PROJECT) and
               x.endswith(', version 3.44)') for x in _lines(caplog))
    api.get('/volumes?limit=1')
    assert any(x.startswith('GET /v3/%s/volumes?limit=1 200 '
                            % stack_mod.PROJECT) for x in _lines(caplog))


def test_switched_off(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger='cinder_lite.api.access')
    s = stack_mod.Stack(tmp_path / 'st', extra={'access_log': 'false'})
    s.start()
    try:
        assert s.client().get('/volumes').status_code == 200
    finally:
        s.stop()
    assert _lines(caplog) == []
