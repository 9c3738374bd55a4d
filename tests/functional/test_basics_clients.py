"""The every-cloud basics through the clients people use: the
python-cinderclient CLI (run in this process) and openstacksdk."""
import functools

import pytest

from tests.harness import clients
from tests.harness.clients import props
from tests.harness.clients import table
from tests.harness import stack as stack_mod


@pytest.fixture
def cinder(stack):
    """``cinder ARGS`` against the stack; returns what it printed."""
    return functools.partial(clients.cinder, stack)


def test_cli_zones_extensions_hosts_summary(cinder, stack):
    zones = table(cinder('availability-zone-list'))
    assert zones == [['Name', 'Status'], ['nova', 'available']]
    extensions = table(cinder('list-extensions'))
    assert ['Hosts', 'Admin-only host administration.', 'os-hosts',
            '2011-06-29T00:00:00+00:00'] in extensions
    stack.client().create_volume(size=2, metadata={'tier': 'gold'})
    summary = props(cinder('summary'))
    assert summary == {'total_size': '2', 'total_count': '1',
                       'metadata': "tier : ['gold']"}


def test_cli_metadata(cinder):
    vol = props(cinder('create', '--name', 'md', '--metadata', 'a=1',
                       '--poll', '1'))
    assert vol['metadata'] == "{'a': '1'}"
    cinder('metadata', 'md', 'set', 'b=2', 'c=3')
    assert props(cinder('metadata-show', 'md')) == {
        'a': '1', 'b': '2', 'c': '3'}
    cinder('metadata', 'md', 'unset', 'a', 'c')
    assert props(cinder('metadata-show', 'md')) == {'b': '2'}
    cinder('metadata-update-all', 'md', 'x=y')
    assert props(cinder('metadata-show', 'md')) == {'x': 'y'}
    listed = table(cinder('list', '--metadata', 'x=y'))
    assert [row[2] for row in listed[1:]] == ['md']
    assert table(cinder('list', '--metadata', 'x=z'))[1:] == []


def test_cli_readonly_and_force_delete(cinder, stack):
    vol = props(cinder('create', '--name', 'ro', '--poll', '1'))
    cinder('readonly-mode-update', 'ro', 'True')
    assert props(cinder('show', 'ro'))['metadata'] == 'readonly : True'
    cinder('readonly-mode-update', 'ro', 'False')
    assert props(cinder('show', 'ro'))['metadata'] == 'readonly : False'
    cinder('reset-state', '--state', 'error', 'ro')
    cinder('force-delete', 'ro')
    stack.client().wait_deleted(vol['id'])


def test_cli_freeze_and_thaw(cinder):
    cinder('freeze-host', 'testnode@file')
    services = table(cinder('service-list', '--withreplication'))
    header = services[0]
    row = [r for r in services if r[1] == 'testnode@file'][0]
    assert row[header.index('Frozen')] == 'True'
    assert row[header.index('Status')] == 'disabled'
    cinder('thaw-host', 'testnode@file')
    services = table(cinder('service-list', '--withreplication'))
    row = [r for r in services if r[1] == 'testnode@file'][0]
    assert row[header.index('Frozen')] == 'False'
    assert row[header.index('Status')] == 'enabled'


def test_openstacksdk(stack):
    import openstack

    conn = openstack.connect(
        auth_type='admin_token',
        auth={'endpoint': '%s/v3/%s' % (stack.url, stack_mod.PROJECT),
              'token': 'admin:%s' % stack_mod.PROJECT},
        block_storage_api_version='3.71')
    bs = conn.block_storage
    assert [(z.name, z.state) for z in bs.availability_zones()] == [
        ('nova', {'available': True})]
    assert 'os-hosts' in [e.alias for e in bs.extensions()]
    vol = bs.create_volume(size=1, name='sdk-basics',
                           metadata={'a': '1'})
    vol = bs.wait_for_status(vol, status='available', wait=30,
                             interval=0.1)
    bs.set_volume_metadata(vol, b='2')
    assert bs.get_volume_metadata(vol).metadata == {'a': '1', 'b': '2'}
    bs.delete_volume_metadata(vol, keys=['a'])
    assert bs.get_volume_metadata(vol).metadata == {'b': '2'}
    summary = bs.summary(all_projects=False)
    assert (summary.total_count, summary.total_size,
            summary.metadata) == (1, 1, {'b': ['2']})
    bs.set_volume_readonly(vol, True)
    assert bs.get_volume(vol.id).metadata == {'b': '2', 'readonly': 'True'}
    service = [s for s in bs.services() if s.host == 'testnode@file'][0]
    bs.freeze_service(service)
    assert [s.is_frozen for s in bs.services()
            if s.host == 'testnode@file'] == [True]
    bs.thaw_service(service)
    bs.delete_volume(vol, force=True)
    bs.wait_for_delete(vol, wait=30, interval=0.1)
