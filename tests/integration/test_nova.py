"""OpenStack Nova drives cinder_lite, with a real Keystone (issue 16).

One deployment per test run, shared with test_tempest.py
(tests/harness/openstack.py, the ``openstack_cloud`` fixture): Keystone,
Glance, Placement, nova-api, -conductor, -scheduler and two nova-compute
hosts with the fake virt driver, and cinder_lite in keystone mode, over
RabbitMQ and MariaDB.  Every step goes through Nova's compute API at
microversion 2.60 with a Keystone token of a member of project ``demo``
(admin only where Nova's policy wants one: flavors, live migration), and
cinder_lite is read through its own API with the same tokens.

Skipped without the OpenStack virtualenv (tools/openstack-venv), failed
instead under CINDER_LITE_REQUIRE_SERVICES=1, as in CI.
"""
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys
import time

import pytest
import requests

from tests.harness import openstack
from tests.harness import tokens
from tests.harness import util

SHARED_TYPE = 'nova-shared'
OPENSTACK = os.path.join(os.path.dirname(sys.executable), 'openstack')
SERVERS_ON_ONE_VOLUME = 6
WAIT = 120
IN_BETWEEN = ('reserved', 'attaching', 'detaching', 'error_attaching',
              'error_detaching')


@pytest.fixture(scope='module')
def cloud(openstack_cloud):
    """The session's OpenStack (tests/integration/conftest.py) with this
    module's project ``demo``, flavor and shareable type."""
    stack = openstack_cloud
    admin = stack.admin()
    stack.make_project('demo', {'demo-member': ['member', 'reader'],
                                'demo-reader': ['reader']})
    stack.flavor = admin.compute('POST', '/flavors', {'flavor': {
        'name': 'bfv', 'ram': 64, 'vcpus': 1, 'disk': 0}},
        expect=200).json()['flavor']['id']
    admin.volume('POST', '/types', {'volume_type': {
        'name': SHARED_TYPE, 'extra_specs': {'multiattach': '<is> True'}}},
        expect=200)
    return stack


@pytest.fixture(scope='module')
def demo(cloud):
    return cloud.client('demo-member', openstack.USER_PASSWORD, 'demo')


@pytest.fixture(scope='module')
def admin(cloud):
    return cloud.admin()


@pytest.fixture(autouse=True)
def nothing_left_in_between(cloud, demo):
    """After every test: no server left, and no volume or attachment of
    the project stuck in a transitional status."""
    yield
    servers = demo.compute('GET', '/servers', expect=200).json()['servers']
    for server in servers:
        demo.compute('DELETE', '/servers/%s' % server['id'])
    for server in servers:
        wait_gone(demo, server['id'])
    volumes = demo.volume('GET', '/volumes/detail', expect=200).json()[
        'volumes']
    assert [(v['id'], v['status']) for v in volumes
            if v['status'] not in ('available', 'in-use')] == []
    attachments = demo.volume('GET', '/attachments/detail', expect=200
                              ).json()['attachments']
    assert [(a['id'], a['status']) for a in attachments
            if a['status'] in IN_BETWEEN] == []


# -- helpers ------------------------------------------------------------------

def wait_for(predicate, what, timeout=WAIT):
    return util.wait_for(predicate, timeout, interval=0.3,
                         what=what)


def make_volume(c, name, volume_type=None, bootable=False):
    vol = c.volume('POST', '/volumes', {'volume': {
        'size': 1, 'name': name, 'volume_type': volume_type}},
        expect=202).json()['volume']
    wait_for(lambda: volume(c, vol['id'])['status'] == 'available',
             'volume %s available' % name)
    if bootable:
        c.volume('POST', '/volumes/%s/action' % vol['id'],
                 {'os-set_bootable': {'bootable': True}}, expect=200)
    return vol['id']


def volume(c, vid):
    return c.volume('GET', '/volumes/%s' % vid, expect=200).json()['volume']


def attachments_of(c, vid):
    return c.volume('GET', '/attachments/detail?all_tenants=1&volume_id=%s'
                    % vid, expect=200).json()['attachments']


def boot(c, cloud, name, boot_volume, data_volume=None, group=None):
    """POST /servers booting from ``boot_volume`` (in server ``group``);
    returns the id."""
    bdms = [{'boot_index': 0, 'uuid': boot_volume, 'source_type': 'volume',
             'destination_type': 'volume', 'delete_on_termination': False}]
    if data_volume:
        bdms.append({'boot_index': -1, 'uuid': data_volume,
                     'source_type': 'volume', 'destination_type': 'volume',
                     'delete_on_termination': False})
    body = {'server': {'name': name, 'flavorRef': cloud.flavor,
                       'networks': 'none', 'block_device_mapping_v2': bdms}}
    if group:
        body['os:scheduler_hints'] = {'group': group}
    return c.compute('POST', '/servers', body, expect=202).json()[
        'server']['id']


def server(c, sid):
    return c.compute('GET', '/servers/%s' % sid, expect=200).json()['server']


def wait_active(c, sid):
    def active():
        s = server(c, sid)
        assert s['status'] != 'ERROR', s.get('fault')
        return s['status'] == 'ACTIVE' and s
    return wait_for(active, 'server %s ACTIVE' % sid)


def host_of(admin, s):
    """The compute host of server ``s`` (only admins see it)."""
    return server(admin, s['id'])['OS-EXT-SRV-ATTR:host']


def wait_gone(c, sid):
    wait_for(lambda: c.compute('GET', '/servers/%s' % sid).status_code == 404,
             'server %s deleted' % sid)


def nova_attach(c, sid, vid, expect=200):
    return c.compute('POST', '/servers/%s/os-volume_attachments' % sid,
                     {'volumeAttachment': {'volumeId': vid}}, expect=expect)


def attached_hosts(c, vid):
    """{instance: host} of the volume's attachments that are attached
    (``c`` an admin: only admins and services see hosts)."""
    return {a['instance']: a['attached_host'] for a in attachments_of(c, vid)
            if a['status'] == 'attached'}


ACCESS = re.compile(r' (GET|POST|PUT|DELETE) (\S+) (\d{3}) [\d.]+ ms '
                    r'\(request \S+, project (\S+), version (\S+)\)$')


class RequestLog:
    """The requests cinder_lite's API logged since ``mark()``: (method,
    path with ids replaced by {id}, status, microversion) for
    ``project`` (or none: version discovery)."""

    def __init__(self, cloud):
        self.path = cloud.cinder.processes['api'].log_path
        self.offset = 0

    def mark(self):
        self.offset = os.path.getsize(self.path)

    def since(self, project):
        with open(self.path, 'rb') as f:
            f.seek(self.offset)
            lines = f.read().decode('utf-8', 'replace').splitlines()
        seen = []
        for line in lines:
            m = ACCESS.search(line)
            if m and m.group(4) in (project, '-'):
                path = re.sub(r'[0-9a-f]{32}|[0-9a-f-]{36}', '{id}',
                              m.group(2))
                seen.append((m.group(1), path, int(m.group(3)),
                             m.group(5)))
        return seen


def show(requests_seen, what):
    """Print what Nova asked (pytest -s shows it); all of it served."""
    print('\nNova -> cinder_lite, %s:' % what)
    for method, path, status, version in requests_seen:
        print('  %-6s %-44s %d  %s' % (method, path, status, version))
    assert requests_seen, 'no request from Nova for %s' % what
    assert all(status < 400 for _, _, status, _ in requests_seen), \
        requests_seen
    return {(m, p) for m, p, _, _ in requests_seen}


def nova_sent(requests_seen, what):
    calls = show(requests_seen, what)
    for call in (('POST', '/v3/{id}/attachments'),
                 ('PUT', '/v3/{id}/attachments/{id}'),
                 ('POST', '/v3/{id}/attachments/{id}/action')):
        assert call in calls, (call, requests_seen)
    # the attachment API from its first microversion on
    assert {v for m, p, _, v in requests_seen if '/attachments' in p} == \
        {'3.44'}


# -- tests --------------------------------------------------------------------

def test_boot_from_a_multiattach_volume_and_attach_it_to_two_more(
        cloud, demo, admin):
    shared = make_volume(demo, 'shared-root', SHARED_TYPE, bootable=True)
    log = RequestLog(cloud)
    log.mark()
    first = boot(demo, cloud, 'first', shared)
    hosts = {first: host_of(admin, wait_active(demo, first))}
    nova_sent(log.since(demo.project_id), 'one boot from volume')
    others = [boot(demo, cloud, name, make_volume(demo, name + '-root',
                                                  bootable=True))
              for name in ('second', 'third')]
    hosts.update((sid, host_of(admin, wait_active(demo, sid)))
                 for sid in others)
    assert set(hosts.values()) <= set(openstack.COMPUTES)
    for sid in others:
        log.mark()
        assert nova_attach(demo, sid, shared).json()['volumeAttachment'][
            'volumeId'] == shared
        # Nova's attach API returns once the attachment is reserved; the
        # compute host connects and completes it in the background
        wait_for(lambda: ('POST', '/v3/{id}/attachments/{id}/action', 204,
                          '3.44') in log.since(demo.project_id),
                 'Nova completes the attach')
        nova_sent(log.since(demo.project_id), 'one attach')
    wait_for(lambda: attached_hosts(admin, shared) == hosts,
             'three attachments of the shared volume')
    vol = volume(admin, shared)
    assert vol['status'] == 'in-use' and vol['multiattach'] is True
    assert {a['server_id']: a['host_name'] for a in vol['attachments']} == \
        hosts
    # Nova's connector reached the volume service: the audit trail has
    # the compute host and instance of each attachment
    events = admin.volume('GET', '/os-attachment-events?volume_id=%s'
                          % shared, expect=200).json()['attachment_events']
    attached = {(e['instance_uuid'], e['attached_host']) for e in events
                if e['to_status'] == 'attached'}
    assert attached == set(hosts.items())
    assert {e['user_id'] for e in events} == {demo.user_id}

    # detaching from one server leaves the other two attached
    log.mark()
    demo.compute('DELETE', '/servers/%s/os-volume_attachments/%s' % (
        others[0], shared), expect=202)
    wait_for(lambda: attached_hosts(admin, shared) == {
        sid: host for sid, host in hosts.items() if sid != others[0]},
        'the shared volume detached from the second server')
    assert ('DELETE', '/v3/{id}/attachments/{id}') in show(
        log.since(demo.project_id), 'one detach')
    assert volume(demo, shared)['status'] == 'in-use'
    # deleting the servers detaches everything
    for sid in hosts:
        demo.compute('DELETE', '/servers/%s' % sid, expect=204)
    for sid in hosts:
        wait_gone(demo, sid)
    wait_for(lambda: volume(demo, shared)['status'] == 'available',
             'shared volume available')
    assert attachments_of(admin, shared) == []


def test_many_servers_boot_with_one_multiattach_data_volume(cloud, demo,
                                                            admin):
    data = make_volume(demo, 'shared-data', SHARED_TYPE)
    roots = [make_volume(demo, 'many-%d' % i, bootable=True)
             for i in range(SERVERS_ON_ONE_VOLUME)]
    # a clustered application spreads its nodes: with soft anti-affinity
    # the scheduler puts the second wave (booted all at once, like the
    # first) on the host the first wave left alone
    group = demo.compute('POST', '/os-server-groups', {'server_group': {
        'name': 'shared-data', 'policies': ['soft-anti-affinity']}},
        expect=200).json()['server_group']['id']
    half = len(roots) // 2
    hosts = {}
    with concurrent.futures.ThreadPoolExecutor(half) as pool:
        for wave in (range(half), range(half, len(roots))):
            sids = list(pool.map(
                lambda i: boot(demo, cloud, 'many-%d' % i, roots[i], data,
                               group), wave))
            hosts.update((sid, host_of(admin, wait_active(demo, sid)))
                         for sid in sids)
            assert attached_hosts(admin, data) == hosts
    sids = list(hosts)
    per_host = sorted((h, list(hosts.values()).count(h))
                      for h in set(hosts.values()))
    print('servers per host: %s' % per_host)
    assert [h for h, _ in per_host] == sorted(openstack.COMPUTES)
    # each attach was reserved at the API and connected on its compute
    # host; how long each took, for the record
    spans = []
    for att in attachments_of(admin, data):
        assert att['status'] == 'attached' and att['attach_mode'] == 'rw'
        spans.append(att['attached_at'])
    print('attached_at of the %d attachments: %s' % (len(spans),
                                                     sorted(spans)))
    for sid in sids:
        demo.compute('DELETE', '/servers/%s' % sid, expect=204)
    for sid in sids:
        wait_gone(demo, sid)
    assert attachments_of(admin, data) == []
    assert volume(demo, data)['status'] == 'available'
    demo.compute('DELETE', '/os-server-groups/%s' % group, expect=204)


def test_a_plain_volume_is_refused_for_a_second_server(cloud, demo, admin):
    plain = make_volume(demo, 'plain')
    a, b = (boot(demo, cloud, name, make_volume(demo, name + '-root',
                                                bootable=True))
            for name in ('plain-a', 'plain-b'))
    wait_active(demo, a)
    wait_active(demo, b)
    nova_attach(demo, a, plain)
    wait_for(lambda: list(attached_hosts(admin, plain)) == [a],
             'plain volume attached to the first server')
    refused = nova_attach(demo, b, plain, expect=None)
    assert refused.status_code == 400, refused.text
    # Nova's own check, from the volume cinder_lite shows it
    assert 'already attached' in refused.json()['badRequest']['message']
    time.sleep(1)
    (only,) = attachments_of(admin, plain)
    assert only['instance'] == a and only['status'] == 'attached'
    assert plain not in [x['volumeId'] for x in demo.compute(
        'GET', '/servers/%s/os-volume_attachments' % b, expect=200).json()[
        'volumeAttachments']]


def test_extending_an_attached_volume_tells_nova(cloud, demo, admin):
    """An attached volume that grows (3.42) is announced to Nova with a
    ``volume-extended`` server external event, sent with cinder_lite's
    service user ([nova]): Nova records an ``extend_volume`` action on
    the server and its compute host finishes it."""
    data = make_volume(demo, 'growing')
    sid = boot(demo, cloud, 'grows', make_volume(demo, 'grows-root',
                                                 bootable=True))
    wait_active(demo, sid)
    nova_attach(demo, sid, data)
    wait_for(lambda: volume(demo, data)['status'] == 'in-use',
             'data volume in-use')
    demo.volume('POST', '/volumes/%s/action' % data,
                {'os-extend': {'new_size': 2}}, expect=202,
                version='3.42')
    assert volume(demo, data)['size'] == 2

    def extended():
        actions = demo.compute('GET', '/servers/%s/os-instance-actions'
                               % sid, expect=200).json()['instanceActions']
        done = [a for a in actions if a['action'] == 'extend_volume']
        if not done:
            return None
        events = admin.compute('GET', '/servers/%s/os-instance-actions/%s'
                               % (sid, done[0]['request_id']),
                               expect=200).json()['instanceAction'][
                                   'events']
        return [e['result'] for e in events
                if e['event'] == 'compute_extend_volume'
                and e['finish_time']]
    assert wait_for(extended, 'Nova extended the volume on its host') == \
        ['Success']


def test_live_migration_moves_the_attachment(cloud, demo, admin):
    plain = make_volume(demo, 'migrating')
    sid = boot(demo, cloud, 'migrant', make_volume(demo, 'migrant-root',
                                                   bootable=True))
    source = host_of(admin, wait_active(demo, sid))
    nova_attach(demo, sid, plain)
    wait_for(lambda: attached_hosts(admin, plain) == {sid: source},
             'volume attached on the source host')
    (before,) = attachments_of(admin, plain)
    admin.compute('POST', '/servers/%s/action' % sid, {
        'os-migrateLive': {'host': None, 'block_migration': 'auto'}},
        expect=202, version='2.30')
    statuses = set()
    target = [h for h in openstack.COMPUTES if h != source][0]

    def moved():
        statuses.add(volume(demo, plain)['status'])
        s = server(admin, sid)
        assert s['status'] != 'ERROR', s.get('fault')
        return s['status'] == 'ACTIVE' and \
            s['OS-EXT-SRV-ATTR:host'] == target and \
            attached_hosts(admin, plain) == {sid: target}
    wait_for(moved, 'server and attachment on %s' % target)
    assert statuses == {'in-use'}
    (after,) = attachments_of(admin, plain)
    assert after['id'] != before['id']
    assert after['instance'] == sid
    events = admin.volume('GET', '/os-attachment-events?attachment_id=%s'
                          % before['id'], expect=200).json()[
        'attachment_events']
    assert events[-1]['to_status'] == 'detached'


def test_the_owner_cannot_pull_an_attachment_nova_made(cloud, demo, admin):
    """CVE-2023-2088: a user who deletes the attachment of a running
    server through the block-storage API would leave the host holding a
    device another server could get.  Only Nova (a service token) or an
    admin may."""
    vid = make_volume(demo, 'guarded')
    sid = boot(demo, cloud, 'guarded', make_volume(demo, 'guarded-root',
                                                   bootable=True))
    wait_active(demo, sid)
    nova_attach(demo, sid, vid)
    wait_for(lambda: list(attached_hosts(admin, vid)) == [sid],
             'volume attached')
    (att,) = attachments_of(admin, vid)
    refused = demo.volume('DELETE', '/attachments/%s' % att['id'])
    assert refused.status_code == 409, refused.text
    assert attachments_of(admin, vid)[0]['status'] == 'attached'
    demo.compute('DELETE', '/servers/%s/os-volume_attachments/%s' % (
        sid, vid), expect=202)
    wait_for(lambda: attachments_of(admin, vid) == [], 'Nova detached it')
    assert volume(demo, vid)['status'] == 'available'


def backend_of(admin, vid):
    return volume(admin, vid)['os-vol-host-attr:host']


def other_backend(host):
    """The file backend of the two (``node-ma@ma``, ``node-mb@mb``) the
    volume is not on."""
    ma, mb = 'node-ma@ma', 'node-mb@mb'
    return mb if host.startswith(ma + '#') else ma


def volume_file(cloud, host, vid):
    section = host.partition('@')[2].partition('#')[0]
    return os.path.join(cloud.cinder.workdir, 'state', 'volumes', section,
                        'volume-%s' % vid)


def migrate(admin, vid, host, expect=202):
    return admin.volume('POST', '/volumes/%s/action' % vid, {
        'os-migrate_volume': {'host': host}}, expect=expect)


def temporary_volumes(admin, vid):
    everything = admin.volume('GET', '/volumes/detail?all_tenants=1',
                              expect=200).json()['volumes']
    return [v['id'] for v in everything
            if v.get('migration_status') == 'target:%s' % vid]


def test_an_attached_volume_migrates_through_novas_swap(cloud, demo,
                                                        admin):
    """os-migrate_volume of an in-use volume (issue 47): the source's
    volume service makes the temporary volume on the other backend and
    asks Nova to swap the server's disk to it (PUT
    /servers/{id}/os-volume_attachments/{volume_id}, with cinder_lite's
    service user); Nova attaches the temporary volume, detaches the
    volume and calls os-migrate_volume_completion back.  The volume
    keeps its id, is in-use on the other backend with the attachment
    Nova made, its old storage gone; the server's disk still names it,
    and Nova detaches it afterwards as any other."""
    data = make_volume(demo, 'swapped')
    sid = boot(demo, cloud, 'swapper', make_volume(demo, 'swapper-root',
                                                   bootable=True))
    host = host_of(admin, wait_active(demo, sid))
    nova_attach(demo, sid, data)
    wait_for(lambda: attached_hosts(admin, data) == {sid: host},
             'volume attached')
    (before,) = attachments_of(admin, data)
    source = backend_of(admin, data)
    dest = other_backend(source)
    assert os.path.exists(volume_file(cloud, source, data))
    log = RequestLog(cloud)
    log.mark()
    migrate(admin, data, dest)
    statuses = set()

    def migrated():
        v = volume(admin, data)
        statuses.add((v['status'], v['migration_status']))
        assert v['migration_status'] != 'error', v
        return v['migration_status'] == 'success' and v
    after = wait_for(migrated, 'the migration through Nova')
    print('(status, migration_status) seen: %s' % sorted(statuses))
    assert after['status'] == 'in-use'
    assert after['os-vol-host-attr:host'].startswith(dest + '#')
    assert [a['server_id'] for a in after['attachments']] == [sid]
    (moved,) = attachments_of(admin, data)
    assert moved['id'] != before['id'] and moved['instance'] == sid
    assert moved['status'] == 'attached' and \
        moved['attached_host'] == host
    # Nova's side: the server's disk names the volume, with the
    # attachment Nova made (shown from compute API 2.89)
    (disk,) = [a for a in demo.compute(
        'GET', '/servers/%s/os-volume_attachments' % sid, expect=200,
        version='2.89').json()['volumeAttachments']
        if a['volumeId'] == data]
    assert disk['attachment_id'] == moved['id']
    actions = admin.compute('GET', '/servers/%s/os-instance-actions' % sid,
                            expect=200).json()['instanceActions']
    assert 'swap_volume' in [a['action'] for a in actions]
    # what Nova asked of cinder_lite for the swap (with the service
    # user's token, so the requests are the service project's)
    calls = show(log.since(cloud.identity.project('service')),
                 'the swap of a migrating volume')
    for call in (('POST', '/v3/{id}/volumes/{id}/action'),
                 ('POST', '/v3/{id}/attachments'),
                 ('PUT', '/v3/{id}/attachments/{id}'),
                 ('DELETE', '/v3/{id}/attachments/{id}')):
        assert call in calls, (call, calls)
    # the temporary volume and the old storage are gone; the data lives
    # under the volume's id on the destination
    wait_for(lambda: not os.path.exists(volume_file(cloud, source, data))
             and temporary_volumes(admin, data) == [],
             'old storage and temporary volume removed')
    assert os.path.exists(volume_file(cloud, dest, data))
    # and it detaches as any volume: on its new backend
    demo.compute('DELETE', '/servers/%s/os-volume_attachments/%s' % (
        sid, data), expect=202)
    wait_for(lambda: volume(demo, data)['status'] == 'available',
             'detached after the migration')
    assert attachments_of(admin, data) == []


def test_migrations_nova_refuses_or_cinder_lite_does_not_start(
        cloud, demo, admin):
    """A multiattach volume in use is refused with Cinder's 400 and the
    reason (Nova swaps none with several read-write attachments); a swap
    Nova refuses (a stopped server) ends the migration ``error``, the
    volume attached as it was, where it was, the temporary volume
    gone."""
    shared = make_volume(demo, 'shared-unmoved', SHARED_TYPE)
    plain = make_volume(demo, 'plain-unmoved')
    sid = boot(demo, cloud, 'stays', make_volume(demo, 'stays-root',
                                                 bootable=True))
    wait_active(demo, sid)
    for vid in (shared, plain):
        nova_attach(demo, sid, vid)
        wait_for(lambda: list(attached_hosts(admin, vid)) == [sid],
                 'volume attached')
    resp = migrate(admin, shared, other_backend(backend_of(admin, shared)),
                   expect=400)
    assert 'multiattach volume in use' in \
        resp.json()['badRequest']['message'], resp.text
    assert volume(admin, shared)['migration_status'] is None

    demo.compute('POST', '/servers/%s/action' % sid, {'os-stop': None},
                 expect=202)
    wait_for(lambda: server(demo, sid)['status'] == 'SHUTOFF',
             'server stopped')
    source = backend_of(admin, plain)
    (before,) = attachments_of(admin, plain)
    migrate(admin, plain, other_backend(source))
    wait_for(lambda: volume(admin, plain)['migration_status'] == 'error',
             'the migration ends in error')
    after = volume(admin, plain)
    assert after['status'] == 'in-use'
    assert after['os-vol-host-attr:host'] == source
    assert attachments_of(admin, plain) == [before]
    wait_for(lambda: temporary_volumes(admin, plain) == [],
             'the temporary volume deleted')
    node = source.partition('@')[2].partition('#')[0]
    with open(cloud.cinder.processes[node].log_path) as f:
        assert "Nova refused the swap of server %s's volume: 409" % sid \
            in f.read()


def test_keystone_tokens_for_real(cloud):
    """cinder_lite's own keystone-mode scenario (member, reader, another
    project's member and admin) with tokens from the real Keystone."""
    p = cloud.make_project('ks-p', {'p-member': ['member', 'reader'],
                                    'p-reader': ['reader']})
    q = cloud.make_project('ks-q', {'q-member': ['member', 'reader'],
                                    'q-admin': ['admin', 'member',
                                                'reader']})
    clients = {name: cloud.client(name, openstack.USER_PASSWORD, project)
               for name, project in (('p-member', 'ks-p'),
                                     ('p-reader', 'ks-p'),
                                     ('q-member', 'ks-q'),
                                     ('q-admin', 'ks-q'))}
    # no token: 401 naming the real Keystone; forged identity headers
    # are not an identity; discovery stays open
    base = cloud.cinder.url
    resp = requests.get(base + '/v3/%s/volumes' % p, timeout=30)
    assert resp.status_code == 401
    assert resp.headers['WWW-Authenticate'] == \
        'Keystone uri="%s"' % cloud.keystone_url
    resp = requests.get(base + '/v3/%s/volumes' % p, timeout=30, headers={
        'X-Identity-Status': 'Confirmed', 'X-Project-Id': p,
        'X-Roles': 'admin'})
    assert resp.status_code == 401
    assert requests.get(base + '/v3/', timeout=30).status_code == 200
    # a token scoped to one project does not reach another's URL, and a
    # revoked token is refused at once
    assert clients['p-member'].volume(
        'GET', '/volumes', expect=200).json()['volumes'] == []
    other = clients['q-member']
    assert requests.get('%s/v3/%s/volumes' % (base, p), timeout=30,
                        headers={'X-Auth-Token': other.token}
                        ).status_code == 400
    revoked = cloud.client('p-reader', openstack.USER_PASSWORD, 'ks-p')
    cloud.identity.call('DELETE', '/auth/tokens', expect=(204,),
                        headers={'X-Subject-Token': revoked.token})
    assert revoked.volume('GET', '/volumes').status_code == 401
    target = type('Target', (), {})()
    target.url = cloud.cinder.url
    target.tokens = {name: c.token for name, c in clients.items()}
    target.user_ids = {name: c.user_id for name, c in clients.items()}
    tokens.token_scope_and_roles(target, p, q)


def osc(cloud, user, password, project, *args, output=True):
    """The ``openstack`` CLI with a password login to the real Keystone;
    its JSON output (``output``: the command prints something)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(OS_AUTH_URL=cloud.keystone_url, OS_USERNAME=user,
               OS_PASSWORD=password, OS_PROJECT_NAME=project,
               OS_USER_DOMAIN_NAME='Default',
               OS_PROJECT_DOMAIN_NAME='Default',
               OS_REGION_NAME=openstack.REGION,
               OS_COMPUTE_API_VERSION='2.60')
    args = list(args) + (['-f', 'json'] if output else [])
    result = subprocess.run([OPENSTACK] + args,
                            env=env, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return json.loads(result.stdout) if output else result.stdout


def test_openstack_cli_boots_from_a_cinder_lite_volume(cloud, demo):
    """What an operator types: the openstack CLI, logged in to Keystone,
    makes a volume bootable and boots from it without networks; the
    block-storage quota commands that look the project up in Keystone
    work too."""
    member = ('demo-member', openstack.USER_PASSWORD, 'demo')
    vol = osc(cloud, *member, 'volume', 'create', '--size', '1',
              'osc-root')
    wait_for(lambda: volume(demo, vol['id'])['status'] == 'available',
             'volume available')
    osc(cloud, *member, 'volume', 'set', '--bootable', 'osc-root',
        output=False)
    assert volume(demo, vol['id'])['bootable'] == 'true'
    server_ = osc(cloud, *member, 'server', 'create', '--flavor', 'bfv',
                  '--volume', 'osc-root', '--nic', 'none', '--wait', 'osc')
    assert server_['status'] == 'ACTIVE'
    assert volume(demo, vol['id'])['status'] == 'in-use'
    admin = ('admin', openstack.ADMIN_PASSWORD, 'admin')
    quota = osc(cloud, *admin, 'quota', 'show', '--volume', '--usage',
                'demo')
    volumes = [q for q in quota if q['Resource'] == 'volumes']
    assert volumes and volumes[0]['In Use'] >= 1, quota
    osc(cloud, *member, 'server', 'delete', '--wait', 'osc', output=False)
    wait_for(lambda: volume(demo, vol['id'])['status'] == 'available',
             'volume detached')


def test_glance_serves_images_from_the_catalog(cloud, demo):
    """The stack's Glance (file store, keystone auth): a member uploads a
    small image through the catalog's ``image`` endpoint and reads the
    same bytes back; Nova finds it through its ``[glance]`` settings;
    another project cannot see it."""
    data = os.urandom(3 * 65536 + 17)
    image = demo.image('POST', '/v2/images', {
        'name': 'tiny', 'disk_format': 'raw', 'container_format': 'bare'},
        expect=201).json()
    assert image['status'] == 'queued' and image['visibility'] == 'shared'
    demo.image('PUT', '/v2/images/%s/file' % image['id'], data=data,
               expect=204)
    shown = demo.image('GET', '/v2/images/%s' % image['id'],
                       expect=200).json()
    assert shown['status'] == 'active' and shown['size'] == len(data)
    assert shown['os_hash_algo'] == 'sha512'
    assert shown['os_hash_value'] == hashlib.sha512(data).hexdigest()
    assert shown['owner'] == demo.project_id
    back = demo.image('GET', '/v2/images/%s/file' % image['id'], expect=200)
    assert back.content == data
    # the file store lies in the stack's work directory
    stored = cloud.path('glance', 'images', image['id'])
    with open(stored, 'rb') as f:
        assert f.read() == data
    # Nova's image proxy (gone after 2.35) asks Glance with the user's
    # token through the catalog
    proxied = demo.compute('GET', '/images/%s' % image['id'], expect=200,
                           version='2.35').json()['image']
    assert proxied['status'] == 'ACTIVE' and proxied['name'] == 'tiny'
    # a token without a role in the owner's project sees nothing
    outsider_project = cloud.make_project('img-other', {
        'img-outsider': ['member', 'reader']})
    assert outsider_project != demo.project_id
    outsider = cloud.client('img-outsider', openstack.USER_PASSWORD,
                            'img-other')
    outsider.image('GET', '/v2/images/%s' % image['id'], expect=404)
    assert requests.get(demo.endpoints['image'] + '/v2/images',
                        timeout=30).status_code == 401
    demo.image('DELETE', '/v2/images/%s' % image['id'], expect=204)
    demo.image('GET', '/v2/images/%s' % image['id'], expect=404)
    assert not os.path.exists(stored)


def test_a_server_boots_without_networks_before_2_37(cloud, demo):
    """Before compute API 2.37 a server has no ``"networks": "none"``: Nova
    looks for networks, finds none, and checks the port quota of the
    network service (no_network.py answers it) before it boots."""
    root = make_volume(demo, 'old-api-root', bootable=True)
    sid = demo.compute('POST', '/servers', {'server': {
        'name': 'old-api', 'flavorRef': cloud.flavor,
        'block_device_mapping_v2': [{
            'boot_index': 0, 'uuid': root, 'source_type': 'volume',
            'destination_type': 'volume', 'delete_on_termination': False}]}},
        expect=202, version='2.36').json()['server']['id']
    assert wait_active(demo, sid)['addresses'] == {}
    with open(cloud.processes['no-network'].log_path) as f:
        assert '"GET /v2.0/quotas/%s HTTP/1.1" 200' % demo.project_id in \
            f.read()
    demo.compute('DELETE', '/servers/%s' % sid, expect=204)
    wait_gone(demo, sid)
