"""The real python-cinderclient CLI and Python API against cinder_lite."""
import json
import os
import subprocess
import sys

from tests import stack as stack_mod

CINDER = os.path.join(os.path.dirname(sys.executable), 'cinder')


def cinder(stack, *args):
    env = dict(os.environ,
               OS_AUTH_TYPE='noauth',
               CINDER_ENDPOINT=stack.url + '/v3',
               OS_USER_ID='admin',
               OS_PROJECT_ID=stack_mod.PROJECT,
               OS_VOLUME_API_VERSION='3.71')
    result = subprocess.run([CINDER] + list(args), env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def table(output):
    """Rows of a prettytable as lists of cells."""
    rows = []
    for line in output.splitlines():
        if line.startswith('|'):
            rows.append([c.strip() for c in line.strip('|').split('|')])
    return rows


def props(output):
    """A Property | Value table as a dict."""
    return {row[0]: row[1] for row in table(output)[1:]}


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
    assert sorted(r[0] for r in services[1:]) == ['cinder-scheduler',
                                                  'cinder-volume']
    assert {r[4] for r in services[1:]} == {'up'}
    pools = cinder(stack, 'get-pools', '--detail')
    assert 'testnode@file#file' in pools and 'multiattach' in pools
    out = cinder(stack, 'delete', 'cl-v1')
    assert 'has been accepted' in out
    stack.client().wait_deleted(created['id'])
    assert table(cinder(stack, 'list'))[1:] == []


def test_cli_error_is_reported(stack):
    env = dict(os.environ, OS_AUTH_TYPE='noauth',
               CINDER_ENDPOINT=stack.url + '/v3', OS_USER_ID='admin',
               OS_PROJECT_ID=stack_mod.PROJECT)
    result = subprocess.run([CINDER, 'create', '--volume-type', 'nope',
                             '1'], env=env, capture_output=True, text=True,
                            timeout=60)
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
    stack_mod.wait_for(lambda: cs.volumes.get(vol.id).status ==
                       'available', what='py-vol available')
    assert [v.id for v in cs.volumes.list()] == [vol.id]
    pools = cs.pools.list(detailed=True)
    assert pools[0].name == 'testnode@file#file'
    assert json.loads(json.dumps(pools[0].to_dict()))['capabilities'][
        'multiattach'] is True
    cs.volumes.delete(vol.id)
    stack.client().wait_deleted(vol.id)
