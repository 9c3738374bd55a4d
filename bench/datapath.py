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
three file backends, ``local``, ``nbd`` and ``iscsi``.

    /tmp/venv/bin/python bench/datapath.py --mib 256 --attaches 20
"""
import argparse
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
from tests.harness import stack as stack_mod  # noqa: E402

MiB = 1024 * 1024


def throughput(dev, mib):
    block = os.urandom(MiB)
    # untimed first pass: every path then overwrites allocated blocks
    # instead of the first one paying for the sparse file's allocation
    for i in range(mib):
        dev.write(i * MiB, block)
    dev.flush()
    t0 = time.perf_counter()
    for i in range(mib):
        dev.write(i * MiB, block)
    dev.flush()
    write_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(mib):
        if len(dev.read(i * MiB, MiB)) != MiB:
            raise RuntimeError('short read')
    read_s = time.perf_counter() - t0
    return mib / write_s, mib / read_s


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--mib', type=int, default=256)
    parser.add_argument('--attaches', type=int, default=20)
    args = parser.parse_args()
    for program, package in (('nbdkit', 'nbdkit'), ('tgtd', 'tgt')):
        if shutil.which(program) is None:
            sys.exit('%s is not installed (apt-get install %s)'
                     % (program, package))
    logging.disable(logging.WARNING)
    work = tempfile.mkdtemp(prefix='cinder-lite-datapath-')
    stack = stack_mod.Stack(os.path.join(work, 'state'), backends={
        'local': {'target_protocol': 'local'},
        'nbd': {'target_protocol': 'nbd',
                'target_port_range': '20809-20899'},
        'iscsi': {'target_protocol': 'iscsi', 'target_port': 23260}}
    ).start()
    rows = []
    try:
        api = stack.client()
        size_gib = max(1, -(-args.mib // 1024))
        backends = (('local', '127.0.0.2'), ('nbd', '127.0.0.3'),
                    ('iscsi', '127.0.0.4'))
        for backend, _ in backends:
            api.create_type(backend, {'volume_backend_name': backend})
        volumes = {b: api.create_volume(size=size_gib, volume_type=b)
                   for b, _ in backends}
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
    finally:
        stack.stop()
        shutil.rmtree(work, ignore_errors=True)

    print('sequential 1 MiB I/O, %d MiB, same run (MiB/s):' % args.mib)
    print('%-18s | %9s | %9s' % ('path', 'write', 'read'))
    print('-' * 19 + '+' + '-' * 11 + '+' + '-' * 10)
    for name, write, read in rows:
        print('%-18s | %9.0f | %9.0f' % (name, write, read))
    print()
    print('attachment create -> first 4 KiB read (ms, %d rounds):'
          % args.attaches)
    for backend, samples in latencies.items():
        samples.sort()
        p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
        print('%-18s | p50 %7.1f | p95 %7.1f' % (
            backend, statistics.median(samples) * 1000, p95 * 1000))


if __name__ == '__main__':
    main()
