"""Manage and unmanage through the clients people use:
python-cinderclient's ``manage``, ``unmanage``, ``manageable-list``,
``snapshot-manage``, ``snapshot-unmanage``, ``snapshot-manageable-list``
and python-openstackclient's ``volume create --remote-source``,
``volume delete --remote``, ``volume snapshot create --remote-source``
and ``volume snapshot delete --remote`` (run in this process against the
stack)."""
import os

from tests.harness import clients
from tests.harness.clients import props
from tests.harness.clients import table
from tests.harness.snapshots import wait_gone
from tests.harness.snapshots import wait_snapshot

GiB = 1024 ** 3
POOL = 'testnode@file#file'


def _put(stack, name, size):
    with open(os.path.join(stack.state_path, 'volumes', 'file', name),
              'wb') as f:
        f.truncate(size)


def test_cinder_cli(stack):
    api = stack.client()
    _put(stack, 'cli.img', 2 * GiB)
    rows = table(clients.cinder(stack, 'manageable-list', '--detailed',
                                'True', 'testnode@file'))
    assert rows[0][:3] == ['reference', 'size', 'safe_to_manage'], rows
    assert rows[1][1:3] == ['2', 'True'] and 'cli.img' in rows[1][0], rows
    made = props(clients.cinder(stack, 'manage', '--name', 'cli',
                                '--id-type', 'source-name', POOL,
                                'cli.img'))
    vol = api.wait_volume(made['id'], 'available')
    assert vol['size'] == 2 and vol['name'] == 'cli'
    snap = props(clients.cinder(stack, 'snapshot-create', 'cli'))
    wait_snapshot(api, snap['id'])
    clients.cinder(stack, 'snapshot-unmanage', snap['id'])
    wait_gone(api, snap['id'])
    rows = table(clients.cinder(stack, 'snapshot-manageable-list',
                                'testnode@file'))
    assert any('snapshot-%s' % snap['id'] in r[0] for r in rows[1:]), rows
    again = props(clients.cinder(stack, 'snapshot-manage', '--name', 'back',
                                 vol['id'], 'snapshot-%s' % snap['id']))
    wait_snapshot(api, again['id'])
    clients.cinder(stack, 'snapshot-delete', again['id'])
    wait_gone(api, again['id'])
    clients.cinder(stack, 'unmanage', vol['id'])
    api.wait_deleted(vol['id'])
    assert os.path.exists(os.path.join(stack.state_path, 'volumes', 'file',
                                       'volume-%s' % vol['id']))


def test_openstack_cli(stack):
    api = stack.client()
    _put(stack, 'osc.img', GiB)
    made = props(clients.openstack(
        stack, 'volume', 'create', '--remote-source', 'source-name=osc.img',
        '--host', POOL, 'osc-managed'))
    vol = api.wait_volume(made['id'], 'available')
    assert vol['size'] == 1
    snap = api.post('/snapshots', json={'snapshot': {
        'volume_id': vol['id']}}).json()['snapshot']
    wait_snapshot(api, snap['id'])
    clients.openstack(stack, 'volume', 'snapshot', 'delete', '--remote',
                      snap['id'])
    wait_gone(api, snap['id'])
    again = props(clients.openstack(
        stack, 'volume', 'snapshot', 'create', '--volume', vol['id'],
        '--remote-source', 'source-name=snapshot-%s' % snap['id'],
        'osc-snap'))
    wait_snapshot(api, again['id'])
    assert api.delete('/snapshots/%s' % again['id']).status_code == 202
    wait_gone(api, again['id'])
    clients.openstack(stack, 'volume', 'delete', '--remote', 'osc-managed')
    api.wait_deleted(vol['id'])
