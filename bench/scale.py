#!/usr/bin/env python
"""Where cinder_lite's cost grows with the size of the cloud: list pages,
shows, the attach cycle and the start of the service, against a database
seeded with N attachment rows, with the machine floor measured in the same
run.

For each row count N (``--rows``, default 1000,100000,1000000):

1. A fresh database (SQLite file under a temporary state_path; or, with
   ``--db mysql|postgresql``, a uniquely named database on the local
   server, made and dropped as tests/harness/cluster.py does) gets the
   schema of the project's alembic migrations, then SQLAlchemy Core
   executemany in chunks inserts:

   * ``--volumes`` volumes (default 10,000) of two types (one with
     ``multiattach="<is> True"``, about 15 % of the volumes) in 5 projects,
     all on the embedded backend (``bench@file#file``);
   * N attachment rows: one "hot" multiattach volume (the oldest, so list
     pages in the default order do not contain it) holding
     ``min(--hot, N/2)`` live ``attached`` attachments (10,000 by default)
     from 1,000 compute hosts; about 30 % of the other volumes ``in-use``
     with one live attachment (at most a quarter of the remaining rows);
     every other row is history (``detached``, deleted).  created_at is
     spread over two years (history uniformly, live rows in the last 30
     days) and ids are random, so sorting matters;
   * one attachment_events row per attachment.

   On SQLite the secondary indexes of the two big tables are dropped for
   the insert and re-created from their own DDL afterwards (that is what
   keeps 1M rows at about a minute).  No ANALYZE is run: a database that
   cinder_lite made has no statistics either.

2. ``python -m cinder_lite.cmd.all`` (embedded: in-process bus, one file
   backend) starts on that database (for MariaDB/PostgreSQL through
   ``[database] connection``).  Measured: process start -> first 200 of
   ``GET /v3/<project>/volumes?limit=1`` and -> cinder-volume ``up`` in
   os-services.

3. Requests, each timed ``--samples`` times after warm-up (p50/p95/p99 by
   nearest rank; a request slower than ``--budget`` seconds in total stops
   after 5 samples, ``n`` says how many), as admin (``all_tenants=1`` on
   lists) and as a member of the hot volume's project (``X-Roles:
   member``): attachment list pages (first, 5th via marker, sorted, per
   volume/instance/status), attachment detail page, volume detail pages,
   volume show (an ordinary in-use volume, and the hot one), and one
   attach cycle on the hot volume (POST /attachments with a connector,
   os-complete, DELETE).

4. Floor, same run: ``GET /`` (version document) with bare http.client and
   with requests, and the database's ``SELECT 1`` (on the seeded database).

5. One table per row count: request, p50, p95, p99 and the ratio of p50 to
   the same request at the smallest row count.

6. Scheduling with 100, 1,000 and 10,000 backends reporting
   (``--backends``; bench/scheduler.py says what it measures): a
   scheduler's first decision, ingesting one report, one decision for
   several types and a refusal, and the API's check before a create.

7. ``POST /volumes`` with S volume services reporting (``--reporting``,
   default 2,10000; the issue that found 631ac61 measured it so): a fresh
   SQLite state gets S - 1 ``cinder-volume`` services rows (up, with
   bench/scheduler.py's capabilities, a third of them multiattach, but
   full: no free capacity, thick provisioning) beside the embedded
   backend, which ``cinder-lite-all`` then serves; a volume type with
   ``multiattach="<is> True"``, which a third of the backends match and
   only the embedded one has room for, gets ``--creates`` volumes
   (default 20), one after another.  One ``cinder-lite-all`` for each S
   runs side by side, and the creates go to each in turn.
   Measured: the ``POST`` (p50 of the request) and create to
   ``available`` (the POST and polling the volume every 5 ms), with the
   ratio to the first S, the number to watch: 631ac61 made the API's
   check before a create look at every service (x2.6-3.3 at 10,000).

    .venv/bin/python bench/scale.py --rows 1000,100000
    .venv/bin/python bench/scale.py --rows 1000,1000000
    .venv/bin/python bench/scale.py --rows 1000,100000 --db postgresql
    .venv/bin/python bench/scale.py --rows '' --backends 100,1000,10000
    .venv/bin/python bench/scale.py --rows '' --backends '' --reporting 2,10000

The subprocess, the temporary directories and the server-side database are
removed at the end (``--keep`` keeps the work directory with the config
and the service log, and, for SQLite, the seeded database).
"""
import argparse
import datetime
import http.client
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import urllib.parse
import uuid

import requests
import sqlalchemy as sa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import scheduler as sched_bench  # noqa: E402
from bench import volume_create as vc  # noqa: E402
from cinder_lite.db import migration  # noqa: E402
from cinder_lite.db import models  # noqa: E402
from tests.harness import cluster as cluster_mod  # noqa: E402
from tests.harness import util  # noqa: E402

PROJECT = cluster_mod.PROJECT
VERSION = 'volume 3.71'
NODE = 'bench'
BACKEND = 'file'
SERVICE_HOST = '%s@%s' % (NODE, BACKEND)
POOL = '%s#%s' % (SERVICE_HOST, BACKEND)
START_TIMEOUT = 900.0
CHUNK = 20000
T0 = datetime.datetime(2024, 1, 1)
SPAN = datetime.timedelta(days=730)
LIVE_WINDOW = datetime.timedelta(days=30)
COMPUTE_HOSTS = 1000


def log(msg):
    print('[scale] %s' % msg, file=sys.stderr, flush=True)


# -- measuring -------------------------------------------------------------

pct = vc.pct


def timed(fn, n, budget, warmup=2):
    """Latencies (s) of up to ``n`` calls of ``fn`` after ``warmup``
    calls; stops after 5 samples once ``budget`` seconds are spent."""
    for _ in range(warmup):
        fn()
    out = []
    spent = 0.0
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        out.append(dt)
        spent += dt
        if len(out) >= 5 and spent > budget:
            break
    return out


class RequestFailed(Exception):
    pass


def ms(value):
    if value != value:   # NaN: no samples
        return '-'
    if value >= 1.0:
        return '%.0f' % (value * 1000.0)
    if value < 0.0001:
        return '%.3f' % (value * 1000.0)
    return ('%.2f' if value < 0.01 else '%.1f') % (value * 1000.0)


def print_table(headers, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    fmt = ' | '.join(('%%-%ds' if i < 2 else '%%%ds') % w
                     for i, w in enumerate(widths))
    print(fmt % tuple(headers))
    print('-+-'.join('-' * w for w in widths))
    for row in rows:
        print(fmt % tuple(row))


# -- database --------------------------------------------------------------

class Database:
    """A fresh database for one row count: a SQLite file under the state
    path, or a uniquely named database on a local server."""

    def __init__(self, kind, state):
        self.kind = kind
        self.name = None
        if kind == 'sqlite':
            self.path = os.path.join(state, cluster_mod.SQLITE_FILE)
            self.url = cluster_mod.sqlite_url(self.path)
        else:
            self.name = 'cl_scale_%d_%s' % (os.getpid(),
                                            uuid.uuid4().hex[:8])
            self.url = cluster_mod.create_database(kind, self.name)

    def engine(self):
        if self.kind == 'sqlite':
            return sa.create_engine(self.url)
        kwargs = {}
        if self.kind == 'mysql':
            kwargs['isolation_level'] = 'READ COMMITTED'
        return sa.create_engine(self.url, **kwargs)

    def drop(self):
        if self.name:
            try:
                cluster_mod.drop_database(self.kind, self.name)
            except Exception as e:
                log('could not drop %s database %s: %s'
                    % (self.kind, self.name, e))
            self.name = None

    def floor(self, n):
        """p50 of SELECT 1 in a transaction on the seeded database."""
        if self.kind == 'sqlite':
            conn = sqlite3.connect(self.path, isolation_level=None)
            try:
                def select1():
                    conn.execute('BEGIN')
                    conn.execute('SELECT 1').fetchone()
                    conn.execute('COMMIT')
                return timed(select1, n, 10.0)
            finally:
                conn.close()
        engine = sa.create_engine(self.url)
        try:
            with engine.connect() as conn:
                def select1():
                    conn.execute(sa.text('SELECT 1')).scalar()
                    conn.rollback()
                return timed(select1, n, 10.0)
        finally:
            engine.dispose()


def new_uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def spread(rng, start, end):
    return start + (end - start) * rng.random()


def seed(db, args, n_rows, state):
    """Schema from the migrations, then the rows.  Returns (facts,
    seconds for the rows)."""
    engine = db.engine()
    try:
        t = time.perf_counter()
        migration.upgrade(engine=engine)
        log('schema (alembic upgrade head) in %.1f s'
            % (time.perf_counter() - t))
        t = time.perf_counter()
        facts = _seed_rows(engine, db.kind, args, n_rows, state)
        seconds = time.perf_counter() - t
    finally:
        engine.dispose()
    return facts, seconds


def _sqlite_drop_indexes(conn, tables):
    rows = conn.exec_driver_sql(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND "
        "sql IS NOT NULL AND tbl_name IN (%s)"
        % ', '.join("'%s'" % t for t in tables)).all()
    for name, _sql in rows:
        conn.exec_driver_sql('DROP INDEX "%s"' % name)
    return [sql for _name, sql in rows]


def _seed_rows(engine, kind, args, n_rows, state):
    rng = random.Random(20261124 + n_rows)
    end = T0 + SPAN
    projects = [PROJECT] + ['%032x' % rng.getrandbits(128)
                            for _ in range(4)]
    V = models.Volume.__table__
    A = models.VolumeAttachment.__table__
    E = models.AttachmentEvent.__table__
    T = models.VolumeType.__table__
    S = models.VolumeTypeExtraSpec.__table__

    plain_type, ma_type = new_uuid(rng), new_uuid(rng)
    n_vol = args.volumes
    hot_live = min(args.hot, n_rows // 2)
    rest = n_rows - hot_live
    # volumes 1..n_vol-1: ~30 % in-use with one live attachment, bounded
    # by a quarter of the remaining rows; the rest of the rows is history
    n_inuse = min(int(0.3 * (n_vol - 1)), rest // 4)
    n_history = rest - n_inuse
    inuse = set(rng.sample(range(1, n_vol), n_inuse))

    # volumes: index 0 is the hot one (oldest, multiattach, project 0)
    vols = []   # (id, project, created_at, multiattach)
    for i in range(n_vol):
        if i == 0:
            vols.append((new_uuid(rng), PROJECT, T0, True))
            continue
        project = projects[0] if rng.random() < 0.2 else \
            rng.choice(projects[1:])
        vols.append((new_uuid(rng), project,
                     spread(rng, T0 + datetime.timedelta(days=1),
                            end - LIVE_WINDOW),
                     rng.random() < 0.15))

    sqlite = kind == 'sqlite'
    with engine.begin() as conn:
        if sqlite:
            for pragma in ('journal_mode=WAL', 'synchronous=OFF',
                           'cache_size=-1000000', 'temp_store=MEMORY'):
                conn.exec_driver_sql('PRAGMA %s' % pragma)
            index_ddl = _sqlite_drop_indexes(
                conn, ('volumes', 'volume_attachments', 'attachment_events'))
        conn.execute(sa.insert(T), [
            {'id': plain_type, 'name': 'bench-plain', 'description': None,
             'is_public': True, 'deleted': False, 'created_at': T0},
            {'id': ma_type, 'name': 'bench-multiattach',
             'description': None, 'is_public': True, 'deleted': False,
             'created_at': T0}])
        conn.execute(sa.insert(S), [{'volume_type_id': ma_type,
                                     'key': 'multiattach',
                                     'value': '<is> True'}])
        chunk = []
        for i, (vid, project, created, multi) in enumerate(vols):
            attached = i == 0 and hot_live > 0 or i in inuse
            chunk.append({
                'id': vid, 'project_id': project,
                'user_id': 'user-%d' % (i % 50),
                'name': 'vol-%06d' % i, 'description': None,
                'size': 1 + i % 100,
                'status': 'in-use' if attached else 'available',
                'volume_type_id': ma_type if multi else plain_type,
                'host': POOL, 'cluster_name': None,
                'availability_zone': 'nova', 'multiattach': multi,
                'bootable': i % 7 == 0, 'shared_targets': False,
                'service_uuid': None,
                'attach_seq': 0, 'readonly': False, 'deleted': False,
                'deleted_at': None, 'created_at': created,
                'updated_at': created})
            if len(chunk) >= CHUNK:
                conn.execute(sa.insert(V), chunk)
                chunk = []
        if chunk:
            conn.execute(sa.insert(V), chunk)

        facts = {'hot': vols[0][0], 'hot_live': hot_live,
                 'inuse': n_inuse, 'history': n_history,
                 'projects': projects, 'member_volume': None,
                 'instance_admin': None, 'instance_member': None}

        live_att, live_ev, hist_att, hist_ev = [], [], [], []

        def flush(force=False):
            for rows, table in ((live_att, A), (live_ev, E),
                                (hist_att, A), (hist_ev, E)):
                if rows and (force or len(rows) >= CHUNK):
                    conn.execute(sa.insert(table), rows)
                    rows.clear()

        def live_row(vol, created, host, instance):
            aid = new_uuid(rng)
            attach_time = created + datetime.timedelta(seconds=2)
            live_att.append({
                'id': aid, 'volume_id': vol[0], 'project_id': vol[1],
                'instance_uuid': instance, 'attached_host': host,
                'mountpoint': '/dev/vdb', 'attach_status': 'attached',
                'attach_mode': 'rw',
                'connector': {'host': host, 'initiator':
                              'iqn.1994-05.com.redhat:%s' % host},
                'connection_info': {'driver_volume_type': 'local',
                                    'data': {'device_path': '/dev/null',
                                             'access_mode': 'rw'}},
                'export_host': SERVICE_HOST, 'service_owned': True,
                'status_reason': None, 'attach_time': attach_time,
                'detach_time': None, 'deleted': False, 'deleted_at': None,
                'created_at': created, 'updated_at': attach_time})
            live_ev.append({
                'attachment_id': aid, 'volume_id': vol[0],
                'project_id': vol[1], 'user_id': 'nova',
                'actor_project_id': vol[1], 'request_id': None,
                'instance_uuid': instance, 'attached_host': host,
                'attach_mode': 'rw', 'from_status': 'attaching',
                'to_status': 'attached', 'reason': None,
                'created_at': attach_time})
            flush()

        hot = vols[0]
        for k in range(hot_live):
            live_row(hot, spread(rng, T0 + datetime.timedelta(days=1), end),
                     'compute-%04d' % (k % COMPUTE_HOSTS), new_uuid(rng))
        for i in sorted(inuse):
            vol = vols[i]
            instance = new_uuid(rng)
            live_row(vol, spread(rng, end - LIVE_WINDOW, end),
                     'compute-%04d' % rng.randrange(COMPUTE_HOSTS),
                     instance)
            if facts['instance_admin'] is None:
                facts['instance_admin'] = instance
            if vol[1] == PROJECT and facts['member_volume'] is None:
                facts['member_volume'] = vol[0]
                facts['instance_member'] = instance
        for _ in range(n_history):
            vol = vols[rng.randrange(n_vol)]
            created = spread(rng, vol[2], end)
            attach_time = created + datetime.timedelta(seconds=2)
            gone = attach_time + datetime.timedelta(
                seconds=rng.randrange(60, 30 * 86400))
            host = 'compute-%04d' % rng.randrange(COMPUTE_HOSTS)
            aid = new_uuid(rng)
            instance = new_uuid(rng)
            hist_att.append({
                'id': aid, 'volume_id': vol[0], 'project_id': vol[1],
                'instance_uuid': instance, 'attached_host': host,
                'mountpoint': '/dev/vdb', 'attach_status': 'detached',
                'attach_mode': 'rw', 'connector': {'host': host},
                'export_host': SERVICE_HOST, 'service_owned': True,
                'status_reason': None, 'attach_time': attach_time,
                'detach_time': gone, 'deleted': True, 'deleted_at': gone,
                'created_at': created, 'updated_at': gone})
            hist_ev.append({
                'attachment_id': aid, 'volume_id': vol[0],
                'project_id': vol[1], 'user_id': 'nova',
                'actor_project_id': vol[1], 'request_id': None,
                'instance_uuid': instance, 'attached_host': host,
                'attach_mode': 'rw', 'from_status': 'detaching',
                'to_status': 'detached', 'reason': None,
                'created_at': gone})
            flush()
        flush(force=True)
        if sqlite:
            t = time.perf_counter()
            for ddl in index_ddl:
                conn.exec_driver_sql(ddl)
            log('re-created %d indexes in %.1f s'
                % (len(index_ddl), time.perf_counter() - t))
    if sqlite:
        # the service keeps WAL; fold the seed's WAL into the file
        with engine.connect() as conn:
            conn.exec_driver_sql('PRAGMA wal_checkpoint(TRUNCATE)')
    # the file driver exports from the volume's file: give the volumes the
    # attach cycles use one (sparse)
    vdir = os.path.join(state, 'volumes', BACKEND)
    os.makedirs(vdir, exist_ok=True)
    for vid in (facts['hot'], facts['member_volume']):
        if vid:
            with open(os.path.join(vdir, 'volume-%s' % vid), 'wb') as f:
                f.truncate(1024 ** 3)
    if facts['member_volume'] is None or facts['instance_admin'] is None:
        # very small seeds: fall back to the hot volume
        facts['member_volume'] = facts['member_volume'] or facts['hot']
        facts['instance_admin'] = facts['instance_admin'] or \
            facts['instance_member']
    return facts


# -- the service -----------------------------------------------------------

class Embedded:
    """cinder-lite-all in a subprocess on the seeded state."""

    def __init__(self, workdir, state, db, report_interval=1,
                 service_down_time=10):
        self.workdir = workdir
        self.port = util.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        sections = {'DEFAULT': {'state_path': state,
                                'osapi_volume_listen': '127.0.0.1',
                                'osapi_volume_listen_port': self.port,
                                'host': NODE,
                                'enabled_backends': BACKEND,
                                'report_interval': report_interval,
                                'service_down_time': service_down_time,
                                # rows are made in bulk, beside the API
                                'quota_volumes': -1,
                                'quota_gigabytes': -1},
                    'database': {'connection': db.url}}
        self.conf = cluster_mod.write_conf(
            os.path.join(workdir, 'all.conf'), sections)
        self.proc = cluster_mod.Process(
            'all', [cluster_mod.python(), '-m', 'cinder_lite.cmd.all',
                    '--config-file', self.conf],
            os.path.join(workdir, 'all.log'), workdir)

    def start(self):
        """Start; returns (s to the first 200 of GET volumes?limit=1, s
        to cinder-volume up)."""
        session = requests.Session()
        headers = {'X-Auth-Token': 'admin:%s' % PROJECT,
                   'OpenStack-API-Version': VERSION}
        t0 = time.perf_counter()
        self.proc.start()
        first = None
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if not self.proc.alive():
                raise RuntimeError('cinder-lite-all exited (rc %s):\n%s' % (
                    self.proc.popen.returncode,
                    cluster_mod.tail(self.proc.log_path)))
            if time.monotonic() > deadline:
                raise RuntimeError('cinder-lite-all not ready after %d s:'
                                   '\n%s' % (START_TIMEOUT, cluster_mod.tail(
                                       self.proc.log_path)))
            try:
                if first is None:
                    r = session.get(self.url + '/v3/%s/volumes?limit=1'
                                    % PROJECT, headers=headers, timeout=60)
                    if r.status_code == 200:
                        first = time.perf_counter() - t0
                        continue
                else:
                    r = session.get(self.url + '/v3/%s/os-services'
                                    % PROJECT, headers=headers, timeout=60)
                    if r.status_code == 200 and any(
                            s['binary'] == 'cinder-volume'
                            and s['state'] == 'up'
                            for s in r.json()['services']):
                        session.close()
                        return first, time.perf_counter() - t0
            except requests.RequestException:
                pass
            time.sleep(0.02)

    def stop(self):
        return self.proc.stop()


# -- the requests ----------------------------------------------------------

class Caller:

    def __init__(self, base, role, project=PROJECT):
        self.base = base.rstrip('/') + '/v3/%s' % project
        self.role = role
        self.session = requests.Session()
        self.session.headers['OpenStack-API-Version'] = VERSION
        if role == 'admin':
            self.session.headers['X-Auth-Token'] = 'admin:%s' % project
        else:
            self.session.headers['X-Auth-Token'] = 'bench-member:%s' \
                % project
            self.session.headers['X-Roles'] = 'member'

    def call(self, method, path, expect, body=None):
        r = self.session.request(method, self.base + path, json=body,
                                 timeout=600)
        if r.status_code != expect:
            raise RequestFailed('%s %s as %s: %s %s' % (
                method, path, self.role, r.status_code, r.text[:300]))
        return r

    def get(self, path):
        return self.call('GET', path, 200).json()

    def close(self):
        self.session.close()


def marker_of_page(caller, path, key, page):
    """Marker that gives page ``page`` (1-based) of ``path``."""
    marker = None
    for _ in range(page - 1):
        sep = '&' if '?' in path else '?'
        url = path + ('%smarker=%s' % (sep, marker) if marker else '')
        items = caller.get(url)[key]
        if not items:
            return None
        marker = items[-1]['id']
    return marker


def requests_for(caller, facts):
    """[(name, fn)] for one caller."""
    admin = caller.role == 'admin'
    tenants = '&all_tenants=1' if admin else ''
    att = '/attachments?limit=50' + tenants
    vols = '/volumes/detail?limit=50' + tenants
    instance = facts['instance_admin'] if admin else \
        facts['instance_member']
    volume = facts['member_volume']
    hot = facts['hot']
    att_marker = marker_of_page(caller, att, 'attachments', 5)
    vol_marker = marker_of_page(caller, vols, 'volumes', 5)

    def get(path):
        return lambda: caller.get(path)

    out = [
        ('GET /attachments?limit=50', get(att)),
        ('GET /attachments?limit=50 5th page (marker)',
         get(att + '&marker=%s' % att_marker) if att_marker else None),
        ('GET /attachments?limit=50&sort=created_at:desc',
         get(att + '&sort=created_at:desc')),
        ('GET /attachments?limit=50&sort=attach_time:desc',
         get(att + '&sort=attach_time:desc')),
        ('GET /attachments?limit=50&volume_id=<hot>',
         get(att + '&volume_id=%s' % hot)),
        ('GET /attachments?limit=50&instance_id=<live>',
         get(att + '&instance_id=%s' % instance) if instance else None),
        ('GET /attachments?limit=50&attach_status=attached',
         get(att + '&attach_status=attached')),
        ('GET /attachments/detail?limit=50',
         get('/attachments/detail?limit=50' + tenants)),
        ('GET /volumes/detail?limit=50', get(vols)),
        ('GET /volumes/detail?limit=50 5th page (marker)',
         get(vols + '&marker=%s' % vol_marker) if vol_marker else None),
        ('GET /volumes/<in-use volume>', get('/volumes/%s' % volume)),
        ('GET /volumes/<hot volume>', get('/volumes/%s' % hot)),
    ]
    return [(name, fn) for name, fn in out if fn is not None]


def attach_cycle(caller, volume_id, steps):
    """POST /attachments with a connector, os-complete, DELETE; the time
    of each step goes to ``steps``."""
    t0 = time.perf_counter()
    r = caller.call('POST', '/attachments', 200, {'attachment': {
        'volume_uuid': volume_id, 'instance_uuid': str(uuid.uuid4()),
        'connector': {'host': 'bench-host'}}})
    aid = r.json()['attachment']['id']
    t1 = time.perf_counter()
    caller.call('POST', '/attachments/%s/action' % aid, 204,
                {'os-complete': None})
    t2 = time.perf_counter()
    caller.call('DELETE', '/attachments/%s' % aid, 200)
    t3 = time.perf_counter()
    steps['create'].append(t1 - t0)
    steps['complete'].append(t2 - t1)
    steps['delete'].append(t3 - t2)


def measure(url, facts, args):
    """{(request, role): [latencies]}"""
    results = {}
    for role in ('admin', 'member'):
        caller = Caller(url, role)
        try:
            for name, fn in requests_for(caller, facts):
                log('  %s as %s' % (name, role))
                results[(name, role)] = timed(fn, args.samples, args.budget,
                                              warmup=2)
            log('  attach cycle (hot volume) as %s' % role)
            steps = {'create': [], 'complete': [], 'delete': []}
            warm = {'create': [], 'complete': [], 'delete': []}
            for _ in range(2):
                attach_cycle(caller, facts['hot'], warm)
            cycles = timed(lambda: attach_cycle(caller, facts['hot'], steps),
                           args.samples, args.budget, warmup=0)
            results[('attach cycle on <hot> (3 requests)', role)] = cycles
            results[('  POST /attachments (connector)', role)] = \
                steps['create']
            results[('  POST /attachments/<id>/action os-complete', role)] \
                = steps['complete']
            results[('  DELETE /attachments/<id>', role)] = steps['delete']
        finally:
            caller.close()
    return results


def http_floor(url, n):
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port,
                                      timeout=10)

    def raw_root():
        conn.request('GET', '/')
        conn.getresponse().read()
    raw = timed(raw_root, n, 10.0, warmup=10)
    conn.close()
    session = requests.Session()
    via = timed(lambda: session.get(url + '/', timeout=10), n, 10.0,
                warmup=10)
    session.close()
    return raw, via


# -- one row count ---------------------------------------------------------

def run_size(n_rows, args):
    workdir = tempfile.mkdtemp(prefix='cinder-lite-scale-')
    state = os.path.join(workdir, 'state')
    os.makedirs(state)
    db = None
    server = None
    try:
        db = Database(args.db, state)
        log('%s rows: seeding %s database (%s)' % (
            '{:,}'.format(n_rows), args.db, workdir))
        facts, seed_s = seed(db, args, n_rows, state)
        log('%s rows seeded in %.1f s (hot volume %d live, %d in-use '
            'volumes, %d history rows)' % ('{:,}'.format(n_rows), seed_s,
                                           facts['hot_live'],
                                           facts['inuse'],
                                           facts['history']))
        server = Embedded(workdir, state, db)
        first, up = server.start()
        log('first API answer %.2f s after start, cinder-volume up after '
            '%.2f s' % (first, up))
        results = measure(server.url, facts, args)
        raw, via = http_floor(server.url, max(args.samples, 100))
        results[('floor: GET / (http.client)', '-')] = raw
        results[('floor: GET / (requests)', '-')] = via
        results[('floor: DB SELECT 1', '-')] = db.floor(
            max(args.samples, 100))
        rc = server.stop()
        server = None
        if rc not in (0, None):
            log('cinder-lite-all exited with %s' % rc)
        return {'rows': n_rows, 'seed': seed_s, 'first': first, 'up': up,
                'facts': facts, 'results': results}
    except BaseException:
        if server is not None:
            log('service log tail:\n%s'
                % cluster_mod.tail(server.proc.log_path))
        raise
    finally:
        if server is not None:
            server.stop()
        if db is not None:
            db.drop()
        if args.keep:
            log('kept %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def seed_services(db, n):
    """Schema, then ``n`` cinder-volume services rows that report (as
    bench/scheduler.py seeds them, in the embedded backend's zone) but are
    full."""
    engine = db.engine()
    try:
        migration.upgrade(engine=engine)
        sched_bench.seed(engine, n, random.Random(20261207 + n),
                         zones=('nova',), full=True)
    finally:
        engine.dispose()


def create_until_available(caller, type_id, name):
    """One volume of ``type_id``: (POST seconds, POST to available
    seconds)."""
    t0 = time.perf_counter()
    volume = caller.call('POST', '/volumes', 202, {'volume': {
        'size': 1, 'name': name, 'volume_type': type_id}}).json()['volume']
    posted = time.perf_counter() - t0
    deadline = time.monotonic() + 60
    while True:
        status = caller.get('/volumes/%s' % volume['id'])['volume']['status']
        if status == 'available':
            return posted, time.perf_counter() - t0
        if status == 'error' or time.monotonic() > deadline:
            raise RequestFailed('volume %s is %s' % (volume['id'], status))
        time.sleep(0.005)


def run_reporting(counts, args):
    """Part 7: one cinder-lite-all for each count of volume services
    reporting, all started first; then the creates go to each in turn
    (what the machine does meanwhile falls on every count alike).
    Returns [(count, {measure: [seconds]})]."""
    workdir = tempfile.mkdtemp(prefix='cinder-lite-reporting-')
    servers = []
    try:
        for n in counts:
            state = os.path.join(workdir, 'state-%d' % n)
            os.makedirs(state)
            db = Database('sqlite', state)
            seed_services(db, n - 1)
            # (the default report interval; the seeded heartbeats stay
            # fresh for the whole run)
            os.makedirs(os.path.join(workdir, str(n)))
            server = Embedded(os.path.join(workdir, str(n)), state, db,
                              report_interval=10, service_down_time=3600)
            servers.append(server)
            server.start()
        runs = []
        for n, server in zip(counts, servers):
            caller = Caller(server.url, 'admin')
            vtype = caller.call('POST', '/types', 200, {'volume_type': {
                'name': 'shared', 'extra_specs': {
                    'multiattach': '<is> True'}}}).json()['volume_type']
            for i in range(2):
                # (two to warm the path up)
                create_until_available(caller, vtype['id'], 'warm-%d' % i)
            runs.append((n, caller, vtype['id'],
                         {'POST /volumes (multiattach type)': [],
                          'create -> available': []}))
        for i in range(args.creates):
            for n, caller, type_id, results in runs:
                posted, available = create_until_available(
                    caller, type_id, 'reporting-%d' % i)
                results['POST /volumes (multiattach type)'].append(posted)
                results['create -> available'].append(available)
        for _n, caller, _t, _r in runs:
            caller.close()
        for n, server in zip(counts, servers):
            rc = server.stop()
            if rc not in (0, None):
                log('cinder-lite-all (%d services) exited with %s'
                    % (n, rc))
        servers = []
        return [(n, results) for n, _c, _t, results in runs]
    except BaseException:
        for server in servers:
            log('service log tail:\n%s'
                % cluster_mod.tail(server.proc.log_path))
        raise
    finally:
        for server in servers:
            server.stop()
        if args.keep:
            log('kept %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def report_reporting(runs):
    base = runs[0][1]
    print()
    print('POST /volumes with S volume services reporting (embedded, '
          'SQLite; load average %s); ms; ratio = p50 / p50 at S = %s'
          % (' '.join('%.2f' % x for x in os.getloadavg()),
             '{:,}'.format(runs[0][0])))
    rows = []
    for n, results in runs:
        for name, lat in results.items():
            rows.append(('{:,}'.format(n), name, len(lat), ms(pct(lat, 50)),
                         ms(pct(lat, 95)), ms(pct(lat, 99)),
                         '%.2f' % (pct(lat, 50) / pct(base[name], 50))))
    print_table(('S', 'measure', 'n', 'p50', 'p95', 'p99', 'ratio'), rows)


# -- output ----------------------------------------------------------------

def report(runs, args):
    base = runs[0]
    print()
    print('machine: %d CPUs, load average %s, python %s; db %s; %s '
          'volumes; latencies in ms; ratio = p50 / p50 at %s rows' % (
              os.cpu_count(), ' '.join('%.2f' % x for x in os.getloadavg()),
              sys.version.split()[0], args.db, '{:,}'.format(args.volumes),
              '{:,}'.format(base['rows'])))
    for run in runs:
        f = run['facts']
        print()
        print('== %s attachment rows (hot volume: %s live attachments; '
              '%s other in-use volumes; %s history rows; as many '
              'attachment_events) ==' % (
                  '{:,}'.format(run['rows']), '{:,}'.format(f['hot_live']),
                  '{:,}'.format(f['inuse']), '{:,}'.format(f['history'])))
        print('seed %.1f s; start -> first GET volumes?limit=1 200: '
              '%.2f s (x%.1f); -> cinder-volume up: %.2f s' % (
                  run['seed'], run['first'], run['first'] / base['first'],
                  run['up']))
        rows = []
        for (name, role), lat in run['results'].items():
            ref = base['results'].get((name, role))
            p50 = pct(lat, 50)
            ratio = '%.1f' % (p50 / pct(ref, 50)) if ref else '-'
            rows.append((name, role, len(lat), ms(p50), ms(pct(lat, 95)),
                         ms(pct(lat, 99)), ratio))
        print_table(('request', 'as', 'n', 'p50', 'p95', 'p99', 'ratio'),
                    rows)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--rows', default='1000,100000,1000000',
                   help='comma separated attachment row counts')
    p.add_argument('--volumes', type=int, default=10000)
    p.add_argument('--hot', type=int, default=10000,
                   help='live attachments of the hot multiattach volume '
                        '(at most half the rows)')
    p.add_argument('--samples', type=int, default=30)
    p.add_argument('--budget', type=float, default=30.0,
                   help='seconds per request after which sampling stops '
                        '(at least 5 samples)')
    p.add_argument('--db', default='sqlite',
                   choices=('sqlite',) + cluster_mod.KINDS)
    p.add_argument('--keep', action='store_true',
                   help='keep the work directories (config, log, SQLite '
                        'file)')
    p.add_argument('--backends', default='100,1000,10000',
                   help='backend counts for the scheduling part '
                        '(bench/scheduler.py); empty to skip it')
    p.add_argument('--reporting', default='2,10000',
                   help='volume services reporting for the creates part '
                        '(at least 1: the embedded backend); empty to '
                        'skip it')
    p.add_argument('--creates', type=int, default=20,
                   help='creates measured for each --reporting count')
    args = p.parse_args(argv)
    args.backends = [int(b.replace('_', '')) for b in
                     args.backends.split(',') if b.strip()]
    args.rows = [int(r.replace('_', '')) for r in args.rows.split(',')
                 if r.strip()]
    args.reporting = [int(r.replace('_', '')) for r in
                      args.reporting.split(',') if r.strip()]
    if any(r < 1 for r in args.reporting):
        p.error('--reporting counts must be at least 1')
    if args.volumes < 2:
        p.error('--volumes must be at least 2')
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.db != 'sqlite':
        try:
            cluster_mod.check_database(args.db)
        except cluster_mod.ServiceUnavailable as e:
            print('%s unavailable: %s' % (args.db, e), file=sys.stderr)
            return 2
    runs = []
    for n_rows in args.rows:
        runs.append(run_size(n_rows, args))
    if runs:
        report(runs, args)
    sched_runs = []
    rng = random.Random(1)
    for n in args.backends:
        log('scheduling with %d backends' % n)
        sched_runs.append((n, sched_bench.run(n, max(args.samples, 50),
                                              rng)))
    if sched_runs:
        sched_bench.report_table(sched_runs)
    if args.reporting:
        log('creates with %s volume services reporting'
            % ', '.join(str(n) for n in args.reporting))
        report_reporting(run_reporting(args.reporting, args))
    return 0


if __name__ == '__main__':
    sys.exit(main())
