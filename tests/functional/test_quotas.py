"""Quotas over HTTP: Cinder's os-quota-sets, os-quota-class-sets and
limits APIs, enforcement on create, extend and retype (413 overLimit,
nothing recorded), bad input, policy, and usage that equals the volumes
after every sequence here (``quota_api.audit``)."""
import concurrent.futures
import os
import uuid

import pytest

from cinder_lite.volume import quota_api
from tests.harness import stack as stack_mod
from tests.harness.attach import connector

P = stack_mod.PROJECT
OTHER = stack_mod.OTHER_PROJECT


def quota_set(api, project=P, usage=False):
    resp = api.get('/os-quota-sets/%s?usage=%s' % (project, usage))
    assert resp.status_code == 200, resp.text
    return resp.json()['quota_set']


def set_quota(api, expect=200, project=P, **limits):
    resp = api.put('/os-quota-sets/%s' % project,
                   json={'quota_set': limits})
    assert resp.status_code == expect, resp.text
    return resp


def act(api, vid, body, expect=202, **kw):
    resp = api.post('/volumes/%s/action' % vid, json=body, **kw)
    assert resp.status_code == expect, resp.text
    return resp


def over_limit(resp, cls):
    assert resp.status_code == 413, resp.text
    assert resp.headers['Retry-After'] == '0'
    fault = resp.json()['overLimit']
    assert fault['code'] == 413 and fault['retryAfter'] == '0'
    assert fault['message'].startswith(cls + ': '), fault
    return fault['message']


def used(api, project=P):
    shown = quota_set(api, project, usage=True)
    return {k: (v['in_use'], v['reserved']) for k, v in shown.items()
            if k != 'id'}


def exact():
    """Recorded usage equals the volumes, for every project."""
    assert quota_api.audit() == []


def volume_count(api):
    return len(api.get('/volumes').json()['volumes'])


def test_show_defaults_and_usage_shapes(api):
    shown = quota_set(api)
    assert shown == {
        'id': P, 'volumes': 10, 'per_volume_gigabytes': -1,
        'snapshots': 10, 'gigabytes': 1000, 'backups': 10,
        'backup_gigabytes': 1000, 'groups': 10,
        'volumes___DEFAULT__': -1, 'snapshots___DEFAULT__': -1,
        'gigabytes___DEFAULT__': -1}
    defaults = api.get('/os-quota-sets/%s/defaults' % P).json()['quota_set']
    assert defaults == shown
    api.create_volume(size=3)
    with_usage = quota_set(api, usage=True)
    assert with_usage['id'] == P
    assert with_usage['volumes'] == {'limit': 10, 'in_use': 1,
                                     'reserved': 0}
    assert with_usage['gigabytes'] == {'limit': 1000, 'in_use': 3,
                                       'reserved': 0}
    assert with_usage['gigabytes___DEFAULT__'] == {
        'limit': -1, 'in_use': 3, 'reserved': 0}
    assert with_usage['snapshots'] == {'limit': 10, 'in_use': 0,
                                       'reserved': 0}
    limits = api.get('/limits').json()['limits']
    assert limits == {'rate': [], 'absolute': {
        'maxTotalVolumes': 10, 'maxTotalSnapshots': 10,
        'maxTotalVolumeGigabytes': 1000, 'maxTotalBackups': 10,
        'maxTotalBackupGigabytes': 1000, 'totalVolumesUsed': 1,
        'totalGigabytesUsed': 3, 'totalSnapshotsUsed': 0,
        'totalBackupsUsed': 0, 'totalBackupGigabytesUsed': 0}}
    exact()


def test_update_revert_and_the_default_class(api):
    # cinderclient sends tenant_id along, and numbers as strings work
    body = set_quota(api, volumes=5, gigabytes='50', tenant_id=P).json()
    assert 'id' not in body['quota_set']
    assert body['quota_set']['volumes'] == 5
    assert body['quota_set']['gigabytes'] == 50
    assert quota_set(api)['volumes'] == 5
    # the default class moves every project's defaults, not set limits
    resp = api.put('/os-quota-class-sets/default',
                   json={'quota_class_set': {'volumes': 7,
                                             'snapshots': 3}})
    assert resp.status_code == 200, resp.text
    assert resp.json()['quota_class_set']['volumes'] == 7
    shown = api.get('/os-quota-class-sets/default').json()
    assert shown['quota_class_set']['id'] == 'default'
    assert shown['quota_class_set']['snapshots'] == 3
    assert quota_set(api)['volumes'] == 5
    assert quota_set(api, OTHER)['volumes'] == 7
    assert api.get('/os-quota-sets/%s/defaults' % P).json()[
        'quota_set']['volumes'] == 7
    resp = api.delete('/os-quota-sets/%s' % P)
    assert (resp.status_code, resp.text) == (200, '')
    assert quota_set(api)['volumes'] == 7
    assert quota_set(api)['gigabytes'] == 1000


def test_per_type_limits_follow_the_type(api):
    tid = api.create_type('gold')['id']
    set_quota(api, volumes_gold=1, gigabytes_gold=4)
    api.create_volume(volume_type='gold', size=2)
    over_limit(api.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': 'gold'}}), 'VolumeLimitExceeded')
    # another type is not limited by gold's quota
    api.create_volume(size=2)
    # renamed: the limits and usage go with it
    resp = api.put('/types/%s' % tid, json={'volume_type': {
        'name': 'platinum'}})
    assert resp.status_code == 200, resp.text
    shown = quota_set(api, usage=True)
    assert 'volumes_gold' not in shown
    assert shown['volumes_platinum'] == {'limit': 1, 'in_use': 1,
                                         'reserved': 0}
    assert shown['gigabytes_platinum']['limit'] == 4
    exact()


def test_deleted_type_takes_its_quota_keys_along(api):
    tid = api.create_type('brief')['id']
    set_quota(api, volumes_brief=3)
    vol = api.create_volume(volume_type='brief')
    api.delete('/volumes/%s' % vol['id'])
    api.wait_deleted(vol['id'])
    assert api.delete('/types/%s' % tid).status_code == 202
    shown = quota_set(api)
    assert not [k for k in shown if k.endswith('_brief')]
    set_quota(api, 400, volumes_brief=3)
    # a new type of the old name starts afresh
    api.create_type('brief')
    assert quota_set(api)['volumes_brief'] == -1
    exact()


def test_create_over_quota_records_nothing(api):
    set_quota(api, volumes=2, gigabytes=5)
    api.create_volume(size=2)
    api.create_volume(size=2)
    before = used(api)
    message = over_limit(api.post('/volumes', json={'volume': {'size': 1}}),
                         'VolumeLimitExceeded')
    assert message.endswith(
        "Maximum number of volumes allowed (2) exceeded for quota "
        "'volumes'.")
    set_quota(api, volumes=3)
    message = over_limit(api.post('/volumes', json={'volume': {'size': 2}}),
                         'VolumeSizeExceedsAvailableQuota')
    assert message.endswith(
        'Requested volume or snapshot exceeds allowed gigabytes quota. '
        'Requested 2G, quota is 5G and 4G has been consumed.')
    # far beyond every backend too: the quota answers first, as Cinder
    over_limit(api.post('/volumes', json={'volume': {'size': 999999}}),
               'VolumeSizeExceedsAvailableQuota')
    assert used(api) == before
    assert volume_count(api) == 2
    api.create_volume(size=1)
    exact()


def test_per_volume_size_limit(api):
    set_quota(api, per_volume_gigabytes=3)
    message = over_limit(api.post('/volumes', json={'volume': {'size': 4}}),
                         'VolumeSizeExceedsLimit')
    assert message.endswith('Requested volume size 4G is larger than '
                            'maximum allowed limit 3G.')
    vol = api.create_volume(size=3)
    over_limit(act(api, vol['id'], {'os-extend': {'new_size': 4}},
                   expect=413), 'VolumeSizeExceedsLimit')
    # any usage is below a per-volume limit
    set_quota(api, per_volume_gigabytes=1)
    exact()


def test_extend_reserves_then_uses(api, stack):
    set_quota(api, gigabytes=6)
    vol = api.create_volume(size=2)
    over_limit(act(api, vol['id'], {'os-extend': {'new_size': 7}},
                   expect=413), 'VolumeSizeExceedsAvailableQuota')
    act(api, vol['id'], {'os-extend': {'new_size': 6}})
    api.wait_volume(vol['id'], 'available')
    assert api.get('/volumes/%s' % vol['id']).json()['volume']['size'] == 6
    assert used(api)['gigabytes'] == (6, 0)
    # the quota is full: a second volume does not fit
    over_limit(api.post('/volumes', json={'volume': {'size': 1}}),
               'VolumeSizeExceedsAvailableQuota')
    exact()


def test_failed_extend_gives_the_reservation_back(api, stack):
    set_quota(api, gigabytes=10)
    vol = api.create_volume(size=2)
    # the backend loses the volume's file: the extend fails there
    os.remove(os.path.join(stack.state_path, 'volumes', 'file',
                           'volume-%s' % vol['id']))
    act(api, vol['id'], {'os-extend': {'new_size': 9}})
    api.wait_volume(vol['id'], 'error_extending')
    assert used(api)['gigabytes'] == (2, 0)
    api.create_volume(size=8)
    exact()


def test_extend_in_use_is_charged_by_the_volume_service(api):
    set_quota(api, gigabytes=5)
    vol = api.create_volume(size=2)
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4()),
        'connector': connector()}})
    assert resp.status_code == 200, resp.text
    att = resp.json()['attachment']['id']
    resp = api.post('/attachments/%s/action' % att,
                    json={'os-complete': None})
    assert resp.status_code == 204, resp.text
    api.wait_volume(vol['id'], 'in-use')
    over_limit(act(api, vol['id'], {'os-extend': {'new_size': 6}},
                   expect=413), 'VolumeSizeExceedsAvailableQuota')
    act(api, vol['id'], {'os-extend': {'new_size': 5}})
    assert api.get('/volumes/%s' % vol['id']).json()['volume']['size'] == 5
    assert used(api)['gigabytes'] == (5, 0)
    exact()


def test_retype_moves_the_per_type_usage(api):
    api.create_type('silver')
    api.create_type('bronze')
    set_quota(api, volumes_bronze=1)
    vol = api.create_volume(volume_type='silver', size=2)
    other = api.create_volume(volume_type='silver', size=1)
    act(api, vol['id'], {'os-retype': {'new_type': 'bronze'}})
    shown = used(api)
    assert shown['volumes_silver'] == (1, 0)
    assert shown['gigabytes_silver'] == (1, 0)
    assert shown['volumes_bronze'] == (1, 0)
    assert shown['gigabytes_bronze'] == (2, 0)
    assert shown['volumes'] == (2, 0)
    over_limit(act(api, other['id'], {'os-retype': {'new_type': 'bronze'}},
                   expect=413), 'VolumeLimitExceeded')
    shown_again = used(api)
    assert shown_again == shown
    assert api.get('/volumes/%s' % other['id']).json()['volume'][
        'volume_type'] == 'silver'
    exact()


def test_limit_below_usage_and_bad_values_change_nothing(api):
    api.create_volume(size=3)
    set_quota(api, volumes=4)
    before = quota_set(api)
    cases = [
        ({'gigabytes': 2}, 'Quota gigabytes limit must be equal or greater '
         'than existing resources. Current usage is 3 and the requested '
         'limit is 2.'),
        ({'volumes': 0}, 'Quota volumes limit must be equal or greater '
         'than existing resources. Current usage is 1 and the requested '
         'limit is 0.'),
        ({'volumes': -2}, 'volumes must be >= -1'),
        ({'volumes': 2 ** 31}, 'volumes must be <= 2147483647'),
        ({'volumes': 1.5}, 'volumes must be an integer'),
        ({'volumes': '1.5'}, 'volumes must be an integer'),
        ({'volumes': None}, 'volumes must be an integer'),
        ({'volumes': True}, 'volumes must be an integer'),
        ({'volumes': [1]}, 'volumes must be an integer'),
        ({'volumes': 5, 'nonsense': 1, 'volumes_nope': 2},
         'Bad key(s) in quota set: nonsense, volumes_nope'),
        ({'tenant_id': P}, 'The quota set names no limit.'),
    ]
    for limits, message in cases:
        resp = set_quota(api, 400, **limits)
        assert resp.json()['badRequest']['message'] == \
            'Invalid input received: ' + message, limits
    for body in ({}, {'quota_set': {}}, {'quota_set': []},
                 {'quota_set': {'volumes': 5}, 'extra': 1}):
        resp = api.put('/os-quota-sets/%s' % P, json=body)
        assert resp.status_code == 400, (body, resp.text)
    resp = api.put('/os-quota-sets/%s' % P, data=b'{not json',
                   headers={'Content-Type': 'application/json'})
    assert resp.status_code == 400
    for bad in ('a%20b', 'x' * 65, 'semi;colon'):
        for method in ('get', 'put', 'delete'):
            resp = getattr(api, method)('/os-quota-sets/%s' % bad,
                                        json={'quota_set': {'volumes': 1}})
            assert resp.status_code == 400, (bad, method, resp.text)
            assert 'Invalid project id' in resp.text
    resp = api.put('/os-quota-class-sets/default',
                   json={'quota_class_set': {'volumes': -5}})
    assert resp.status_code == 400
    resp = api.put('/os-quota-class-sets/default',
                   json={'quota_class_set': {'bogus': 5}})
    assert resp.json()['badRequest']['message'] == (
        'Invalid input received: Bad key(s) in quota class set: bogus')
    assert quota_set(api) == before
    # -1 is always allowed, whatever the usage
    set_quota(api, gigabytes=-1, volumes=-1)
    assert api.get('/os-quota-sets/%s' % P).status_code == 200
    exact()


def test_policy(stack, api):
    member = stack.client(user='m', roles='member')
    reader = stack.client(user='r', roles='reader')
    for client in (member, reader):
        assert client.get('/os-quota-sets/%s' % P).status_code == 200
        assert client.get('/os-quota-sets/%s?usage=True' % P) \
            .status_code == 200
        assert client.get('/limits').status_code == 200
        for path in ('/os-quota-sets/%s' % OTHER,
                     '/os-quota-sets/%s/defaults' % OTHER,
                     '/os-quota-class-sets/default'):
            resp = client.get(path)
            assert resp.status_code == 403, (path, resp.text)
        resp = client.put('/os-quota-sets/%s' % P,
                          json={'quota_set': {'volumes': 100}})
        assert resp.status_code == 403
        assert client.delete('/os-quota-sets/%s' % P).status_code == 403
        assert client.put('/os-quota-class-sets/default', json={
            'quota_class_set': {'volumes': 100}}).status_code == 403
    assert quota_set(api)['volumes'] == 10
    # a member's /limits names its own project whatever it asks for
    api.create_volume()
    other = stack.client(project=OTHER, user='o', roles='member')
    assert other.get('/limits?project_id=%s' % P).json()['limits'][
        'absolute']['totalVolumesUsed'] == 0
    # an admin's names the project asked for, from 3.39 on
    assert api.get('/limits?project_id=%s' % OTHER).json()['limits'][
        'absolute']['totalVolumesUsed'] == 0
    assert api.get('/limits?project_id=%s' % OTHER, headers={
        'OpenStack-API-Version': 'volume 3.38'}).json()['limits'][
        'absolute']['totalVolumesUsed'] == 1


def test_an_admin_creating_for_itself_counts_in_its_project(stack, api):
    set_quota(api, project=OTHER, volumes=1)
    other = stack.client(project=OTHER, user='o', roles='member')
    vol = other.create_volume()
    over_limit(other.post('/volumes', json={'volume': {'size': 1}}),
               'VolumeLimitExceeded')
    # the admin extends the other project's volume: its quota is charged
    set_quota(api, project=OTHER, gigabytes=2)
    over_limit(act(api, vol['id'], {'os-extend': {'new_size': 3}},
                   expect=413), 'VolumeSizeExceedsAvailableQuota')
    act(api, vol['id'], {'os-extend': {'new_size': 2}})
    api.wait_volume(vol['id'], 'available')
    assert used(api, OTHER)['gigabytes'] == (2, 0)
    exact()


def test_concurrent_creates_take_exactly_the_quota(stack, api):
    set_quota(api, volumes=10)

    def create(_):
        return api.post('/volumes', json={'volume': {'size': 1}})
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        codes = [r.status_code for r in pool.map(create, range(32))]
    assert codes.count(202) == 10, codes
    assert codes.count(413) == 22, codes
    assert volume_count(api) == 10
    assert used(api)['volumes'] == (10, 0)
    exact()


@pytest.mark.parametrize('delete_first', [True, False])
def test_delete_gives_back_what_it_counted(api, delete_first):
    set_quota(api, volumes=1, gigabytes=2)
    vol = api.create_volume(size=2)
    if delete_first:
        api.delete('/volumes/%s' % vol['id'])
        api.wait_deleted(vol['id'])
        api.create_volume(size=2)
    else:
        # over both: gigabytes is told first, as in Cinder
        over_limit(api.post('/volumes', json={'volume': {'size': 1}}),
                   'VolumeSizeExceedsAvailableQuota')
    assert used(api)['volumes'] == (1, 0)
    exact()


def test_interrupted_extend_gives_the_reservation_back(api, stack):
    """An extend whose cast never reached the volume service: what the
    API records, then the service's reconciliation rolls it back."""
    from cinder_lite.db import api as db_api
    from cinder_lite.db import volumes as db_volumes
    set_quota(api, gigabytes=10)
    vol = api.create_volume(size=2)
    with db_api.writer() as session:
        db_volumes.transition(session, vol['id'], 'extend',
                              values={'pending_size': 7})
    assert used(api)['gigabytes'] == (2, 5)
    over_limit(api.post('/volumes', json={'volume': {'size': 4}}),
               'VolumeSizeExceedsAvailableQuota')
    manager = stack.volume_service('file').endpoints[0]
    changes = manager.reconcile_now(max_age=0)
    assert any(vol['id'] in change for change in changes), changes
    shown = api.get('/volumes/%s' % vol['id']).json()['volume']
    assert (shown['status'], shown['size']) == ('available', 2)
    assert used(api)['gigabytes'] == (2, 0)
    api.create_volume(size=8)
    exact()


def test_a_stale_extend_message_leaves_the_current_extend_alone(api, stack):
    """An extend message that waited past a rollback, while the volume
    is extending again to another size, is not served: the extend under
    way keeps its reservation, and only its own message finishes it."""
    from cinder_lite.common import context
    from cinder_lite.db import api as db_api
    from cinder_lite.db import volumes as db_volumes
    set_quota(api, gigabytes=10)
    vol = api.create_volume(size=2)
    with db_api.writer() as session:
        db_volumes.transition(session, vol['id'], 'extend',
                              values={'pending_size': 4})
    manager = stack.volume_service('file').endpoints[0]
    ctxt = context.get_admin_context()
    manager.extend_volume(ctxt, vol['id'], 9)
    shown = api.get('/volumes/%s' % vol['id']).json()['volume']
    assert (shown['status'], shown['size']) == ('extending', 2)
    assert used(api)['gigabytes'] == (2, 2)
    manager.extend_volume(ctxt, vol['id'], 4)
    shown = api.get('/volumes/%s' % vol['id']).json()['volume']
    assert (shown['status'], shown['size']) == ('available', 4)
    assert used(api)['gigabytes'] == (4, 0)
    exact()


def test_project_ids_are_checked_everywhere(api):
    for bad in ('abc%00', 'abc%20', 'ab%2Fc'):
        resp = api.put('/os-quota-sets/%s' % bad,
                       json={'quota_set': {'volumes': 1}})
        assert resp.status_code == 400, resp.text
    for bad in ('abc%0A', 'abc%00', '%C3%A9t%C3%A9'):
        resp = api.get('/limits?project_id=%s' % bad)
        assert resp.status_code == 400, resp.text
        assert 'Invalid project id' in resp.text
