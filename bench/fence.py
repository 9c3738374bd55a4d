#!/usr/bin/env python
"""Host fence: from the ``os-fence`` request until cinder_lite answers
that the host is cut off and drained, with a write stream of the host in
flight, over NBD and iSCSI.

Each round: host A (a thread writing 16 KiB at a time without pause)
and host B are attached read-write to a shared volume; timed, POST
/os-host-fences/bench-a/action {"os-fence": {"volume_id": ...}}; the
round checks that A's write stream was refused and no write of it was
acknowledged after the answer, then unfences A (timed too) and detaches.
Columns (ms, p50 / p99):

* ``fence``: request -> answer (everything: the mark, the RPC, the cut,
  the drain);
* ``drained``: the drain as the volume service measured it (from the
  cut-off's start until tgt showed no I_T nexus of A / A's nbdkit had
  exited), ``drained_ms`` in the answer;
* ``unfence``: request -> answer (A's export made again);
* ``in flight``: A's writes in flight when the fence was asked (mean),
  and ``late``: A's writes acknowledged after the answer (must be 0).

    .venv/bin/python bench/fence.py --rounds 50
    .venv/bin/python bench/fence.py --modes distributed --db mysql
"""
import argparse
import os
import shutil
import statistics
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import takeover  # noqa: E402
from bench import volume_create as vc  # noqa: E402

PROJECT = vc.PROJECT
CHUNK = b'\xa5' * 16384


def _volume(session, url, backend_name):
    base = url + '/v3/%s' % PROJECT
    name = 'shared-%s-%s' % (backend_name, os.urandom(3).hex())
    r = session.post(base + '/types', json={'volume_type': {
        'name': name, 'extra_specs': {
            'multiattach': '<is> True',
            'volume_backend_name': backend_name}}})
    r.raise_for_status()
    r = session.post(base + '/volumes', json={'volume': {
        'size': 1, 'volume_type': name}})
    r.raise_for_status()
    volume_id = r.json()['volume']['id']
    takeover.util.wait_for(lambda: session.get(
        base + '/volumes/%s' % volume_id).json()['volume']['status']
        == 'available', 60, what='volume %s' % volume_id)
    return volume_id


def _stream(dev):
    writes, stop = [], threading.Event()

    def run():
        n = 0
        while not stop.is_set():
            n += 1
            begin = time.monotonic()
            try:
                dev.write((n % 256) * len(CHUNK), CHUNK)
                ok = True
            except Exception:
                ok = False
            writes.append((begin, time.monotonic(), ok))
            if not ok:
                return
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    while len(writes) < 3:
        time.sleep(0.001)
    return writes, stop, thread


def run(deployment, protocol, backend_name, rounds):
    url = deployment.url
    session = takeover._api(url)
    volume_id = _volume(session, url, backend_name)
    base = url + '/v3/%s/os-host-fences/bench-a/action' % PROJECT
    a = takeover._host(url, 'a', '127.0.0.2')
    b = takeover._host(url, 'b', '127.0.0.3')
    b_att, b_dev = b.attach_device(volume_id)
    fence, drained, unfence, in_flight, late = [], [], [], [], 0
    for _ in range(rounds):
        att, dev = a.attach_device(volume_id)
        writes, stop, thread = _stream(dev)
        t0 = time.monotonic()
        r = session.post(base, json={'os-fence': {
            'volume_id': volume_id, 'reason': 'bench'}})
        t1 = time.monotonic()
        r.raise_for_status()
        thread.join(30)
        stop.set()
        assert writes[-1][2] is False, 'A still writes after the fence'
        late += sum(1 for w in writes if w[2] and w[1] > t1)
        in_flight.append(sum(1 for w in writes if w[0] < t0 < w[1]))
        fence.append(t1 - t0)
        drained.append(r.json()['host_fence']['volumes'][0][
            'drained_ms'] / 1000.0)
        t2 = time.monotonic()
        session.post(base, json={'os-unfence': {
            'volume_id': volume_id}}).raise_for_status()
        unfence.append(time.monotonic() - t2)
        dev.close()
        a.detach(att['id'])
        b_dev.write(0, CHUNK)
    b.detach(b_att['id'], b_dev)
    return {'protocol': protocol, 'fence': fence, 'drained': drained,
            'unfence': unfence, 'in_flight': statistics.mean(in_flight),
            'late': late}


def pct(values, p):
    values = sorted(values)
    index = min(len(values) - 1, int(round((len(values) - 1) * p / 100.0)))
    return '%.1f' % (values[index] * 1000.0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=50)
    parser.add_argument('--modes', default='embedded,distributed')
    parser.add_argument('--db', default='postgresql',
                        choices=('postgresql', 'mysql'))
    args = parser.parse_args(argv)
    for program in ('nbdkit', 'tgtd'):
        if shutil.which(program) is None:
            sys.exit('%s is not installed' % program)
    for mode in args.modes.split(','):
        if mode == 'embedded':
            deployment = takeover.Embedded().start()
            backends = (('nbd', 'nbd'), ('iscsi', 'iscsi'))
        else:
            deployment = takeover.Distributed(args.db).start()
            backends = (('nbd', 'ma'), ('iscsi', 'mi'))
            mode = 'distributed (%s)' % args.db
        try:
            results = [run(deployment, protocol, name, args.rounds)
                       for protocol, name in backends]
        finally:
            deployment.stop()
        print()
        print('%s: host fence request -> cut and drained (ms, p50 / p99 '
              'over %d rounds)' % (mode, args.rounds))
        rows = [[r['protocol']] + ['%s / %s' % (pct(r[k], 50),
                                                pct(r[k], 99))
                                   for k in ('fence', 'drained',
                                             'unfence')]
                + ['%.1f' % r['in_flight'], str(r['late'])]
                for r in results]
        vc.print_table(['protocol', 'fence', 'drained', 'unfence',
                        'in flight', 'late'], rows)


if __name__ == '__main__':
    main()
