"""Resource filters (3.33) and the list filters they govern: from 3.31
a caller who is not an administrator may use the filters the
``resource_query_filters_file`` enables, from 3.34 ``key~`` substring
matches where the file says ``key~``; Cinder's other list filters."""
import datetime
import json

import pytest

from cinder_lite.api import resource_filters
from tests.harness.clients import cinder
from tests.harness.clients import table
from tests.harness import stack as stack_mod

OTHER = stack_mod.OTHER_PROJECT


def _ids(resp, key='volumes'):
    assert resp.status_code == 200, resp.text
    return sorted(item['id'] for item in resp.json()[key])


def _member(stack, version='3.71'):
    return stack.client(project=OTHER, roles='member,reader',
                        version=version)


def test_list_resource_filters(stack):
    api = stack.client()
    assert stack.client(version='3.32').get(
        '/resource_filters').status_code == 404
    listed = api.get('/resource_filters').json()['resource_filters']
    assert {f['resource']: f['filters'] for f in listed} == \
        resource_filters.DEFAULTS
    one = _member(stack).get('/resource_filters?resource=volume').json()
    assert one == {'resource_filters': [{
        'resource': 'volume',
        'filters': resource_filters.DEFAULTS['volume']}]}
    assert api.get('/resource_filters?resource=nope').json() == {
        'resource_filters': []}


def test_non_admin_filters_follow_the_file(stack):
    member = _member(stack)
    vol = member.create_volume(name='alpha')
    assert _ids(member.get('/volumes?name=alpha')) == [vol['id']]
    assert _ids(member.get('/volumes?size=1&status=available')) == \
        [vol['id']]
    # not in the file: refused from 3.31 with Cinder's words
    resp = member.get('/volumes?project_id=%s' % OTHER)
    assert resp.status_code == 400
    assert resp.json()['badRequest']['message'] == \
        'Invalid filters project_id are found in query options.'
    assert _ids(_member(stack, '3.30').get(
        '/volumes?project_id=%s' % OTHER)) == [vol['id']]
    # the file lists "name", not "name~": no substring match for members
    assert member.get('/volumes?name~=lph').status_code == 400
    # an administrator uses every filter served
    admin = stack.client()
    assert _ids(admin.get('/volumes?name~=lph&all_tenants=1')) == \
        [vol['id']]
    assert admin.get('/volumes?n%C3%A4me=x').status_code == 400
    assert member.get('/snapshots?project_id=x').status_code == 400
    assert member.get('/backups?project_id=x').status_code == 400
    assert member.get('/attachments?project_id=x').status_code == 400
    assert member.get('/messages?project_id=x').status_code == 400
    assert _ids(member.get('/attachments?volume_id=%s&status=attached'
                           % vol['id']), 'attachments') == []


def test_like_filters_from_the_file(tmp_path):
    path = tmp_path / 'filters.json'
    filters = dict(resource_filters.DEFAULTS)
    filters['volume'] = filters['volume'] + ['name~']
    filters['snapshot'] = ['name~', 'availability_zone']
    filters['pool'] = ['name']
    path.write_text(json.dumps(filters))
    s = stack_mod.Stack(tmp_path / 'state', extra={
        'resource_query_filters_file': str(path)}).start()
    try:
        member = _member(s)
        vol = member.create_volume(name='alpha')
        assert _ids(member.get('/volumes?name~=lph')) == [vol['id']]
        # "name~" in the file enables "name" too
        assert _ids(member.get('/volumes?name=alpha')) == [vol['id']]
        assert _member(s, '3.33').get('/volumes?name~=lph').status_code \
            == 400
        listed = member.get('/resource_filters?resource=snapshot').json()
        assert listed['resource_filters'][0]['filters'] == \
            ['name~', 'availability_zone']
        resp = member.post('/snapshots', json={'snapshot': {
            'volume_id': vol['id'], 'name': 'snap-one'}})
        assert resp.status_code == 202, resp.text
        snap = resp.json()['snapshot']
        assert _ids(member.get('/snapshots?name~=ap-o'), 'snapshots') == \
            [snap['id']]
        assert _ids(member.get('/snapshots?availability_zone=nova'),
                    'snapshots') == [snap['id']]
        assert _ids(member.get('/snapshots?availability_zone=elsewhere'),
                    'snapshots') == []
        assert member.get('/snapshots?status=available').status_code == 400
        # the pool list's filters are the file's, for admins too
        admin = s.client()
        pools = '/scheduler-stats/get_pools?%s=__DEFAULT__'
        assert admin.get(pools % 'name').status_code == 200
        assert admin.get(pools % 'volume_type').status_code == 400
        assert admin.get(pools % 'volume_type', headers={
            'OpenStack-API-Version': 'volume 3.30'}).status_code == 200
    finally:
        s.stop()


def test_bad_filters_file_stops_the_api(tmp_path):
    path = tmp_path / 'filters.json'
    path.write_text('{"volume": "name"}')
    s = stack_mod.Stack(tmp_path / 'state', extra={
        'resource_query_filters_file': str(path)})
    with pytest.raises(Exception) as e:
        s.start()
    assert 'resource_query_filters_file' in str(e.value)
    s.stop()


def test_time_comparison_filters(stack):
    api = stack.client()
    first = api.create_volume(name='first')
    shown = api.get('/volumes/%s' % first['id']).json()['volume']
    created = datetime.datetime.fromisoformat(shown['created_at'])
    second = api.create_volume(name='second')
    after = (created + datetime.timedelta(microseconds=1)).isoformat()
    assert _ids(api.get('/volumes?created_at=gt:%s' % after)) == \
        [second['id']]
    assert _ids(api.get('/volumes?created_at=lte:%s' %
                        created.isoformat())) == [first['id']]
    assert _ids(api.get('/volumes?created_at=gte:%s,lt:%s' % (
        created.isoformat(), after))) == [first['id']]
    assert _ids(api.get('/volumes?updated_at=gt:2000-01-01T00:00:00')) \
        == sorted([first['id'], second['id']])
    member = _member(stack)
    assert member.get('/volumes?created_at=gt:2000-01-01T00:00:00')\
        .status_code == 200
    for query, message in (
            ('created_at=after:2000-01-01', 'Invalid after operator'),
            ('created_at=2000', 'Invalid created_at value'),
            ('created_at=gt:yesterday', 'Invalid yesterday value')):
        resp = api.get('/volumes?' + query)
        assert resp.status_code == 400, query
        assert resp.json()['badRequest']['message'] == message
    resp = stack.client(version='3.59').get(
        '/volumes?created_at=gt:2000-01-01T00:00:00')
    assert resp.status_code == 400


def test_message_filters(stack):
    api = stack.client()
    for query in ('resource_uuid=x', 'resource_type=VOLUME',
                  'event_id=VOLUME_VOLUME_001_002', 'request_id=req-x',
                  'message_level=ERROR'):
        resp = api.get('/messages?' + query)
        assert resp.status_code == 200, query
        assert resp.json() == {'messages': []}
    assert api.get('/messages?bogus=1').status_code == 400


def test_backup_name_like_filter(stack):
    api = stack.client()
    assert api.get('/backups?name~=x').status_code == 200
    assert stack.client(version='3.33').get(
        '/backups?name~=x').status_code == 400


def test_cinder_list_filters(stack):
    rows = table(cinder(stack, 'list-filters', '--resource', 'backup'))
    assert rows[0] == ['Resource', 'Filters']
    assert rows[1][0] == 'backup'
    assert all(key in rows[1][1] for key in ('name', 'status', 'volume_id'))
    created = stack.client().create_volume(name='listed-one')
    rows = table(cinder(stack, 'list', '--filters', 'name=listed-one'))
    assert [r[0] for r in rows[1:]] == [created['id']]


def test_type_extra_specs_filter_and_pool_filters(stack):
    api = stack.client()
    gold = api.create_type('gold', {'tier': 'gold', 'k': 'v'})
    api.create_type('silver', {'tier': 'silver', 'k': 'v'})

    def names(resp):
        return sorted(t['name'] for t in resp.json()['volume_types'])
    assert names(api.get("/types?extra_specs={'tier':'gold'}")) == ['gold']
    assert names(api.get("/types?extra_specs={'k':'v'}")) == \
        ['gold', 'silver']
    assert names(_member(stack).get(
        "/types?extra_specs={'tier':'gold','k':'v'}")) == ['gold']
    assert api.get('/types?extra_specs=notadict').status_code == 400
    # before 3.52 the filter is not there (every type is listed)
    assert 'silver' in names(stack.client(version='3.51').get(
        "/types?extra_specs={'tier':'gold'}"))
    assert [t['id'] for t in api.get(
        "/types?extra_specs={'tier':'gold'}").json()['volume_types']] == \
        [gold['id']]
