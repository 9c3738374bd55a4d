#!/usr/bin/env python
"""Writer takeover on a single-writer volume: from the reader's
``os-takeover`` request until its first write through the new read-write
connection is acknowledged (written and flushed), with the floor measured
in the same run.

Each round: host A attaches the volume read-write and writes, host B
attaches it read-only; then, timed, B's ``AttachClient.takeover`` (POST
/attachments/{id}/action {"os-takeover": {}}, which cuts A at the target
and re-exports B read-write), B opens the new device and writes and
flushes 4 KiB.  A's device is left open, as a dead host's would be; the
round checks that A's next write is refused.  Columns:

* ``total``: request to acknowledged write (the goal: at most 1 s in
  distributed mode);
* ``request``: the takeover request alone (cinder_lite's own work: the
  goal is at most 100 ms of the total);
* ``drain``: within the request, the cut-off of the old writer at the
  target until the target confirmed the drain (tgt shows no I_T nexus of
  its initiator / its nbdkit has exited), as the volume service logs it
  ("cut off at the target, drained in X ms"), and ``drain %``: its share
  of the request;
* ``open+write``: opening the new device and the first write;
* floor, same run: ``http`` (GET /, one keep-alive round trip) and
  ``open+write`` of a device of an attachment that is read-write already
  (the data path's own cost of a new connection);
* CPU ms per takeover of every service process (utime+stime from
  /proc/<pid>/stat around the timed part only), and of this process.

Deployments: ``embedded`` (cinder-lite-all in a subprocess: SQLite, the
in-process bus) and ``distributed`` (API, scheduler and volume node as
separate processes over RabbitMQ with PostgreSQL or MariaDB, as
tests/harness/cluster.py starts them).  Protocols: ``nbd`` and
``iscsi`` backends of the file driver.

    .venv/bin/python bench/takeover.py --rounds 20
    .venv/bin/python bench/takeover.py --modes distributed --db mysql
"""
import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import attach as attach_bench  # noqa: E402
from bench import volume_create as vc  # noqa: E402
from cinder_lite.connector import client  # noqa: E402
from cinder_lite.connector import host as host_connector  # noqa: E402
from tests.harness import cluster as cluster_mod  # noqa: E402
from tests.harness import util

PROJECT = vc.PROJECT
HEADERS = vc.HEADERS
BLOCK = b'\xa5' * 4096
TGT_CONTROL = 23261


def _backends():
    low = util.free_port()
    return {
        'nbd': {'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1',
                'target_port_range': '%d-%d' % (low, low + 10)},
        'iscsi': {'target_protocol': 'iscsi',
                  'target_ip_address': '127.0.0.1',
                  'target_port': util.free_port(),
                  'target_control_port': TGT_CONTROL}}


class Embedded:
    """cinder-lite-all with an nbd and an iscsi backend."""

    def __init__(self):
        self.workdir = tempfile.mkdtemp(prefix='cinder-lite-takeover-')
        port = util.free_port()
        self.url = 'http://127.0.0.1:%d' % port
        sections = {'DEFAULT': {
            'state_path': os.path.join(self.workdir, 'state'),
            'osapi_volume_listen': '127.0.0.1',
            'osapi_volume_listen_port': port, 'host': 'bench',
            'enabled_backends': 'nbd,iscsi', 'report_interval': 1,
            'quota_volumes': -1, 'quota_gigabytes': -1}}
        sections.update(_backends())
        conf = cluster_mod.write_conf(
            os.path.join(self.workdir, 'all.conf'), sections)
        self.proc = cluster_mod.Process(
            'all', [cluster_mod.python(), '-m', 'cinder_lite.cmd.all',
                    '--config-file', conf],
            os.path.join(self.workdir, 'all.log'), self.workdir)

    def start(self):
        self.proc.start()
        util.wait_for(lambda: _backends_up(self.url, 2), 60,
                      what='cinder-lite-all with two backends')
        return self

    def groups(self):
        return {'bench': lambda: [os.getpid()],
                'all': attach_bench.with_children(self.proc.pid)}

    def logs(self):
        return [self.proc.log_path]

    def stop(self):
        self.proc.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


class Distributed:
    """The integration cluster with its node ``ma`` serving nbd, and a
    second node ``mi`` serving iscsi."""

    def __init__(self, kind):
        backends = _backends()
        self.cluster = cluster_mod.Cluster(
            kind, node_options={'ma': backends['nbd']},
            extra_nodes={'mi': ('node-mi', 'mi', dict(
                backends['iscsi'], volume_backend_name='mi',
                multiattach=True))})

    def start(self):
        self.cluster.start()
        self.url = self.cluster.url
        return self

    def groups(self):
        groups = {'bench': lambda: [os.getpid()]}
        for name, proc in sorted(self.cluster.processes.items()):
            if name == 'noma':
                continue
            groups[name] = attach_bench.with_children(proc.pid)
        return groups

    def logs(self):
        return [p.log_path for p in self.cluster.processes.values()]

    def stop(self):
        self.cluster.stop()


def _backends_up(url, count):
    try:
        r = requests.get(url + '/v3/%s/os-services' % PROJECT,
                         headers=HEADERS, timeout=5)
    except requests.RequestException:
        return False
    return r.status_code == 200 and sum(
        s['binary'] == 'cinder-volume' and s['state'] == 'up'
        for s in r.json()['services']) >= count


def _api(url):
    session = requests.Session()
    session.headers.update(HEADERS)
    return session


def _volume(session, url, backend_name):
    base = url + '/v3/%s' % PROJECT
    name = 'single-%s-%s' % (backend_name, uuid.uuid4().hex[:6])
    r = session.post(base + '/types', json={'volume_type': {
        'name': name, 'extra_specs': {
            'multiattach': '<is> True', 'mode': 'RO',
            'volume_backend_name': backend_name}}})
    r.raise_for_status()
    r = session.post(base + '/volumes', json={'volume': {
        'size': 1, 'volume_type': name}})
    r.raise_for_status()
    volume_id = r.json()['volume']['id']
    util.wait_for(lambda: session.get(
        base + '/volumes/%s' % volume_id).json()['volume']['status']
        == 'available', 60, what='volume %s' % volume_id)
    return volume_id


def _host(url, name, address):
    transport = client.RestTransport(url + '/v3', PROJECT)
    return client.AttachClient(transport, host_connector.get_connector(
        host='bench-' + name, ip=address))


DRAINED = re.compile(r'attachment (\S+) of volume \S+: cut off at the '
                     r'target, drained in ([0-9.]+) ms')


def _drained(paths, attachment_id):
    """Seconds the volume service logged for the drain of the cut-off
    of ``attachment_id``."""
    for _ in range(100):
        for path in paths:
            with open(path, errors='replace') as f:
                for m in DRAINED.finditer(f.read()):
                    if m.group(1) == attachment_id:
                        return float(m.group(2)) / 1000.0
        time.sleep(0.01)
    raise AssertionError('no drain logged for attachment %s'
                         % attachment_id)


def _write(device):
    device.write(0, BLOCK)
    device.flush()


def run(deployment, protocol, backend_name, rounds):
    url = deployment.url
    session = _api(url)
    volume_id = _volume(session, url, backend_name)
    a, b = _host(url, 'a', '127.0.0.2'), _host(url, 'b', '127.0.0.3')
    sampler = attach_bench.Sampler(deployment.groups())
    totals, requests_s, opens, drains, cpu = [], [], [], [], {}
    floor_http, floor_open = [], []
    http = attach_bench.http_for(url)
    for _ in range(rounds):
        w_att, w_dev = a.attach_device(volume_id)
        _write(w_dev)
        r_att, r_dev = b.attach_device(volume_id)
        assert r_att['attach_mode'] == 'ro', r_att
        before = sampler.snapshot()
        t0 = time.perf_counter()
        taken = b.transport.takeover(r_att['id'])
        t1 = time.perf_counter()
        r_dev.close()
        dev = b.open(taken)
        _write(dev)
        t2 = time.perf_counter()
        after = sampler.snapshot()
        for name, seconds in sampler.delta(before, after).items():
            cpu.setdefault(name, []).append(seconds)
        totals.append(t2 - t0)
        requests_s.append(t1 - t0)
        opens.append(t2 - t1)
        drains.append(_drained(deployment.logs(), w_att['id']))
        try:
            _write(w_dev)
        except Exception:
            pass      # refused by the target: its export or session is gone
        else:
            raise AssertionError('the old writer could still write')
        w_dev.close()
        # the floor: a new connection of a read-write attachment
        t3 = time.perf_counter()
        dev.close()
        dev = b.open(taken)
        _write(dev)
        floor_open.append(time.perf_counter() - t3)
        t4 = time.perf_counter()
        status, _body = http.request('GET', '/')
        floor_http.append(time.perf_counter() - t4)
        assert status == 300, status
        b.detach(taken['id'], dev)
    return {'protocol': protocol, 'total': totals, 'request': requests_s,
            'open': opens, 'drain': drains,
            'drain_share': [d / r for d, r in zip(drains, requests_s)], 'floor_http': floor_http,
            'floor_open': floor_open,
            'cpu': {k: statistics.mean(v) for k, v in cpu.items()}}


def ms(values, p=50):
    values = sorted(values)
    index = min(len(values) - 1, int(round(len(values) * p / 100.0)))
    return '%.1f' % (values[index] * 1000.0)


def pct(shares, p=50):
    shares = sorted(shares)
    index = min(len(shares) - 1, int(round(len(shares) * p / 100.0)))
    return '%.0f' % (shares[index] * 100.0)


def print_table(mode, results):
    print()
    print('%s: takeover request -> first acknowledged write (ms, p50 / '
          'p95 over %d rounds)' % (mode, len(results[0]['total'])))
    names = list(results[0]['cpu'])
    headers = ['protocol', 'total', 'request', 'drain', 'drain %',
               'open+write',
               'floor http', 'floor open+write'] + [
        'CPU ms %s' % n for n in names]
    rows = []
    for r in results:
        rows.append([r['protocol']] + [
            '%s / %s' % (ms(r[k]), ms(r[k], 95))
            for k in ('total', 'request', 'drain')] + [
            '%s / %s' % (pct(r['drain_share']),
                         pct(r['drain_share'], 95))] + [
            '%s / %s' % (ms(r[k]), ms(r[k], 95))
            for k in ('open', 'floor_http', 'floor_open')] + [
            '%.1f' % (r['cpu'][n] * 1000.0) for n in names])
    vc.print_table(headers, rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=20)
    parser.add_argument('--modes', default='embedded,distributed')
    parser.add_argument('--db', default='postgresql',
                        choices=('postgresql', 'mysql'))
    args = parser.parse_args(argv)
    for program in ('nbdkit', 'tgtd'):
        if shutil.which(program) is None:
            sys.exit('%s is not installed' % program)
    for mode in args.modes.split(','):
        if mode == 'embedded':
            deployment = Embedded().start()
            backends = (('nbd', 'nbd'), ('iscsi', 'iscsi'))
        else:
            deployment = Distributed(args.db).start()
            backends = (('nbd', 'ma'), ('iscsi', 'mi'))
            mode = 'distributed (%s)' % args.db
        try:
            results = [run(deployment, protocol, name, args.rounds)
                       for protocol, name in backends]
        finally:
            deployment.stop()
        print_table(mode, results)


if __name__ == '__main__':
    main()
