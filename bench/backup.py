#!/usr/bin/env python
"""Backup and restore through the API with the POSIX store, next to the
floor measured in the same run on the same filesystem.

For each compression (``--compressions``, default ``none,zlib``) the
embedded stack of the functional tests (SQLite, in-process bus, the file
backend, a backup service with its store under ``--dir``) is started,
and a volume of ``--size`` GiB gets ``--fill`` GiB of data (random 64
MiB chunks spread over it: data that does not compress, the worst case
for time and space).  Then, timed from the request until the API shows
the result ``available``:

* full: ``POST /backups``;
* incremental after ``--changes`` (default 10 and 1) per cent of the
  data was rewritten: ``POST /backups`` with ``incremental``;
* restore: ``POST /backups/{id}/restore`` of the last incremental into a
  new volume (the whole chain is read);

and the floor, the least any copy of the same data costs here:

* ``cp --sparse=always`` of the volume's file into the store's
  filesystem, synced (what a backup of the data without hashing,
  compressing or any API would cost), and the copy back;
* the compressor alone over the data in memory (one core), for the
  compressed runs: no backup can beat it on one thread.

``--drivers posix,ceph`` runs the same with the Ceph store on a
single-node cluster the bench starts, the volume on the RBD backend of
the same cluster: the differential path (each backup an RBD snapshot of
the volume's backup image, an incremental written from librbd's diff of
the volume, doc/source/rbd.rst), uncompressed whatever ``--compressions`` says.
Its floor is what Ceph's own tools do with the same change, measured in
the same run: ``rbd export-diff [--from-snap A] vol@B - | rbd
import-diff - image`` into an image of the backup pool, and back into a
new image for the restore.  Its incremental rows' MiB/s are of the data
changed (nothing else is read); Ceph's CPU is its daemons' and is not in
the table.

MiB/s are of the data (``--fill``), not of the volume's size: holes are
skipped; a chunked incremental backup reads and hashes all of it again,
so its rate is of all of it too.  CPU is the process's (API, volume and
backup services are one process here) during the operation, in ms per
GiB of data.

    .venv/bin/python bench/backup.py --size 1 --fill 0.5
    .venv/bin/python bench/backup.py --size 4 --fill 1 --compressions zlib
"""
import argparse
import bz2
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

from tests.harness import backups as bk  # noqa: E402
from tests.harness import ceph as ceph_mod  # noqa: E402
from tests.harness import stack as stack_mod  # noqa: E402

GiB = 1024 ** 3
MiB = 1024 ** 2
CHUNK = 64 * MiB
CEPH_DRIVER = 'cinder_lite.backup.drivers.ceph.CephBackupDriver'


def chunk_offsets(size_gib, fill_gib):
    chunks = max(1, int(fill_gib * GiB // CHUNK))
    stride = size_gib * GiB // chunks
    return [i * stride for i in range(chunks)]


def write_chunks(path, offsets):
    data = os.urandom(CHUNK)
    with open(path, 'r+b') as f:
        for offset in offsets:
            f.seek(offset)
            f.write(data)
        f.flush()
        os.fsync(f.fileno())


def rewrite(path, offsets, percent):
    """Rewrite ``percent`` per cent of the data: whole 1 MiB pieces of
    the chunks, spread, with fresh random bytes."""
    pieces = [o + i * MiB for o in offsets for i in range(CHUNK // MiB)]
    chosen = random.Random(percent).sample(
        pieces, max(1, len(pieces) * percent // 100))
    with open(path, 'r+b') as f:
        for offset in sorted(chosen):
            f.seek(offset)
            f.write(os.urandom(MiB))
        f.flush()
        os.fsync(f.fileno())


def measured(fn):
    """(seconds, CPU seconds of this process) of ``fn()``."""
    cpu = time.process_time()
    started = time.monotonic()
    fn()
    return time.monotonic() - started, time.process_time() - cpu


def children_cpu():
    t = os.times()
    return t.children_user + t.children_system


def cp(src, dst):
    subprocess.run(['cp', '--sparse=always', src, dst], check=True)
    with open(dst, 'rb') as f:
        os.fsync(f.fileno())


def compressor(name):
    if name == 'zlib':
        return lambda b: zlib.compress(b, 6)
    if name == 'bz2':
        return bz2.compress
    if name == 'zstd':
        import zstandard
        return zstandard.ZstdCompressor().compress
    return None


def run(workdir, size, fill, compression, changes, driver='posix',
        ceph=None):
    state = os.path.join(workdir, 'state-%s-%s' % (driver, compression))
    extra = {'backup_compression_algorithm': compression}
    if driver == 'ceph':
        return run_rbd(state, size, fill, changes, ceph)
    s = stack_mod.Stack(state, extra=extra).start()
    rows = []
    try:
        api = s.client()
        api.put('/os-quota-sets/%s' % api.project, json={'quota_set': {
            'gigabytes': -1, 'backup_gigabytes': -1, 'backups': -1,
            'volumes': -1}})
        vol = api.create_volume(size=size)
        path = os.path.join(s.state_path, 'volumes', 'file',
                            'volume-%s' % vol['id'])
        offsets = chunk_offsets(size, fill)
        write_chunks(path, offsets)
        data_gib = len(offsets) * CHUNK / GiB
        made = []

        def backup(**extra):
            made.append(bk.backup(api, vol['id'], **extra)['id'])
        t, c = measured(backup)
        rows.append(('full', t, c, data_gib))
        for percent in changes:
            rewrite(path, offsets, percent)
            t, c = measured(lambda: backup(incremental=True))
            # (all the data is read and hashed again: the rate is of it)
            rows.append(('incremental %d %%' % percent, t, c, data_gib))
        t, c = measured(lambda: bk.restored(api, made[-1]))
        rows.append(('restore', t, c, data_gib))
        # the floor: the same file copied into the store's filesystem
        # and back, then the compressor alone
        floor_dir = os.path.join(s.state_path, 'backup', 'floor')
        os.makedirs(floor_dir, exist_ok=True)
        copy = os.path.join(floor_dir, 'copy')
        back = os.path.join(workdir, 'back')
        before = children_cpu()
        t, _ = measured(lambda: cp(path, copy))
        rows.append(('floor: cp to the store', t, children_cpu() - before,
                     data_gib))
        before = children_cpu()
        t, _ = measured(lambda: cp(copy, back))
        rows.append(('floor: cp back', t, children_cpu() - before,
                     data_gib))
        os.unlink(copy)
        os.unlink(back)
        squeeze = compressor(compression)
        if squeeze is not None:
            block = os.urandom(CHUNK)

            def compress_all():
                for _ in offsets:
                    squeeze(block)
            t, c = measured(compress_all)
            rows.append(('floor: %s alone' % compression, t, c, data_gib))
    finally:
        s.stop()
    return rows


class RbdVolume:
    """The bench's own access to an RBD volume as client.admin."""

    def __init__(self, ceph, name):
        from cinder_lite.volume.drivers import rbd as rbd_driver
        self.rbd = rbd_driver.rbd_module()
        self.client, self.ioctx = ceph.admin()
        self.name = name

    def write_chunks(self, offsets):
        data = os.urandom(CHUNK)
        with self.rbd.Image(self.ioctx, self.name) as image:
            for offset in offsets:
                for at in range(0, CHUNK, 4 * MiB):
                    image.write(data[at:at + 4 * MiB], offset + at)
            image.flush()

    def rewrite(self, offsets, percent):
        """As ``rewrite``: ``percent`` per cent of the data in 1 MiB
        pieces; the bytes changed."""
        pieces = [o + i * MiB for o in offsets for i in range(CHUNK // MiB)]
        chosen = random.Random(percent).sample(
            pieces, max(1, len(pieces) * percent // 100))
        with self.rbd.Image(self.ioctx, self.name) as image:
            for offset in sorted(chosen):
                image.write(os.urandom(MiB), offset)
            image.flush()
        return len(chosen) * MiB

    def snap(self, name):
        with self.rbd.Image(self.ioctx, self.name) as image:
            image.create_snap(name)

    def close(self):
        self.ioctx.close()
        self.client.shutdown()


def diff_pipe(ceph, source, target, from_snap=None):
    """``rbd export-diff [--from-snap] source - | rbd import-diff -
    target`` (pool/image[@snap] names) as client.admin: seconds, CPU
    seconds of both."""
    tool = ['rbd', '--conf', ceph.conf, '--keyring', ceph.admin_keyring]
    export = tool + ['export-diff', '--no-progress'] + (
        ['--from-snap', from_snap] if from_snap else []) + [source, '-']
    before = children_cpu()
    started = time.monotonic()
    out = subprocess.Popen(export, stdout=subprocess.PIPE)
    subprocess.run(tool + ['import-diff', '--no-progress', '-', target],
                   stdin=out.stdout, check=True)
    out.stdout.close()
    if out.wait() != 0:
        raise RuntimeError('rbd export-diff %s failed' % source)
    return time.monotonic() - started, children_cpu() - before


def run_rbd(state, size, fill, changes, ceph):
    """The Ceph rows: a volume on RBD, differential backups, and
    export-diff | import-diff of the same change."""
    conf_path, _keyring = ceph.cluster.make_backup_user()
    s = stack_mod.Stack(state, backends={'rbd': ceph.backend()}, extra={
        'backup_driver': CEPH_DRIVER, 'backup_ceph_conf': conf_path,
        'backup_ceph_user': ceph_mod.BACKUP_USER,
        'backup_ceph_pool': ceph_mod.BACKUP_POOL}).start()
    rows = []
    vol = None
    try:
        api = s.client()
        api.put('/os-quota-sets/%s' % api.project, json={'quota_set': {
            'gigabytes': -1, 'backup_gigabytes': -1, 'backups': -1,
            'volumes': -1}})
        vol = api.create_volume(size=size)
        name = 'volume-%s' % vol['id']
        source = '%s/%s' % (ceph.pool, name)
        floor = '%s/floor-%s' % (ceph_mod.BACKUP_POOL, vol['id'])
        ceph.rbd('create', '--size', '%dG' % size, '--image-feature',
                 'layering', floor)
        image = RbdVolume(ceph, name)
        offsets = chunk_offsets(size, fill)
        image.write_chunks(offsets)
        data_gib = len(offsets) * CHUNK / GiB
        made = []

        def backup(**extra):
            made.append(bk.backup(api, vol['id'], **extra)['id'])
        image.snap('floor-0')
        t, c = measured(backup)
        rows.append(('full', t, c, data_gib))
        t, c = diff_pipe(ceph, source + '@floor-0', floor)
        # (import-diff makes the diff's end snapshot on the target)
        rows.append(('floor: export|import-diff', t, c, data_gib))
        last = 'floor-0'
        for percent in changes:
            changed = image.rewrite(offsets, percent) / GiB
            snap = 'floor-%d' % percent
            image.snap(snap)
            t, c = measured(lambda: backup(incremental=True))
            rows.append(('incremental %d %%' % percent, t, c, changed))
            t, c = diff_pipe(ceph, '%s@%s' % (source, snap), floor,
                             from_snap=last)
            rows.append(('floor: %d %% diff' % percent, t, c, changed))
            last = snap
        t, c = measured(lambda: bk.restored(api, made[-1]))
        rows.append(('restore', t, c, data_gib))
        back = '%s/floor-back-%s' % (ceph.pool, vol['id'])
        ceph.rbd('create', '--size', '%dG' % size, '--image-feature',
                 'layering', back)
        t, c = diff_pipe(ceph, '%s@%s' % (floor, last), back)
        rows.append(('floor: restore', t, c, data_gib))
        image.close()
        for done in (back, floor):
            ceph.rbd('snap', 'purge', '--no-progress', done)
            ceph.rbd('rm', '--no-progress', done)
    finally:
        s.stop()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--size', type=int, default=1, help='volume GiB')
    ap.add_argument('--fill', type=float, default=0.5,
                    help='GiB of data written into it')
    ap.add_argument('--compressions', default='none,zlib')
    ap.add_argument('--drivers', default='posix',
                    help='posix, ceph (a single-node Ceph cluster of the '
                         'run, its backup pool on the same disk)')
    ap.add_argument('--changes', default='10,1',
                    help='per cent of the data rewritten before each '
                         'incremental backup')
    ap.add_argument('--dir', default=None,
                    help='work directory (default: a temporary one in '
                         '/var/tmp)')
    args = ap.parse_args()
    workdir = args.dir or tempfile.mkdtemp(prefix='cl-bench-backup-',
                                           dir='/var/tmp')
    changes = [int(c) for c in args.changes.split(',') if c]
    drivers = [d for d in args.drivers.split(',') if d]
    for d in drivers:
        if d not in ('posix', 'ceph'):
            ap.error('unknown driver %r (posix, ceph)' % d)
    ceph = None
    try:
        if 'ceph' in drivers:
            from bench import ceph_cluster
            ceph = ceph_cluster.Cluster()
        print('volume %d GiB, data %.2f GiB; one run, this machine'
              % (args.size, args.fill))
        print('%-6s %-11s %-24s %9s %9s %11s' % (
            'driver', 'compression', 'operation', 'seconds', 'MiB/s',
            'CPU ms/GiB'))
        for driver in drivers:
            # (the differential path compresses nothing)
            for compression in (['none'] if driver == 'ceph' else
                                args.compressions.split(',')):
                for name, t, c, gib in run(workdir, args.size, args.fill,
                                           compression, changes, driver,
                                           ceph):
                    print('%-6s %-11s %-24s %9.2f %9.0f %11.0f' % (
                        driver, compression, name, t,
                        gib * 1024 / t if t else 0,
                        c * 1000 / gib if gib else 0))
                sys.stdout.flush()
    finally:
        if ceph is not None:
            ceph.stop()
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    main()
