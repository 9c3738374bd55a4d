#!/usr/bin/env python
"""The attach cycle side by side with a real Cinder, in one run.

One cycle, the same for both: POST /attachments with a connector (mode
rw, a fresh instance_uuid), POST /attachments/{id}/action os-complete,
DELETE /attachments/{id}, all on ONE multiattach volume, each client a
keep-alive connection of its own.  Cinder reserves a new attachment only
while the volume is ``available`` or ``in-use``, so with several clients
some creates are refused (400 "... to reserve ..."): those are retried
after 10-30 ms, counted as ``refused``, and the cycle's time runs from
its first try, as a client that wants the attachment sees it.

Targets:

* ``cinder``: the Cinder 29 of ``tools/cinder-reference`` (noauth on
  127.0.0.1:18776, its fake driver, its own database and vhost on the
  same MariaDB and RabbitMQ), started by this script when it is not
  running and stopped again at the end; or any Cinder at
  ``--cinder-url`` (noauth tokens ``user:project``; without CPU columns
  unless it is the tool's);
* ``cinder_lite``: a distributed deployment this script starts (API with
  one worker, scheduler, volume nodes as processes over RabbitMQ and
  ``--db``), as bench/attach.py does.

The cells alternate (cinder_lite, Cinder, cinder_lite, ... for
``--rounds``), so a change of load on this shared machine falls on both.
Per cell: cycles/s, p50/p95/p99 of the cycle, refused creates per cycle,
CPU ms per cycle of each target's service processes (utime+stime of
/proc/<pid>/stat: Cinder's are found by their command lines) and, on
MariaDB, the database server's statements and transactions per cycle
(server-wide ``Questions``, ``Com_commit`` + ``Com_rollback``, less the
idle rate; both targets on the same server).  The ratios are Cinder's
number over cinder_lite's (p50) and cinder_lite's over Cinder's
(cycles/s), each from the same round.

Before the cells, cinder_lite's composed floor at one client is measured
on its deployment, as bench/attach.py measures it (three bare HTTP
requests, two no-op RPC calls over the same RabbitMQ, the cycle's four
transactions in SQLAlchemy Core on the same database): Cinder's p50 over
that floor is the most any service making this cycle's round trips could
be faster than Cinder on this machine (``--no-floor`` skips it).

    tools/cinder-reference setup     # once (a few minutes: the venv)
    .venv/bin/python bench/versus_cinder.py --clients 1,8 --seconds 10 \\
        --rounds 2

Exit status 1 when a cycle failed on either side (other than Cinder's
refused creates, which are its documented behaviour).
"""
import argparse
import json
import os
import random
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import attach  # noqa: E402
from bench import cinder_reference  # noqa: E402
from bench import volume_create as vc  # noqa: E402
from tests.harness import cluster as cluster_mod  # noqa: E402

MULTIATTACH_TYPE = 'versus-multiattach'
# Cinder's refusal of a reservation while another is being made
REFUSED = b'to reserve'


class Target:
    """An endpoint in the v3 dialect: its URL, project and token, and
    the service processes whose CPU a cycle costs."""

    def __init__(self, name, url, project, token, groups):
        self.name, self.url, self.project = name, url, project
        self.groups = groups            # {name: pids callable}
        self.api = '/v3/%s' % project
        self.headers = {'X-Auth-Token': token,
                        'OpenStack-API-Version': 'volume 3.54',
                        'Accept': 'application/json',
                        # Cinder detaches a compute service's attachment
                        # only for a service (CVE-2023-2088)
                        'X-Service-Roles': 'service'}
        self.volume = None

    def http(self):
        return attach.http_for(self.url, self.headers)

    def call(self, conn, method, path, body=None, ok=(200, 202)):
        status, payload = conn.request(method, self.api + path, body)
        if status not in ok:
            raise RuntimeError('%s: %s %s %s' % (self.name, method, path,
                                                 payload[:300]))
        return json.loads(payload) if payload else None

    def prepare(self):
        """One multiattach volume of a multiattach type, available."""
        conn = self.http()
        types = self.call(conn, 'GET', '/types?is_public=None')
        vtype = next((t for t in types['volume_types']
                      if t['name'] == MULTIATTACH_TYPE), None)
        if vtype is None:
            vtype = self.call(conn, 'POST', '/types', {'volume_type': {
                'name': MULTIATTACH_TYPE,
                'extra_specs': {'multiattach': '<is> True'}}})[
                    'volume_type']
        vol = self.call(conn, 'POST', '/volumes', {'volume': {
            'size': 1, 'name': 'versus-cinder',
            'volume_type': vtype['id']}})['volume']
        deadline = time.monotonic() + 60
        while True:
            status = self.call(conn, 'GET', '/volumes/' + vol['id'])[
                'volume']['status']
            if status == 'available':
                break
            if status.startswith('error') or time.monotonic() > deadline:
                raise RuntimeError('%s: volume %s is %s' % (
                    self.name, vol['id'], status))
            time.sleep(0.05)
        conn.close()
        self.volume = vol['id']

    def cleanup(self):
        if self.volume is None:
            return
        conn = self.http()
        try:
            self.call(conn, 'DELETE', '/volumes/' + self.volume,
                      ok=(202, 404))
        finally:
            conn.close()


class Cycler:
    """One client: its connection, connector and results."""

    def __init__(self, target, index):
        self.target = target
        self.conn = target.http()
        self.connector = {
            'host': 'versus-%d' % index, 'ip': '127.0.0.1',
            'initiator': 'iqn.2026-11.org.example:versus-%d' % index,
            'platform': 'x86_64', 'os_type': 'linux', 'multipath': False,
            'mode': 'rw'}
        self.cycles = []
        self.refused = 0
        self.errors = []

    def _request(self, method, path, body=None):
        return self.conn.request(method, self.target.api + path, body)

    def cycle(self):
        t0 = time.perf_counter()
        body = {'attachment': {
            'volume_uuid': self.target.volume,
            'instance_uuid': str(uuid.uuid4()),
            'connector': self.connector, 'mode': 'rw'}}
        while True:
            status, payload = self._request('POST', '/attachments', body)
            if status == 200:
                break
            if status == 400 and REFUSED in payload:
                self.refused += 1
                time.sleep(0.01 + random.random() * 0.02)
                continue
            self.errors.append('create: %s %s' % (status, payload[:300]))
            time.sleep(0.05)
            return
        att = json.loads(payload)['attachment']['id']
        for method, path, action, ok in (
                ('POST', '/attachments/%s/action' % att,
                 {'os-complete': None}, 204),
                ('DELETE', '/attachments/%s' % att, None, 200)):
            status, payload = self._request(method, path, action)
            if status != ok:
                self.errors.append('%s %s: %s %s' % (method, path, status,
                                                     payload[:300]))
                self._request('DELETE', '/attachments/%s' % att)
                return
        self.cycles.append(time.perf_counter() - t0)


def run_cell(target, clients, seconds, sampler):
    workers = [Cycler(target, i) for i in range(clients)]
    for w in workers:            # open the connections before the clock
        w.conn.request('GET', '/')
    wall, cpu, counts = attach.run_threads(
        workers, seconds, lambda w: w.cycle(), sampler)
    for w in workers:
        w.conn.close()
    cycles = [c for w in workers for c in w.cycles]
    return {'target': target.name, 'clients': clients, 'wall': wall,
            'ops': len(cycles), 'rate': len(cycles) / wall,
            'lat': cycles, 'cpu': cpu, 'counts': counts,
            'refused': sum(w.refused for w in workers),
            'errors': [e for w in workers for e in w.errors]}


def lite_groups(deployment):
    return {name: fn for name, fn in attach.service_groups(
        deployment).items() if name != 'bench' and not name.endswith('*')}


def measure(targets, args, counters):
    """The cells, alternating targets within each round and client
    count; and the idle counts per second of each target (the servers'
    background: heartbeats, periodic tasks)."""
    idle = {}
    for target in targets:
        sampler = attach.Sampler(target.groups, counters)
        before = sampler.snapshot()
        t0 = time.perf_counter()
        time.sleep(args.idle_seconds)
        after = sampler.snapshot()
        elapsed = time.perf_counter() - t0
        idle[target.name] = {
            'cpu': {g: v / elapsed for g, v in
                    sampler.delta(before, after).items()},
            'counts': {k: v / elapsed for k, v in
                       sampler.counts(before, after).items()}}
    cells = []
    for rnd in range(1, args.rounds + 1):
        for clients in args.clients:
            for target in targets:
                attach.announce(target.name, 'round %d, %d client(s), %g s'
                                % (rnd, clients, args.seconds))
                cell = run_cell(target, clients, args.seconds,
                                attach.Sampler(target.groups, counters))
                cell['round'] = rnd
                cells.append(cell)
                for e in cell['errors'][:3]:
                    attach.announce(target.name, 'error: %s' % e)
    return cells, idle


def measure_floor(deployment, args):
    """cinder_lite's composed floor at one client: (seconds, errors)."""
    floor_args = argparse.Namespace(clients=[1], layouts=['one'],
                                    floor_seconds=args.floor_seconds)
    cluster = deployment.cluster
    floor = attach.measure_floor(
        'cinder_lite', deployment, deployment.url, floor_args,
        attach.Sampler(lite_groups(deployment)), cluster.transport_url,
        False, cluster.db_url)
    errors = [e for res in floor.values() for e in res['errors']]
    return attach.composed_floor(floor, 'one-step', 'one', 1)[1], errors


def per_cycle(cell, idle, key):
    return (cell['counts'][key] - idle['counts'].get(key, 0.0)
            * cell['wall']) / max(1, cell['ops'])


def report(cells, idle, targets, floor=None):
    pct, ms = attach.pct, attach.ms
    kinds = sorted(cells[0]['counts']) if cells[0]['counts'] else []
    print()
    print('machine: %d CPUs, load average %s' % (
        os.cpu_count(), ' '.join('%.2f' % x for x in os.getloadavg())))
    print('cycle = POST /attachments (connector), os-complete, DELETE on '
          'one multiattach volume; latencies in ms; CPU ms per cycle of '
          "each target's service processes; database counts per cycle "
          '(server-wide, less the idle rate)')
    rows = []
    for c in cells:
        n = max(1, c['ops'])
        cpu = {g: 1000.0 * v / n for g, v in c['cpu'].items()}
        rows.append((c['round'], c['target'], c['clients'], c['ops'],
                     '%.1f' % c['rate'], ms(pct(c['lat'], 50)),
                     ms(pct(c['lat'], 95)), ms(pct(c['lat'], 99)),
                     '%.1f' % (c['refused'] / n), len(c['errors']),
                     ' '.join('%s %.1f' % kv for kv in cpu.items()),
                     '%.1f' % sum(cpu.values())) +
                    tuple('%.1f' % per_cycle(c, idle[c['target']], k)
                          for k in kinds))
    vc.print_table(('round', 'target', 'clients', 'cycles', 'cycles/s',
                    'p50', 'p95', 'p99', 'refused/cycle', 'errors',
                    'CPU ms/cycle by process', 'CPU total') +
                   tuple(kinds), rows)
    print()
    print('ratios, same round and client count (Cinder / cinder_lite for '
          'p50 and CPU, cinder_lite / Cinder for cycles/s)')
    rows = []
    lite, cinder = targets[0].name, targets[1].name
    for rnd in sorted({c['round'] for c in cells}):
        for clients in sorted({c['clients'] for c in cells}):
            pair = {c['target']: c for c in cells
                    if c['round'] == rnd and c['clients'] == clients}
            a, b = pair.get(lite), pair.get(cinder)
            if not (a and b and a['ops'] and b['ops']):
                continue
            cpu_a = sum(a['cpu'].values()) / a['ops']
            cpu_b = sum(b['cpu'].values()) / b['ops']
            rows.append((rnd, clients,
                         '%.1fx' % (pct(b['lat'], 50) / pct(a['lat'], 50)),
                         '%.1fx' % (a['rate'] / b['rate'])
                         if b['rate'] else '-',
                         '%.1fx' % (cpu_b / cpu_a) if cpu_a else '-'))
    vc.print_table(('round', 'clients', 'p50', 'cycles/s', 'CPU/cycle'),
                   rows)
    if floor and floor == floor:      # (NaN: a part made no operation)
        print()
        print("cinder_lite's composed floor at one client (%d HTTP, %d RPC, "
              "the cycle's transactions): %s ms; Cinder's p50 over it, "
              'the most a service making these round trips could gain on '
              'this machine:' % (attach.HTTP_PER_CYCLE['one-step'],
                                 attach.RPC_PER_CYCLE, ms(floor)))
        print('  ' + ', '.join(
            'round %d %.1fx' % (c['round'], pct(c['lat'], 50) / floor)
            for c in cells if c['target'] == cinder and c['clients'] == 1
            and c['ops']))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--cinder-url', default=None,
                   help="another Cinder than tools/cinder-reference's")
    p.add_argument('--cinder-project', default=cluster_mod.PROJECT)
    p.add_argument('--cinder-token', default=None,
                   help='default admin:<project> (noauth)')
    p.add_argument('--db', default='mysql', choices=('mysql', 'postgresql'),
                   help="cinder_lite's database (statements are counted "
                        'on MariaDB only)')
    p.add_argument('--clients', default='1,8',
                   type=lambda v: [int(x) for x in v.split(',')])
    p.add_argument('--seconds', type=float, default=10.0)
    p.add_argument('--rounds', type=int, default=1)
    p.add_argument('--idle-seconds', type=float, default=3.0)
    p.add_argument('--floor-seconds', type=float, default=4.0)
    p.add_argument('--no-floor', action='store_true')
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    deployment = vc.Distributed(args.db)
    attach.announce('cinder_lite', 'starting ...')
    deployment.start()
    counters = None
    targets = []
    failed = False
    reference = None
    try:
        if args.cinder_url:
            cinder_url, cinder_groups = args.cinder_url, {}
        else:
            reference = cinder_reference.Reference().ensure()
            cinder_url, cinder_groups = reference.url, reference.groups()
        if args.db == 'mysql':
            counters = attach.DBCounters(deployment.cluster.db_url)
        targets = [
            Target('cinder_lite', deployment.url, attach.PROJECT,
                   'admin:%s' % attach.PROJECT, lite_groups(deployment)),
            Target('cinder', cinder_url, args.cinder_project,
                   args.cinder_token or 'admin:%s' % args.cinder_project,
                   cinder_groups)]
        for target in targets:
            target.prepare()
            warm = Cycler(target, 999)
            for _ in range(5):
                warm.cycle()
            warm.conn.close()
            if warm.errors:
                raise RuntimeError('%s warm-up: %s' % (target.name,
                                                       warm.errors[0]))
        floor, floor_errors = None, []
        if not args.no_floor:
            attach.announce('cinder_lite', 'floor at one client')
            floor, floor_errors = measure_floor(deployment, args)
            for e in floor_errors[:3]:
                attach.announce('cinder_lite', 'floor error: %s' % e)
        cells, idle = measure(targets, args,
                              counters.read if counters else None)
        report(cells, idle, targets, floor)
        failed = bool(floor_errors) or any(c['errors'] for c in cells)
    finally:
        if counters is not None:
            counters.close()
        for target in targets:
            try:
                target.cleanup()
            except Exception as e:
                print('cleanup of %s: %s' % (target.name, e),
                      file=sys.stderr)
        if reference is not None:
            reference.stop()
        deployment.stop(keep=failed)
    if failed:
        print('\nERRORS: see above (cinder_lite logs kept in %s)'
              % deployment.workdir)
        return 1
    print('no errors')
    return 0


if __name__ == '__main__':
    sys.exit(main())
