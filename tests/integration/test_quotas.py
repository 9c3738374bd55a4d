"""Quotas exact under concurrency on MariaDB and PostgreSQL: two API
worker processes, scheduler and volume services over RabbitMQ.  Creates
and extends racing for the last of a quota take exactly what is left;
``cinder-lite-manage quota check`` finds the recorded usage equal to the
volumes, reports a usage edited by hand, and ``quota sync`` repairs it."""
import concurrent.futures
import uuid

import sqlalchemy as sa

from tests.harness import stack
from tests.harness import cluster as cluster_mod

CLUSTER_OPTIONS = {'api_workers': 2}
P = cluster_mod.PROJECT


def client(cluster, project=P, user='admin'):
    return stack.Client(cluster.url, project=project, user=user)


def set_quota(api, project, **limits):
    resp = api.put('/os-quota-sets/%s' % project,
                   json={'quota_set': limits})
    assert resp.status_code == 200, resp.text


def usage(api, project):
    shown = api.get('/os-quota-sets/%s?usage=True' % project).json()[
        'quota_set']
    return {k: (v['in_use'], v['reserved']) for k, v in shown.items()
            if k != 'id'}


def together(n, fn, threads=16):
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(fn, range(n)))


def check(cluster, project=None):
    args = ['quota', 'check'] + (['--project', project] if project else [])
    return cluster.manage(*args, check=False)


def test_concurrent_creates_take_exactly_the_quota(cluster):
    admin = client(cluster)
    # a project nobody used yet: its usage rows are made by the racers
    project = uuid.uuid4().hex
    set_quota(admin, project, volumes=10)
    member = stack.Client(cluster.url, project=project, user='m',
                          roles='member')
    answers = together(32, lambda _: member.post(
        '/volumes', json={'volume': {'size': 1}}))
    codes = sorted(r.status_code for r in answers)
    assert codes == [202] * 10 + [413] * 22, [
        r.text for r in answers if r.status_code not in (202, 413)]
    assert len(member.get('/volumes').json()['volumes']) == 10
    assert usage(admin, project)['volumes'] == (10, 0)
    result = check(cluster, project)
    assert result.returncode == 0, result.stdout + result.stderr


def test_first_creates_of_a_fresh_project_race_cleanly(cluster):
    """No limit at all: the first creates of a project all make its usage
    rows at the same moment, and all succeed."""
    project = uuid.uuid4().hex
    member = stack.Client(cluster.url, project=project, user='m',
                          roles='member')
    answers = together(12, lambda _: member.post(
        '/volumes', json={'volume': {'size': 2}}))
    assert [r.status_code for r in answers] == [202] * 12, [
        r.text for r in answers]
    assert usage(client(cluster), project)['gigabytes'] == (24, 0)


def test_concurrent_extends_take_exactly_the_quota(cluster):
    admin = client(cluster)
    project = uuid.uuid4().hex
    member = stack.Client(cluster.url, project=project, user='m',
                          roles='member')
    vols = [member.create_volume(size=1) for _ in range(6)]
    set_quota(admin, project, gigabytes=9)
    answers = together(6, lambda i: member.post(
        '/volumes/%s/action' % vols[i]['id'],
        json={'os-extend': {'new_size': 2}}))
    codes = sorted(r.status_code for r in answers)
    assert codes == [202] * 3 + [413] * 3, [r.text for r in answers]
    for vol in vols:
        member.wait_volume(vol['id'], 'available')
    sizes = sorted(member.get('/volumes/%s' % v['id']).json()['volume'][
        'size'] for v in vols)
    assert sizes == [1, 1, 1, 2, 2, 2]
    assert usage(admin, project)['gigabytes'] == (9, 0)


def test_check_finds_a_hand_edit_and_sync_repairs_it(cluster):
    api = client(cluster)
    project = uuid.uuid4().hex
    member = stack.Client(cluster.url, project=project, user='m',
                          roles='member')
    member.create_volume(size=3)
    result = check(cluster)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'Recorded quota usage of every project equals what the ' \
        'volumes say.' in result.stdout
    engine = sa.create_engine(cluster.db_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(
                "UPDATE quota_usages SET in_use = in_use + 5 WHERE "
                "project_id = :p AND resource = 'gigabytes'"),
                {'p': project})
    finally:
        engine.dispose()
    assert usage(api, project)['gigabytes'] == (8, 0)
    result = check(cluster)
    assert result.returncode == 1, result.stdout + result.stderr
    row = [line.split() for line in result.stdout.splitlines()
           if line.startswith(project)]
    assert row == [[project, 'gigabytes', '8', '0', '3', '0']]
    result = cluster.manage('quota', 'sync', '--project', project)
    assert '1 recorded usage(s) of project %s set' % project in \
        result.stdout
    assert usage(api, project)['gigabytes'] == (3, 0)
    result = check(cluster)
    assert result.returncode == 0, result.stdout + result.stderr


def _offer(api, volume_id):
    resp = api.post('/volume-transfers',
                    json={'transfer': {'volume_id': volume_id}})
    assert resp.status_code == 202, resp.text
    return resp.json()['transfer']


def _accept(api, transfer):
    return api.post('/volume-transfers/%s/accept' % transfer['id'],
                    json={'accept': {'auth_key': transfer['auth_key']}})


def test_transfers_move_exactly_the_quota_left(cluster):
    """Six volumes offered to a project with room for three, each
    transfer accepted twice at once through two API workers: each
    transfer moves at most once, exactly three move, and the usage of
    both projects equals their volumes."""
    admin = client(cluster)
    donor, taker = uuid.uuid4().hex, uuid.uuid4().hex
    giver = stack.Client(cluster.url, project=donor, user='g',
                         roles='member')
    receiver = stack.Client(cluster.url, project=taker, user='r',
                            roles='member')
    transfers = [_offer(giver, giver.create_volume(size=2)['id'])
                 for _ in range(6)]
    set_quota(admin, taker, volumes=3)
    answers = together(12, lambda i: _accept(receiver, transfers[i // 2]))
    codes = [r.status_code for r in answers]
    assert sorted(set(codes)) <= [202, 404, 413], [
        r.text for r in answers if r.status_code not in (202, 404, 413)]
    assert codes.count(202) == 3, codes
    for i in range(6):
        assert codes[2 * i:2 * i + 2].count(202) <= 1, codes
    assert len(receiver.get('/volumes').json()['volumes']) == 3
    assert len(giver.get('/volumes').json()['volumes']) == 3
    assert usage(admin, taker)['volumes'] == (3, 0)
    assert usage(admin, taker)['gigabytes'] == (6, 0)
    assert usage(admin, donor)['gigabytes'] == (6, 0)
    result = check(cluster)
    assert result.returncode == 0, result.stdout + result.stderr


def test_crossing_transfers_do_not_deadlock(cluster):
    """Two projects accept each other's volumes at the same moment: the
    usage rows of both are locked in one order, so every accept
    succeeds."""
    a, b = uuid.uuid4().hex, uuid.uuid4().hex
    clients = {p: stack.Client(cluster.url, project=p, user='u' + p[:4],
                               roles='member') for p in (a, b)}
    offers = []
    for giver, taker in ((a, b), (b, a)):
        for _ in range(4):
            vol = clients[giver].create_volume(size=1)
            offers.append((clients[taker], _offer(clients[giver],
                                                  vol['id'])))
    answers = together(len(offers), lambda i: _accept(*offers[i]))
    assert [r.status_code for r in answers] == [202] * 8, [
        r.text for r in answers]
    admin = client(cluster)
    for project in (a, b):
        assert usage(admin, project)['volumes'] == (4, 0)
    result = check(cluster)
    assert result.returncode == 0, result.stdout + result.stderr


def test_concurrent_snapshots_take_exactly_the_quota(cluster):
    """Eight snapshot creates from two API workers race for the last
    three of a new project's ``snapshots`` quota (their usage rows are
    made by the racers); the recorded usage is what the snapshots say."""
    admin = client(cluster)
    project = uuid.uuid4().hex
    set_quota(admin, project, snapshots=3)
    member = stack.Client(cluster.url, project=project, user='m',
                          roles='member')
    vol = member.create_volume(size=1)
    answers = together(8, lambda _: member.post(
        '/snapshots', json={'snapshot': {'volume_id': vol['id']}}),
        threads=8)
    codes = sorted(r.status_code for r in answers)
    assert codes == [202] * 3 + [413] * 5, [
        r.text for r in answers if r.status_code not in (202, 413)]
    assert usage(admin, project)['snapshots'] == (3, 0)
    assert usage(admin, project)['gigabytes'] == (4, 0)
    result = check(cluster, project)
    assert result.returncode == 0, result.stdout + result.stderr
