"""One access log line per request (issue 15): refusals are in the log
with the request id their client saw."""
import logging

from tests.harness import stack as stack_mod


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


class _Current(logging.Handler):
    """Notes, for each record, the request id of the emitting thread's
    current context at that moment (what oslo.log's formatter names)."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def emit(self, record):
        from oslo_context import context as o_context
        current = o_context.get_current()
        self.seen.append((record.getMessage(),
                          current.request_id if current else None))


def test_a_line_names_its_own_request_or_none(tmp_path):
    """With one server thread every request is served by the same thread:
    the line of a request without a context (/healthcheck, an
    unauthenticated refusal) must not name the request before it, and the
    service's own lines none at all."""
    handler = _Current()
    # (on cinder_lite's logger: setting logging up replaces the root's
    # handlers)
    root = logging.getLogger('cinder_lite')
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.INFO)
    s = stack_mod.Stack(tmp_path / 'st', extra={'osapi_volume_threads': 1})
    try:
        s.start()
        api = s.client()
        for _ in range(3):
            listed = api.get('/volumes')
            assert listed.status_code == 200
            health = api.get('/healthcheck', raw_path=True, headers={
                'X-Auth-Token': ''})
            assert health.status_code == 200
            refused = api.get('/volumes', headers={'X-Auth-Token': ''})
            assert refused.status_code == 401
            rid = listed.headers['x-openstack-request-id']
            assert [m for m, _ in handler.seen if 'request %s,' % rid in m]
            for message, current in handler.seen:
                if message.startswith('GET /healthcheck') or \
                        ' 401 ' in message:
                    assert current is None, (message, current)
                elif message.startswith('GET /v3/'):
                    assert current and 'request %s,' % current in message
    finally:
        s.stop()
        root.removeHandler(handler)
        root.setLevel(old_level)
    # the services' own lines (start, stop, reports) name no request
    for message, current in handler.seen:
        if 'API listening' in message or 'started on' in message or \
                'stopped' in message:
            assert current is None, (message, current)
