"""The reconciliation rules (cinder_lite.volume.reconcile) on the states a
crash leaves behind.  Each state is made the way the interrupted code path
makes it (the API's half of a detach, a connect flow's export without its
record, a cast the service never finished), then the volume service's
reconcile runs; exports are real nbdkit processes."""
import os
import uuid

import sqlalchemy as sa

from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import models
from cinder_lite.db import volumes as db_volumes
from tests.harness import dataplane as dp
from tests.harness import stack
from tests.harness import util


def _manager(s):
    return s.volume_service('file').endpoints[0]


def _attachment(api, attachment_id):
    return api.get('/attachments/%s' % attachment_id).json()['attachment']


def _set_volume(volume_id, **values):
    with db_api.writer() as session:
        session.execute(sa.update(models.Volume).where(
            models.Volume.id == volume_id).values(**values))


def test_interrupted_detach_is_rolled_forward(nbd_stack):
    api = nbd_stack.client()
    vol = api.create_volume()
    host = dp.attacher(nbd_stack, 'a')
    att = host.attach(vol['id'], str(uuid.uuid4()))
    path = dp.volume_path(nbd_stack, vol['id'])
    assert len(util.processes('nbdkit', path)) == 1
    # what the API records before it calls the backend, which then died
    with db_api.writer() as session:
        db_attachments.lock_volume(session, vol['id'])
        db_attachments.transition(
            session, att['id'], 'start_disconnect',
            values={'operation': states.DISCONNECTING})
        db_attachments.sync_volume_status(session, vol['id'])
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'detaching'
    manager = _manager(nbd_stack)
    # younger than reconcile_after: left alone
    assert manager.reconcile_now() == []
    changes = manager.reconcile_now(max_age=0)
    assert changes == ['attachment %s: detaching -> detached' % att['id']]
    assert api.get('/attachments/%s' % att['id']).status_code == 404
    assert util.processes('nbdkit', path) == []
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'
    assert manager.reconcile_now(max_age=0) == []


def test_interrupted_connect_loses_its_half_made_export(nbd_stack):
    api = nbd_stack.client()
    vol = api.create_volume()
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4())}})
    att = resp.json()['attachment']
    connector = dp.attacher(nbd_stack, 'b').connector
    # the API moved it to attaching, the flow exported, then the service
    # died before recording the connection
    with db_api.writer() as session:
        db_attachments.lock_volume(session, vol['id'])
        db_attachments.transition(
            session, att['id'], 'connect',
            values={'attach_mode': 'rw', 'connector': connector,
                    'attached_host': connector['host']})
        db_attachments.sync_volume_status(session, vol['id'])
    manager = _manager(nbd_stack)
    path = dp.volume_path(nbd_stack, vol['id'])
    manager.driver.create_export(db_volumes.summary(_row(vol['id'])),
                                 connector, 'rw', att['id'])
    assert len(util.processes('nbdkit', path)) == 1

    changes = manager.reconcile_now(max_age=0)

    assert changes == ['attachment %s: attaching -> error_attaching'
                       % att['id']]
    shown = _attachment(api, att['id'])
    assert shown['status'] == 'error_attaching'
    assert 'connect interrupted' in shown['status_reason']
    assert util.processes('nbdkit', path) == []
    assert manager.driver.list_exports() == []
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'
    assert api.delete('/attachments/%s' % att['id']).status_code == 200


def test_interrupted_volume_work_converges(nbd_stack):
    api = nbd_stack.client()
    manager = _manager(nbd_stack)
    creating, deleting, extending = (api.create_volume() for _ in range(3))
    # the create cast was taken but the file never written
    os.unlink(dp.volume_path(nbd_stack, creating['id']))
    _set_volume(creating['id'], status=states.CREATING)
    # the delete cast was taken, the service died before finishing
    _set_volume(deleting['id'], status=states.DELETING)
    # the extend was interrupted
    _set_volume(extending['id'], status=states.EXTENDING)

    changes = sorted(manager.reconcile_now(max_age=0))

    assert changes == sorted([
        'volume %s: creating -> available (create rolled forward)'
        % creating['id'],
        'volume %s: deleting -> deleted (delete rolled forward)'
        % deleting['id'],
        'volume %s: extending -> available (extend interrupted; size stays '
        '1 GiB)' % extending['id']])
    assert os.path.getsize(dp.volume_path(nbd_stack, creating['id'])) == \
        1024 ** 3
    assert not os.path.exists(dp.volume_path(nbd_stack, deleting['id']))
    assert api.get('/volumes/%s' % deleting['id']).status_code == 404
    messages = api.get('/messages').json()['messages']
    assert [m['resource_uuid'] for m in messages
            if 'extend' in m['user_message'].lower()
            or 'interrupted' in str(m)] == [extending['id']]
    assert manager.reconcile_now(max_age=0) == []


def test_a_create_rolled_forward_keeps_existing_data(nbd_stack):
    """A create that is run again (a queued cast after a reconcile did it)
    must not wipe the volume."""
    api = nbd_stack.client()
    vol = api.create_volume()
    path = dp.volume_path(nbd_stack, vol['id'])
    with open(path, 'r+b') as f:
        f.write(b'precious')
    manager = _manager(nbd_stack)
    manager.create_volume(manager.admin_context(), vol['id'],
                          db_volumes.summary(_row(vol['id'])))
    with open(path, 'rb') as f:
        assert f.read(8) == b'precious'
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'


def _row(volume_id):
    with db_api.reader() as session:
        return db_volumes.get(session, volume_id)


def _set_snapshot(snapshot_id, **values):
    with db_api.writer() as session:
        session.execute(sa.update(models.Snapshot).where(
            models.Snapshot.id == snapshot_id).values(**values))


def _snapshot(api, volume_id):
    resp = api.post('/snapshots', json={'snapshot': {
        'volume_id': volume_id}})
    assert resp.status_code == 202, resp.text
    sid = resp.json()['snapshot']['id']
    util.wait_for(lambda: api.get('/snapshots/%s' % sid).json()[
        'snapshot']['status'] == 'available')
    return sid


def test_interrupted_snapshot_work_converges(nbd_stack):
    api = nbd_stack.client()
    manager = _manager(nbd_stack)
    vol = api.create_volume()
    with open(dp.volume_path(nbd_stack, vol['id']), 'r+b') as f:
        f.write(b'before the crash')
    creating, deleting = _snapshot(api, vol['id']), _snapshot(api,
                                                              vol['id'])
    folder = os.path.dirname(dp.volume_path(nbd_stack, vol['id']))
    made = os.path.join(folder, 'snapshot-%s' % creating)
    # the copy was half made when the service died
    os.rename(made, made + '.creating')
    with open(made + '.creating', 'r+b') as f:
        f.truncate(4096)
    _set_snapshot(creating, status=states.CREATING)
    # the delete cast was taken, the service died before finishing
    _set_snapshot(deleting, status=states.DELETING)

    changes = sorted(manager.reconcile_now(max_age=0))

    assert changes == sorted([
        'snapshot %s: creating -> available' % creating,
        'snapshot %s: deleting -> deleted' % deleting])
    assert not os.path.exists(made + '.creating')
    with open(made, 'rb') as f:
        assert f.read(16) == b'before the crash'
    assert os.path.getsize(made) == 1024 ** 3
    assert not os.path.exists(os.path.join(folder, 'snapshot-%s'
                                           % deleting))
    assert api.get('/snapshots/%s' % deleting).status_code == 404
    assert manager.reconcile_now(max_age=0) == []


def test_an_extend_in_use_holds_off_a_delete_until_it_ends(nbd_stack):
    """An extend of an in-use volume (3.42) keeps its status; while the
    storage grows, the volume records the size it grows to, and a delete
    after a detach (or an extend of the then available volume) is
    refused until the growth ends, so no delete removes the storage from
    under it.  A growth the service never ended (it was killed) is ended
    by reconciliation: the size stays, the owner gets a message, and the
    delete goes ahead."""
    api = nbd_stack.client()
    vol = api.create_volume()
    host = dp.attacher(nbd_stack, 'a')
    att = host.attach(vol['id'], str(uuid.uuid4()))
    # what the volume service records before its driver grows the file
    with db_api.writer() as session:
        assert db_volumes.begin_grow(session, vol['id'], 1, 3) is None
        # a second one meanwhile is refused
        assert db_volumes.begin_grow(session, vol['id'], 1, 4) == \
            'it changed size meanwhile'
    v342 = {'OpenStack-API-Version': 'volume 3.42'}
    refused = api.post('/volumes/%s/action' % vol['id'], headers=v342,
                       json={'os-extend': {'new_size': 2}})
    assert refused.status_code == 400
    assert 'changed size meanwhile' in refused.json()[
        'badRequest']['message']
    host.detach(att['id'])
    api.wait_volume(vol['id'], 'available')
    before = api.get('/os-quota-sets/%s?usage=true' % stack.PROJECT).json()
    # the growth is reserved while it runs
    assert before['quota_set']['gigabytes'] == dict(
        before['quota_set']['gigabytes'], in_use=1, reserved=2)
    refused = api.delete('/volumes/%s' % vol['id'])
    assert refused.status_code == 400
    assert refused.json()['badRequest']['message'] == (
        'Invalid volume: Volume %s is being extended to 3 GiB; delete it '
        'once the extend has finished.' % vol['id'])
    refused = api.post('/volumes/%s/action' % vol['id'],
                       json={'os-extend': {'new_size': 5}})
    assert refused.status_code == 400, refused.text
    assert 'extending to 3 GiB' in refused.json()['badRequest']['message']
    path = dp.volume_path(nbd_stack, vol['id'])
    assert os.path.exists(path)

    manager = _manager(nbd_stack)
    assert manager.reconcile_now() == []
    assert manager.reconcile_now(max_age=0) == [
        'volume %s: available (extend in use to 3 GiB interrupted; size '
        'stays 1 GiB)' % vol['id']]
    shown = api.get('/volumes/%s' % vol['id']).json()['volume']
    assert (shown['size'], shown['status']) == (1, 'available')
    after = api.get('/os-quota-sets/%s?usage=true' % stack.PROJECT).json()
    assert after['quota_set']['gigabytes'] == dict(
        after['quota_set']['gigabytes'], in_use=1, reserved=0)
    messages = [m for m in api.get('/messages').json()['messages']
                if m['resource_uuid'] == vol['id']]
    assert len(messages) == 1 and 'interrupted' in messages[0][
        'user_message'], messages
    assert manager.reconcile_now(max_age=0) == []
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])
    assert not os.path.exists(path)


def _connected_then_lost(nbd_stack, api):
    """An attachment whose connect ended on the service (its export
    runs, its connection recorded) after the API had given up waiting
    and recorded it ``error_attaching`` (what ``connect_lost`` does)."""
    vol = api.create_volume()
    connector = dp.attacher(nbd_stack, 'b').connector
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4()),
        'connector': connector}})
    assert resp.status_code == 200, resp.text
    att = resp.json()['attachment']
    assert db_api.run_writer(db_attachments.record_failure, att['id'],
                             'connect_lost', 'the API gave up waiting')
    path = dp.volume_path(nbd_stack, vol['id'])
    assert len(util.processes('nbdkit', path)) == 1
    return vol, att, connector, path


def test_export_of_error_attaching_is_removed(nbd_stack):
    api = nbd_stack.client()
    vol, att, _connector, path = _connected_then_lost(nbd_stack, api)
    manager = _manager(nbd_stack)

    changes = manager.reconcile_now(max_age=0)

    assert changes == ['attachment %s: export of error_attaching removed'
                       % att['id']]
    assert util.processes('nbdkit', path) == []
    assert manager.driver.list_exports() == []
    assert _attachment(api, att['id'])['status'] == 'error_attaching'
    assert manager.reconcile_now(max_age=0) == []
    assert api.delete('/attachments/%s' % att['id']).status_code == 200


def test_connect_again_while_the_export_is_removed_keeps_it(nbd_stack):
    """The race the removal after the commit leaves open: reconcile read
    the attachment ``error_attaching`` (under the lock, committed), a
    connect again through this service then connected it, and only then
    did the removal land.  The read after the removal sees it moved on
    and connected here: its export is made again."""
    from cinder_lite.volume import reconcile
    api = nbd_stack.client()
    vol, att, connector, path = _connected_then_lost(nbd_stack, api)
    manager = _manager(nbd_stack)
    seen = db_api.run_writer(reconcile._error_attaching, vol['id'],
                             att['id'])
    assert seen is not None
    resp = api.put('/attachments/%s' % att['id'], json={'attachment': {
        'connector': connector}})
    assert resp.status_code == 200, resp.text
    volume = db_volumes.summary(_row(vol['id']))
    manager.driver.remove_export(volume, None, att['id'], False)
    assert util.processes('nbdkit', path) == []

    reconcile._export_back_if_moved_on(manager._reconcile_backend(),
                                       att['id'], volume, seen)

    assert len(util.processes('nbdkit', path)) == 1
    assert manager.driver.list_exports() == [att['id']]
    resp = api.post('/attachments/%s/action' % att['id'],
                    json={'os-complete': None})
    assert resp.status_code == 204, resp.text
    assert api.delete('/attachments/%s' % att['id']).status_code == 200
    assert util.processes('nbdkit', path) == []
