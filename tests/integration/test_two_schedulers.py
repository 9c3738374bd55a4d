"""Two schedulers share the work: concurrent creates all land once, and
volumes whose scheduling request was lost are claimed by exactly one of
the two when both reconcile them at the same time (PostgreSQL and
MariaDB)."""
import collections
import concurrent.futures
import datetime
import re
import uuid

import sqlalchemy as sa

from cinder_lite.db import models
from tests.harness import stack
from tests.harness import cluster as cluster_mod

CLUSTER_KINDS = ['postgresql', 'mysql']
CLUSTER_OPTIONS = {
    'extra_default': {'reconcile_after': 2, 'reconcile_interval': 1},
    'process_sections': {'scheduler2': {'DEFAULT': {'host': 'node-ctl2'}}}}
CREATED = re.compile(r'created ([0-9a-f-]{36}) ')


def _creations(cluster):
    """volume id -> how many times a volume service created its file."""
    counts = collections.Counter()
    for node in cluster_mod.NODES:
        counts.update(CREATED.findall(cluster.processes[node].read_log()))
    return counts


def test_two_schedulers_never_schedule_a_volume_twice(cluster, api):
    cluster.ensure_running('scheduler2', 'cinder-scheduler', 'node-ctl2')
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda _: stack.Client(
            cluster.url, project=cluster_mod.PROJECT).create_volume(),
            range(16)))
    assert {v['status'] for v in made} == {'available'}

    # lost scheduling requests (an API died between recording a volume
    # and asking a scheduler): both schedulers reconcile them at once
    engine = sa.create_engine(cluster.db_url)
    old = datetime.datetime.utcnow() - datetime.timedelta(minutes=5)
    lost = [{'id': str(uuid.uuid4())} for _ in range(6)]
    try:
        with engine.begin() as conn:
            conn.execute(sa.insert(models.Volume), [dict(
                id=vol['id'], project_id=cluster_mod.PROJECT,
                user_id='admin', size=1, status='creating',
                volume_type_id=_default_type(conn),
                availability_zone='nova', multiattach=False,
                bootable=False, attach_seq=0, readonly=False,
                deleted=False, created_at=old) for vol in lost])
    finally:
        engine.dispose()
    for vol in lost:
        api.wait_volume(vol['id'], 'available')
    # storage is made once per volume (a create run again finds the file)
    counts = _creations(cluster)
    assert all(counts[v['id']] == 1 for v in made + lost), counts
    # every volume was claimed by one scheduler, once (a lost one
    # although both tried)
    logs = '\n'.join(cluster.processes[n].read_log()
                     for n in ('scheduler', 'scheduler2'))
    claims = {v['id']: logs.count('volume %s scheduled to' % v['id'])
              for v in made + lost}
    assert claims == {v['id']: 1 for v in made + lost}, claims
    assert all(('volume %s was never scheduled' % v['id']) in logs
               for v in lost)
    assert 'node-ctl2' in {s['host'] for s in api.get(
        '/os-services').json()['services']}
    for vol in made + lost:
        assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    for vol in made + lost:
        api.wait_deleted(vol['id'])


def _default_type(conn):
    return conn.execute(sa.select(models.VolumeType.id).where(
        models.VolumeType.name == '__DEFAULT__')).scalar_one()
