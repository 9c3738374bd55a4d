"""Whole lives and racing pairs: a type deleted after (or while) its
volumes go, a volume created while its type is deleted, two detaches of
one attachment at once, a connect and a detach at once, the connector's
mode on a single-writer type, a second connection from one host to a
plain volume.  Every race is fired many times from two threads released
together; whichever request wins, the other gets a clear 4xx and the
state afterwards is one of the legal ones."""
import threading
import uuid

import pytest

from tests.harness.attach import I1, I2, I3, connector, create
from tests.harness.attach import volume as show_volume

ROUNDS = 15


def together(*calls):
    """Run ``calls`` in threads released at the same moment; their
    responses, in order."""
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def run(i, call):
        barrier.wait()
        results[i] = call()

    threads = [threading.Thread(target=run, args=(i, c))
               for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def no_5xx(*responses):
    for resp in responses:
        assert resp.status_code < 500, '%s %s: %d %s' % (
            resp.request.method, resp.request.url, resp.status_code,
            resp.text)


def clients(stack, n=2):
    return [stack.client() for _ in range(n)]


# -- volume types ---------------------------------------------------------
def test_type_whose_volumes_are_deleted_is_deleted(api):
    vtype = api.create_type('short-lived')
    vol = api.create_volume(volume_type='short-lived')
    resp = api.delete('/types/%s' % vtype['id'])
    assert resp.status_code == 400
    assert resp.json()['badRequest']['message'] == \
        'Target volume type is still in use.'
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])
    assert api.delete('/types/%s' % vtype['id']).status_code == 202
    assert api.get('/types/%s' % vtype['id']).status_code == 404
    assert api.delete('/types/%s' % vtype['id']).status_code == 404
    names = [t['name'] for t in api.get('/types').json()['volume_types']]
    assert 'short-lived' not in names
    assert api.get('/types?is_public=none').status_code == 200
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': vtype['id']}})
    assert resp.status_code == 404
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': 'short-lived'}})
    assert resp.status_code == 404
    for path in ('/types/%s/extra_specs' % vtype['id'],
                 '/types/%s/os-volume-type-access' % vtype['id']):
        assert api.get(path).status_code == 404
    # the name is free again
    again = api.create_type('short-lived')
    assert again['id'] != vtype['id']
    api.create_volume(volume_type='short-lived')


def test_type_of_a_volume_being_deleted_is_in_use(api, stack):
    vtype = api.create_type('doomed')
    vol = api.create_volume(volume_type='doomed')
    stack.stop_backend('file')
    # the volume service is down: the volume stays deleting
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    assert show_volume(api, vol['id'])['status'] == 'deleting'
    resp = api.delete('/types/%s' % vtype['id'])
    assert resp.status_code == 400
    assert 'still in use' in resp.json()['badRequest']['message']
    assert api.get('/types/%s' % vtype['id']).status_code == 200


def test_volume_create_racing_type_delete(api, stack):
    """One of the two wins: the volume exists and the type is kept (400),
    or the type is gone and the create is refused (404)."""
    c1, c2 = clients(stack)
    outcomes = set()
    for i in range(ROUNDS):
        vtype = api.create_type('racy-%d' % i)
        created, deleted = together(
            lambda: c1.post('/volumes', json={'volume': {
                'size': 1, 'volume_type': vtype['id']}}),
            lambda: c2.delete('/types/%s' % vtype['id']))
        no_5xx(created, deleted)
        outcomes.add((created.status_code, deleted.status_code))
        assert (created.status_code, deleted.status_code) in (
            (202, 400), (404, 202)), (created.text, deleted.text)
        if created.status_code == 202:
            vol = api.wait_volume(created.json()['volume']['id'],
                                  'available')
            assert vol['volume_type'] == 'racy-%d' % i
            assert api.get('/types/%s' % vtype['id']).status_code == 200
        else:
            assert api.get('/types/%s' % vtype['id']).status_code == 404
    # nothing is left half made
    for vol in api.get('/volumes/detail').json()['volumes']:
        assert vol['status'] == 'available'


def test_retype_racing_type_delete(api, stack):
    c1, c2 = clients(stack)
    vol = api.create_volume()
    for i in range(ROUNDS):
        vtype = api.create_type('target-%d' % i)
        retyped, deleted = together(
            lambda: c1.post('/volumes/%s/action' % vol['id'], json={
                'os-retype': {'new_type': vtype['id']}}),
            lambda: c2.delete('/types/%s' % vtype['id']))
        no_5xx(retyped, deleted)
        assert (retyped.status_code, deleted.status_code) in (
            (202, 400), (404, 202)), (retyped.text, deleted.text)
        now = show_volume(api, vol['id'])
        if retyped.status_code == 202:
            assert now['volume_type'] == 'target-%d' % i
        else:
            assert now['volume_type'] != 'target-%d' % i


# -- two detaches of one attachment -----------------------------------------
@pytest.fixture(autouse=True)
def no_quota(api):
    """The races here create more volumes than the default quota of a
    project (quotas are tested in test_quotas)."""
    resp = api.put('/os-quota-sets/%s' % api.project, json={
        'quota_set': {'volumes': -1, 'gigabytes': -1}})
    assert resp.status_code == 200, resp.text


@pytest.fixture
def ma(api):
    api.create_type('ma', {'multiattach': '<is> True'})
    return api.create_volume(volume_type='ma')


def _connected(api, vol, instance=None, host='compute-1'):
    return create(api, vol['id'], instance or str(uuid.uuid4()),
                  connector(host))


def _second_detach_is_clear(first, second):
    """One detach succeeded; the other says the attachment is gone (404)
    or already being disconnected (409)."""
    no_5xx(first, second)
    codes = sorted([first.status_code, second.status_code])
    assert codes[0] in (200, 202), (first.text, second.text)
    loser = second if second.status_code >= 400 else first
    if loser.status_code >= 400:
        assert loser.status_code in (404, 409), loser.text
        if loser.status_code == 409:
            assert 'being disconnected' in loser.text, loser.text
        assert 'connection' not in loser.text.lower(), loser.text


@pytest.mark.parametrize('other', ['force_detach', 'reset_status', 'delete'])
def test_two_detaches_at_once(api, stack, ma, other):
    c1, c2 = clients(stack)
    for _ in range(ROUNDS):
        att = _connected(api, ma)
        if other == 'force_detach':
            second = lambda: c2.post('/volumes/%s/action' % ma['id'], json={
                'os-force_detach': {'attachment_id': att['id']}})
        elif other == 'reset_status':
            second = lambda: c2.post('/volumes/%s/action' % ma['id'], json={
                'os-reset_status': {'attach_status': 'detached'}})
        else:
            second = lambda: c2.delete('/attachments/%s' % att['id'])
        first, second = together(
            lambda: c1.delete('/attachments/%s' % att['id']), second)
        _second_detach_is_clear(first, second)
        assert api.get('/attachments/%s' % att['id']).status_code == 404
        assert show_volume(api, ma['id'])['status'] == 'available'


def test_detach_racing_a_connect(api, stack, ma):
    """A connect under way is not cut off by a delete: the delete waits
    its turn (409) or comes first and the connect finds nothing (404)."""
    c1, c2 = clients(stack)
    for _ in range(ROUNDS):
        att = create(api, ma['id'], str(uuid.uuid4()))
        connected, deleted = together(
            lambda: c1.put('/attachments/%s' % att['id'], json={
                'attachment': {'connector': connector('compute-9')}}),
            lambda: c2.delete('/attachments/%s' % att['id']))
        no_5xx(connected, deleted)
        pair = (connected.status_code, deleted.status_code)
        assert pair in ((200, 409), (404, 200), (200, 200)), (
            connected.text, deleted.text)
        if deleted.status_code == 409:
            assert 'being connected' in deleted.text
            assert api.get('/attachments/%s' % att['id']).json()[
                'attachment']['status'] == 'attaching'
            assert api.delete('/attachments/%s' % att['id']).status_code \
                == 200
        assert show_volume(api, ma['id'])['status'] == 'available'


# -- modes and connections ------------------------------------------------------
def test_connector_mode_counts_on_a_single_writer_type(api):
    api.create_type('one-writer', {'multiattach': '<is> True', 'mode': 'RO'})
    vol = api.create_volume(volume_type='one-writer')
    reader = create(api, vol['id'], I1, connector('n1', mode='ro'))
    assert reader['attach_mode'] == 'ro'
    assert reader['connection_info']['access_mode'] == 'ro'
    # the writer slot is still free
    writer = create(api, vol['id'], I2, connector('n2', mode='rw'))
    assert writer['attach_mode'] == 'rw'
    # reserved without a mode, connected with the connector's: counts too
    third = create(api, vol['id'], I3)
    upd = api.put('/attachments/%s' % third['id'], json={'attachment': {
        'connector': connector('n3', mode='ro')}})
    assert upd.status_code == 200, upd.text
    assert upd.json()['attachment']['attach_mode'] == 'ro'
    # and one reserved without any mode becomes a reader once a writer
    # exists, whether connected or only completed
    late = create(api, vol['id'], str(uuid.uuid4()))
    assert api.post('/attachments/%s/action' % late['id'], json={
        'os-complete': None}).status_code == 204
    shown = api.get('/attachments/%s' % late['id']).json()['attachment']
    assert shown['attach_mode'] == 'ro'
    modes = sorted(a['attach_mode'] for a in api.get(
        '/attachments/detail?volume_id=%s' % vol['id']).json()[
        'attachments'])
    assert modes == ['ro', 'ro', 'ro', 'rw']


def test_one_connection_per_host_on_a_plain_volume(api):
    vol = api.create_volume()
    first = create(api, vol['id'], I1, connector('host-a'))
    # the same instance again (live migration): not from the same host
    second = create(api, vol['id'], I1)
    resp = api.put('/attachments/%s' % second['id'], json={'attachment': {
        'connector': connector('host-a')}})
    assert resp.status_code == 409
    assert resp.json()['conflictingRequest']['message'] == (
        'Resource conflict: duplicate connectors detected on volume %s'
        % vol['id'])
    assert api.get('/attachments/%s' % second['id']).json()[
        'attachment']['status'] == 'reserved'
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': I1,
        'connector': connector('host-a')}})
    assert resp.status_code == 409
    live = api.get('/attachments?volume_id=%s' % vol['id']).json()[
        'attachments']
    assert sorted(a['id'] for a in live) == sorted([first['id'],
                                                    second['id']])
    # from the destination host it connects
    resp = api.put('/attachments/%s' % second['id'], json={'attachment': {
        'connector': connector('host-b')}})
    assert resp.status_code == 200, resp.text
    assert show_volume(api, vol['id'])['status'] == 'attaching'


def test_migration_status_is_shown_to_admins(api, stack):
    vol = api.create_volume()
    assert show_volume(api, vol['id'])['migration_status'] is None
    listed = api.get('/volumes/detail').json()['volumes']
    assert all(v['migration_status'] is None for v in listed)
    member = stack.client(user='member', roles='member')
    shown = member.get('/volumes/%s' % vol['id']).json()['volume']
    assert 'migration_status' not in shown


# -- found by the stateful fuzzer ------------------------------------------------
def act(client, vid, body):
    return client.post('/volumes/%s/action' % vid, json=body)


def test_os_attach_race_keeps_one_instance_on_a_plain_volume(api, stack):
    """Two os-attach of one reservation for two instances at once: one
    wins, the other is refused, the volume has one instance."""
    c1, c2 = clients(stack)
    for _ in range(ROUNDS):
        vol = api.create_volume()
        assert act(api, vol['id'], {'os-reserve': None}).status_code == 202
        assert act(api, vol['id'], {'os-initialize_connection': {
            'connector': connector('compute-1')}}).status_code == 200
        a, b = str(uuid.uuid4()), str(uuid.uuid4())
        first, second = together(*[
            (lambda inst=inst, c=c: act(c, vol['id'], {'os-attach': {
                'instance_uuid': inst, 'host_name': 'compute-1',
                'mountpoint': '/dev/vdb', 'mode': 'rw'}}))
            for inst, c in ((a, c1), (b, c2))])
        no_5xx(first, second)
        assert sorted([first.status_code, second.status_code]) == \
            [202, 400], (first.text, second.text)
        live = api.get('/attachments/detail?volume_id=%s' % vol['id']).json()[
            'attachments']
        assert len({x['instance'] for x in live}) == 1, live
        winner = a if first.status_code == 202 else b
        assert [x['instance'] for x in live] == [winner]
        assert show_volume(api, vol['id'])['status'] == 'in-use'


def test_os_attach_same_instance_same_host_twice_is_refused(api):
    vol = api.create_volume()
    att = create(api, vol['id'], I1, connector('compute-2'))
    assert api.post('/attachments/%s/action' % att['id'], json={
        'os-complete': None}).status_code == 204
    resp = act(api, vol['id'], {'os-attach': {
        'instance_uuid': I1, 'host_name': 'compute-2',
        'mountpoint': '/dev/vdb', 'mode': 'rw'}})
    assert resp.status_code == 409, resp.text
    assert 'duplicate connectors' in resp.text
    live = api.get('/attachments?volume_id=%s' % vol['id']).json()[
        'attachments']
    assert [x['id'] for x in live] == [att['id']]
    # from another host (a live migration's destination) it may
    resp = act(api, vol['id'], {'os-attach': {
        'instance_uuid': I1, 'host_name': 'compute-3',
        'mountpoint': '/dev/vdb', 'mode': 'rw'}})
    assert resp.status_code == 202, resp.text


def test_two_extends_never_shrink(api, stack):
    """An extend to a size another extend already passed is refused,
    even when both were sent together."""
    c1, c2 = clients(stack)
    for _ in range(ROUNDS):
        vol = api.create_volume()
        bigger, smaller = together(
            lambda: act(c1, vol['id'], {'os-extend': {'new_size': 3}}),
            lambda: act(c2, vol['id'], {'os-extend': {'new_size': 2}}))
        no_5xx(bigger, smaller)
        assert bigger.status_code in (202, 400), bigger.text
        final = api.wait_volume(vol['id'], 'available')
        assert final['size'] in (2, 3)
        if bigger.status_code == 202:
            # the later extend to 2 waits for nothing: refused or done first
            api.wait_volume(vol['id'], 'available')
        resp = act(api, vol['id'], {'os-extend': {'new_size': 2}})
        if final['size'] == 3:
            assert resp.status_code == 400, resp.text
        assert api.get('/volumes/%s' % vol['id']).json()['volume'][
            'status'] in ('available', 'extending')
        api.wait_volume(vol['id'], 'available')


def test_reset_status_leaves_a_running_delete_alone(api, stack):
    vol = api.create_volume()
    stack.stop_backend('file')
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    # the backend is down: the admin may take the volume back
    resp = act(api, vol['id'], {'os-reset_status': {'status': 'error'}})
    assert resp.status_code == 202, resp.text


def test_reset_status_refused_while_the_operation_runs(api, stack):
    """With the volume service up, a volume being deleted keeps its
    status: a reset racing the delete is refused, or comes first."""
    c1, c2 = clients(stack)
    for _ in range(ROUNDS):
        vol = api.create_volume()
        deleted, reset = together(
            lambda: c1.delete('/volumes/%s' % vol['id']),
            lambda: act(c2, vol['id'], {'os-reset_status': {
                'status': 'available'}}))
        no_5xx(deleted, reset)
        assert deleted.status_code == 202, deleted.text
        if reset.status_code == 400:
            assert 'volume service is up' in reset.text, reset.text
        # whatever the order, the volume is gone in the end
        api.wait_deleted(vol['id'])


def test_deleted_type_names_are_kept_apart(api):
    """A deleted type's name becomes '#deleted:<id>', a prefix no live
    type may take, so no create, rename or delete can collide with it."""
    for bad in ('#deleted:x', '#deleted:'):
        resp = api.post('/types', json={'volume_type': {'name': bad}})
        assert resp.status_code == 400, resp.text
    vtype = api.create_type('soon-gone')
    other = api.create_type(vtype['id'])       # a name that is an id
    assert api.delete('/types/%s' % vtype['id']).status_code == 202
    resp = api.put('/types/%s' % other['id'], json={'volume_type': {
        'name': '#deleted:%s' % vtype['id']}})
    assert resp.status_code == 400, resp.text
    assert api.delete('/types/%s' % other['id']).status_code == 202
    assert api.create_type('soon-gone')['id'] != vtype['id']


def test_os_attach_event_names_the_instance_it_attached(api):
    """The audit event of a legacy os-attach carries the instance the
    attachment got, not the none it had while reserved."""
    vol = api.create_volume()
    assert act(api, vol['id'], {'os-reserve': None}).status_code == 202
    assert act(api, vol['id'], {'os-attach': {
        'instance_uuid': I2, 'host_name': 'compute-5',
        'mountpoint': '/dev/vdb', 'mode': 'rw'}}).status_code == 202
    events = api.get('/os-attachment-events?volume_id=%s' % vol['id']).json()[
        'attachment_events']
    attached = [e for e in events if e['to_status'] == 'attached']
    assert [e['instance_uuid'] for e in attached] == [I2], events


def test_roll_detaching_racing_a_detach(api, stack):
    """os-roll_detaching racing the detach of the attachment that
    os-begin_detaching marked: the detach wins or the roll-back does,
    and the attachment can always be deleted afterwards (it was left
    attached with its export gone and its disconnect mark on)."""
    c1, c2 = clients(stack)
    for _ in range(ROUNDS):
        vol = api.create_volume()
        att = create(api, vol['id'], I1, connector('compute-1'))
        assert api.post('/attachments/%s/action' % att['id'], json={
            'os-complete': None}).status_code == 204
        assert act(api, vol['id'], {'os-begin_detaching': None}) \
            .status_code == 202
        deleted, rolled = together(
            lambda: c1.delete('/attachments/%s' % att['id']),
            lambda: act(c2, vol['id'], {'os-roll_detaching': None}))
        no_5xx(deleted, rolled)
        left = api.get('/attachments/%s' % att['id'])
        if left.status_code == 200:
            resp = api.delete('/attachments/%s' % att['id'])
            assert resp.status_code == 200, resp.text
        assert show_volume(api, vol['id'])['status'] == 'available'
        assert api.delete('/volumes/%s' % vol['id']).status_code == 202


def test_reset_status_during_a_create_leaves_it_alone(api):
    """A reset sent right after the create (no host yet, or the volume
    service creating it) is refused; the volume ends available with its
    storage, never 'available' without a file."""
    for _ in range(ROUNDS):
        resp = api.post('/volumes', json={'volume': {'size': 1}})
        assert resp.status_code == 202, resp.text
        vid = resp.json()['volume']['id']
        reset = act(api, vid, {'os-reset_status': {'status': 'available'}})
        no_5xx(reset)
        api.wait_volume(vid, 'available')
        att = api.post('/attachments', json={'attachment': {
            'volume_uuid': vid, 'instance_uuid': str(uuid.uuid4()),
            'connector': connector('compute-7')}})
        no_5xx(att)
        assert att.status_code == 200, att.text
        assert api.delete('/attachments/%s' % att.json()['attachment'][
            'id']).status_code == 200
