#!/usr/bin/env python
"""Data-path throughput and attach latency, next to the file itself in the
same run.

* sequential 1 MiB writes (then a flush) and reads of ``--mib`` MiB,
  after an untimed pass that allocates the blocks:
  straight to the volume's file (the floor), through a ``local``
  attachment, through an NBD attachment (nbdkit + cinder_lite's
  pure-Python client) and through an iSCSI attachment (tgt +
  cinder_lite's userspace initiator) — client and server share this
  machine's cores;
* attach latency: from ``POST /attachments`` with a connector until the
  first 4 KiB block has been read through the returned connection_info,
  p50/p95 over ``--attaches`` rounds (each round detaches again).

It runs the embedded stack in this process (SQLite, in-process bus) with
three file backends, ``local``, ``nbd`` and ``iscsi`` (``--paths`` picks
among them).

``--paths ...,rbd`` adds a backend on the RBD driver, on a single-node
Ceph cluster the bench starts for the run and stops at its end
(tests/harness/ceph.py): its attachment is cinder_lite's librbd device
(connector.devices.RbdDevice, the attachment's own cephx key), measured
as the others at 1 MiB, then at 4 MiB and with 4 KiB random I/O
(synchronous, one at a time: IOPS for ``--iops-seconds``), next to
``rbd bench`` as client.admin on the same image after the detach (the
floor: 4 MiB sequential and 4 KiB random, one I/O in flight and 16).

    /tmp/venv/bin/python bench/datapath.py --mib 256 --attaches 20
    .venv/bin/python bench/datapath.py --paths local,rbd --mib 256

``--real-clients`` adds, for the ``nbd`` and ``iscsi`` paths, the clients
a cloud uses (QEMU's nbd and iscsi drivers through ``qemu-io`` and
``qemu-img bench``, and ``nbdcopy``) on an attachment made through the
API, with its TLS key or CHAP account, and on a twin of its export
without them, each next to the same client on the volume's file
(bench/real_clients.py says how each is driven and timed):

    .venv/bin/python bench/datapath.py --paths nbd,iscsi --attaches 0 \
        --real-clients --mib 64 --iops-seconds 2
"""
import argparse
import glob
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from cinder_lite.connector import devices  # noqa: E402
from cinder_lite.connector import host as host_connector  # noqa: E402
from bench import real_clients  # noqa: E402
from tests.harness import stack as stack_mod  # noqa: E402

MiB = 1024 * 1024


def throughput(dev, mib, io=MiB, first_pass=True):
    block = os.urandom(io)
    n = mib * MiB // io
    # untimed first pass: every path then overwrites allocated blocks
    # instead of the first one paying for the sparse file's allocation
    if first_pass:
        for i in range(n):
            dev.write(i * io, block)
        dev.flush()
    t0 = time.perf_counter()
    for i in range(n):
        dev.write(i * io, block)
    dev.flush()
    write_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(n):
        if len(dev.read(i * io, io)) != io:
            raise RuntimeError('short read')
    read_s = time.perf_counter() - t0
    return mib / write_s, mib / read_s


def iops(dev, mib, seconds, io=4096):
    """4 KiB random writes then reads within the first ``mib`` MiB, one
    at a time, for ``seconds`` each: (write IOPS, read IOPS)."""
    import random
    rng = random.Random(45)
    block = os.urandom(io)
    slots = mib * MiB // io
    out = []
    for op in ('write', 'read'):
        done = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            offset = rng.randrange(slots) * io
            if op == 'write':
                dev.write(offset, block)
            elif len(dev.read(offset, io)) != io:
                raise RuntimeError('short read')
            done += 1
        if op == 'write':
            dev.flush()
        out.append(done / (time.perf_counter() - t0))
    return tuple(out)


def rbd_bench(cluster, image, io_type, io_size, threads, total, pattern):
    """``rbd bench`` as client.admin: (MiB/s, IOPS) from its summary."""
    out = cluster.rbd('bench', '--io-type', io_type, '--io-size', io_size,
                      '--io-threads', str(threads), '--io-total', total,
                      '--io-pattern', pattern,
                      '%s/%s' % (cluster.pool, image))
    # "elapsed: 2   ops: 64   ops/sec: 29.7   bytes/sec: 119 MiB/s"
    last = [line for line in out.splitlines() if 'ops/sec' in line][-1]
    words = last.replace(':', ' ').split()
    ops_s = float(words[words.index('ops/sec') + 1])
    return ops_s * parse_size(io_size) / MiB, ops_s


def parse_size(text):
    units = {'K': 1024, 'M': MiB}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units \
        else int(text)


class FileDevice:
    """The floor: the volume's file, opened directly."""

    def __init__(self, path):
        self._fd = os.open(path, os.O_RDWR)

    def write(self, offset, data):
        os.pwrite(self._fd, data, offset)

    def read(self, offset, length):
        return os.pread(self._fd, length, offset)

    def flush(self):
        os.fsync(self._fd)

    def close(self):
        os.close(self._fd)


def attach(api, volume_id, connector):
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': volume_id, 'instance_uuid': str(uuid.uuid4()),
        'connector': connector}})
    if resp.status_code != 200:
        raise RuntimeError(resp.text)
    return resp.json()['attachment']


def open_device(attachment, connector):
    return devices.connect(attachment['connection_info'],
                           source_address=connector['ip'],
                           initiator=connector['initiator'])


PATHS = ('local', 'nbd', 'iscsi', 'rbd')
ISCSI_PORT = 23260
ADDRESSES = {'local': '127.0.0.2', 'nbd': '127.0.0.3', 'iscsi': '127.0.0.4',
             'rbd': '127.0.0.5'}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--mib', type=int, default=256)
    parser.add_argument('--attaches', type=int, default=20)
    parser.add_argument('--paths', default='local,nbd,iscsi',
                        help='comma separated: local (with the file floor), '
                             'nbd, iscsi, rbd (a Ceph cluster of its own)')
    parser.add_argument('--iops-seconds', type=float, default=5.0,
                        help='rbd and --real-clients: seconds of each 4 KiB '
                             'random pass')
    parser.add_argument('--real-clients', action='store_true',
                        help='also qemu-io, qemu-img bench and nbdcopy on '
                             'the nbd and iscsi paths, next to the same '
                             'client on the file')
    parser.add_argument('--clients', default='qemu-io,qemu-img,nbdcopy',
                        help='--real-clients: which of qemu-io, qemu-img, '
                             'nbdcopy')
    parser.add_argument('--knobs', default='',
                        help='--real-clients: comma separated target '
                             'options tried on the twins without '
                             'credentials, with qemu-img bench: '
                             'nbdkit options (--threads=4) and file plugin '
                             'parameters (cache=none, fadvise=sequential) '
                             'as nbd:OPTION, tgt ones as iscsi:--bstype=aio '
                             'or iscsi:nr_iothreads=N (a tgtd of its own)')
    parser.add_argument('--iscsi-port', type=int, default=ISCSI_PORT,
                        help='the iscsi backend\'s portal port (its tgtd\'s '
                             'control port is this modulo 32768)')
    parser.add_argument('--work-dir', help='make the run\'s state '
                        'directory under this one (default: the temporary '
                        'directory)')
    parser.add_argument('--json', help='write the figures here')
    args = parser.parse_args()
    paths = [x.strip() for x in args.paths.split(',') if x.strip()]
    for x in paths:
        if x not in PATHS:
            parser.error('unknown path %r (one of %s)' % (x, ', '.join(PATHS)))
    clients = [x.strip() for x in args.clients.split(',') if x.strip()]
    for x in clients:
        if x not in CLIENTS:
            parser.error('unknown client %r (one of %s)' % (
                x, ', '.join(CLIENTS)))
    if args.real_clients:
        real_clients.need('qemu-io', 'qemu-img', 'nbdcopy', 'stdbuf')
    for program, package, path in (('nbdkit', 'nbdkit', 'nbd'),
                                   ('tgtd', 'tgt', 'iscsi')):
        if path in paths and shutil.which(program) is None:
            sys.exit('%s is not installed (apt-get install %s)'
                     % (program, package))
    logging.disable(logging.WARNING)
    cluster = None
    if 'rbd' in paths:
        from bench import ceph_cluster
        cluster = ceph_cluster.Cluster()
    work = tempfile.mkdtemp(prefix='cinder-lite-datapath-',
                            dir=args.work_dir)
    sections = {
        'local': {'target_protocol': 'local'},
        'nbd': {'target_protocol': 'nbd',
                'target_port_range': '20809-20899'},
        'iscsi': {'target_protocol': 'iscsi', 'target_port': args.iscsi_port,
                  'target_control_port': args.iscsi_port % 32768},
        'rbd': cluster.backend() if cluster else None}
    rows, rbd_rows = [], []
    real = {'rows': [], 'floors': {}}
    try:
        stack = stack_mod.Stack(os.path.join(work, 'state'), backends={
            b: sections[b] for b in PATHS if b in paths}).start()
        try:
            latencies = run(stack, paths, args, cluster, rows, rbd_rows)
            if args.real_clients:
                run_real_clients(stack, paths, clients, args, work, real)
        finally:
            stack.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if cluster is not None:
            cluster.stop()

    print('sequential 1 MiB I/O, %d MiB, same run (MiB/s):' % args.mib)
    print('%-18s | %9s | %9s' % ('path', 'write', 'read'))
    print('-' * 19 + '+' + '-' * 11 + '+' + '-' * 10)
    for name, write, read in rows:
        print('%-18s | %9.0f | %9.0f' % (name, write, read))
    print()
    print('attachment create -> first 4 KiB read (ms, %d rounds):'
          % args.attaches)
    for backend, samples in latencies.items():
        if not samples:
            continue
        samples.sort()
        p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
        print('%-18s | p50 %7.1f | p95 %7.1f' % (
            backend, statistics.median(samples) * 1000, p95 * 1000))
    if rbd_rows:
        print()
        print('RBD, same image, same run: cinder_lite\'s librbd device '
              '(synchronous, one I/O at a time) and rbd bench as '
              'client.admin (the floor)')
        print('%-34s | %11s | %11s | %11s | %11s' % (
            'path', 'write MiB/s', 'read MiB/s', 'write IOPS', 'read IOPS'))
        print('-' * 35 + ('+' + '-' * 13) * 4)
        for name, w, r, wi, ri in rbd_rows:
            print('%-34s | %11s | %11s | %11s | %11s' % (
                name, fmt(w), fmt(r), fmt(wi), fmt(ri)))
    if real['rows']:
        print()
        real_clients.print_table(real['rows'], real['floors'], args.mib,
                                 args.iops_seconds)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'mib': args.mib, 'rows': rows,
                       'real_clients': {
                           'rows': [[c, n, _keyed(v)]
                                    for c, n, v in real['rows']],
                           'floors': {c: _keyed(v) for c, v in
                                      real['floors'].items()}}}, f,
                      indent=1)


def _keyed(figures):
    return {real_clients.label(*k): v for k, v in figures.items()}


def fmt(x):
    return '-' if x is None else '%.0f' % x


def run(stack, paths, args, cluster, rows, rbd_rows):
    api = stack.client()
    size_gib = max(1, -(-args.mib // 1024))
    backends = [(b, ADDRESSES[b]) for b in PATHS if b in paths]
    for backend, _ in backends:
        api.create_type(backend, {'volume_backend_name': backend})
    volumes = {b: api.create_volume(size=size_gib, volume_type=b)
               for b, _ in backends}
    if 'local' in volumes:
        path = os.path.join(stack.state_path, 'volumes', 'local',
                            'volume-%s' % volumes['local']['id'])
        dev = FileDevice(path)
        rows.append(('file (floor)',) + throughput(dev, args.mib))
        dev.close()
    latencies = {}
    for backend, address in backends:
        connector = host_connector.get_connector(
            host='bench-' + backend, ip=address)
        att = attach(api, volumes[backend]['id'], connector)
        dev = open_device(att, connector)
        rows.append(('%s attachment' % backend,) +
                    throughput(dev, args.mib))
        if backend == 'rbd':
            rbd_rows.append(('librbd device, 1 MiB seq',) + rows[-1][1:] +
                            (None, None))
            rbd_rows.append(('librbd device, 4 MiB seq',) +
                            throughput(dev, args.mib, io=4 * MiB,
                                       first_pass=False) + (None, None))
            rbd_rows.append(('librbd device, 4 KiB rand',
                             None, None) + iops(dev, args.mib,
                                                args.iops_seconds))
        dev.close()
        api.delete('/attachments/%s' % att['id'])
        samples = []
        for _ in range(args.attaches):
            t0 = time.perf_counter()
            att = attach(api, volumes[backend]['id'], connector)
            dev = open_device(att, connector)
            dev.read(0, 4096)
            samples.append(time.perf_counter() - t0)
            dev.close()
            api.delete('/attachments/%s' % att['id'])
        latencies[backend] = samples
    if cluster is not None:
        api.wait_volume(volumes['rbd']['id'], 'available')
        image = 'volume-%s' % volumes['rbd']['id']
        total = '%dM' % args.mib
        # 4 KiB random: as many I/Os as the device's write pass made,
        # at most 16 MiB
        small = '%dK' % (4 * min(4096, max(256, int(
            rbd_rows[-1][3] * args.iops_seconds))))
        for threads in (1, 16):
            w = rbd_bench(cluster, image, 'write', '4M', threads, total,
                          'seq')
            r = rbd_bench(cluster, image, 'read', '4M', threads, total,
                          'seq')
            rbd_rows.append(('rbd bench 4 MiB seq, %d in flight' % threads,
                             w[0], r[0], None, None))
        for threads in (1, 16):
            w = rbd_bench(cluster, image, 'write', '4K', threads, small,
                          'rand')
            r = rbd_bench(cluster, image, 'read', '4K', threads, small,
                          'rand')
            rbd_rows.append(('rbd bench 4 KiB rand, %d in flight' % threads,
                             None, None, w[1], r[1]))
    return latencies


CLIENTS = ('qemu-io', 'qemu-img', 'nbdcopy')


def volume_file(stack, backend, volume_id):
    return os.path.join(stack.state_path, 'volumes', backend,
                        'volume-%s' % volume_id)


def export_record(stack, backend, attachment_id):
    found = glob.glob(os.path.join(stack.state_path, 'targets', backend, '*',
                                   '%s.json' % attachment_id))
    if len(found) != 1:
        raise RuntimeError('no export record of attachment %s'
                           % attachment_id)
    with open(found[0]) as f:
        return json.load(f)


def run_real_clients(stack, paths, clients, args, work, real):
    """qemu-io, qemu-img bench and nbdcopy on the file (the floor), on
    the attachment's export as the driver made it and on a twin of it
    without credentials; then the knobs on twins."""
    api = stack.client()
    mib = args.mib
    knobs = [k.strip() for k in args.knobs.split(',') if k.strip()]
    floors, rows = real['floors'], real['rows']
    source = os.path.join(work, 'random.img')
    with open(source, 'wb') as f:
        for _ in range(mib):
            f.write(os.urandom(MiB))
    fill = ['write -q %d 1M' % (i * MiB) for i in range(mib)] + ['flush']

    def measure(client, path):
        return real_clients.measure(client, path, mib, args.iops_seconds,
                                    source, floor_target)

    def bench_rows(client_list, path):
        for client in client_list:
            if client in clients:
                rows.append((client, path.name, measure(client, path)))

    backends = [b for b in ('nbd', 'iscsi') if b in paths]
    for backend in backends:
        volume = api.create_volume(size=max(1, -(-mib // 1024)),
                                   volume_type=backend)
        file = volume_file(stack, backend, volume['id'])
        # untimed: the area allocated, as on every path below
        real_clients.qemu_io(real_clients.file_path(file), mib, fill)
        floor_target = os.path.join(os.path.dirname(file), 'nbdcopy.img')
        if not floors:
            shutil.copyfile(source, floor_target)
            floor = real_clients.file_path(file)
            for client in clients:
                floors[client] = measure(client, floor)
        connector = host_connector.get_connector(
            host='bench-real-' + backend, ip=ADDRESSES[backend])
        att = attach(api, volume['id'], connector)
        info = att['connection_info']
        record = export_record(stack, backend, att['id'])
        try:
            if backend == 'nbd':
                bench_rows(['qemu-io', 'nbdcopy'], real_clients.nbd_path(
                    'nbd, TLS-PSK', info, work))
                twin = real_clients.NbdTwin(record['pid'], work)
                try:
                    bench_rows(CLIENTS, real_clients.nbd_path(
                        'nbd, no TLS (twin)', twin.info(info), work,
                        tls=False))
                finally:
                    twin.stop()
                for knob in knobs:
                    if knob.startswith('nbd:'):
                        nbd_knob(knob[4:], record, info, work, clients,
                                 measure, rows)
            else:
                initiator = connector['initiator']
                bench_rows(['qemu-io'], real_clients.iscsi_path(
                    'iscsi, CHAP', info, initiator, work))
                twin = real_clients.IscsiTwin(
                    stack_control_port(args), file, volume['id'])
                try:
                    bench_rows(['qemu-io', 'qemu-img'],
                               real_clients.iscsi_path(
                                   'iscsi, no CHAP (twin)', info, initiator,
                                   work, iqn=twin.iqn, chap=False))
                finally:
                    twin.stop()
                for knob in knobs:
                    if knob.startswith('iscsi:'):
                        iscsi_knob(knob[6:], args, file, volume, info,
                                   initiator, work, clients, measure, rows)
        finally:
            api.delete('/attachments/%s' % att['id'])
        if os.path.exists(floor_target):
            os.unlink(floor_target)


def nbd_knob(knob, record, info, work, clients, measure, rows):
    """A twin without TLS with one nbdkit option (``--threads=4``) or
    file plugin parameter (``cache=none``)."""
    options = [knob] if knob.startswith('-') else []
    params = [] if options else [knob]
    twin = real_clients.NbdTwin(record['pid'], work, options=options,
                                params=params)
    try:
        path = real_clients.nbd_path('nbd, no TLS, %s' % knob,
                                     twin.info(info), work, tls=False)
        for client in ('qemu-img',):
            if client in clients:
                rows.append((client, path.name, measure(client, path)))
    finally:
        twin.stop()


def stack_control_port(args):
    return args.iscsi_port % 32768


def iscsi_knob(knob, args, file, volume, info, initiator, work, clients,
               measure, rows):
    """A twin without CHAP with one tgt option: a backing-store option
    on the driver's tgtd (``--bstype=aio``), or ``nr_iothreads=N``: a
    tgtd of the bench's own started with ``-t N``."""
    daemon = None
    control, portal = stack_control_port(args), None
    bsopts = []
    if knob.startswith('nr_iothreads='):
        daemon, control, portal = real_clients.start_tgtd(
            int(knob.split('=', 1)[1]), work, (control + 11) % 32768)
    else:
        bsopts = knob.split('=', 1)
    try:
        twin = real_clients.IscsiTwin(control, file, volume['id'],
                                      bsopts=bsopts)
        try:
            twin_info = dict(info, target_portal=portal or
                             info['target_portal'])
            path = real_clients.iscsi_path(
                'iscsi, no CHAP, %s' % knob, twin_info, initiator, work,
                iqn=twin.iqn, chap=False)
            for client in ('qemu-img',):
                if client in clients:
                    rows.append((client, path.name, measure(client, path)))
        finally:
            twin.stop()
    finally:
        if daemon is not None:
            real_clients.stop_tgtd(daemon, control)


if __name__ == '__main__':
    main()
