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

``--backends file,rbd`` adds the RBD driver on a single-node Ceph cluster
the bench starts for the run and stops at its end (tests/harness/ceph.py):
the same volume sizes, ``--fill`` GiB written through librbd as
client.admin (the same spread chunks), then snapshot, volume from the
snapshot and clone of the volume (``source_volid``) through the API, all
copy-on-write, next to the floor made with librbd as client.admin on the
same image: snapshot + protect, a clone of it, and a full copy
(``Image.copy``, what a driver without clones would do).  The file
backend then times its clone (``source_volid``) as well, for the table
that sets the two side by side.

    .venv/bin/python bench/snapshots.py --sizes 1,10 --fill 1
    .venv/bin/python bench/snapshots.py --sizes 1 --fill 0.25 \\
        --backends file,rbd
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


def run(workdir, sizes, fill_gib, clones=False):
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
            if clones:
                rows[-1] += (timed(lambda: new.append(clone(api, vol))),)
                api.delete('/volumes/%s' % new[-1])
                api.wait_deleted(new[-1])
            api.delete('/volumes/%s' % new[0])
            api.delete('/snapshots/%s' % sid[0])
            util.wait_for(lambda: api.get('/snapshots/%s' % sid[0])
                          .status_code == 404, timeout=600)
            api.delete('/volumes/%s' % vol['id'])
            api.wait_deleted(vol['id'])
    finally:
        s.stop()
    return rows


def clone(api, vol):
    """POST /volumes with ``source_volid`` until available: its id."""
    resp = api.post('/volumes', json={'volume': {'source_volid': vol['id']}})
    assert resp.status_code == 202, resp.text
    vid = resp.json()['volume']['id']
    wait(api, '/volumes/%s' % vid, 'volume')
    return vid


def fill_rbd(ioctx, name, size_gib, fill_gib):
    """``fill`` for an RBD image: the same chunks through librbd."""
    from cinder_lite.volume.drivers import rbd as rbd_driver
    chunks = int(fill_gib * GiB // CHUNK)
    stride = size_gib * GiB // max(chunks, 1)
    data = os.urandom(CHUNK)
    image = rbd_driver.rbd_module().Image(ioctx, name)
    try:
        for i in range(chunks):
            image.write(data, i * stride)
        image.flush()
    finally:
        image.close()


def rbd_floor(ioctx, name):
    """librbd as admin on image ``name``: seconds of snapshot + protect,
    of a clone of that snapshot, and of a full copy (all removed)."""
    from cinder_lite.volume.drivers import rbd as rbd_driver
    rbd = rbd_driver.rbd_module()
    snap, child, copy = 'bench-floor', 'bench-floor-clone', 'bench-floor-copy'
    image = rbd.Image(ioctx, name)
    try:
        def snapshot():
            image.create_snap(snap)
            image.protect_snap(snap)
        t_snap = timed(snapshot)
        t_clone = timed(lambda: rbd.RBD().clone(
            ioctx, name, snap, ioctx, child,
            features=rbd.RBD_FEATURE_LAYERING))
        t_copy = timed(lambda: image.copy(ioctx, copy))
        rbd.RBD().remove(ioctx, child)
        rbd.RBD().remove(ioctx, copy)
        image.unprotect_snap(snap)
        image.remove_snap(snap)
    finally:
        image.close()
    return t_snap, t_clone, t_copy


def run_rbd(workdir, sizes, fill_gib):
    from bench import ceph_cluster
    cluster = ceph_cluster.Cluster()
    rows = []
    try:
        s = stack_mod.Stack(os.path.join(workdir, 'rbd-state'), backends={
            'rbd': cluster.backend()}).start()
        admin, ioctx = cluster.admin()
        try:
            api = s.client()
            api.put('/os-quota-sets/%s' % api.project, json={'quota_set': {
                'gigabytes': -1}})
            for size in sizes:
                vol = api.create_volume(size=size)
                name = 'volume-%s' % vol['id']
                fill_rbd(ioctx, name, size, min(fill_gib, size))
                sid, made = [], []

                def snap():
                    resp = api.post('/snapshots', json={'snapshot': {
                        'volume_id': vol['id']}})
                    sid.append(resp.json()['snapshot']['id'])
                    wait(api, '/snapshots/%s' % sid[0], 'snapshot')
                t_snap = timed(snap)

                def from_snap():
                    resp = api.post('/volumes', json={'volume': {
                        'snapshot_id': sid[0]}})
                    made.append(resp.json()['volume']['id'])
                    wait(api, '/volumes/%s' % made[-1], 'volume')
                t_from = timed(from_snap)
                t_clone = timed(lambda: made.append(clone(api, vol)))
                floor = rbd_floor(ioctx, name)
                rows.append((size, min(fill_gib, size), t_snap, t_from,
                             t_clone) + floor)
                for vid in made:
                    api.delete('/volumes/%s' % vid)
                    api.wait_deleted(vid)
                api.delete('/snapshots/%s' % sid[0])
                util.wait_for(lambda: api.get('/snapshots/%s' % sid[0])
                              .status_code == 404, timeout=600)
                api.delete('/volumes/%s' % vol['id'])
                api.wait_deleted(vol['id'])
        finally:
            ioctx.close()
            admin.shutdown()
            s.stop()
    finally:
        cluster.stop()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--sizes', default='1,10')
    parser.add_argument('--fill', type=float, default=1.0,
                        help='GiB of data written into each volume')
    parser.add_argument('--dir', default=None)
    parser.add_argument('--backends', default='file',
                        help='comma separated: file, rbd (a Ceph cluster '
                             'of its own)')
    args = parser.parse_args()
    backends = [x.strip() for x in args.backends.split(',') if x.strip()]
    for x in backends:
        if x not in ('file', 'rbd'):
            parser.error('unknown backend %r (file, rbd)' % x)
    sizes = [int(x) for x in args.sizes.split(',')]
    rbd_rows = []
    workdir = tempfile.mkdtemp(prefix='cl-snap-bench-',
                               dir=args.dir or '/var/tmp')
    try:
        fs = subprocess.run(['df', '--output=fstype', workdir],
                            capture_output=True, text=True).stdout.split()
        rows = run(workdir, sizes, args.fill, clones='rbd' in backends) \
            if 'file' in backends else []
        if 'rbd' in backends:
            rbd_rows = run_rbd(workdir, sizes, args.fill)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if rows:
        print('filesystem: %s' % (fs[-1] if fs else '?'))
        print('%8s %8s %12s %14s %14s %14s' % (
            'GiB', 'data', 'snapshot s', 'from snap s', 'cp reflink s',
            'cp sparse s'))
        for row in rows:
            print('%8d %8.1f %12.3f %14.3f %14.3f %14.3f' % row[:6])
    if rbd_rows:
        print()
        print('rbd (single-node Ceph, 1 OSD on a sparse file); floor: '
              'librbd as client.admin on the same image')
        print('%8s %8s %12s %14s %10s %16s %14s %14s' % (
            'GiB', 'data', 'snapshot s', 'from snap s', 'clone s',
            'snap+protect s', 'rbd clone s', 'full copy s'))
        for row in rbd_rows:
            print('%8d %8.1f %12.3f %14.3f %10.3f %16.3f %14.3f %14.3f'
                  % row)
    if rows and rbd_rows:
        print()
        print('side by side (s): snapshot, volume from snapshot, clone of '
              'the volume')
        print('%8s %8s %-6s %12s %14s %10s' % (
            'GiB', 'data', 'driver', 'snapshot s', 'from snap s', 'clone s'))
        for f, r in zip(rows, rbd_rows):
            print('%8d %8.1f %-6s %12.3f %14.3f %10.3f' % (
                f[0], f[1], 'file', f[2], f[3], f[6]))
            print('%8d %8.1f %-6s %12.3f %14.3f %10.3f' % (
                r[0], r[1], 'rbd', r[2], r[3], r[4]))


if __name__ == '__main__':
    main()
