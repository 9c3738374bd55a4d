"""Snapshots and volumes from them through the clients people use:
python-cinderclient's CLI, python-openstackclient's and openstacksdk
(run in this process against the stack)."""
import functools

import pytest

from tests.harness import clients
from tests.harness.clients import props
from tests.harness.clients import table
from tests.harness import stack as stack_mod
from tests.harness import util


@pytest.fixture
def cinder(stack):
    return functools.partial(clients.cinder, stack)


def _wait(api, path, key, status='available'):
    util.wait_for(lambda: api.get(path).json()[key]['status'] == status,
                  what='%s %s' % (path, status))


def test_cinder_cli(cinder, stack):
    api = stack.client()
    vol = props(cinder('create', '--name', 'src', '--poll', '1'))
    snap = props(cinder('snapshot-create', '--force', 'True', '--name',
                        'snap1', '--metadata', 'a=1', 'src'))
    _wait(api, '/snapshots/%s' % snap['id'], 'snapshot')
    listed = table(cinder('snapshot-list'))
    assert [r[1:3] for r in listed[1:]] == [[vol['id'], 'available']]
    shown = props(cinder('snapshot-show', 'snap1'))
    assert shown['status'] == 'available' and shown['size'] == '1'
    cinder('snapshot-metadata', 'snap1', 'set', 'b=2')
    assert props(cinder('snapshot-metadata-show', 'snap1')) == {
        'a': '1', 'b': '2'}
    cinder('snapshot-rename', 'snap1', 'snap2')
    new = props(cinder('create', '--snapshot-id', snap['id'], '--name',
                       'restored', '--poll', '2'))
    assert new['snapshot_id'] == snap['id'] and new['size'] == '2'
    clone = props(cinder('create', '--source-volid', vol['id'], '--name',
                         'clone', '--poll', '1'))
    assert clone['source_volid'] == vol['id']
    cinder('snapshot-reset-state', '--state', 'error', 'snap2')
    cinder('snapshot-delete', '--force', 'snap2')
    util.wait_for(lambda: api.get('/snapshots/%s' % snap['id'])
                  .status_code == 404)
    s2 = props(cinder('snapshot-create', 'src'))
    _wait(api, '/snapshots/%s' % s2['id'], 'snapshot')
    cinder('delete', '--cascade', 'src')
    api.wait_deleted(vol['id'])
    assert api.get('/snapshots/%s' % s2['id']).status_code == 404


def test_openstack_cli(stack):
    api = stack.client()
    vol = api.create_volume(name='osc-src')
    snap = props(clients.openstack(
        stack, 'volume', 'snapshot', 'create', '--volume', 'osc-src',
        '--force', 'osc-snap'))
    _wait(api, '/snapshots/%s' % snap['id'], 'snapshot')
    new = props(clients.openstack(stack, 'volume', 'create', '--snapshot',
                                  'osc-snap', 'osc-restored'))
    assert new['snapshot_id'] == snap['id']
    clone = props(clients.openstack(stack, 'volume', 'create', '--source',
                                    'osc-src', 'osc-clone'))
    assert clone['source_volid'] == vol['id']
    for v in (new, clone):
        api.wait_volume(v['id'], 'available')
    listed = table(clients.openstack(stack, 'volume', 'snapshot', 'list'))
    assert [r[1] for r in listed[1:]] == ['osc-snap']
    clients.openstack(stack, 'volume', 'snapshot', 'delete', 'osc-snap')
    util.wait_for(lambda: api.get('/snapshots/%s' % snap['id'])
                  .status_code == 404)


def test_openstacksdk(stack):
    import openstack

    conn = openstack.connect(
        auth_type='admin_token',
        auth={'endpoint': '%s/v3/%s' % (stack.url, stack_mod.PROJECT),
              'token': 'admin:%s' % stack_mod.PROJECT},
        block_storage_api_version='3.71')
    bs = conn.block_storage
    vol = bs.wait_for_status(bs.create_volume(size=1, name='sdk-src'),
                             status='available', wait=30, interval=0.1)
    snap = bs.create_snapshot(volume_id=vol.id, name='sdk-snap',
                              is_forced=True)
    snap = bs.wait_for_status(snap, status='available', wait=30,
                              interval=0.1)
    assert bs.get_snapshot(snap.id).size == 1
    assert [s.name for s in bs.snapshots(details=True)] == ['sdk-snap']
    new = bs.create_volume(size=2, snapshot_id=snap.id)
    new = bs.wait_for_status(new, status='available', wait=30,
                             interval=0.1)
    assert new.snapshot_id == snap.id
    clone = bs.wait_for_status(bs.create_volume(size=1,
                                                source_volume_id=vol.id),
                               status='available', wait=30, interval=0.1)
    assert clone.source_volume_id == vol.id
    bs.delete_snapshot(snap)
    bs.wait_for_delete(snap, wait=30, interval=0.1)
