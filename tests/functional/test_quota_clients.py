"""The real clients' quota commands against cinder_lite: the cinder CLI
(quota-show, quota-usage, quota-update, quota-defaults, quota-delete,
quota-class-show, quota-class-update, absolute-limits), cinderclient's
Python API and openstacksdk's block storage quota calls."""
from tests.harness.clients import cinder
from tests.harness.clients import cinder_fails
from tests.harness.clients import props
from tests.harness.clients import table
from tests.harness import stack as stack_mod

P = stack_mod.PROJECT
OTHER = stack_mod.OTHER_PROJECT


def test_cinder_cli_quotas(stack):
    api = stack.client()
    api.create_type('cli-gold')
    api.create_volume(size=2, volume_type='cli-gold')
    shown = props(cinder(stack, 'quota-show', P))
    assert shown['volumes'] == '10' and shown['gigabytes'] == '1000'
    assert shown['volumes_cli-gold'] == '-1'
    defaults = props(cinder(stack, 'quota-defaults', P))
    assert defaults['volumes'] == '10'
    usage = {row[0]: row[1:] for row in table(cinder(stack, 'quota-usage',
                                                     P))[1:]}
    # Type | In_use | Reserved | Limit | Allocated
    assert usage['volumes'][:3] == ['1', '0', '10']
    assert usage['gigabytes'][:3] == ['2', '0', '1000']
    assert usage['gigabytes_cli-gold'][:3] == ['2', '0', '-1']

    updated = props(cinder(stack, 'quota-update', '--volumes', '4',
                           '--gigabytes', '20', P))
    assert updated['volumes'] == '4' and updated['gigabytes'] == '20'
    cinder(stack, 'quota-update', '--volume-type', 'cli-gold', '--volumes',
           '1', P)
    assert props(cinder(stack, 'quota-show', P))['volumes_cli-gold'] == '1'
    limits = {row[0]: row[1] for row in table(cinder(stack,
                                                     'absolute-limits'))[1:]}
    assert limits['maxTotalVolumes'] == '4'
    assert limits['totalVolumesUsed'] == '1'
    assert limits['totalGigabytesUsed'] == '2'
    # over the per-type quota: the CLI reports the 413
    err = cinder_fails(stack, 'create', '--volume-type', 'cli-gold', '1')
    assert 'HTTP 413' in err and "quota 'volumes_cli-gold'" in err
    # below what is used: refused, nothing changed
    err = cinder_fails(stack, 'quota-update', '--gigabytes', '1', P)
    assert 'must be equal or greater than existing resources' in err
    assert props(cinder(stack, 'quota-show', P))['gigabytes'] == '20'
    cinder(stack, 'quota-delete', P)
    assert props(cinder(stack, 'quota-show', P))['volumes'] == '10'

    cinder(stack, 'quota-class-update', '--volumes', '12', 'default')
    assert props(cinder(stack, 'quota-class-show', 'default'))[
        'volumes'] == '12'
    assert props(cinder(stack, 'quota-show', OTHER))['volumes'] == '12'


def test_cinderclient_python_quotas(stack):
    from cinderclient import client
    from cinderclient.contrib import noauth
    from keystoneauth1 import session

    auth = noauth.CinderNoAuthPlugin(user_id='admin', project_id=P,
                                     endpoint=stack.url + '/v3')
    cs = client.Client('3.71', session=session.Session(auth=auth))
    cs.quotas.update(P, volumes=3, per_volume_gigabytes=5)
    got = cs.quotas.get(P, usage=True)
    assert got.volumes == {'limit': 3, 'in_use': 0, 'reserved': 0}
    assert got.per_volume_gigabytes['limit'] == 5
    assert cs.quotas.defaults(P).volumes == 10
    assert cs.quota_classes.get('default').gigabytes == 1000
    absolute = {a.name: a.value for a in cs.limits.get().absolute}
    assert absolute['maxTotalVolumes'] == 3
    cs.quotas.delete(P)
    assert cs.quotas.get(P).volumes == 10


def test_openstacksdk_quotas(stack):
    import openstack

    conn = openstack.connect(
        auth_type='admin_token',
        auth={'endpoint': '%s/v3/%s' % (stack.url, P),
              'token': 'admin:%s' % P},
        block_storage_api_version='3.71')
    bs = conn.block_storage
    stack.client().create_volume(size=3)
    qs = bs.get_quota_set(P, usage=True)
    assert qs.volumes == 10
    assert qs.usage['volumes'] == 1 and qs.usage['gigabytes'] == 3
    assert qs.reservation['gigabytes'] == 0
    bs.update_quota_set(P, volumes=7, gigabytes=30)
    qs = bs.get_quota_set(P)
    assert (qs.volumes, qs.gigabytes) == (7, 30)
    assert bs.get_quota_set_defaults(P).volumes == 10
    limits = bs.get_limits(P)
    assert limits.absolute.max_total_volumes == 7
    assert limits.absolute.total_gigabytes_used == 3
    bs.revert_quota_set(P)
    assert bs.get_quota_set(P).volumes == 10
