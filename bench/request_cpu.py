#!/usr/bin/env python
"""CPU per request of each service process in the one-step attach cycle
(POST /attachments with a connector, os-complete, DELETE) at one client:
which process spends what on which request.

A cluster as tests/harness/cluster.py starts it (API, scheduler and the
volume nodes ma and noma as separate processes over RabbitMQ, with
MariaDB or PostgreSQL).  One client runs the cycle on a multiattach
volume; around every request it reads utime+stime of each service
process from /proc/<pid>/stat, so a request's cost is charged to the
request, not spread over the cycle.  With one client nothing else runs
between the two reads but the services' own background work (heartbeats
every ``report_interval``, 1 s here), a few tenths of a millisecond a
cycle.  Columns: ms of CPU per request of each process (the API with its
children), then per cycle, and the cycle's wall time.

CPU per operation moves by a fifth between runs on a shared machine;
compare two trees by running each in turn, several rounds, the order
alternating, and compare means (doc/source/performance.rst does):

    .venv/bin/python bench/request_cpu.py --db mysql --cycles 250
    git worktree add /tmp/before <rev>
    PYTHONPATH=/tmp/before .venv/bin/python /tmp/before/bench/request_cpu.py
"""
import argparse
import json
import os
import statistics
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import attach  # noqa: E402
from tests.harness import cluster as cluster_mod  # noqa: E402

REQUESTS = ('create', 'complete', 'delete')


def process_groups(cluster):
    """{name: pids} of the cluster's service processes (the API's
    children with it), looked up once: a lookup scans /proc."""
    groups = {}
    for name in sorted(cluster.processes, key=lambda n: (
            n != 'api', not n.startswith('scheduler'), n)):
        pid = cluster.processes[name].pid
        groups[name if name == 'api' or name.startswith('scheduler')
               else 'vol-' + name] = attach.with_children(pid)()
    return groups


def cpu_ms(groups):
    out = {}
    for name, pids in groups.items():
        ticks = [attach.cpu_ticks(p) for p in pids]
        out[name] = sum(t for t in ticks if t is not None) * 1000.0 \
            / attach.CLK_TCK
    return out


class Cycle:
    """The one-step cycle of one client, each request's CPU charged to
    it."""

    def __init__(self, url, volume_id, groups):
        self.http = attach.http_for(url)
        self.volume_id = volume_id
        self.groups = groups
        self.spent = {(r, g): 0.0 for r in REQUESTS for g in groups}
        self.walls = []
        self.instance = str(uuid.uuid4())
        self.connector = {'host': 'bench-cpu', 'ip': '127.0.0.1',
                          'initiator': 'iqn.2026-11.org.example:bench-cpu'}

    def _request(self, name, measure, method, path, body, ok):
        before = cpu_ms(self.groups) if measure else None
        status, payload = self.http.request(method, path, body)
        if measure:
            after = cpu_ms(self.groups)
            for group in self.groups:
                self.spent[name, group] += after[group] - before[group]
        attach.expect(name, status, payload, ok)
        return payload

    def run(self, measure):
        t0 = time.perf_counter()
        created = json.loads(self._request(
            'create', measure, 'POST', attach.API + '/attachments',
            {'attachment': {'volume_uuid': self.volume_id,
                            'instance_uuid': self.instance,
                            'connector': self.connector}}, 200))
        path = attach.API + '/attachments/' + created['attachment']['id']
        self._request('complete', measure, 'POST', path + '/action',
                      {'os-complete': None}, 204)
        self._request('delete', measure, 'DELETE', path, None, 200)
        if measure:
            self.walls.append(time.perf_counter() - t0)


def report(cycle, cycles, kind):
    groups = list(cycle.groups)
    width = max(10, max(len(g) for g in groups) + 1)
    print('%s: ms of CPU per request of each process, mean of %d cycles at '
          'one client' % (kind, cycles))
    print('%-10s' % 'request' + ''.join('%*s' % (width, g)
                                        for g in groups))
    for name in REQUESTS + ('cycle',):
        names = REQUESTS if name == 'cycle' else (name,)
        print('%-10s' % name + ''.join(
            '%*.2f' % (width, sum(cycle.spent[n, g] for n in names)
                       / cycles) for g in groups))
    print('cycle wall time (with the reads of /proc): p50 %.1f ms' % (
        statistics.median(cycle.walls) * 1000))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--db', default='mysql',
                        choices=('mysql', 'postgresql'))
    parser.add_argument('--cycles', type=int, default=250,
                        help='measured cycles (default 250)')
    parser.add_argument('--warmup', type=int, default=30,
                        help='cycles before the measured ones (default 30)')
    args = parser.parse_args(argv)
    with cluster_mod.Cluster(args.db) as cluster:
        volume_id = attach.make_volumes(cluster.url, 0)['one']
        cycle = Cycle(cluster.url, volume_id, process_groups(cluster))
        for _ in range(args.warmup):
            cycle.run(False)
        for _ in range(args.cycles):
            cycle.run(True)
        report(cycle, args.cycles, 'distributed/%s' % args.db)
    return 0


if __name__ == '__main__':
    sys.exit(main())
