"""Capability scheduling across backends, refusals, errors the user can
read, services going down."""
import time

import pytest

from tests.harness import stack as stack_mod

MA = {'volume_backend_name': 'ma'}
NOMA = {'volume_backend_name': 'noma', 'multiattach': 'false'}


@pytest.fixture
def two(tmp_path):
    s = stack_mod.Stack(tmp_path / 'state',
                        backends={'ma': MA, 'noma': NOMA}).start()
    yield s
    s.stop()


def test_pools_report_capabilities(two):
    api = two.client()
    pools = api.get('/scheduler-stats/get_pools').json()['pools']
    assert sorted(p['name'] for p in pools) == ['testnode@ma#ma',
                                                'testnode@noma#noma']
    assert 'capabilities' not in pools[0]
    detail = api.get('/scheduler-stats/get_pools?detail=True').json()
    caps = {p['name']: p['capabilities'] for p in detail['pools']}
    assert caps['testnode@ma#ma']['multiattach'] is True
    assert caps['testnode@noma#noma']['multiattach'] is False
    assert caps['testnode@ma#ma']['total_capacity_gb'] > 0
    assert caps['testnode@ma#ma']['volume_backend_name'] == 'ma'
    resp = api.get('/scheduler-stats/get_pools?multiattach=True')
    assert resp.status_code == 400
    assert 'Invalid filters multiattach' in resp.json()['badRequest'][
        'message']
    api.create_type('ma-type', {'multiattach': '<is> True'})
    only = api.get('/scheduler-stats/get_pools?volume_type=ma-type').json()
    assert [p['name'] for p in only['pools']] == ['testnode@ma#ma']


def test_multiattach_type_lands_on_capable_backend(two):
    api = two.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    for _ in range(3):
        vol = api.create_volume(volume_type='shared')
        assert vol['os-vol-host-attr:host'] == 'testnode@ma#ma'
        assert vol['multiattach'] is True


def test_backend_name_and_operators(two):
    api = two.client()
    api.create_type('pin-noma', {'volume_backend_name': 'noma'})
    vol = api.create_volume(volume_type='pin-noma')
    assert vol['os-vol-host-attr:host'] == 'testnode@noma#noma'
    assert vol['multiattach'] is False
    api.create_type('in-op', {'capabilities:storage_protocol': '<in> fil'})
    assert api.create_volume(volume_type='in-op')['status'] == 'available'
    api.create_type('ge-op', {'total_capacity_gb': '>= 1'})
    assert api.create_volume(volume_type='ge-op')['status'] == 'available'
    api.create_type('or-op', {'volume_backend_name': '<or> x <or> noma'})
    vol = api.create_volume(volume_type='or-op')
    assert vol['os-vol-host-attr:host'] == 'testnode@noma#noma'


def test_capability_nobody_has_fails_with_a_message(two):
    """As Cinder (and Tempest's user-messages test): accepted, then
    ``error`` with a user message naming what no backend offers."""
    api = two.client()
    api.create_type('impossible', {'volume_backend_name': 'nowhere'})
    api.create_type('exotic', {'capabilities:dedup': '<is> True'})
    for name in ('impossible', 'exotic'):
        resp = api.post('/volumes', json={'volume': {
            'size': 1, 'volume_type': name}})
        assert resp.status_code == 202, name
        vol = api.wait_volume(resp.json()['volume']['id'], 'error')
        messages = api.get('/messages?resource_uuid=%s' % vol['id'],
                           headers={'OpenStack-API-Version': 'volume 3.3'}
                           ).json()['messages']
        assert [m['event_id'] for m in messages] == [
            'VOLUME_VOLUME_001_003'], messages
        assert 'No valid backend' in messages[0]['user_message'], messages
        # every key Tempest's schema asks for is a string
        assert messages[0]['request_id'].startswith('req-')
        assert messages[0]['guaranteed_until'] > messages[0]['created_at']


def test_unknown_availability_zone_is_400(two):
    api = two.client()
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'availability_zone': 'mars'}})
    assert resp.status_code == 400
    assert "Availability zone 'mars' is invalid" in resp.json()[
        'badRequest']['message']
    vol = api.create_volume(availability_zone='nova')
    assert vol['availability_zone'] == 'nova'


def test_nothing_fits_goes_to_error_with_a_message(tmp_path):
    full = {'reserved_percentage': '100'}
    s = stack_mod.Stack(tmp_path / 'state', backends={'full': full}).start()
    try:
        api = s.client()
        vol = api.create_volume(status='error')
        assert vol['os-vol-host-attr:host'] is None
        msgs = api.get('/messages?resource_uuid=%s' % vol['id']).json()
        (msg,) = msgs['messages']
        assert msg['resource_type'] == 'VOLUME'
        assert msg['message_level'] == 'ERROR'
        assert 'CapacityFilter' in msg['user_message']
        shown = api.get('/messages/%s' % msg['id']).json()['message']
        assert shown['id'] == msg['id']
        # a volume in error that never got a host is deleted at once
        assert api.delete('/volumes/%s' % vol['id']).status_code == 202
        assert api.get('/volumes/%s' % vol['id']).status_code == 404
        assert api.delete('/messages/%s' % msg['id']).status_code == 204
        assert api.get('/messages/%s' % msg['id']).status_code == 404
        old = api.get('/messages', headers={
            'OpenStack-API-Version': 'volume 3.2'})
        assert old.status_code == 404
    finally:
        s.stop()


def test_stopped_backend_goes_down_and_gets_nothing(two):
    api = two.client()

    def states():
        return {s['host']: s['state'] for s in
                api.get('/os-services').json()['services']}
    assert states() == {'testnode': 'up', 'testnode@ma': 'up',
                        'testnode@noma': 'up'}
    # (a clean stop records the service down at once)
    two.stop_backend('noma')
    for _ in range(4):
        vol = api.create_volume()
        assert vol['os-vol-host-attr:host'] == 'testnode@ma#ma'
    pools = api.get('/scheduler-stats/get_pools').json()['pools']
    assert [p['name'] for p in pools] == ['testnode@ma#ma']
    api.create_type('pin-noma', {'volume_backend_name': 'noma'})
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': 'pin-noma'}})
    # as Cinder: the scheduler finds no backend and says so
    assert resp.status_code == 202
    api.wait_volume(resp.json()['volume']['id'], 'error')


def test_disabled_backend_gets_nothing(two):
    api = two.client()
    resp = api.put('/os-services/disable-log-reason', json={
        'host': 'testnode@noma', 'binary': 'cinder-volume',
        'disabled_reason': 'maintenance'})
    assert resp.status_code == 200
    assert resp.json()['status'] == 'disabled'
    svc = {s['host']: s for s in api.get('/os-services').json()[
        'services']}['testnode@noma']
    assert (svc['status'], svc['disabled_reason']) == ('disabled',
                                                       'maintenance')
    for _ in range(3):
        vol = api.create_volume()
        assert vol['os-vol-host-attr:host'] == 'testnode@ma#ma'
    resp = api.put('/os-services/enable', json={
        'host': 'testnode@noma', 'binary': 'cinder-volume'})
    assert resp.status_code == 200 and resp.json()['status'] == 'enabled'


def test_services_view_and_bad_input(two):
    api = two.client()
    services = api.get('/os-services').json()['services']
    binaries = sorted(s['binary'] for s in services)
    assert binaries == ['cinder-backup', 'cinder-scheduler', 'cinder-volume',
                        'cinder-volume']
    vol_svc = [s for s in services if s['binary'] == 'cinder-volume'][0]
    assert vol_svc['backend_state'] == 'up' and vol_svc['zone'] == 'nova'
    assert 'cluster' in vol_svc
    old = api.get('/os-services', headers={
        'OpenStack-API-Version': 'volume 3.0'}).json()['services']
    assert 'cluster' not in old[0] and 'backend_state' not in old[1]
    filtered = api.get('/os-services?binary=cinder-scheduler').json()
    assert [s['host'] for s in filtered['services']] == ['testnode']
    assert api.get('/os-services?zone=x').status_code == 400
    assert api.put('/os-services/enable', json={
        'host': 'nope'}).status_code == 404
    # (no replication here)
    assert api.put('/os-services/failover_host', json={
        'host': 'testnode@ma'}).status_code == 404
    assert api.put('/os-services/disable', json={}).status_code == 400
    assert api.put('/os-services/disable-log-reason', json={
        'host': 'testnode@ma'}).status_code == 400


def test_capabilities_of_a_host(two):
    api = two.client()
    resp = api.get('/capabilities/testnode@ma')
    assert resp.status_code == 200
    caps = resp.json()
    assert caps['namespace'] == 'OS::Storage::Capabilities::testnode@ma'
    assert caps['volume_backend_name'] == 'ma'
    assert caps['storage_protocol'] == 'file'
    assert caps['properties']['multiattach']['type'] == 'boolean'
    assert api.get('/capabilities/nosuchhost').status_code == 404


def test_capabilities_of_a_down_host_fail_fast(two):
    api = two.client()
    two.volume_service('noma').stop()
    two.volume_service('noma').wait()
    # A clean stop is recorded: the API answers at once, without asking
    # the bus (a service that stops answering without stopping makes the
    # call time out: test_process, a connect that times out).
    started = time.monotonic()
    resp = api.get('/capabilities/testnode@noma')
    assert resp.status_code == 503
    assert resp.json()['serviceUnavailable']['message'] == (
        'Service testnode@noma is down: no heartbeat since it stopped')
    assert time.monotonic() - started < 1


def test_admin_only_views(two):
    member = two.client(roles='member')
    for path in ('/os-services', '/scheduler-stats/get_pools',
                 '/capabilities/testnode@ma'):
        assert member.get(path).status_code == 403, path


def test_a_lost_scheduling_request_is_reconciled(stack):
    """A volume recorded ``creating`` whose request never reached a
    scheduler (the API died after recording it) is scheduled by the
    scheduler's reconciliation, and a volume already scheduled is never
    scheduled twice."""
    import sqlalchemy as sa

    from cinder_lite.db import api as db_api
    from cinder_lite.db import models

    api = stack.client()
    vol = api.create_volume()
    lost = api.create_volume()
    with db_api.writer() as session:
        session.execute(sa.update(models.Volume).where(
            models.Volume.id == lost['id']).values(
            status='creating', host=None))
    scheduler = stack.scheduler[0].endpoints[0]
    assert scheduler.reconcile_now() == []          # not old enough yet
    assert scheduler.reconcile_now(max_age=0) == [
        'volume %s: scheduled again' % lost['id']]
    shown = api.wait_volume(lost['id'], 'available')
    assert shown['os-vol-host-attr:host'] == 'testnode@file#file'
    # a duplicate request for a scheduled volume changes nothing
    scheduler.create_volume(scheduler_context(), vol['id'], {
        'size': 1, 'availability_zone': 'nova', 'extra_specs': {},
        'volume_type_id': vol['volume_type'], 'multiattach': False})
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'


def scheduler_context():
    from cinder_lite.common import context
    return context.get_admin_context()


def test_a_backend_up_before_its_first_report_gets_a_503(two):
    """A volume service whose row is up but holds no capabilities yet
    (its first report is not in) might hold the type: a create asking for
    what only it could have is told to retry (503), not refused (400).
    Services are up only from their first report on, so this row (a
    service of an older release, which beat before it reported) is made
    by hand."""
    from cinder_lite.db import api as db_api
    from cinder_lite.db import services as db_services

    with db_api.writer() as session:
        row = db_services.register(session, 'othernode@fresh',
                                   'cinder-volume', 'cinder-lite-volume',
                                   'nova', backend='fresh')
        db_services.heartbeat(session, row.id)
    api = two.client()
    api.create_type('fresh', {'volume_backend_name': 'fresh'})
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': 'fresh'}})
    assert resp.status_code == 503, resp.text
    assert 'othernode@fresh' in resp.text
    assert 'not reported its capabilities yet' in resp.text
    assert api.get('/volumes').json()['volumes'] == []
    with db_api.writer() as session:
        row = db_services.get_by_host(session, 'othernode@fresh',
                                      'cinder-volume')
        db_services.heartbeat(session, row.id, {
            'volume_backend_name': 'other', 'total_capacity_gb': 10,
            'free_capacity_gb': 10})
    resp = api.post('/volumes', json={'volume': {
        'size': 1, 'volume_type': 'fresh'}})
    # reported now, it is not ``fresh``: the scheduler fails it, as Cinder
    assert resp.status_code == 202, resp.text
    api.wait_volume(resp.json()['volume']['id'], 'error')
