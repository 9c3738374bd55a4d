"""Property-based fuzzing of the REST API (hypothesis): generated requests
to every route, with ids that exist and ids that do not, bodies that are
nearly right and bodies that are anything, at every microversion and
outside the range.  No request may answer 5xx, and afterwards the
invariants hold: each volume's status is the one its attachments imply,
and no plain volume has live attachments for two instances."""
import json
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from cinder_lite.api import router
from tests.harness import stack as stack_mod
from tests.harness import util
from tests.stateful.world import shown_status
from tests.stateful.world import status_consistent

EXAMPLES = 3000
# fixed, so that hypothesis can replay what it drew
UNKNOWN = str(uuid.uuid4())
SETTLED = {'available', 'in-use', 'attaching', 'detaching', 'reserved'}

scalars = (st.none() | st.booleans() | st.integers(-2 ** 40, 2 ** 40)
           | st.text(max_size=30)
           | st.sampled_from(['rw', 'ro', '<is> True', 'True', '1', '',
                              'ZZ' * 200]))
anything = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=12), inner,
                                          max_size=4), max_leaves=12)


def connectors():
    return st.fixed_dictionaries({}, optional={
        'host': st.sampled_from(['compute-1', 'compute-2', '']) | scalars,
        'ip': st.sampled_from(['127.0.0.5', '::1', '300.1.1.1']) | scalars,
        'initiator': st.sampled_from(
            ['iqn.2026-11.org.example:c1', 'not-an-iqn']) | scalars,
        'mode': st.sampled_from(['rw', 'ro', 'x']) | scalars}) | \
        st.fixed_dictionaries({'host': st.sampled_from(['compute-1',
                                                        'compute-2'])},
                              optional={'mode': st.sampled_from(['rw',
                                                                 'ro'])})


def bodies(ids):
    good_volume = st.fixed_dictionaries(
        {'size': st.sampled_from([1, 1, 2])},
        optional={'volume_type': st.sampled_from(ids['type'])})
    any_volume = st.fixed_dictionaries({}, optional={
        'size': st.integers(-1, 3) | scalars, 'name': scalars,
        'volume_type': st.sampled_from(ids['type']) | scalars,
        'multiattach': scalars, 'metadata': anything})
    volume = good_volume | any_volume
    good_attachment = st.fixed_dictionaries(
        {'volume_uuid': st.sampled_from(ids['volume'])},
        optional={'instance_uuid': st.sampled_from(ids['instance']),
                  'connector': connectors(),
                  'mode': st.sampled_from(['rw', 'ro'])})
    any_attachment = st.fixed_dictionaries({}, optional={
        'volume_uuid': st.sampled_from(ids['volume']) | scalars,
        'instance_uuid': st.sampled_from(ids['instance']) | scalars,
        'connector': connectors() | scalars, 'mode': scalars})
    attachment = good_attachment | any_attachment
    actions = st.sampled_from([
        'os-attach', 'os-detach', 'os-reserve', 'os-unreserve',
        'os-begin_detaching', 'os-roll_detaching', 'os-extend',
        'os-reset_status', 'os-update_readonly_flag',
        'os-initialize_connection', 'os-terminate_connection',
        'os-force_detach', 'os-complete', 'os-retype', 'os-unknown'])
    action = st.builds(lambda k, v: {k: v}, actions,
                       anything | connectors()
                       | st.fixed_dictionaries({}, optional={
                           'instance_uuid': st.sampled_from(
                               ids['instance']),
                           'connector': connectors(),
                           'new_size': st.integers(-1, 4),
                           'status': st.sampled_from(['available', 'x']),
                           'attachment_id': st.sampled_from(
                               ids['attachment'] or ['x']),
                           'mode': st.sampled_from(['rw', 'ro']),
                           'readonly': scalars}))
    return {
        'volume': st.builds(lambda b: {'volume': b}, volume),
        'attachment': st.builds(lambda b: {'attachment': b}, attachment),
        'volume_type': st.builds(
            lambda b: {'volume_type': b}, st.fixed_dictionaries(
                {'name': st.text(min_size=1, max_size=20)}, optional={
                    'extra_specs': st.dictionaries(
                        st.sampled_from(['multiattach', 'mode', 'x']),
                        st.sampled_from(['<is> True', 'RO', 'y']))})),
        'action': action, 'anything': anything}


def body_for(path, ids, draw):
    """A body shaped for ``path`` most of the time, anything else
    sometimes."""
    shapes = bodies(ids)
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(sorted(shapes)).flatmap(shapes.get))
    for suffix, shape in (('/action', 'action'), ('/volumes', 'volume'),
                          ('/attachments', 'attachment'),
                          ('/types', 'volume_type')):
        if path.endswith(suffix):
            return draw(shapes[shape])
    if '/attachments/' in path:
        return draw(shapes['attachment'])
    if '/volumes/' in path:
        return draw(shapes['volume'])
    return draw(shapes['anything'])


def fill(path, ids, draw):
    for name, kind in (('{volume_id}', 'volume'),
                       ('{attachment_id}', 'attachment'),
                       ('{type_id}', 'type'), ('{message_id}', 'volume'),
                       ('{key}', 'key'), ('{host}', 'key'),
                       ('{action}', 'key')):
        if name in path:
            choices = ids.get(kind) or ['x']
            path = path.replace(name, draw(
                st.sampled_from(choices) | st.sampled_from(
                    [UNKNOWN, 'x' * 300, '%00', 'enable'])))
    return path


@pytest.fixture(scope='module')
def fuzz_stack(tmp_path_factory):
    s = stack_mod.Stack(tmp_path_factory.mktemp('fuzz') / 'st').start()
    api = s.client()
    shared = api.create_type('shared', {'multiattach': '<is> True'})
    ids = {'type': [shared['id'], 'shared', '__DEFAULT__'],
           'volume': [api.create_volume()['id'],
                      api.create_volume(volume_type='shared')['id']],
           'instance': [str(uuid.uuid4()), str(uuid.uuid4())],
           'key': ['multiattach', 'enable', 'disable']}
    ids['attachment'] = [api.post('/attachments', json={'attachment': {
        'volume_uuid': ids['volume'][1], 'instance_uuid': instance}}).json()[
        'attachment']['id'] for instance in ids['instance']]
    s.ids = ids
    # one client for every example: its connection is kept alive
    s.fuzz_client = s.client(version=None)
    yield s
    s.stop()


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=st.data())
def test_no_request_answers_5xx(fuzz_stack, data):
    ids = fuzz_stack.ids
    path, methods = data.draw(st.sampled_from(router.ROUTE_DECLARATIONS))
    method = data.draw(st.sampled_from(sorted(methods) * 9 + ['PATCH']))
    path = fill(path, ids, data.draw)
    # every microversion (3.0 .. 3.71), one past the newest, and nonsense
    version = data.draw(
        st.builds('3.{}'.format, st.integers(0, 72)) | st.sampled_from(
            ['3.71', 'latest', '4.0', '2.9', 'x', '3.', '']))
    query = data.draw(st.sampled_from(
        ['', '?all_tenants=1', '?limit=1', '?limit=-1', '?sort=status:asc',
         '?marker=%s' % UNKNOWN, '?volume_id=%s' % ids['volume'][0],
         '?status=attached', '?foo=bar']))
    client = fuzz_stack.fuzz_client
    headers = {'OpenStack-API-Version': 'volume %s' % version}
    if data.draw(st.integers(0, 4)) == 0:
        headers['X-Roles'] = data.draw(st.sampled_from(
            ['member', 'reader', 'admin', '']))
    kwargs = {}
    if method in ('POST', 'PUT', 'PATCH'):
        if data.draw(st.integers(0, 9)) == 0:
            kwargs['data'] = data.draw(st.binary(max_size=40))
            headers['Content-Type'] = 'application/json'
        else:
            kwargs['json'] = body_for(path, ids, data.draw)
    resp = client.request(method, path + query, headers=headers, **kwargs)
    assert resp.status_code < 500, (method, path + query, headers, kwargs,
                                    resp.status_code, resp.text)


def test_invariants_hold_after_fuzzing(fuzz_stack):
    api = fuzz_stack.client()
    util.wait_for(lambda: all(
        v['status'] not in ('creating', 'deleting', 'extending')
        for v in api.get('/volumes/detail?all_tenants=1').json()['volumes']),
        what='volumes settled')
    volumes = api.get('/volumes/detail?all_tenants=1').json()['volumes']
    atts = api.get('/attachments/detail?all_tenants=1').json()['attachments']
    for v in volumes:
        mine = [a for a in atts if a['volume_id'] == v['id']]
        if v['status'] in SETTLED:
            assert status_consistent(
                v['status'], [shown_status(a) for a in mine]), \
                json.dumps([v, mine], indent=1)
        if not v['multiattach']:
            live = {a['instance'] for a in mine
                    if a['status'] not in ('error_attaching',)}
            assert len(live) <= 1, json.dumps([v, mine], indent=1)
