#!/usr/bin/env python
"""Volume create/delete latency and throughput, with the machine floor
measured in the same run.

One operation ("cycle"): POST /volumes, poll GET /volumes/<id> until
``available`` (that is the create latency), DELETE it, poll until 404.
Each of N client threads runs cycles back to back for ``--seconds`` (or
``--ops`` cycles each).  Modes:

* ``embedded``: ``python -m cinder_lite.cmd.all`` in a subprocess (SQLite,
  in-process bus, one file backend) with a temporary state_path;
* ``distributed``: API, scheduler and two volume nodes as separate
  processes over RabbitMQ and MariaDB (tests/harness/cluster.py).

Polling: the first poll is immediate, then the client sleeps 10 % of the
time elapsed so far (at least 1 ms, at most 50 ms), so the measured latency
is at most about 10 % (plus one GET) above the true one while the polls stay
few.  The polls are real API load and are counted (polls/op).

Floor, against the same servers, in the same run: GET / (version document:
HTTP + WSGI + routing, no DB) with bare http.client and with requests (the
client the cycles use, so the difference is client overhead that every
request of a cycle pays), GET /v3/<p>/volumes/<id> (auth, policy, DB
reads), and the database on its own (SELECT 1; one-row UPDATE + COMMIT;
SQLAlchemy Core without cinder_lite's pool pre-ping, or sqlite3 with
cinder_lite's pragmas).

The embedded server runs with report_interval = 1 like the cluster: with
the default 10 s the scheduler's capacity view (free space minus what it
placed since the last report, deletes not credited) runs out after about
"free GiB" creates within one interval and volumes go to error.

Exit status 1 when an operation failed; the work directories (configs and
service logs) are then kept and the first ERROR lines printed.

    /tmp/venv/bin/python bench/volume_create.py                # both modes
    /tmp/venv/bin/python bench/volume_create.py --modes distributed \
        --clients 1,8,16 --seconds 20 --db postgresql
"""
import argparse
import concurrent.futures
import http.client
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.harness import cluster as cluster_mod  # noqa: E402
from tests.harness import util

PROJECT = cluster_mod.PROJECT
HEADERS = {'X-Auth-Token': 'admin:%s' % PROJECT,
           'OpenStack-API-Version': 'volume 3.71'}
OP_TIMEOUT = 60.0

REFERENCE = [
    ('Cinder 29 (reference)', 'create->available p50: 224 ms with 1 '
                              'client, 1.3 s with 8 clients'),
    ('cinder_lite target', 'create->available p50 < 30 ms with 1 client, '
                           'distributed mode'),
    ('notes/physical-limits.md', 'RPC call p50 1.4 ms (rabbit), HTTP '
                                 'trivial 0.1 ms, MariaDB 1-row tx 0.8 ms, '
                                 'SQLite tx 0.3-0.5 ms'),
]


# -- measuring -------------------------------------------------------------

def pct(values, p):
    """Nearest-rank percentile of ``values`` (p in 0..100)."""
    if not values:
        return float('nan')
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1,
                   int(round(p / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[k]


def timed(fn, n):
    """Latencies (s) of ``n`` calls of ``fn`` after 10 % warm-up calls."""
    for _ in range(max(2, n // 10)):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


class OpError(Exception):
    pass


class Worker:
    """One client: its own HTTP session (keep-alive)."""

    def __init__(self, base):
        self.base = base.rstrip('/') + '/v3/%s' % PROJECT
        self.session = requests.Session()
        self.session.headers.update(HEADERS)
        self.polls = 0

    def _poll(self, url, done, t0):
        while True:
            resp = self.session.get(url, timeout=30)
            self.polls += 1
            result = done(resp)
            if result:
                return
            elapsed = time.perf_counter() - t0
            if elapsed > OP_TIMEOUT:
                raise OpError('timeout polling %s (last %s %s)'
                              % (url, resp.status_code, resp.text[:200]))
            time.sleep(min(0.05, max(0.001, 0.1 * elapsed)))

    def cycle(self, volume_type=None):
        """(create->available, full cycle) latencies in seconds."""
        body = {'volume': {'size': 1}}
        if volume_type:
            body['volume']['volume_type'] = volume_type
        t0 = time.perf_counter()
        resp = self.session.post(self.base + '/volumes', json=body,
                                 timeout=30)
        if resp.status_code != 202:
            raise OpError('create: %s %s' % (resp.status_code,
                                             resp.text[:300]))
        url = self.base + '/volumes/' + resp.json()['volume']['id']

        def available(r):
            if r.status_code != 200:
                raise OpError('show: %s %s' % (r.status_code, r.text[:300]))
            status = r.json()['volume']['status']
            if status.startswith('error'):
                raise OpError('volume went %s' % status)
            return status == 'available'

        self._poll(url, available, t0)
        t_created = time.perf_counter()
        resp = self.session.delete(url, timeout=30)
        if resp.status_code != 202:
            raise OpError('delete: %s %s' % (resp.status_code,
                                             resp.text[:300]))

        def gone(r):
            if r.status_code == 404:
                return True
            if r.status_code != 200:
                raise OpError('show: %s %s' % (r.status_code, r.text[:300]))
            if r.json()['volume']['status'] == 'error_deleting':
                raise OpError('volume went error_deleting')
            return False

        self._poll(url, gone, t_created)
        return t_created - t0, time.perf_counter() - t0


def run_cell(base, clients, seconds, ops):
    """``clients`` threads cycling; returns a result dict."""
    creates, cycles, errors = [], [], []
    lock = threading.Lock()
    workers = [Worker(base) for _ in range(clients)]
    start_barrier = threading.Barrier(clients + 1)
    stop_at = [None]

    def run(worker):
        start_barrier.wait()
        done = 0
        while True:
            if ops and done >= ops:
                break
            if not ops and time.perf_counter() >= stop_at[0]:
                break
            try:
                c, cy = worker.cycle()
            except Exception as e:   # counted, the run goes on
                with lock:
                    errors.append(repr(e))
                if len(errors) > 20:
                    break
                continue
            done += 1
            with lock:
                creates.append(c)
                cycles.append(cy)

    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        futures = [pool.submit(run, w) for w in workers]
        stop_at[0] = time.perf_counter() + seconds
        t0 = time.perf_counter()
        start_barrier.wait()
        for f in futures:
            f.result()
        wall = time.perf_counter() - t0
    for w in workers:
        w.session.close()
    return {'clients': clients, 'ops': len(cycles), 'wall': wall,
            'rate': len(cycles) / wall if wall else 0.0,
            'create': creates, 'cycle': cycles, 'errors': errors,
            'polls': sum(w.polls for w in workers) / max(1, len(cycles))}


def http_floor(base, volume_id, n):
    """GET / with requests (the client of the cycles) and with bare
    http.client (what the server alone costs), GET volume with requests."""
    parts = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port,
                                      timeout=10)

    def raw_root():
        conn.request('GET', '/')
        conn.getresponse().read()
    raw = timed(raw_root, n)
    conn.close()
    session = requests.Session()
    session.headers.update(HEADERS)
    root = timed(lambda: session.get(base + '/', timeout=10), n)
    url = base + '/v3/%s/volumes/%s' % (PROJECT, volume_id)

    def show():
        r = session.get(url, timeout=10)
        assert r.status_code == 200, r.text
    show_lat = timed(show, n)
    session.close()
    return {'GET / raw': statistics.median(raw),
            'GET /': statistics.median(root),
            'GET volume': statistics.median(show_lat)}


def db_floor_sqlalchemy(url, n):
    import sqlalchemy as sa
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text('CREATE TABLE bench_floor '
                                 '(id INTEGER PRIMARY KEY, n INTEGER)'))
            conn.execute(sa.text('INSERT INTO bench_floor VALUES (1, 0)'))
            conn.commit()

            def select1():
                conn.execute(sa.text('SELECT 1')).scalar()
                conn.rollback()

            def commit():
                conn.execute(sa.text('UPDATE bench_floor SET n = n + 1 '
                                     'WHERE id = 1'))
                conn.commit()
            s = timed(select1, n)
            c = timed(commit, n)
            conn.execute(sa.text('DROP TABLE bench_floor'))
            conn.commit()
    finally:
        engine.dispose()
    return {'DB SELECT 1': statistics.median(s),
            'DB 1-row tx': statistics.median(c)}


def db_floor_sqlite(path, n):
    """SQLite as cinder_lite opens it: WAL, synchronous=NORMAL, BEGIN
    IMMEDIATE."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute('PRAGMA journal_mode=WAL')
        conn.execute('PRAGMA synchronous=NORMAL')
        conn.execute('CREATE TABLE bench_floor (id INTEGER PRIMARY KEY, '
                     'n INTEGER)')
        conn.execute('INSERT INTO bench_floor VALUES (1, 0)')

        def select1():
            conn.execute('BEGIN')
            conn.execute('SELECT 1').fetchone()
            conn.execute('COMMIT')

        def commit():
            conn.execute('BEGIN IMMEDIATE')
            conn.execute('UPDATE bench_floor SET n = n + 1 WHERE id = 1')
            conn.execute('COMMIT')
        s = timed(select1, n)
        c = timed(commit, n)
    finally:
        conn.close()
    return {'DB SELECT 1': statistics.median(s),
            'DB 1-row tx': statistics.median(c)}


# -- deployments -----------------------------------------------------------

class Embedded:
    """cinder-lite-all in a subprocess; ``backend``: options of its file
    backend (its target: ``target_protocol`` ...), or None for the
    default (the local target)."""

    def __init__(self, backend=None):
        self.workdir = tempfile.mkdtemp(prefix='cinder-lite-bench-')
        self.state = os.path.join(self.workdir, 'state')
        self.port = util.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.conf = cluster_mod.write_conf(
            os.path.join(self.workdir, 'all.conf'),
            {'DEFAULT': {'state_path': self.state,
                         'osapi_volume_listen': '127.0.0.1',
                         'osapi_volume_listen_port': self.port,
                         'host': 'bench',
                         # as the distributed cluster: the scheduler's
                         # capacity view is refreshed every second
                         'report_interval': 1,
                         'service_down_time': 10,
                         # benchmarks make more volumes than Cinder's
                         # default quota of a project
                         'quota_volumes': -1,
                         'quota_gigabytes': -1},
             **({'file': backend} if backend else {})})
        self.proc = cluster_mod.Process(
            'all', [cluster_mod.python(), '-m', 'cinder_lite.cmd.all',
                    '--config-file', self.conf],
            os.path.join(self.workdir, 'all.log'), self.workdir)

    def start(self):
        self.proc.start()
        session = requests.Session()

        def ready():
            if not self.proc.alive():
                raise RuntimeError('cinder-lite-all exited:\n%s'
                                   % cluster_mod.tail(self.proc.log_path))
            try:
                r = session.get(self.url + '/v3/%s/os-services' % PROJECT,
                                headers=HEADERS, timeout=5)
            except requests.RequestException:
                return False
            return r.status_code == 200 and any(
                s['binary'] == 'cinder-volume' and s['state'] == 'up'
                for s in r.json()['services'])
        try:
            util.wait_for(ready, 60, what='cinder-lite-all ready')
        except BaseException:
            print(cluster_mod.tail(self.proc.log_path), file=sys.stderr)
            self.stop()
            raise
        return self

    def logs(self):
        return [self.proc.log_path]

    def db_floor(self, n):
        return db_floor_sqlite(os.path.join(self.state, 'bench-floor.sqlite'),
                               n)

    def stop(self, keep=False):
        rc = self.proc.stop()
        if not keep:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return rc


class Distributed:
    def __init__(self, kind):
        self.cluster = cluster_mod.Cluster(kind)

    def start(self):
        self.cluster.start()
        self.url = self.cluster.url
        return self

    @property
    def workdir(self):
        return self.cluster.workdir

    def logs(self):
        return [p.log_path for p in self.cluster.processes.values()]

    def db_floor(self, n):
        return db_floor_sqlalchemy(self.cluster.db_url, n)

    def stop(self, keep=False):
        self.cluster.keep_workdir = keep
        return self.cluster.stop()


# -- output ----------------------------------------------------------------

def ms(value):
    if value != value:   # NaN: no samples
        return '-'
    return ('%.2f' if value < 0.01 else '%.1f') % (value * 1000.0)


def print_table(headers, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    fmt = ' | '.join('%%%ds' % w for w in widths)
    print(fmt % tuple(headers))
    print('-+-'.join('-' * w for w in widths))
    for row in rows:
        print(fmt % tuple(row))


def bench_mode(name, deployment, args):
    print('[%s] starting ...' % name, file=sys.stderr, flush=True)
    t = time.perf_counter()
    deployment.start()
    print('[%s] ready in %.1f s at %s' % (name, time.perf_counter() - t,
                                          deployment.url),
          file=sys.stderr, flush=True)
    results = []
    try:
        # warm up (imports, pools, first-use paths), then the floor
        warm = Worker(deployment.url)
        for _ in range(3):
            warm.cycle()
        vol = warm.session.post(warm.base + '/volumes',
                                json={'volume': {'size': 1}}).json()
        vol_url = warm.base + '/volumes/' + vol['volume']['id']
        util.wait_for(
            lambda: warm.session.get(vol_url).json()['volume']['status']
            == 'available', 30, interval=0.01, what='floor volume')
        floor = http_floor(deployment.url, vol['volume']['id'],
                           args.floor_n)
        floor.update(deployment.db_floor(args.floor_n))
        warm.session.delete(vol_url)
        warm.session.close()
        for clients in args.clients:
            print('[%s] %d client(s) for %s ...' % (
                name, clients,
                '%d ops each' % args.ops if args.ops else
                '%g s' % args.seconds), file=sys.stderr, flush=True)
            res = run_cell(deployment.url, clients, args.seconds, args.ops)
            res['mode'] = name
            results.append(res)
            for err in res['errors'][:3]:
                print('[%s] error: %s' % (name, err), file=sys.stderr)
            if res['errors']:
                print_service_errors(name, deployment)
    finally:
        keep = args.keep or any(r['errors'] for r in results)
        deployment.stop(keep=keep)
        if keep:
            print('[%s] logs kept in %s' % (name, deployment.workdir),
                  file=sys.stderr)
    return floor, results


def print_service_errors(name, deployment, limit=12):
    """The first ERROR lines (with the line after) of the service logs."""
    for path in deployment.logs():
        try:
            with open(path, errors='replace') as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        shown = 0
        for i, line in enumerate(lines):
            if ' ERROR ' in line and shown < limit:
                shown += 1
                print('[%s] %s: %s' % (name, os.path.basename(path),
                                       line[:400]), file=sys.stderr)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--modes', default='embedded,distributed',
                   help='comma separated: embedded, distributed')
    p.add_argument('--clients', default='1,8',
                   help='comma separated client counts (default 1,8)')
    p.add_argument('--seconds', type=float, default=10.0,
                   help='duration of each (mode, clients) cell')
    p.add_argument('--ops', type=int, default=0,
                   help='cycles per client instead of --seconds')
    p.add_argument('--db', default='mysql', choices=cluster_mod.KINDS,
                   help='database of the distributed mode')
    p.add_argument('--keep', action='store_true',
                   help='keep the work directories (configs, logs); they '
                        'are kept anyway when an operation failed')
    p.add_argument('--floor-n', type=int, default=300,
                   help='samples per floor measurement')
    args = p.parse_args(argv)
    args.modes = [m.strip() for m in args.modes.split(',') if m.strip()]
    args.clients = [int(c) for c in args.clients.split(',')]
    for m in args.modes:
        if m not in ('embedded', 'distributed'):
            p.error('unknown mode %r' % m)
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    floors, results, skipped = {}, [], []
    for mode in args.modes:
        if mode == 'embedded':
            name, deployment = 'embedded', Embedded()
        else:
            name = 'distributed/%s' % ('mariadb' if args.db == 'mysql'
                                       else args.db)
            try:
                cluster_mod.check_services(args.db)
            except cluster_mod.ServiceUnavailable as e:
                skipped.append('%s skipped: %s' % (name, e))
                print(skipped[-1], file=sys.stderr)
                continue
            deployment = Distributed(args.db)
        floors[name], res = bench_mode(name, deployment, args)
        results += res

    print()
    print('machine: %d CPUs, load average %s, python %s' % (
        os.cpu_count(), ' '.join('%.2f' % x for x in os.getloadavg()),
        sys.version.split()[0]))
    print('op = POST volume, poll until available, DELETE, poll until 404;'
          ' latencies in ms')
    print()
    rows = []
    for r in results:
        rows.append((r['mode'], r['clients'], r['ops'], '%.1f' % r['rate'],
                     ms(pct(r['create'], 50)), ms(pct(r['create'], 95)),
                     ms(pct(r['create'], 99)), ms(pct(r['cycle'], 50)),
                     ms(pct(r['cycle'], 95)), ms(pct(r['cycle'], 99)),
                     '%.1f' % r['polls'], len(r['errors'])))
    print_table(('mode', 'clients', 'ops', 'ops/s', 'create p50', 'p95',
                 'p99', 'cycle p50', 'p95', 'p99', 'polls/op', 'errors'),
                rows)
    print()
    print('floor, same run (p50 ms, 1 client; "raw" = http.client, the '
          'others through requests like the cycles):')
    keys = ('GET / raw', 'GET /', 'GET volume', 'DB SELECT 1', 'DB 1-row tx')
    print_table(('mode',) + keys,
                [(m,) + tuple(ms(f[k]) for k in keys)
                 for m, f in floors.items()])
    print()
    for who, what in REFERENCE:
        print('%-26s %s' % (who + ':', what))
    for line in skipped:
        print(line)
    one = [r for r in results if r['mode'].startswith('distributed')
           and r['clients'] == 1]
    if one:
        p50 = pct(one[0]['create'], 50) * 1000
        print('distributed, 1 client: create p50 %.1f ms -> target (<30 ms) '
              '%s; vs Cinder 29 224 ms: %.1fx' % (
                  p50, 'MET' if p50 < 30 else 'NOT MET', 224.0 / p50))
    return 1 if any(r['errors'] for r in results) else 0


if __name__ == '__main__':
    sys.exit(main())
