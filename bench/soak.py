#!/usr/bin/env python
"""A soak: ``--clients`` clients of mixed operations against a distributed
deployment for ``--minutes``, with a table per minute of what users see
and what the processes hold.

The deployment is tests/harness/cluster.py's: cinder-lite-api (one
worker), cinder-lite-scheduler and the volume nodes ``ma`` and ``noma``
as separate processes over RabbitMQ and MariaDB or PostgreSQL (``--db``),
both file backends exporting over NBD on 127.0.0.1 (one nbdkit process
per attachment).

Each client repeats: create a 1 GiB volume on either backend, then one
to three of: attach read-write (POST /attachments with a connector,
os-complete) and detach, attach read-only (``mode: ro``, 3.54) and
detach, snapshot and delete the snapshot, extend by 1 GiB; then delete
the volume.  One volume in three is a single-writer shared volume
(``multiattach``, ``mode = RO``) on ``ma``, whose ops are instead a
writer takeover (host A attaches read-write, host B read-only, B takes
over with ``os-takeover``, both detach) and a host fence (A attaches
read-write, an admin fences A off the volume with ``os-fence``, A's
next attach is refused 409, ``os-unfence``, A detaches).  Every request
is counted; the latency percentiles are of
the requests that change something (not of the status polls).

Per minute: requests, 5xx, p50/p99 (ms) of the changes, then for each
service process its RSS (MiB) and open file descriptors, the nbdkit
processes alive and the attachments the database holds attached (each
has one export), and the volumes and attachments in a transitional
status at that moment.  At the end, after the clients stop and the
deployment is left ``--settle`` seconds: what is still in a transitional
status (stuck), and nbdkit versus the database.

    python bench/soak.py --minutes 60 --clients 8 --db mysql

prints the table as reStructuredText (doc/reliability.rst, "Soak").
"""
import argparse
import collections
import math
import os
import random
import sys
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import requests  # noqa: E402

from tests.harness import cluster as cluster_mod  # noqa: E402
from tests.harness import stack  # noqa: E402
from tests.harness import util  # noqa: E402

V354 = {'OpenStack-API-Version': 'volume 3.54'}
TRANSITIONAL_VOLUME = {'creating', 'deleting', 'extending', 'attaching',
                       'detaching', 'downloading', 'uploading',
                       'reverting', 'backing-up', 'restoring-backup'}
TRANSITIONAL_ATTACHMENT = {'attaching', 'detaching'}
SERVICES = ('api', 'scheduler', 'ma', 'noma')
WAIT = 120


def pct(values, p):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100.0))]


class Log:
    """Every request: (end time, method, status, seconds)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rows = []

    def add(self, method, status, seconds):
        with self.lock:
            self.rows.append((time.monotonic(), method, status, seconds))

    def window(self, start, end):
        with self.lock:
            return [r for r in self.rows if start <= r[0] < end]


class Client(threading.Thread):

    def __init__(self, n, url, log, stop, rng):
        super().__init__(daemon=True, name='soak-%d' % n)
        self.api = stack.Client(url, project=cluster_mod.PROJECT)
        self.log, self.stop, self.rng = log, stop, rng
        self.connector = {'host': 'soak-%d' % n, 'ip': '127.0.0.%d' % (
            10 + n), 'initiator': 'iqn.2026-12.org.example:soak-%d' % n,
            'platform': 'x86_64', 'os_type': 'linux', 'multipath': False}
        self.errors = []
        self.done = collections.Counter()     # operations that succeeded

    def call(self, method, path, ok, **kw):
        start = time.monotonic()
        try:
            resp = self.api.request(method, path, **kw)
        except requests.RequestException as e:
            self.log.add(method, 'exc', time.monotonic() - start)
            self.errors.append('%s %s: %s' % (method, path, e))
            return None
        self.log.add(method, resp.status_code, time.monotonic() - start)
        if resp.status_code not in ok:
            self.errors.append('%s %s: %d %s' % (method, path,
                                                 resp.status_code,
                                                 resp.text[:200]))
            return None
        return resp

    def wait(self, path, key, want):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            resp = self.call('GET', path, (200, 404))
            if resp is not None:
                if resp.status_code == 404:
                    return want is None
                if want is not None and resp.json()[key]['status'] == want:
                    return True
                if resp.json()[key]['status'].startswith('error'):
                    self.errors.append('%s: %s' % (path, resp.json()[key]))
                    return False
            time.sleep(0.2)
        self.errors.append('%s: not %s within %d s' % (path, want, WAIT))
        return False

    def run(self):
        while not self.stop.is_set():
            self.cycle()

    def cycle(self):
        vtype = self.rng.choice(('soak-ma', 'soak-noma', 'soak-shared'))
        resp = self.call('POST', '/volumes', (202,), json={'volume': {
            'size': 1, 'volume_type': vtype}})
        if resp is None:
            time.sleep(1)
            return
        vid = resp.json()['volume']['id']
        path = '/volumes/%s' % vid
        if not self.wait(path, 'volume', 'available'):
            return
        size = 1
        for _ in range(self.rng.randint(1, 3)):
            op = self.rng.choice(('takeover', 'fence') if vtype ==
                                 'soak-shared' else
                                 ('rw', 'ro', 'snapshot', 'extend'))
            if op == 'takeover':
                self.takeover(vid)
            elif op == 'fence':
                self.fence(vid)
            elif op in ('rw', 'ro'):
                self.attach(vid, op)
            elif op == 'snapshot':
                self.snapshot(vid)
            else:
                size += 1
                if self.call('POST', path + '/action', (202,), json={
                        'os-extend': {'new_size': size}}) is None:
                    size -= 1
                else:
                    self.done['extend'] += 1
            if not self.wait(path, 'volume', 'available'):
                return
        if self.call('DELETE', path, (202,)) is not None:
            self.wait(path, 'volume', None)

    def connect(self, vid, mode, host=None, ok=(200,)):
        """An attachment of ``host`` (this client's, or a second host
        of it) made and completed; its id, or None."""
        connector = dict(self.connector)
        if host is not None:
            connector['host'] = '%s-%s' % (connector['host'], host)
        body = {'attachment': {'volume_uuid': vid,
                               'instance_uuid': str(uuid.uuid4()),
                               'connector': connector, 'mode': mode}}
        resp = self.call('POST', '/attachments', ok, json=body,
                         headers=V354)
        if resp is None or resp.status_code != 200:
            return None
        aid = resp.json()['attachment']['id']
        self.call('POST', '/attachments/%s/action' % aid, (204,),
                  json={'os-complete': None}, headers=V354)
        return aid

    def detach(self, aid, ok=(200,)):
        if aid is not None:
            self.call('DELETE', '/attachments/%s' % aid, ok, headers=V354)

    def attach(self, vid, mode):
        aid = self.connect(vid, mode)
        if aid is not None:
            self.done['attach ' + mode] += 1
        self.detach(aid)

    def takeover(self, vid):
        writer = self.connect(vid, 'rw', host='a')
        reader = self.connect(vid, 'ro', host='b')
        if reader is not None:
            resp = self.call('POST', '/attachments/%s/action' % reader,
                             (200,), json={'os-takeover': {}},
                             headers=V354)
            if resp is not None:
                if resp.json()['attachment']['attach_mode'] == 'rw':
                    self.done['takeover'] += 1
                else:
                    self.errors.append('takeover of %s: %r' % (
                        reader, resp.json()['attachment']))
        self.detach(reader)
        # (taken over, the old writer's attachment ended detached: 404)
        self.detach(writer, ok=(200, 404))

    def fence(self, vid):
        writer = self.connect(vid, 'rw', host='a')
        path = '/os-host-fences/%s-a/action' % self.connector['host']
        if self.call('POST', path, (200,), json={'os-fence': {
                'volume_id': vid, 'reason': 'soak'}}) is not None:
            # the fenced host is refused
            self.connect(vid, 'ro', host='a', ok=(409,))
            if self.call('POST', path, (200,), json={'os-unfence': {
                    'volume_id': vid, 'reason': 'soak'}}) is not None:
                self.done['fence'] += 1
        # (fenced, its attachment ended detached: 404)
        self.detach(writer, ok=(200, 404))

    def snapshot(self, vid):
        resp = self.call('POST', '/snapshots', (202,), json={'snapshot': {
            'volume_id': vid, 'name': 'soak'}})
        if resp is None:
            return
        sid = resp.json()['snapshot']['id']
        path = '/snapshots/%s' % sid
        if self.wait(path, 'snapshot', 'available'):
            if self.call('DELETE', path, (202,)) is not None and \
                    self.wait(path, 'snapshot', None):
                self.done['snapshot'] += 1


def proc_status(pid):
    """(RSS MiB, open fds) of ``pid`` and its children (an API with
    workers), or (None, None)."""
    rss, fds = 0, 0
    for p in [pid] + cluster_mod.child_pids(pid):
        try:
            with open('/proc/%d/status' % p) as f:
                for line in f:
                    if line.startswith('VmRSS:'):
                        rss += int(line.split()[1])
            fds += len(os.listdir('/proc/%d/fd' % p))
        except OSError:
            if p == pid:
                return None, None
    return rss / 1024.0, fds


def state(api, cluster):
    volumes = api.get('/volumes/detail?all_tenants=1').json()['volumes']
    atts = api.get('/attachments/detail?all_tenants=1',
                   headers=V354).json()['attachments']
    return {
        'attached': sum(1 for a in atts if a['status'] == 'attached'),
        'nbdkit': len(util.processes('nbdkit', cluster.workdir)),
        'moving': sum(1 for v in volumes
                      if v['status'] in TRANSITIONAL_VOLUME) + sum(
            1 for a in atts if a['status'] in TRANSITIONAL_ATTACHMENT),
        'volumes': volumes, 'attachments': atts}


def sample(log, api, cluster, start, end):
    rows = log.window(start, end)
    changes = [r[3] for r in rows if r[1] != 'GET']
    row = {'requests': len(rows),
           '5xx': sum(1 for r in rows if r[2] == 'exc' or (
               isinstance(r[2], int) and r[2] >= 500)),
           'p50': pct(changes, 50) * 1000, 'p99': pct(changes, 99) * 1000}
    for name in SERVICES:
        row[name] = proc_status(cluster.processes[name].pid)
    row.update({k: v for k, v in state(api, cluster).items()
                if k in ('attached', 'nbdkit', 'moving')})
    return row


def table(rows):
    head = ['min', 'requests', '5xx', 'p50 ms', 'p99 ms'] + [
        '%s MiB/fds' % n for n in SERVICES] + ['nbdkit', 'attached (db)',
                                               'in transition']
    lines = []
    for r in rows:
        lines.append(['%g' % r['minute'], str(r['requests']), str(r['5xx']),
                      '%.0f' % r['p50'], '%.0f' % r['p99']] + [
            '%.0f/%d' % r[n] if r[n][0] is not None else 'gone'
            for n in SERVICES] + [str(r['nbdkit']), str(r['attached']),
                                  str(r['moving'])])
    widths = [max(len(h), *(len(line[i]) for line in lines))
              for i, h in enumerate(head)]
    rule = '  '.join('=' * w for w in widths)
    out = [rule, '  '.join(h.ljust(w) for h, w in zip(head, widths)), rule]
    out += ['  '.join(c.ljust(w) for c, w in zip(line, widths))
            for line in lines]
    out.append(rule)
    return '\n'.join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--minutes', type=float, default=60)
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--db', default='mysql',
                        choices=['mysql', 'postgresql'])
    parser.add_argument('--interval', type=float, default=60,
                        help='seconds a row of the table covers')
    parser.add_argument('--settle', type=float, default=30)
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args(argv)

    lo = int(util.free_range(400).partition('-')[0])
    nbd = {'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1'}
    cluster = cluster_mod.Cluster(args.db, node_options={
        'ma': dict(nbd, target_port_range='%d-%d' % (lo, lo + 199)),
        'noma': dict(nbd, target_port_range='%d-%d' % (lo + 200,
                                                       lo + 399))})
    cluster.start()
    stop = threading.Event()
    try:
        api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
        for name in ('ma', 'noma'):
            api.create_type('soak-%s' % name,
                            {'volume_backend_name': name})
        api.create_type('soak-shared', {'volume_backend_name': 'ma',
                                        'multiattach': '<is> True',
                                        'mode': 'RO'})
        log = Log()
        rng = random.Random(args.seed)
        clients = [Client(n, cluster.url, log, stop,
                          random.Random(rng.random()))
                   for n in range(args.clients)]
        began = time.monotonic()
        for c in clients:
            c.start()
        rows = []
        end = began + args.minutes * 60
        mark = began
        # (windows of the planned length: summed, they fell a hair short
        # of ``end`` and the table ended with an empty one)
        for k in range(1, int(math.ceil(args.minutes * 60 /
                                        args.interval - 1e-9)) + 1):
            nxt = min(end, began + k * args.interval)
            time.sleep(max(0, nxt - time.monotonic()))
            rows.append(dict(sample(log, api, cluster, mark, nxt),
                             minute=round((nxt - began) / 60.0, 2)))
            print('minute %d: %r' % (len(rows), rows[-1]), file=sys.stderr,
                  flush=True)
            mark = nxt
        stop.set()
        for c in clients:
            c.join(WAIT * 3)
        time.sleep(args.settle)
        final = state(api, cluster)
        stuck = [('volume', v['id'], v['status'])
                 for v in final['volumes']
                 if v['status'] in TRANSITIONAL_VOLUME] + [
            ('attachment', a['id'], a['status'])
            for a in final['attachments']
            if a['status'] in TRANSITIONAL_ATTACHMENT]
        errors = [e for c in clients for e in c.errors]
        done = sum((c.done for c in clients), collections.Counter())
        print(table(rows))
        print()
        print('done: %s' % ', '.join('%s %d' % kv
                                     for kv in sorted(done.items())))
        print('%d clients, %.0f minutes, %s; %d requests, %d 5xx; after '
              '%.0f s: %d stuck %r, nbdkit %d vs %d attached in the '
              'database, %d volumes left; %d client errors%s' % (
                  args.clients, args.minutes, args.db,
                  sum(r['requests'] for r in rows),
                  sum(r['5xx'] for r in rows), args.settle, len(stuck),
                  stuck[:5], final['nbdkit'], final['attached'],
                  len(final['volumes']), len(errors),
                  (': ' + '; '.join(errors[:5])) if errors else ''))
        return 1 if stuck or errors or final['nbdkit'] != final[
            'attached'] else 0
    finally:
        stop.set()
        cluster.stop()


if __name__ == '__main__':
    sys.exit(main())
