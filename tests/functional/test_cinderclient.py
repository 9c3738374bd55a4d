"""The real python-cinderclient CLI and Python API against cinder_lite."""
import json

from tests.harness import clients
from tests.harness.clients import cinder
from tests.harness.clients import cinder_fails
from tests.harness.clients import props
from tests.harness.clients import table
from tests.harness import stack as stack_mod
from tests.harness import util


def test_cli_types_volumes_services_pools(stack):
    out = cinder(stack, 'type-create', 'cl-ma')
    assert 'cl-ma' in out
    cinder(stack, 'type-key', 'cl-ma', 'set', 'multiattach=<is> True')
    specs = cinder(stack, 'extra-specs-list')
    assert "'multiattach': '<is> True'" in specs
    created = props(cinder(stack, 'create', '--volume-type', 'cl-ma',
                           '--name', 'cl-v1', '--poll', '1'))
    assert created['status'] == 'available'
    assert created['multiattach'] == 'True'
    assert created['volume_type'] == 'cl-ma'
    assert created['os-vol-host-attr:host'] == 'testnode@file#file'
    listed = table(cinder(stack, 'list'))
    assert listed[0][:3] == ['ID', 'Status', 'Name']
    assert [r[2] for r in listed[1:]] == ['cl-v1']
    shown = props(cinder(stack, 'show', 'cl-v1'))
    assert shown['id'] == created['id']
    services = table(cinder(stack, 'service-list'))
    assert sorted(r[0] for r in services[1:]) == [
        'cinder-backup', 'cinder-scheduler', 'cinder-volume']
    assert {r[4] for r in services[1:]} == {'up'}
    pools = cinder(stack, 'get-pools', '--detail')
    assert 'testnode@file#file' in pools and 'multiattach' in pools
    out = cinder(stack, 'delete', 'cl-v1')
    assert 'has been accepted' in out
    stack.client().wait_deleted(created['id'])
    assert table(cinder(stack, 'list'))[1:] == []


def test_cli_error_is_reported(stack):
    result = clients.run_cinder(stack, 'create', '--volume-type', 'nope',
                                '1', version=None)
    assert result.returncode == 1
    assert 'HTTP 404' in result.stderr


def test_python_api(stack):
    from cinderclient import client
    from cinderclient.contrib import noauth
    from keystoneauth1 import session

    auth = noauth.CinderNoAuthPlugin(user_id='admin',
                                     project_id=stack_mod.PROJECT,
                                     endpoint=stack.url + '/v3')
    cs = client.Client('3.71', session=session.Session(auth=auth))
    vtype = cs.volume_types.create('py-type')
    vtype.set_keys({'volume_backend_name': 'file'})
    assert cs.volume_types.get(vtype.id).get_keys() == {
        'volume_backend_name': 'file'}
    vol = cs.volumes.create(1, name='py-vol', volume_type='py-type')
    util.wait_for(lambda: cs.volumes.get(vol.id).status ==
                  'available', what='py-vol available')
    assert [v.id for v in cs.volumes.list()] == [vol.id]
    pools = cs.pools.list(detailed=True)
    assert pools[0].name == 'testnode@file#file'
    assert json.loads(json.dumps(pools[0].to_dict()))['capabilities'][
        'multiattach'] is True
    cs.volumes.delete(vol.id)
    stack.client().wait_deleted(vol.id)


I1 = '11111111-1111-4111-8111-111111111111'
I2 = '22222222-2222-4222-8222-222222222222'


def test_cli_attachments_and_retype(stack):
    cinder(stack, 'type-create', 'cl-ma')
    cinder(stack, 'type-key', 'cl-ma', 'set', 'multiattach=<is> True')
    cinder(stack, 'type-create', 'cl-plain')
    vol = props(cinder(stack, 'create', '--volume-type', 'cl-ma', '--name',
                       'cl-att', '--poll', '1'))
    reserved = props(cinder(stack, 'attachment-create', 'cl-att', I1))
    assert reserved['status'] == 'reserved'
    assert reserved['attach_mode'] == 'rw'
    att1 = reserved['id']
    out = cinder(stack, 'attachment-update', '--initiator',
                 'iqn.1994-05.com.redhat:compute-1', '--ip', '127.0.0.2',
                 '--host', 'compute-1', att1)
    assert 'attaching' in out and 'access_mode' in out
    cinder(stack, 'attachment-complete', att1)
    shown = props(cinder(stack, 'attachment-show', att1))
    assert shown['status'] == 'attached'
    ro = props(cinder(stack, 'attachment-create', '--connect', 'True',
                      '--initiator', 'iqn.1994-05.com.redhat:compute-2',
                      '--ip', '127.0.0.3', '--host', 'compute-2', '--mode',
                      'ro', 'cl-att', I2))
    assert ro['attach_mode'] == 'ro' and ro['status'] == 'attaching'
    listed = table(cinder(stack, 'attachment-list', '--volume-id',
                          vol['id']))
    assert sorted(r[0] for r in listed[1:]) == sorted([att1, ro['id']])
    by_status = table(cinder(stack, 'attachment-list', '--filters',
                             'attach_status=attached'))
    assert [r[0] for r in by_status[1:]] == [att1]
    # in use: a retype that changes multiattach is refused
    env_retype = cinder_fails(stack, 'retype', 'cl-att', 'cl-plain')
    assert 'only allowed on available volumes' in env_retype
    cinder(stack, 'attachment-delete', att1)
    cinder(stack, 'attachment-delete', ro['id'])
    assert props(cinder(stack, 'show', 'cl-att'))['status'] == 'available'
    cinder(stack, 'retype', '--migration-policy', 'never', 'cl-att',
           'cl-plain')
    after = props(cinder(stack, 'show', 'cl-att'))
    assert after['volume_type'] == 'cl-plain'
    assert after['multiattach'] == 'False'


def test_openstacksdk_attachments(stack):
    import openstack

    token = 'admin:%s' % stack_mod.PROJECT
    conn = openstack.connect(
        auth_type='admin_token',
        auth={'endpoint': '%s/v3/%s' % (stack.url, stack_mod.PROJECT),
              'token': token},
        block_storage_api_version='3.71')
    # cinder_lite serves version discovery without a token, so the SDK
    # needs no extra header
    bs = conn.block_storage
    vtype = bs.create_type(name='sdk-ma',
                           extra_specs={'multiattach': '<is> True'})
    vol = bs.create_volume(size=1, name='sdk-vol', volume_type=vtype.name)
    vol = bs.wait_for_status(vol, status='available', wait=30, interval=0.1)
    assert vol.is_multiattach is True
    connector = {'host': 'sdk-host', 'ip': '127.0.0.4',
                 'initiator': 'iqn.2026-11.org.example:sdk'}
    att = bs.create_attachment(vol.id, connector=connector,
                               instance='33333333-3333-4333-8333-333333333333',
                               mode='ro')
    assert att.status == 'attaching'
    assert att.connection_info['access_mode'] == 'ro'
    bs.complete_attachment(att.id)
    assert bs.get_attachment(att.id).status == 'attached'
    assert [a.id for a in bs.attachments()] == [att.id]
    assert bs.get_volume(vol.id).status == 'in-use'
    bs.delete_attachment(att.id)
    assert bs.get_volume(vol.id).status == 'available'
    bs.delete_volume(vol.id)
    stack.client().wait_deleted(vol.id)
