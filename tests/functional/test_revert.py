"""Revert to snapshot (3.40) with the file backend: the volume's bytes
become the snapshot's, Cinder's refusals (400 and 409) change nothing, a
backend failure leaves the volume ``error`` with a user message, a
revert interrupted by a stop of the volume service converges through
reconciliation, and cinderclient's ``revert-to-snapshot`` and
openstackclient's ``volume revert`` drive it."""
import os
import uuid

import sqlalchemy as sa

from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import models
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volumes as db_volumes
from tests.harness import clients
from tests.harness import notifications
from tests.harness.snapshots import snapshot
from tests.harness.snapshots import wait_snapshot
from tests.harness import stack as stack_mod
from tests.harness.volumes import read
from tests.harness.volumes import volume_file
from tests.harness.volumes import write

MiB = 1024 ** 2
OFFSETS = (0, 5 * MiB + 17, 1024 ** 3 - 4096)


def _revert(api, vid, sid, expect=202, **extra):
    resp = api.post('/volumes/%s/action' % vid,
                    json={'revert': dict(extra, snapshot_id=sid)})
    assert resp.status_code == expect, resp.text
    return resp


def _status(api, vid):
    return api.get('/volumes/%s' % vid).json()['volume']['status']


def _snap_status(api, sid):
    return api.get('/snapshots/%s' % sid).json()['snapshot']['status']


def _file_bytes(path):
    with open(path, 'rb') as f:
        return f.read()


def _write_pattern(stack, vid, tag):
    for n, offset in enumerate(OFFSETS):
        write(stack, vid, offset, (b'%s-%d|' % (tag, n)) * 100)


def test_revert_writes_back_the_snapshot_bytes(api, stack):
    vol = api.create_volume(size=1)
    _write_pattern(stack, vol['id'], b'snapshot')
    snap = snapshot(api, vol['id'])
    _write_pattern(stack, vol['id'], b'overwritten-later')
    write(stack, vol['id'], 300 * MiB, b'only after the snapshot')
    assert read(stack, vol['id'], 0, 8) == b'overwrit'

    _revert(api, vol['id'], snap['id'])
    api.wait_volume(vol['id'], 'available')
    assert _snap_status(api, snap['id']) == 'available'
    path = volume_file(stack, vol['id'])
    assert os.path.getsize(path) == 1024 ** 3
    for offset in OFFSETS + (300 * MiB,):
        assert read(stack, vol['id'], offset, 4096) == \
            read(stack, snap['id'], offset, 4096, kind='snapshot')
    # byte for byte, holes included
    assert _file_bytes(path) == _file_bytes(
        volume_file(stack, snap['id'], 'snapshot'))
    assert not os.path.exists(path + '.reverting')
    # the snapshot stays, and a volume from it still has its data
    new = api.create_volume(size=1, snapshot_id=snap['id'])
    assert read(stack, new['id'], 0, 10) == b'snapshot-0'


def _unchanged(api, vid, sid, status='available', snap_status='available'):
    assert _status(api, vid) == status
    assert _snap_status(api, sid) == snap_status


def test_refusals_as_cinder(api, stack):
    vol = api.create_volume(size=1)
    resp = _revert(api, vol['id'], None, expect=400)
    assert "doesn't have any snapshots" in resp.json()['badRequest'][
        'message']
    first = snapshot(api, vol['id'])
    second = snapshot(api, vol['id'])
    for sid in (first['id'], None, 'nope'):
        resp = _revert(api, vol['id'], sid, expect=400)
        assert ('Specified snapshot %s is None or not the latest one of '
                'volume %s.' % (sid, vol['id'])) == resp.json()[
                    'badRequest']['message']
    _unchanged(api, vol['id'], second['id'])
    # before 3.40 there is no such action
    old = stack.client(version='3.39')
    resp = old.post('/volumes/%s/action' % vol['id'],
                    json={'revert': {'snapshot_id': second['id']}})
    assert resp.status_code == 404, resp.text
    # a volume that is not there, or of another project
    _revert(api, 'f' * 8 + '-0000-0000-0000-' + '0' * 12, second['id'],
            expect=404)
    other = stack.client(project=stack_mod.OTHER_PROJECT, user='u',
                         roles='member')
    _revert(other, vol['id'], second['id'], expect=404)
    # a reader may not
    reader = stack.client(user='r', roles='reader')
    _revert(reader, vol['id'], second['id'], expect=403)
    # the body is Cinder's: an object
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'revert': 'x'})
    assert resp.status_code == 400, resp.text
    _unchanged(api, vol['id'], second['id'])

    # extended after the snapshot: the sizes differ
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-extend': {'new_size': 2}})
    assert resp.status_code == 202, resp.text
    api.wait_volume(vol['id'], 'available')
    resp = _revert(api, vol['id'], second['id'], expect=400)
    assert resp.json()['badRequest']['message'] == (
        "Can't revert volume %s to its latest snapshot %s. The volume "
        'size must be equal to the snapshot size.'
        % (vol['id'], second['id']))
    _unchanged(api, vol['id'], second['id'])


def test_status_refusals_are_conflicts(api, stack):
    vol = api.create_volume(size=1)
    snap = snapshot(api, vol['id'])
    volume_message = ("Can't revert volume %s to its latest snapshot %s. "
                      "Volume's status must be 'available'." % (
                          vol['id'], snap['id']))
    # attached: reserved, then in use
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4())}})
    assert resp.status_code == 200, resp.text
    att = resp.json()['attachment']['id']
    assert _status(api, vol['id']) == 'reserved'
    resp = _revert(api, vol['id'], snap['id'], expect=409)
    assert resp.json()['conflictingRequest']['message'] == volume_message
    api.delete('/attachments/%s' % att)
    api.wait_volume(vol['id'], 'available')

    # a shared volume in use by two servers
    api.create_type('shared', {'multiattach': '<is> True'})
    shared = api.create_volume(size=1, volume_type='shared')
    shared_snap = snapshot(api, shared['id'])
    for host in ('h1', 'h2'):
        resp = api.post('/attachments', json={'attachment': {
            'volume_uuid': shared['id'], 'instance_uuid': str(uuid.uuid4()),
            'connector': {'host': host, 'ip': '127.0.0.1',
                          'initiator': 'iqn.2026-12.org.example:' + host},
            'mode': 'rw'}},
            headers={'OpenStack-API-Version': 'volume 3.54'})
        assert resp.status_code == 200, resp.text
        resp = api.post('/attachments/%s/action' % resp.json()[
            'attachment']['id'], json={'os-complete': None})
        assert resp.status_code == 204, resp.text
    assert _status(api, shared['id']) == 'in-use'
    resp = _revert(api, shared['id'], shared_snap['id'], expect=409)
    assert "Volume's status must be 'available'" in resp.json()[
        'conflictingRequest']['message']
    _unchanged(api, shared['id'], shared_snap['id'], status='in-use')

    # the snapshot is not available
    resp = api.post('/snapshots/%s/action' % snap['id'],
                    json={'os-reset_status': {'status': 'error'}})
    assert resp.status_code == 202, resp.text
    resp = _revert(api, vol['id'], snap['id'], expect=409)
    assert resp.json()['conflictingRequest']['message'] == (
        "Can't revert volume %s to its latest snapshot %s. Snapshot's "
        "status must be 'available'." % (vol['id'], snap['id']))
    _unchanged(api, vol['id'], snap['id'], snap_status='error')


def test_a_backend_failure_leaves_error_and_a_message(api, stack):
    vol = api.create_volume(size=1)
    write(stack, vol['id'], 0, b'kept')
    snap = snapshot(api, vol['id'])
    # the snapshot's copy is gone from the backend
    os.unlink(volume_file(stack, snap['id'], 'snapshot'))
    _revert(api, vol['id'], snap['id'])
    api.wait_volume(vol['id'], 'error')
    assert _snap_status(api, snap['id']) == 'available'
    messages = [m for m in api.get('/messages').json()['messages']
                if m['resource_uuid'] == vol['id']]
    assert [m['event_id'] for m in messages] == ['VOLUME_VOLUME_101_001']
    assert 'revert volume to snapshot %s' % snap['id'] in \
        messages[0]['user_message']
    assert read(stack, vol['id'], 0, 4) == b'kept'


def _set(model, row_id, **values):
    with db_api.writer() as session:
        session.execute(sa.update(model).where(model.id == row_id)
                        .values(**values))


def test_an_interrupted_revert_converges_to_error(api, stack):
    """What the API's transaction leaves before the cast (the volume
    reverting, the snapshot restoring) and half a copy under the
    temporary name: the service stopped mid-revert."""
    manager = stack.volume_service('file').endpoints[0]
    vol = api.create_volume(size=1)
    write(stack, vol['id'], 0, b'new data')
    snap = snapshot(api, vol['id'])
    path = volume_file(stack, vol['id'])
    _set(models.Volume, vol['id'], status=states.REVERTING)
    _set(models.Snapshot, snap['id'], status=states.RESTORING)
    with open(path + '.reverting', 'wb') as f:
        f.write(b'half')
    assert _status(api, vol['id']) == 'reverting'

    changes = manager.reconcile_now(max_age=0)

    assert changes == [
        'volume %s: reverting -> error (revert to a snapshot interrupted; '
        'what the volume holds is not known)' % vol['id']]
    assert _status(api, vol['id']) == 'error'
    assert _snap_status(api, snap['id']) == 'available'
    messages = [m for m in api.get('/messages').json()['messages']
                if m['resource_uuid'] == vol['id']]
    assert len(messages) == 1 and 'interrupted' in \
        messages[0]['user_message']
    # the revert that was queued arrives late: the volume is settled
    with db_api.reader() as session:
        volume = db_volumes.summary(db_volumes.get(session, vol['id']))
        snap_row = db_snapshots.summary(db_snapshots.get(session,
                                                         snap['id']))
    write(stack, vol['id'], 0, b'after   ')
    manager.revert_to_snapshot(manager.admin_context(), volume, snap_row)
    assert read(stack, vol['id'], 0, 8) == b'after   '
    assert _status(api, vol['id']) == 'error'
    assert manager.reconcile_now(max_age=0) == []

    # the operator resets it; a revert then works and clears the leftover
    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-reset_status': {'status': 'available'}})
    assert resp.status_code == 202, resp.text
    _revert(api, vol['id'], snap['id'])
    api.wait_volume(vol['id'], 'available')
    assert read(stack, vol['id'], 0, 8) == b'new data'
    assert not os.path.exists(path + '.reverting')
    wait_snapshot(api, snap['id'])

    # a snapshot left restoring under a volume that is not reverting (an
    # operator reset the volume while its service was down): available
    _set(models.Snapshot, snap['id'], status=states.RESTORING)
    assert manager.reconcile_now(max_age=0) == [
        'snapshot %s: restoring -> available' % snap['id']]
    assert _snap_status(api, snap['id']) == 'available'


def test_cinderclient_and_openstackclient(stack):
    api = stack.client()
    vol = api.create_volume(size=1, name='rv')
    write(stack, vol['id'], 0, b'first')
    snap = snapshot(api, vol['id'], name='rv-snap')
    write(stack, vol['id'], 0, b'second')
    result = clients.run_cinder(stack, 'revert-to-snapshot', 'rv-snap',
                                version='3.40')
    assert result.returncode == 0, (result.stdout, result.stderr)
    api.wait_volume(vol['id'], 'available')
    assert read(stack, vol['id'], 0, 5) == b'first'
    # before 3.40 cinderclient does not offer it
    result = clients.run_cinder(stack, 'revert-to-snapshot', 'rv-snap',
                                version='3.39')
    assert result.returncode != 0

    write(stack, vol['id'], 0, b'third')
    clients.openstack(stack, 'volume', 'revert', 'rv-snap', version='3.40')
    api.wait_volume(vol['id'], 'available')
    assert read(stack, vol['id'], 0, 5) == b'first'
    wait_snapshot(api, snap['id'])
    # a revert to a snapshot that is not the latest: cinder says why
    snapshot(api, vol['id'], name='rv-snap-2')
    result = clients.run_cinder(stack, 'revert-to-snapshot', 'rv-snap',
                                version='3.40')
    assert result.returncode == 1
    assert 'not the latest one' in result.stderr


def test_notifications(tmp_path):
    with notifications.listening(tmp_path / 'state', 'cl_reverts') as (
            s, found):
        api = s.client()
        vol = api.create_volume()
        snap = snapshot(api, vol['id'])
        _revert(api, vol['id'], snap['id'])
        api.wait_volume(vol['id'], 'available')
        found.wait_for('volume.revert.start', 'volume.revert.end')
        payloads = found.payloads('volume.revert.')
        assert payloads['volume.revert.start']['status'] == 'reverting'
        assert payloads['volume.revert.end']['status'] == 'available'
        assert payloads['volume.revert.end']['volume_id'] == vol['id']
