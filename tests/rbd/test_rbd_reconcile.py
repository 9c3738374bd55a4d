"""Reconciliation after a crash on the RBD backend (the twin of
tests/dataplane/test_reconcile.py): each state is made the way the
interrupted code path makes it, then the volume service's reconcile
runs; what is checked is in the pool, as admin (``rbd ls``, ``ceph auth
get client.cinder-lite.<attachment id>``, the export records in the
omap of ``cinder_lite.exports.<section>``)."""
import subprocess
import uuid

import sqlalchemy as sa

from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import models
from cinder_lite.db import volumes as db_volumes
from tests.harness import dataplane as dp


def _manager(s):
    return s.volume_service('rbd').endpoints[0]


def _images(ceph):
    return set(ceph.run('rbd', '--conf', ceph.conf, '--keyring',
                        ceph.admin_keyring, 'ls', ceph.pool).split())


def _key_exists(ceph, attachment_id):
    done = subprocess.run(
        ['ceph', '--conf', ceph.conf, '--keyring', ceph.admin_keyring,
         'auth', 'get', 'client.cinder-lite.%s' % attachment_id],
        capture_output=True, timeout=60)
    return done.returncode == 0


def _records(ceph, section='rbd'):
    done = subprocess.run(
        ['rados', '--conf', ceph.conf, '--keyring', ceph.admin_keyring,
         '-p', ceph.pool, 'listomapkeys', 'cinder_lite.exports.%s'
         % section], capture_output=True, text=True, timeout=60)
    return set(done.stdout.split())


def _row(volume_id):
    with db_api.reader() as session:
        return db_volumes.get(session, volume_id)


def _set_volume(volume_id, **values):
    with db_api.writer() as session:
        session.execute(sa.update(models.Volume).where(
            models.Volume.id == volume_id).values(**values))


def test_a_key_no_attachment_accounts_for_is_removed(rbd_stack, ceph):
    api = rbd_stack.client()
    vol = api.create_volume()
    manager = _manager(rbd_stack)
    host = dp.attacher(rbd_stack, 'a')
    kept = host.attach(vol['id'], str(uuid.uuid4()))
    # an export made by a connect whose attachment row never got written
    # (or was deleted while the service was down)
    orphan = str(uuid.uuid4())
    manager.driver.create_export(db_volumes.summary(_row(vol['id'])),
                                 host.connector, 'rw', orphan)
    assert _key_exists(ceph, orphan) and orphan in _records(ceph)

    manager.reconcile_exports()

    assert not _key_exists(ceph, orphan)
    assert orphan not in _records(ceph)
    # the live attachment's export stays
    assert _key_exists(ceph, kept['id'])
    assert manager.driver.list_exports() == [kept['id']]
    # and one that lost its key (removed by hand) gets it back
    ceph.ceph('auth', 'del', 'client.cinder-lite.%s' % kept['id'])
    manager.reconcile_exports()
    assert _key_exists(ceph, kept['id'])
    host.detach(kept['id'])
    api.wait_volume(vol['id'], 'available')
    assert not _key_exists(ceph, kept['id'])


def test_interrupted_connect_loses_its_key(rbd_stack, ceph):
    api = rbd_stack.client()
    vol = api.create_volume()
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4())}})
    att = resp.json()['attachment']
    connector = dp.attacher(rbd_stack, 'b').connector
    # the API moved it to attaching, the flow made the key, then the
    # service died before recording the connection
    with db_api.writer() as session:
        db_attachments.lock_volume(session, vol['id'])
        db_attachments.transition(
            session, att['id'], 'connect',
            values={'attach_mode': 'rw', 'connector': connector,
                    'attached_host': connector['host']})
        db_attachments.sync_volume_status(session, vol['id'])
    manager = _manager(rbd_stack)
    manager.driver.create_export(db_volumes.summary(_row(vol['id'])),
                                 connector, 'rw', att['id'])
    assert _key_exists(ceph, att['id'])

    changes = manager.reconcile_now(max_age=0)

    assert changes == ['attachment %s: attaching -> error_attaching'
                       % att['id']]
    assert not _key_exists(ceph, att['id'])
    assert manager.driver.list_exports() == []
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'
    assert api.delete('/attachments/%s' % att['id']).status_code == 200


def test_interrupted_detach_is_rolled_forward(rbd_stack, ceph):
    api = rbd_stack.client()
    vol = api.create_volume()
    host = dp.attacher(rbd_stack, 'a')
    att = host.attach(vol['id'], str(uuid.uuid4()))
    assert _key_exists(ceph, att['id'])
    # what the API records before it calls the backend, which then died
    with db_api.writer() as session:
        db_attachments.lock_volume(session, vol['id'])
        db_attachments.transition(
            session, att['id'], 'start_disconnect',
            values={'operation': states.DISCONNECTING})
        db_attachments.sync_volume_status(session, vol['id'])
    manager = _manager(rbd_stack)
    assert manager.reconcile_now() == []       # younger than reconcile_after
    changes = manager.reconcile_now(max_age=0)
    assert changes == ['attachment %s: detaching -> detached' % att['id']]
    assert not _key_exists(ceph, att['id'])
    assert att['id'] not in _records(ceph)
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'
    assert manager.reconcile_now(max_age=0) == []


def test_interrupted_volume_work_converges(rbd_stack, ceph):
    api = rbd_stack.client()
    manager = _manager(rbd_stack)
    creating, deleting, extending = (api.create_volume() for _ in range(3))
    # the create cast was taken but the image never made
    ceph.run('rbd', '--conf', ceph.conf, '--keyring', ceph.admin_keyring,
             'rm', '%s/volume-%s' % (ceph.pool, creating['id']))
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
    images = _images(ceph)
    assert 'volume-%s' % creating['id'] in images
    assert 'volume-%s' % deleting['id'] not in images
    assert api.get('/volumes/%s' % deleting['id']).status_code == 404
    assert manager.reconcile_now(max_age=0) == []
    # a create run again (a queued cast after reconcile did it) keeps
    # the data
    host = dp.attacher(rbd_stack, 'a')
    att, dev = host.attach_device(creating['id'])
    dev.write(0, b'precious')
    dev.flush()
    host.detach(att['id'], dev)
    api.wait_volume(creating['id'], 'available')
    manager.create_volume(manager.admin_context(), creating['id'],
                          db_volumes.summary(_row(creating['id'])))
    att, dev = host.attach_device(creating['id'])
    assert dev.read(0, 8) == b'precious'
    host.detach(att['id'], dev)
    api.wait_volume(creating['id'], 'available')

    for vid in (creating['id'], extending['id']):
        assert api.delete('/volumes/%s' % vid).status_code == 202
        api.wait_deleted(vid)
    assert not {'volume-%s' % v['id'] for v in (
        creating, deleting, extending)} & _images(ceph)
    assert _records(ceph) == set()
