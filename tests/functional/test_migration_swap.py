"""Migration of an in-use volume through Nova's swap: cinder_lite's side
of it, on SQLite, with two file backends.

Nova is played here: a stand-in of its compute API on loopback takes
(202) or refuses the ``PUT /servers/{id}/os-volume_attachments/{volume}``
the source's volume service sends, and the test then makes, through
cinder_lite's API, the calls Nova's API and compute host make, in
Nova's order (``nova/compute/api.py`` ``swap_volume``,
``nova/compute/manager.py`` ``_swap_volume``): begin_detaching of the
volume, an attachment of the temporary volume, its update with the
host's connector and its completion, the delete of the old attachment,
then ``os-migrate_volume_completion`` -- or, when the swap fails on the
host, roll_detaching, the delete of the new attachment and the
completion with ``error``.  The real Nova runs in
tests/integration/test_nova.py."""
import http.server
import json
import os
import threading

import pytest

from tests.harness import attach as ah
from tests.harness import stack as stack_mod
from tests.harness import util

A = {'volume_backend_name': 'back-a'}
B = {'volume_backend_name': 'back-b'}


class StandInNova(http.server.ThreadingHTTPServer):
    """Nova's compute API as far as a swap goes: each request is
    recorded; a PUT is answered ``answer`` (status, body)."""

    def __init__(self):
        super().__init__(('127.0.0.1', 0), _Handler)
        self.seen = []
        self.answer = (202, None)
        self.thread = threading.Thread(target=self.serve_forever,
                                       daemon=True)
        self.thread.start()

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.server_address[1]

    def stop(self):
        self.shutdown()
        self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):

    def do_PUT(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length) or b'null')
        self.server.seen.append((self.command, self.path, body,
                                 self.headers.get('OpenStack-API-Version')))
        status, answer = self.server.answer
        data = json.dumps(answer).encode() if answer is not None else b''
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def nova():
    server = StandInNova()
    yield server
    server.stop()


@pytest.fixture
def two(tmp_path, nova):
    s = stack_mod.Stack(tmp_path / 'state', backends={'a': A, 'b': B},
                        sections={'nova': {
                            'auth_type': 'none',
                            'endpoint_override': nova.url}}).start()
    yield s
    s.stop()


def _file(stack, section, volume_id):
    return os.path.join(stack.state_path, 'volumes', section,
                        'volume-%s' % volume_id)


def _attached_on_a(api):
    """An in-use volume on backend a, attached to one server; its id
    and attachment."""
    api.create_type('on-a', A)
    vol = api.create_volume(size=1, volume_type='on-a')
    api.create_type('either', {'volume_backend_name':
                               '<or> back-a <or> back-b'})
    resp = api.post('/volumes/%s/action' % vol['id'], json={
        'os-retype': {'new_type': 'either'}})
    assert resp.status_code == 202, resp.text
    att = ah.attach(api, vol['id'], ah.connector())
    assert ah.volume(api, vol['id'])['status'] == 'in-use'
    return vol['id'], att


def _migrate(api, vid, host='testnode@b'):
    return api.post('/volumes/%s/action' % vid,
                    json={'os-migrate_volume': {'host': host}})


def _swap_asked(nova, api, vid, server):
    """The PUT Nova was sent; the temporary volume's id."""
    util.wait_for(lambda: nova.seen, timeout=30, what='the swap request')
    ((method, path, body, version),) = nova.seen
    assert (method, path, version) == (
        'PUT', '/servers/%s/os-volume_attachments/%s' % (server, vid),
        'compute 2.1')
    target = body['volumeAttachment']['volumeId']
    # while Nova swaps: the volume migrates, the temporary volume is
    # ready on the destination
    vol = ah.volume(api, vid)
    assert (vol['status'], vol['migration_status']) == ('in-use',
                                                        'migrating')
    tmp = ah.volume(api, target)
    assert (tmp['status'], tmp['migration_status']) == (
        'available', 'target:%s' % vid)
    assert tmp['os-vol-host-attr:host'] == 'testnode@b#back-b'
    return target


def _action(api, vid, body, expect):
    resp = api.post('/volumes/%s/action' % vid, json=body)
    assert resp.status_code == expect, resp.text
    return resp


def _nova_attaches_target(api, vid, target, server):
    """Nova's API and compute host up to the driver's swap."""
    _action(api, vid, {'os-begin_detaching': {}}, 202)
    new = ah.create(api, target, server)
    resp = api.put('/attachments/%s' % new['id'], json={'attachment': {
        'connector': ah.connector()}})
    assert resp.status_code == 200, resp.text
    return new


def _reconcile(stack):
    """Both backends' reconciliation, with every row old enough for its
    rules, once neither service works on a volume any more."""
    managers = [stack.volume_service(section).endpoints[0]
                for section in ('a', 'b')]
    util.wait_for(lambda: not any(m._busy for m in managers), timeout=30,
                  what='the volume services idle')
    return [change for m in managers for change in m.reconcile_now(0)]


def _complete(api, vid, target, error, expect=200):
    resp = _action(api, vid, {'os-migrate_volume_completion': {
        'new_volume': target, 'error': error}}, expect)
    return resp.json()


def _gone(api, vid):
    util.wait_for(lambda: api.get('/volumes/%s' % vid).status_code == 404,
                  timeout=30, what='volume %s deleted' % vid)


def test_a_swap_nova_completes_moves_the_volume_and_its_attachment(
        two, nova):
    api = two.client()
    vid, old = _attached_on_a(api)
    assert _migrate(api, vid).status_code == 202
    target = _swap_asked(nova, api, vid, old['instance'])
    new = _nova_attaches_target(api, vid, target, old['instance'])
    # however long Nova's copy takes, reconciliation leaves a swap alone
    assert [c for c in _reconcile(two) if 'migration' in c] == []
    # the completion before Nova detached the volume is refused
    body = _complete(api, vid, target, False, expect=400)
    assert 'is still attached' in body['badRequest']['message']
    resp = api.post('/attachments/%s/action' % new['id'],
                    json={'os-complete': None})
    assert resp.status_code == 204, resp.text
    resp = api.delete('/attachments/%s' % old['id'])
    assert resp.status_code == 200, resp.text
    # (a user may not complete a migration)
    user = two.client(user='demo', roles='member')
    resp = user.post('/volumes/%s/action' % vid, json={
        'os-migrate_volume_completion': {'new_volume': target}})
    assert resp.status_code == 403, resp.text
    assert _complete(api, vid, target, False) == {'save_volume_id': vid}
    vol = ah.volume(api, vid)
    assert (vol['status'], vol['migration_status'],
            vol['os-vol-host-attr:host']) == ('in-use', 'success',
                                              'testnode@b#back-b')
    assert [(a['attachment_id'], a['server_id']) for a in
            vol['attachments']] == [(new['id'], old['instance'])]
    moved = api.get('/attachments/%s' % new['id']).json()['attachment']
    assert (moved['volume_id'], moved['status']) == (vid, 'attached')
    # the temporary row held the old storage's place: both go
    _gone(api, target)
    util.wait_for(lambda: not os.path.exists(_file(two, 'a', vid)),
                  timeout=30, what='old storage removed')
    assert os.path.exists(_file(two, 'b', vid))
    assert not os.path.exists(_file(two, 'b', target))
    # the volume detaches on its new backend
    resp = api.delete('/attachments/%s' % new['id'])
    assert resp.status_code == 200, resp.text
    assert ah.volume(api, vid)['status'] == 'available'


def test_a_swap_that_fails_on_the_host_leaves_the_volume_attached(
        two, nova):
    api = two.client()
    vid, old = _attached_on_a(api)
    assert _migrate(api, vid).status_code == 202
    target = _swap_asked(nova, api, vid, old['instance'])
    new = _nova_attaches_target(api, vid, target, old['instance'])
    # the host's driver failed: Nova rolls back and says so
    _action(api, vid, {'os-roll_detaching': {}}, 202)
    assert api.delete('/attachments/%s' % new['id']).status_code == 200
    assert _complete(api, vid, target, True) == {'save_volume_id': vid}
    vol = ah.volume(api, vid)
    assert (vol['status'], vol['migration_status'],
            vol['os-vol-host-attr:host']) == ('in-use', 'error',
                                              'testnode@a#back-a')
    assert [a['attachment_id'] for a in vol['attachments']] == [old['id']]
    _gone(api, target)
    assert os.path.exists(_file(two, 'a', vid))
    assert not os.path.exists(_file(two, 'b', target))
    # and it may migrate again
    nova.seen.clear()
    assert _migrate(api, vid).status_code == 202
    assert _swap_asked(nova, api, vid, old['instance']) != target


def test_a_swap_nova_refuses_ends_the_migration_in_error(two, nova):
    api = two.client()
    vid, old = _attached_on_a(api)
    nova.answer = (409, {'conflictingRequest': {
        'code': 409, 'message': "Cannot 'swap_volume' instance while it "
                                "is in vm_state stopped"}})
    assert _migrate(api, vid).status_code == 202
    util.wait_for(lambda: ah.volume(api, vid)['migration_status'] ==
                  'error', timeout=30, what='migration error')
    ((_, _, body, _),) = nova.seen
    target = body['volumeAttachment']['volumeId']
    vol = ah.volume(api, vid)
    assert (vol['status'], vol['os-vol-host-attr:host']) == (
        'in-use', 'testnode@a#back-a')
    assert [a['attachment_id'] for a in vol['attachments']] == [old['id']]
    _gone(api, target)


def test_in_use_refusals(two, nova):
    api = two.client()
    # a multiattach volume in use
    api.create_type('shared-a', dict(A, multiattach='<is> True'))
    shared = api.create_volume(size=1, volume_type='shared-a')
    ah.attach(api, shared['id'], ah.connector())
    resp = _migrate(api, shared['id'])
    assert resp.status_code == 400, resp.text
    assert 'is a multiattach volume in use' in \
        resp.json()['badRequest']['message']
    # a retype with migration of an in-use volume
    vid, _ = _attached_on_a(api)
    api.create_type('gold', B)
    resp = api.post('/volumes/%s/action' % vid, json={'os-retype': {
        'new_type': 'gold', 'migration_policy': 'on-demand'}})
    assert resp.status_code == 400, resp.text
    assert 'a retype with migration moves detached volumes only' in \
        resp.text
    # a completion naming a volume that is no temporary volume of it
    other = api.create_volume(size=1)
    assert _migrate(api, vid).status_code == 202
    target = _swap_asked(nova, api, vid, ah.volume(api, vid)[
        'attachments'][0]['server_id'])
    body = _complete(api, vid, other['id'], False, expect=400)
    assert 'Destination volume %s not mid-migration' % other['id'] in \
        body['badRequest']['message']
    body = _complete(api, other['id'], target, False, expect=400)
    assert 'Source volume %s not mid-migration' % other['id'] in \
        body['badRequest']['message']
    # a swap Nova never started (nothing attached the temporary volume)
    # is reconciled as a stopped migration: error, the temporary volume
    # deleted
    changes = _reconcile(two)
    assert 'volume %s: temporary volume of %s deleted (migration stopped)' \
        % (target, vid) in changes, changes
    assert ah.volume(api, vid)['migration_status'] == 'error'
    _gone(api, target)
    # nothing was sent to Nova but the one swap
    assert len(nova.seen) == 1
    assert ah.volume(api, shared['id'])['migration_status'] is None
