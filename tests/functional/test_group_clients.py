"""Groups through the clients people use: python-cinderclient's
``group-type-*``, ``group-*`` and ``group-snapshot-*`` commands and
python-openstackclient's ``volume group type``, ``volume group`` and
``volume group snapshot`` (run in this process against the stack)."""
import functools

import pytest

from tests.harness import clients
from tests.harness.clients import props
from tests.harness.clients import table
from tests.harness import groups as gh
from tests.harness import util


@pytest.fixture
def cinder(stack):
    return functools.partial(clients.cinder, stack)


@pytest.fixture
def openstack(stack):
    return functools.partial(clients.openstack, stack)


def _volume_ids(api, group_id):
    return sorted(api.get('/groups/%s?list_volume=true' % group_id).json()[
        'group']['volumes'])


def test_cinder_cli(cinder, stack):
    api = stack.client()
    cinder('type-create', 'vt')
    rows = table(cinder('group-type-create', 'gt'))
    assert rows[1][1] == 'gt'
    # (a scoped key: not a capability the backends must report)
    cinder('group-type-key', 'gt', 'set', 'vendor:k=v')
    assert 'vendor:k' in cinder('group-specs-list')
    assert [r[1] for r in table(cinder('group-type-list'))[1:]] == ['gt']
    group = props(cinder('group-create', '--name', 'g1', 'gt', 'vt'))
    gh.wait_group(api, group['id'])
    shown = props(cinder('group-show', 'g1'))
    assert shown['status'] == 'available'
    vol = props(cinder('create', '--group-id', group['id'],
                       '--volume-type', 'vt', '--name', 'in', '1'))
    api.wait_volume(vol['id'], 'available')
    loose = props(cinder('create', '--volume-type', 'vt', '--name', 'out',
                         '1'))
    api.wait_volume(loose['id'], 'available')
    cinder('group-update', '--name', 'g2', '--add-volumes', loose['id'],
           'g1')
    assert _volume_ids(api, group['id']) == sorted([vol['id'],
                                                    loose['id']])
    assert [r[1:3] for r in table(cinder('group-list'))[1:]] == [
        ['available', 'g2']]
    gs = props(cinder('group-snapshot-create', '--name', 'gs', 'g2'))
    gh.wait_group_snapshot(api, gs['id'])
    listed = table(cinder('group-snapshot-list'))
    assert [dict(zip(listed[0], r))['Status'] for r in listed[1:]] == [
        'available']
    copy = props(cinder('group-create-from-src', '--group-snapshot', 'gs',
                        '--name', 'copy'))
    gh.wait_group(api, copy['id'])
    assert len(_volume_ids(api, copy['id'])) == 2
    cinder('group-delete', '--delete-volumes', 'copy')
    gh.wait_group_gone(api, copy['id'])
    cinder('group-snapshot-delete', 'gs')
    util.wait_for(lambda: api.get('/group_snapshots/%s' % gs['id'])
                  .status_code == 404, what='group snapshot deleted')
    cinder('group-delete', '--delete-volumes', 'g2')
    gh.wait_group_gone(api, group['id'])
    cinder('group-type-delete', 'gt')
    assert table(cinder('group-type-list'))[1:] == []


def test_openstack_cli(openstack, stack):
    api = stack.client()
    vt = api.create_type('ovt')
    gt = props(openstack('volume', 'group', 'type', 'create', 'ogt'))
    assert gt['Name'] == 'ogt'
    openstack('volume', 'group', 'type', 'set', '--property', 'vendor:a=b',
              'ogt')
    assert api.get('/group_types/%s/group_specs' % gt['ID']).json()[
        'group_specs'] == {'vendor:a': 'b'}
    rows = table(openstack('volume', 'group', 'type', 'list'))
    assert [r[1] for r in rows[1:]] == ['ogt']
    group = props(openstack('volume', 'group', 'create', '--name', 'og',
                            '--volume-group-type', 'ogt', '--volume-type',
                            vt['id']))
    gh.wait_group(api, group['ID'])
    vol = api.create_volume(volume_type=vt['id'], group_id=group['ID'])
    shown = props(openstack('volume', 'group', 'show', 'og'))
    assert shown['Status'] == 'available'
    openstack('volume', 'group', 'set', '--name', 'og2', 'og')
    assert api.get('/groups/%s' % group['ID']).json()['group'][
        'name'] == 'og2'
    gs = props(openstack('volume', 'group', 'snapshot', 'create',
                         '--name', 'ogs', 'og2'))
    gh.wait_group_snapshot(api, gs['ID'])
    rows = table(openstack('volume', 'group', 'snapshot', 'list'))
    assert [dict(zip(rows[0], r))['Status'] for r in rows[1:]] == [
        'available']
    openstack('volume', 'group', 'snapshot', 'delete', 'ogs')
    util.wait_for(lambda: api.get('/group_snapshots/%s' % gs['ID'])
                  .status_code == 404, what='group snapshot deleted')
    openstack('volume', 'group', 'delete', '--force', 'og2')
    gh.wait_group_gone(api, group['ID'])
    api.wait_deleted(vol['id'])
    openstack('volume', 'group', 'type', 'delete', 'ogt')
