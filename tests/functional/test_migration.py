"""Migration of volumes to another backend (os-migrate_volume, Cinder's
wire) and retype with migration_policy=on-demand, through the real API,
scheduler and two file backends of one stack: the data arrives byte for
byte, the volume keeps its id, the old storage goes, refusals are
Cinder's 400s."""
import hashlib
import os

import pytest

from tests.harness import clients
from tests.harness.clients import props
from tests.harness import stack as stack_mod
from tests.harness import util

A = {'volume_backend_name': 'back-a'}
B = {'volume_backend_name': 'back-b'}
MiB = 1024 * 1024


@pytest.fixture
def two(tmp_path):
    s = stack_mod.Stack(tmp_path / 'state', backends={'a': A, 'b': B}).start()
    yield s
    s.stop()


def _file(stack, section, volume_id):
    return os.path.join(stack.state_path, 'volumes', section,
                        'volume-%s' % volume_id)


def _fill(path):
    """Write a pattern at a few places of the file (the rest stays a
    hole); returns the digest of the whole file."""
    with open(path, 'r+b') as f:
        for n, offset in enumerate((0, 5 * MiB + 17, 700 * MiB)):
            f.seek(offset)
            f.write(os.urandom(MiB + n))
    return _digest(path)


def _digest(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(8 * MiB), b''):
            h.update(chunk)
    return h.hexdigest()


def _migrate(api, vid, body, version='3.0'):
    return api.post('/volumes/%s/action' % vid,
                    json={'os-migrate_volume': body},
                    headers={'OpenStack-API-Version': 'volume %s' % version})


def _wait_migration(api, vid, want='success'):
    def done():
        v = api.get('/volumes/%s' % vid).json()['volume']
        return v['migration_status'] in ('success', 'error') and v
    vol = util.wait_for(done, timeout=60, what='migration of %s' % vid)
    assert vol['migration_status'] == want, vol
    return vol


def _on(api, section):
    """A volume on backend ``section`` of a type both backends hold (a
    migration, as Cinder's scheduler filters, goes only where the type
    may be): made with a type pinned there, retyped in place."""
    api.create_type('on-%s' % section,
                    {'volume_backend_name': 'back-%s' % section})
    vol = api.create_volume(size=1, volume_type='on-%s' % section)
    if 'either' not in [t['name'] for t in api.get('/types').json()[
            'volume_types']]:
        api.create_type('either',
                        {'volume_backend_name': '<or> back-a <or> back-b'})
    resp = api.post('/volumes/%s/action' % vol['id'], json={
        'os-retype': {'new_type': 'either'}})
    assert resp.status_code == 202, resp.text
    return api.get('/volumes/%s' % vol['id']).json()['volume']


def test_migrate_moves_the_data_and_keeps_the_id(two):
    api = two.client()
    vol = _on(api, 'a')
    assert vol['migration_status'] is None
    assert vol['os-vol-host-attr:host'] == 'testnode@a#back-a'
    digest = _fill(_file(two, 'a', vol['id']))
    resp = _migrate(api, vol['id'], {'host': 'testnode@b#back-b',
                                     'force_host_copy': False,
                                     'lock_volume': True})
    assert resp.status_code == 202, resp.text
    after = _wait_migration(api, vol['id'])
    assert after['status'] == 'available'
    assert after['os-vol-host-attr:host'] == 'testnode@b#back-b'
    assert after['id'] == vol['id']
    assert _digest(_file(two, 'b', vol['id'])) == digest
    # the old storage is gone, the temporary volume too
    util.wait_for(lambda: os.listdir(os.path.join(
        two.state_path, 'volumes', 'a')) == [], timeout=20,
        what='nothing left on a')
    assert os.listdir(os.path.join(two.state_path, 'volumes', 'b')) == [
        'volume-%s' % vol['id']]
    ids = [v['id'] for v in api.get('/volumes/detail').json()['volumes']]
    assert ids == [vol['id']]
    # it works where it is now: extend, delete
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-extend': {'new_size': 2}})
    assert resp.status_code == 202, resp.text
    api.wait_volume(vol['id'], 'available')
    assert os.path.getsize(_file(two, 'b', vol['id'])) == 2 * 1024 ** 3
    grown = _digest(_file(two, 'b', vol['id']))
    # and back (a host without its pool: the backend's pool)
    resp = _migrate(api, vol['id'], {'host': 'testnode@a'})
    assert resp.status_code == 202, resp.text
    back = _wait_migration(api, vol['id'])
    assert back['os-vol-host-attr:host'] == 'testnode@a#back-a'
    assert _digest(_file(two, 'a', vol['id'])) == grown
    util.wait_for(lambda: not os.path.exists(_file(two, 'b', vol['id'])),
                  timeout=20, what='old storage on b removed')
    api.delete('/volumes/%s' % vol['id'])
    api.wait_deleted(vol['id'])


def test_refusals_are_cinders(two):
    api = two.client()
    vol = _on(api, 'a')
    vid = vol['id']

    def refused(body, words, version='3.0', code=400):
        resp = _migrate(api, vid, body, version)
        assert resp.status_code == code, resp.text
        assert words in resp.text, resp.text

    refused({'host': 'testnode@a#back-a'},
            'Destination host must be different than the current host')
    pinned = api.create_volume(size=1, volume_type='on-a')
    resp = _migrate(api, pinned['id'], {'host': 'testnode@b'})
    assert resp.status_code == 400, resp.text
    assert 'testnode@b cannot hold volume %s: its type on-a' % \
        pinned['id'] in resp.text
    refused({'host': 'testnode@nowhere'},
            'No available service named testnode@nowhere')
    refused({}, "'host' is a required property")
    refused({'host': 'testnode@b', 'cluster': 'x'}, 'Additional properties')
    refused({'host': 'testnode@b', 'cluster': 'x'},
            'One and only one of cluster and host must be set', '3.16')
    refused({'host': 'testnode@b', 'bogus': 1}, 'Additional properties')
    # not admin: 403
    user = two.client(user='demo', roles='member')
    resp = user.post('/volumes/%s/action' % vid,
                     json={'os-migrate_volume': {'host': 'testnode@b'}})
    assert resp.status_code == 403, resp.text
    # with a snapshot
    snap = api.post('/snapshots', json={'snapshot': {
        'volume_id': vid}}).json()['snapshot']
    util.wait_for(lambda: api.get('/snapshots/%s' % snap['id']).json()[
        'snapshot']['status'] == 'available', timeout=20, what='snapshot')
    refused({'host': 'testnode@b'},
            'must not be migrating, have snapshots')
    api.delete('/snapshots/%s' % snap['id'])
    util.wait_for(lambda: api.get('/snapshots/%s' % snap['id'])
                  .status_code == 404, timeout=20, what='snapshot gone')
    # in use
    att = api.post('/attachments', json={'attachment': {
        'volume_uuid': vid, 'instance_uuid': vid}},
        headers={'OpenStack-API-Version': 'volume 3.27'})
    assert att.status_code == 200, att.text
    api.post('/volumes/%s/action' % vid, json={'os-reset_status': {
        'status': 'in-use'}})
    refused({'host': 'testnode@b'}, 'is in use')
    api.delete('/attachments/%s' % att.json()['attachment']['id'],
               headers={'OpenStack-API-Version': 'volume 3.27'})
    api.wait_volume(vid, 'available')
    # nothing changed by the refusals
    assert api.get('/volumes/%s' % vid).json()['volume'][
        'migration_status'] is None
    # a destination down
    two.stop_backend('b')
    refused({'host': 'testnode@b'}, 'No available service named')


def test_completion_refusals(two):
    api = two.client()
    vol = _on(api, 'a')
    other = _on(api, 'b')
    resp = api.post('/volumes/%s/action' % vol['id'], json={
        'os-migrate_volume_completion': {'new_volume': other['id']}})
    assert resp.status_code == 400, resp.text
    assert 'Destination volume %s not mid-migration' % other['id'] in \
        resp.text


def test_retype_on_demand_migrates(two):
    api = two.client()
    vol = _on(api, 'a')
    digest = _fill(_file(two, 'a', vol['id']))
    api.create_type('gold', {'volume_backend_name': 'back-b'})

    def retype(policy):
        return api.post('/volumes/%s/action' % vol['id'], json={
            'os-retype': {'new_type': 'gold', 'migration_policy': policy}})
    resp = retype('never')
    assert resp.status_code == 400
    assert 'migration policy is never' in resp.text
    resp = retype('on-demand')
    assert resp.status_code == 202, resp.text
    after = _wait_migration(api, vol['id'])
    util.wait_for(lambda: api.get('/volumes/%s' % vol['id']).json()[
        'volume']['status'] == 'available', timeout=20, what='available')
    after = api.get('/volumes/%s' % vol['id']).json()['volume']
    assert after['volume_type'] == 'gold'
    assert after['os-vol-host-attr:host'] == 'testnode@b#back-b'
    assert _digest(_file(two, 'b', vol['id'])) == digest
    # in place when the backend holds the new type: unchanged behaviour
    api.create_type('silver', {'volume_backend_name': 'back-b'})
    resp = api.post('/volumes/%s/action' % vol['id'], json={
        'os-retype': {'new_type': 'silver',
                      'migration_policy': 'on-demand'}})
    assert resp.status_code == 202, resp.text
    after = api.get('/volumes/%s' % vol['id']).json()['volume']
    assert after['volume_type'] == 'silver'
    assert after['migration_status'] == 'success'


def test_retype_of_a_volume_that_never_reached_a_backend(two):
    """A volume no backend took (error, no host) is refused a retype
    with Cinder's 400, whatever the policy (it has no backend whose
    capabilities could be compared, nor one to migrate from)."""
    api = two.client()
    api.create_type('nowhere', {'volume_backend_name': 'nowhere'})
    api.create_type('gold', {'volume_backend_name': 'back-b'})
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': 'nowhere'}})
    vol = api.wait_volume(resp.json()['volume']['id'], 'error')
    for policy in ('on-demand', 'never'):
        resp = api.post('/volumes/%s/action' % vol['id'], json={
            'os-retype': {'new_type': 'gold', 'migration_policy': policy}})
        assert resp.status_code == 400, resp.text
        assert 'incorrect status: error' in resp.text
    after = api.get('/volumes/%s' % vol['id']).json()['volume']
    assert (after['status'], after['volume_type'],
            after['migration_status']) == ('error', 'nowhere', None)


def test_clients(two):
    """``cinder migrate``, ``cinder retype --migration-policy on-demand``
    and ``openstack volume migrate``, as operators type them."""
    api = two.client()
    vol = _on(api, 'a')
    digest = _fill(_file(two, 'a', vol['id']))
    clients.cinder(two, 'migrate', '--lock-volume', 'True', vol['id'],
                   'testnode@b#back-b')
    moved = _wait_migration(api, vol['id'])
    assert moved['os-vol-host-attr:host'] == 'testnode@b#back-b'
    assert props(clients.cinder(two, 'show', vol['id']))[
        'migration_status'] == 'success'
    clients.openstack(two, 'volume', 'migrate', '--host', 'testnode@a',
                      vol['id'])
    back = _wait_migration(api, vol['id'])
    assert back['os-vol-host-attr:host'] == 'testnode@a#back-a'
    assert _digest(_file(two, 'a', vol['id'])) == digest
    api.create_type('gold-b', {'volume_backend_name': 'back-b'})
    clients.cinder(two, 'retype', '--migration-policy', 'on-demand',
                   vol['id'], 'gold-b')
    _wait_migration(api, vol['id'])
    util.wait_for(lambda: api.get('/volumes/%s' % vol['id']).json()[
        'volume']['status'] == 'available', timeout=20, what='available')
    shown = props(clients.cinder(two, 'show', vol['id']))
    assert shown['volume_type'] == 'gold-b'
    assert shown['os-vol-host-attr:host'] == 'testnode@b#back-b'
    assert _digest(_file(two, 'b', vol['id'])) == digest
    # a refusal reaches the operator with Cinder's words (cinderclient
    # prints it and exits 0)
    out = clients.run_cinder(two, 'migrate', vol['id'], 'testnode@b#back-b')
    assert 'Destination host must be different than the current host. ' \
        '(HTTP 400)' in out.stdout, out


def test_while_it_copies(tmp_path):
    """A throttled copy (volume_copy_bps_limit): meanwhile the temporary
    volume is an admin's to see (``target:<id>``), neither volume can be
    deleted, another migration and the completion are refused; then it
    ends as any other."""
    s = stack_mod.Stack(tmp_path / 'state', backends={'a': A, 'b': B},
                        extra={'volume_copy_bps_limit': 8 * MiB}).start()
    try:
        api = s.client()
        vol = _on(api, 'a')
        path = _file(s, 'a', vol['id'])
        with open(path, 'r+b') as f:
            f.write(os.urandom(48 * MiB))
        digest = _digest(path)
        assert _migrate(api, vol['id'], {'host': 'testnode@b'}
                        ).status_code == 202
        util.wait_for(lambda: api.get('/volumes/%s' % vol['id']).json()[
            'volume']['migration_status'] == 'migrating', timeout=20,
            what='migrating')
        listed = api.get('/volumes/detail').json()['volumes']
        assert len(listed) == 2, listed
        temp = [v for v in listed if v['id'] != vol['id']][0]
        assert temp['migration_status'] == 'target:%s' % vol['id']
        assert temp['os-vol-host-attr:host'] == 'testnode@b#back-b'
        member = s.client(user='demo', roles='member')
        assert [v['id'] for v in member.get('/volumes').json()[
            'volumes']] == [vol['id']]
        for vid in (vol['id'], temp['id']):
            resp = api.delete('/volumes/%s' % vid)
            assert resp.status_code == 400, resp.text
            assert 'Volume cannot be deleted while migrating' in resp.text
        resp = _migrate(api, vol['id'], {'host': 'testnode@b'})
        assert resp.status_code == 400 and 'must not be migrating' in \
            resp.text, resp.text
        resp = api.post('/volumes/%s/action' % vol['id'], json={
            'os-migrate_volume_completion': {'new_volume': temp['id']}})
        assert resp.status_code == 400, resp.text
        assert 'is being migrated by its volume service' in resp.text
        _wait_migration(api, vol['id'])
        assert _digest(_file(s, 'b', vol['id'])) == digest
        util.wait_for(lambda: api.get('/volumes/%s' % temp['id'])
                      .status_code == 404, timeout=20, what='temp gone')
    finally:
        s.stop()


def test_reset_migration_status(two):
    """os-reset_status with ``migration_status``, as Cinder: its values,
    'none' clearing it."""
    api = two.client()
    vol = _on(api, 'a')

    def reset(value):
        return api.post('/volumes/%s/action' % vol['id'], json={
            'os-reset_status': {'migration_status': value}})
    assert reset('error').status_code == 202
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'migration_status'] == 'error'
    resp = reset('sideways')
    assert resp.status_code == 400
    assert 'migration_status must be one of' in resp.text
    assert reset('none').status_code == 202
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'migration_status'] is None
