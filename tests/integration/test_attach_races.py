"""Concurrent attachment reservations (microversion 3.27+) against a
distributed cinder_lite whose API runs two worker processes sharing the
port, on SQLite (one file shared by every process), MariaDB and
PostgreSQL.

Every request of a race is sent on its own HTTP connection; the
connections are opened first and the requests released together by a
barrier, so the kernel spreads them over both API workers (SO_REUSEPORT)
and they meet in the database, where ``lock_volume`` must serialise them:

* a plain volume takes one reservation, whoever asks: of 32 concurrent
  requests exactly one wins and 31 are refused with 400;
* a multiattach volume takes all 32, and 32 concurrent deletes free it;
* the same instance may hold several reservations of a plain volume
  (live migration), also when they race.
"""
import collections
import http.client
import json
import re
import threading
import uuid

import pytest

from tests.harness import stack
from tests.harness import cluster as cluster_mod

CLUSTER_KINDS = cluster_mod.ALL_KINDS
API_WORKERS = 2
CLUSTER_OPTIONS = {'api_workers': API_WORKERS}

RACERS = 32
ROUNDS = 3
SAME_INSTANCE_RACERS = 8
VERSION = '3.71'
MULTIATTACH_SPECS = {'multiattach': '<is> True'}
HTTP_TIMEOUT = 120


@pytest.fixture
def api(cluster):
    cluster.check_alive()
    client = stack.Client(cluster.url, project=cluster_mod.PROJECT,
                          version=VERSION)
    yield client
    client.session.close()
    # A worker that died during the test fails it here, with the logs.
    cluster.check_alive()


# -- helpers -------------------------------------------------------------------

class Reply(collections.namedtuple('Reply', 'status body')):
    pass


def race(cluster, requests_):
    """Send ``requests_`` ([(method, path, body)], path below /v3/<project>)
    at once, each on its own connection; return the Replies in order."""
    n = len(requests_)
    barrier = threading.Barrier(n)
    replies = [None] * n
    errors = []
    headers = {'X-Auth-Token': 'admin:%s' % cluster_mod.PROJECT,
               'OpenStack-API-Version': 'volume %s' % VERSION,
               'Content-Type': 'application/json',
               'Accept': 'application/json'}

    def _one(i):
        method, path, body = requests_[i]
        conn = http.client.HTTPConnection('127.0.0.1', cluster.port,
                                          timeout=HTTP_TIMEOUT)
        try:
            conn.connect()
            barrier.wait(timeout=HTTP_TIMEOUT)
            conn.request(method, '/v3/%s%s' % (cluster_mod.PROJECT, path),
                         body=None if body is None else json.dumps(body),
                         headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            try:
                parsed = json.loads(data) if data else None
            except ValueError:
                parsed = data.decode('utf-8', 'replace')
            replies[i] = Reply(resp.status, parsed)
        except BaseException as e:   # reported below, never swallowed
            barrier.abort()
            errors.append('request %d (%s %s): %r' % (i, method, path, e))
        finally:
            conn.close()

    threads = [threading.Thread(target=_one, args=(i,), daemon=True)
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HTTP_TIMEOUT + 30)
    assert not any(t.is_alive() for t in threads), 'requests hang'
    assert not errors, errors
    return replies


def create_body(volume_id, instance_uuid):
    return {'attachment': {'volume_uuid': volume_id,
                           'instance_uuid': instance_uuid}}


def race_creates(cluster, volume_id, instance_uuids):
    return race(cluster, [('POST', '/attachments',
                           create_body(volume_id, instance))
                          for instance in instance_uuids])


def race_deletes(cluster, attachment_ids):
    return race(cluster, [('DELETE', '/attachments/%s' % a, None)
                          for a in attachment_ids])


def by_status(replies):
    return collections.Counter(r.status for r in replies)


def volume_status(api, volume_id):
    resp = api.get('/volumes/%s' % volume_id)
    assert resp.status_code == 200, resp.text
    return resp.json()['volume']['status']


def attachments_of(api, volume_id):
    resp = api.get('/attachments?volume_id=%s' % volume_id)
    assert resp.status_code == 200, resp.text
    return resp.json()['attachments']


def assert_free(api, volume_id):
    assert attachments_of(api, volume_id) == []
    assert volume_status(api, volume_id) == 'available'


def reserved_by_pid(cluster, volume_id):
    """{attachment id: pid of the API worker} from the workers' INFO
    lines 'attachment <id> of volume <V>: reserved'."""
    pattern = re.compile(r'^\S+ \S+ (\d+) INFO \S+ \[[^\]]*\] attachment '
                         r'(\S+) of volume %s: reserved' % re.escape(
                             volume_id), re.M)
    return {m.group(2): int(m.group(1)) for m in
            pattern.finditer(cluster.processes['api'].read_log())}


def new_volume(api, volume_type=None):
    extra = {'volume_type': volume_type} if volume_type else {}
    return api.create_volume(size=1, **extra)


def delete_volume(api, volume_id):
    """Best-effort cleanup: free the volume, then delete it."""
    for att in attachments_of(api, volume_id):
        api.delete('/attachments/%s' % att['id'])
    resp = api.delete('/volumes/%s' % volume_id)
    assert resp.status_code == 202, resp.text
    api.wait_deleted(volume_id)


@pytest.fixture
def plain_volume(api):
    vol = new_volume(api)
    assert vol['multiattach'] is False, vol
    assert vol['status'] == 'available', vol
    yield vol
    delete_volume(api, vol['id'])


@pytest.fixture
def multiattach_volume(api):
    vtype = api.create_type(specs=MULTIATTACH_SPECS)
    vol = new_volume(api, vtype['name'])
    assert vol['multiattach'] is True, vol
    assert vol['status'] == 'available', vol
    yield vol
    delete_volume(api, vol['id'])


# -- tests ---------------------------------------------------------------------

def test_api_runs_two_workers(cluster, api):
    parent = cluster.processes['api']
    pids = cluster.api_worker_pids()
    assert len(pids) == API_WORKERS, pids
    assert len(set(pids)) == API_WORKERS, pids
    assert parent.pid not in pids
    for pid in pids:
        state, ppid, _start = cluster_mod.proc_stat(pid)
        assert ppid == parent.pid, (pid, ppid, parent.pid)
        assert state != 'Z', (pid, state)
    # each of them logged that it listens on the cluster's port
    assert set(pids) <= cluster.listening_pids(), cluster.listening_pids()
    assert parent.pid not in cluster.listening_pids()
    assert cluster_mod.child_pids(parent.pid) == sorted(pids)
    # and the API answers
    assert api.get('/volumes').status_code == 200


def test_plain_volume_one_reservation_wins(cluster, api, plain_volume):
    vol_id = plain_volume['id']
    winners = []
    for round_ in range(ROUNDS):
        instances = [str(uuid.uuid4()) for _ in range(RACERS)]
        replies = race_creates(cluster, vol_id, instances)
        counts = by_status(replies)
        assert counts == {200: 1, 400: RACERS - 1}, (round_, counts,
                                                     replies)
        for reply in replies:
            if reply.status == 400:
                assert set(reply.body) == {'badRequest'}, reply
                assert reply.body['badRequest']['code'] == 400, reply
                assert vol_id in reply.body['badRequest']['message'], reply
        [won] = [(r.body['attachment'], instance) for r, instance in
                 zip(replies, instances) if r.status == 200]
        attachment, instance = won
        assert attachment['status'] == 'reserved', attachment
        assert attachment['volume_id'] == vol_id, attachment
        assert attachment['instance'] == instance, attachment
        winners.append(attachment['id'])

        listed = attachments_of(api, vol_id)
        assert [(a['id'], a['instance'], a['status']) for a in listed] == \
            [(attachment['id'], instance, 'reserved')], listed
        assert volume_status(api, vol_id) == 'reserved'

        resp = api.delete('/attachments/%s' % attachment['id'])
        assert resp.status_code == 200, resp.text
        assert resp.json() == {'attachments': []}, resp.text
        assert_free(api, vol_id)
    assert len(set(winners)) == ROUNDS


def test_multiattach_volume_takes_all(cluster, api, multiattach_volume):
    vol_id = multiattach_volume['id']
    instances = [str(uuid.uuid4()) for _ in range(RACERS)]
    replies = race_creates(cluster, vol_id, instances)
    assert by_status(replies) == {200: RACERS}, replies
    made = {r.body['attachment']['id']: r.body['attachment']
            for r in replies}
    assert len(made) == RACERS
    assert {a['instance'] for a in made.values()} == set(instances)
    assert {a['status'] for a in made.values()} == {'reserved'}

    listed = attachments_of(api, vol_id)
    assert len(listed) == RACERS, listed
    assert {a['id'] for a in listed} == set(made)
    assert {a['status'] for a in listed} == {'reserved'}
    assert volume_status(api, vol_id) == 'reserved'

    # Both API workers took part in the race.
    pids = reserved_by_pid(cluster, vol_id)
    assert set(pids) == set(made), pids
    assert set(pids.values()) == set(cluster.api_worker_pids()), \
        collections.Counter(pids.values())

    replies = race_deletes(cluster, list(made))
    assert by_status(replies) == {200: RACERS}, replies
    remaining = [{a['id'] for a in r.body['attachments']} for r in replies]
    for deleted, left in zip(made, remaining):
        # what a delete reports as left is a subset of the others
        assert deleted not in left
        assert left <= set(made)
    # The delete that committed last saw nothing left.
    assert min(len(left) for left in remaining) == 0, remaining
    assert_free(api, vol_id)


def test_same_instance_may_reserve_plain_volume_again(cluster, api,
                                                      plain_volume):
    vol_id = plain_volume['id']
    instance = str(uuid.uuid4())
    replies = race_creates(cluster, vol_id, [instance] * SAME_INSTANCE_RACERS)
    assert by_status(replies) == {200: SAME_INSTANCE_RACERS}, replies
    made = {r.body['attachment']['id'] for r in replies}
    assert len(made) == SAME_INSTANCE_RACERS

    listed = attachments_of(api, vol_id)
    assert {a['id'] for a in listed} == made, listed
    assert {(a['instance'], a['status']) for a in listed} == \
        {(instance, 'reserved')}
    assert volume_status(api, vol_id) == 'reserved'

    # Another instance is still refused...
    resp = api.post('/attachments', json=create_body(vol_id,
                                                     str(uuid.uuid4())))
    assert resp.status_code == 400, resp.text
    assert 'badRequest' in resp.json(), resp.text
    # ...and so is a reservation without an instance.
    resp = api.post('/attachments',
                    json={'attachment': {'volume_uuid': vol_id}})
    assert resp.status_code == 400, resp.text

    replies = race_deletes(cluster, sorted(made))
    assert by_status(replies) == {200: SAME_INSTANCE_RACERS}, replies
    assert_free(api, vol_id)


TYPE_ROUNDS = 6


def test_volume_create_racing_type_delete(cluster, api):
    """The type's row lock decides it on every database: either the
    volume gets the type and the delete is refused as in use, or the type
    is deleted and the create answers 404.  Never both, never a 500."""
    outcomes = collections.Counter()
    for round_ in range(TYPE_ROUNDS):
        vtype = api.create_type()
        created, deleted = race(cluster, [
            ('POST', '/volumes', {'volume': {
                'size': 1, 'volume_type': vtype['id']}}),
            ('DELETE', '/types/%s' % vtype['id'], None)])
        pair = (created.status, deleted.status)
        outcomes[pair] += 1
        assert pair in ((202, 400), (404, 202)), (round_, created, deleted)
        if created.status == 202:
            assert deleted.body['badRequest']['message'] == \
                'Target volume type is still in use.'
            vol = api.wait_volume(created.body['volume']['id'], 'available')
            assert vol['volume_type'] == vtype['name']
            delete_volume(api, vol['id'])
            resp = api.delete('/types/%s' % vtype['id'])
            assert resp.status_code == 202, resp.text
        assert api.get('/types/%s' % vtype['id']).status_code == 404


def test_two_detaches_of_one_attachment(cluster, api, multiattach_volume):
    """A delete and a force-detach of one connected attachment at once:
    one detaches it, the other is told it is gone (404) or already being
    disconnected (409); nothing is asked of the backend twice."""
    vol_id = multiattach_volume['id']
    for round_ in range(TYPE_ROUNDS):
        resp = api.post('/attachments', json={'attachment': {
            'volume_uuid': vol_id, 'instance_uuid': str(uuid.uuid4()),
            'connector': {'host': 'compute-%d' % round_}}})
        assert resp.status_code == 200, resp.text
        att = resp.json()['attachment']['id']
        replies = race(cluster, [
            ('DELETE', '/attachments/%s' % att, None),
            ('POST', '/volumes/%s/action' % vol_id,
             {'os-force_detach': {'attachment_id': att}})])
        codes = sorted(r.status for r in replies)
        assert codes in ([202, 404], [202, 409], [200, 404], [200, 409]), \
            (round_, replies)
        for reply in replies:
            if reply.status == 409:
                assert 'being disconnected' in \
                    reply.body['conflictingRequest']['message'], reply
        assert api.get('/attachments/%s' % att).status_code == 404
        assert_free(api, vol_id)


def test_type_rename_racing_type_delete(cluster, api):
    """A rename and a delete of one type at once: the rename comes first
    (and the delete then frees the new name) or finds the type gone; a
    deleted type never takes a name away from the living."""
    for round_ in range(TYPE_ROUNDS):
        vtype = api.create_type()
        new_name = 'renamed-%s' % uuid.uuid4().hex[:8]
        renamed, deleted = race(cluster, [
            ('PUT', '/types/%s' % vtype['id'],
             {'volume_type': {'name': new_name}}),
            ('DELETE', '/types/%s' % vtype['id'], None)])
        assert deleted.status == 202, (round_, deleted)
        assert renamed.status in (200, 404), (round_, renamed)
        assert api.get('/types/%s' % vtype['id']).status_code == 404
        again = api.create_type(new_name)
        api.delete('/types/%s' % again['id'])
