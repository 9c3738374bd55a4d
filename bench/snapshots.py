#!/usr/bin/env python
"""Snapshot and volume-from-snapshot latency of the file driver, next to
the floor: ``cp --reflink=auto`` and ``cp --sparse=always`` of the same
file, measured in the same run on the same filesystem.

For each size (GiB) a volume is made and ``--fill`` GiB of it written
(random 64 MiB blocks, spread over the volume), then timed:

* snapshot: POST /snapshots until GET shows ``available``;
* from snapshot: POST /volumes with ``snapshot_id`` until ``available``;
* the floor: the two ``cp`` of the volume's file.

The stack is the embedded one of the functional tests (SQLite, in-process
bus) under ``--dir`` (default: a temporary directory on the filesystem
of /var/tmp, where the volumes' files live).

    .venv/bin/python bench/snapshots.py --sizes 1,10 --fill 1
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

from tests.harness import stack as stack_mod  # noqa: E402
from tests.harness import util  # noqa: E402

GiB = 1024 ** 3
CHUNK = 64 * 1024 ** 2


def fill(path, size_gib, fill_gib):
    """Write ``fill_gib`` GiB of random chunks spread over the file."""
    chunks = int(fill_gib * GiB // CHUNK)
    stride = size_gib * GiB // max(chunks, 1)
    data = os.urandom(CHUNK)
    with open(path, 'r+b') as f:
        for i in range(chunks):
            f.seek(i * stride)
            f.write(data)
        f.flush()
        os.fsync(f.fileno())


def timed(fn):
    started = time.monotonic()
    fn()
    return time.monotonic() - started


def wait(api, path, key, status='available'):
    def check():
        body = api.get(path).json()[key]
        assert not body['status'].startswith('error'), body
        return body['status'] == status
    util.wait_for(check, timeout=3600, interval=0.05, what=path)


def cp(args, src, dst):
    subprocess.run(['cp'] + args + [src, dst], check=True)
    with open(dst, 'rb') as f:
        os.fsync(f.fileno())


def run(workdir, sizes, fill_gib):
    s = stack_mod.Stack(os.path.join(workdir, 'state')).start()
    rows = []
    try:
        api = s.client()
        api.put('/os-quota-sets/%s' % api.project, json={'quota_set': {
            'gigabytes': -1}})
        for size in sizes:
            vol = api.create_volume(size=size)
            path = os.path.join(s.state_path, 'volumes', 'file',
                                'volume-%s' % vol['id'])
            fill(path, size, min(fill_gib, size))
            sid = []

            def snap():
                resp = api.post('/snapshots', json={'snapshot': {
                    'volume_id': vol['id']}})
                sid.append(resp.json()['snapshot']['id'])
                wait(api, '/snapshots/%s' % sid[0], 'snapshot')
            t_snap = timed(snap)
            new = []

            def from_snap():
                resp = api.post('/volumes', json={'volume': {
                    'snapshot_id': sid[0]}})
                new.append(resp.json()['volume']['id'])
                wait(api, '/volumes/%s' % new[0], 'volume')
            t_from = timed(from_snap)
            floors = {}
            for name, args in (('reflink', ['--reflink=auto']),
                               ('sparse', ['--sparse=always'])):
                dst = os.path.join(workdir, 'floor-%s' % name)
                floors[name] = timed(lambda: cp(args, path, dst))
                os.unlink(dst)
            rows.append((size, min(fill_gib, size), t_snap, t_from,
                         floors['reflink'], floors['sparse']))
            api.delete('/volumes/%s' % new[0])
            api.delete('/snapshots/%s' % sid[0])
            util.wait_for(lambda: api.get('/snapshots/%s' % sid[0])
                          .status_code == 404, timeout=600)
            api.delete('/volumes/%s' % vol['id'])
            api.wait_deleted(vol['id'])
    finally:
        s.stop()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--sizes', default='1,10')
    parser.add_argument('--fill', type=float, default=1.0,
                        help='GiB of data written into each volume')
    parser.add_argument('--dir', default=None)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix='cl-snap-bench-',
                               dir=args.dir or '/var/tmp')
    try:
        fs = subprocess.run(['df', '--output=fstype', workdir],
                            capture_output=True, text=True).stdout.split()
        rows = run(workdir, [int(x) for x in args.sizes.split(',')],
                   args.fill)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print('filesystem: %s' % (fs[-1] if fs else '?'))
    print('%8s %8s %12s %14s %14s %14s' % (
        'GiB', 'data', 'snapshot s', 'from snap s', 'cp reflink s',
        'cp sparse s'))
    for row in rows:
        print('%8d %8.1f %12.3f %14.3f %14.3f %14.3f' % row)


if __name__ == '__main__':
    main()
