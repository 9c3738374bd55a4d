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
