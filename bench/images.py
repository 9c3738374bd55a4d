#!/usr/bin/env python
"""Volumes from images: latency and MiB/s of POST /volumes with an
imageRef, for a raw and a qcow2 image of the same bytes, next to the
floor measured in the same run on the same filesystem: ``qemu-img
convert -O raw`` of the same image file alone.

The images: a ``--size`` GiB raw file of known bytes (a seeded
pseudo-random 4 MiB block per chunk, ``--fill`` of the disk written in
chunks spread over it, holes between), and the qcow2 of it made here
with ``qemu-img convert -O qcow2`` (it stores only the written chunks).

The image service is the real Glance (glance-api 33 from the OpenStack
virtualenv of ``tools/openstack-venv``, under gunicorn), alone, without
Keystone: tests/harness/glance.py.  The functional tier has no Glance
(its image tests are the ones that need none; the round trips through a
real Glance are tests/integration/test_images.py, with Keystone).
cinder_lite is ``cinder-lite-all`` as a process of its own (SQLite,
in-process bus, the file backend) with ``glance_api_servers`` pointing
at that Glance, so a volume is made the way the product makes it: show
the image, download it (size and hash checked; zeros left as holes)
straight into the volume's file for raw, into the conversion directory
for qcow2, ``qemu-img info``, for qcow2 ``qemu-img convert -n`` into
the volume's file, record it available and bootable.

Timed, per format, ``--reps`` times (after one untimed warm-up): POST
/volumes {size, imageRef} until GET shows ``available`` (polled every
20 ms); then the volume is deleted.  The first volume of each format is
compared byte for byte with the raw file.  Also timed alone, as many
times: the floor, ``qemu-img convert -f <fmt> -O raw`` of the image file
into a new file; and the download of the image file from Glance into a
file (fsync'd), the other half of the product's path.

CPU ms per operation (utime+stime from /proc/<pid>/stat around each
timed create, mean): cinder-lite-all itself; its children (qemu-img,
counted when they are reaped); the Glance processes; this client.  The
floor's CPU is that of its qemu-img (getrusage of children).

    .venv/bin/python bench/images.py                 # 1 GiB, half filled
    .venv/bin/python bench/images.py --size 1 --fill 0.5 --reps 5
"""
import argparse
import glob
import os
import pathlib
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.harness import glance as glance_mod  # noqa: E402
from tests.harness import stack as stack_mod  # noqa: E402
from tests.harness import util  # noqa: E402

MiB = 1024 ** 2
GiB = 1024 ** 3
CHUNK = 4 * MiB
CLK_TCK = os.sysconf('SC_CLK_TCK')


# -- the image ----------------------------------------------------------------

def make_raw(path, size_gib, fill, seed=29):
    """A sparse raw disk of ``size_gib`` GiB with ``fill`` of it written
    in 4 MiB chunks of seeded pseudo-random bytes spread evenly over it.
    Returns the bytes written."""
    chunks = int(size_gib * GiB * fill) // CHUNK
    stride = size_gib * GiB // max(chunks, 1)
    rng = random.Random(seed)
    with open(path, 'wb') as f:
        f.truncate(size_gib * GiB)
        for i in range(chunks):
            f.seek(i * stride)
            f.write(rng.randbytes(CHUNK))
        f.flush()
        os.fsync(f.fileno())
    return chunks * CHUNK


def allocated(path):
    return os.stat(path).st_blocks * 512


# -- measuring ----------------------------------------------------------------

def ticks(pid):
    """(self, reaped children) CPU ticks of ``pid``; None when gone."""
    fields = util.stat_fields(pid)
    if fields is None:
        return None
    return (int(fields[11]) + int(fields[12]),
            int(fields[13]) + int(fields[14]))


class Cpu:
    """CPU seconds of the processes of one run, by group."""

    def __init__(self, server_pid, glance):
        self.server_pid = server_pid
        self.glance = glance

    def sample(self):
        server = ticks(self.server_pid) or (0, 0)
        glance = sum((ticks(pid) or (0, 0))[0]
                     for pid in self.glance.worker_pids())
        mine = os.times()
        return {'cinder-lite-all': server[0] / CLK_TCK,
                'qemu-img': server[1] / CLK_TCK,
                'glance': glance / CLK_TCK,
                'client': mine.user + mine.system}

    @staticmethod
    def delta(before, after):
        return {k: after[k] - before[k] for k in before}


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fsync_file(path):
    with open(path, 'rb') as f:
        os.fsync(f.fileno())


def floor_convert(src, fmt, dst):
    """Seconds and CPU seconds of ``qemu-img convert`` of ``src`` alone
    (and the fsync of its output, which the product does not do: its
    volume is left in the page cache, as qemu-img convert leaves it)."""
    cpu = children_cpu()
    started = time.perf_counter()
    subprocess.run(['qemu-img', 'convert', '-f', fmt, '-O', 'raw', src,
                    dst], check=True)
    fsync_file(dst)
    took = time.perf_counter() - started
    cpu = children_cpu() - cpu
    os.unlink(dst)
    return took, cpu


def download_alone(glance, image_id, dst):
    started = time.perf_counter()
    with requests.get('%s/v2/images/%s/file' % (glance.url, image_id),
                      stream=True, timeout=600) as resp:
        resp.raise_for_status()
        with open(dst, 'wb') as f:
            for chunk in resp.iter_content(MiB):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
    took = time.perf_counter() - started
    os.unlink(dst)
    return took


def wait_available(api, vid):
    def available():
        status = api.get('/volumes/%s' % vid).json()['volume']['status']
        assert not status.startswith('error'), status
        return status == 'available'
    util.wait_for(available, timeout=1800, interval=0.02,
                  what='volume %s available' % vid)


def create_from_image(api, image_id, size_gib):
    resp = api.post('/volumes', json={'volume': {'size': size_gib,
                                                 'imageRef': image_id}})
    assert resp.status_code == 202, resp.text
    vid = resp.json()['volume']['id']
    wait_available(api, vid)
    return vid


def same_bytes(a, b):
    return subprocess.run(['cmp', '-s', a, b]).returncode == 0


def run(workdir, size_gib, fill, reps):
    raw = os.path.join(workdir, 'disk.raw')
    data = make_raw(raw, size_gib, fill)
    qcow2 = os.path.join(workdir, 'disk.qcow2')
    subprocess.run(['qemu-img', 'convert', '-f', 'raw', '-O', 'qcow2', raw,
                    qcow2], check=True)
    glance = glance_mod.Glance(os.path.join(workdir, 'glance')).start()
    server = None
    rows = []
    try:
        images = {
            'raw': (raw, glance.make_image('bench-raw', raw, 'raw')),
            'qcow2': (qcow2, glance.make_image('bench-qcow2', qcow2,
                                               'qcow2'))}
        server, port, log = stack_mod.start_all(
            pathlib.Path(workdir) / 'cinder-lite',
            extra='glance_api_servers = %s\n' % glance.url)
        api = stack_mod.Client('http://127.0.0.1:%d' % port)
        api.put('/os-quota-sets/%s' % api.project, json={'quota_set': {
            'gigabytes': -1, 'volumes': -1}})
        cpu = Cpu(server.pid, glance)
        for fmt, (path, image) in images.items():
            # warm-up, and the bytes checked
            vid = create_from_image(api, image['id'], size_gib)
            found = glob.glob(os.path.join(workdir, 'cinder-lite', '**',
                                           'volume-%s' % vid),
                              recursive=True)
            assert len(found) == 1, found
            assert same_bytes(found[0], raw), \
                'volume from the %s image differs from the disk' % fmt
            api.delete('/volumes/%s' % vid)
            api.wait_deleted(vid)
            times, spent = [], []
            for _ in range(reps):
                before = cpu.sample()
                started = time.perf_counter()
                vid = create_from_image(api, image['id'], size_gib)
                times.append(time.perf_counter() - started)
                spent.append(Cpu.delta(before, cpu.sample()))
                api.delete('/volumes/%s' % vid)
                api.wait_deleted(vid)
            floors = [floor_convert(path, fmt,
                                    os.path.join(workdir, 'floor.raw'))
                      for _ in range(reps)]
            gets = [download_alone(glance, image['id'],
                                   os.path.join(workdir, 'get.out'))
                    for _ in range(reps)]
            rows.append({
                'format': fmt, 'file': os.path.getsize(path),
                'stored': allocated(path), 'data': data,
                'create': statistics.median(times),
                'floor': statistics.median(t for t, _ in floors),
                'get': statistics.median(gets),
                'cpu': {k: statistics.mean(s[k] for s in spent)
                        for k in spent[0]},
                'floor_cpu': statistics.mean(c for _, c in floors)})
    finally:
        if server is not None:
            server.terminate()
            server.wait(60)
            log.close()
        glance.stop()
    return rows


def report(rows, size_gib, fill, reps, fs):
    virtual = size_gib * GiB / MiB
    print('filesystem: %s; %d GiB disk, %.0f%% written (%d MiB); p50 of %d'
          % (fs, size_gib, fill * 100, rows[0]['data'] // MiB, reps))
    print('%-6s %9s %9s %10s %8s %10s %8s %7s %9s' % (
        'image', 'file MiB', 'disk MiB', 'create s', 'MiB/s', 'convert s',
        'MiB/s', 'ratio', 'GET s'))
    for r in rows:
        print('%-6s %9d %9d %10.3f %8.0f %10.3f %8.0f %7.2f %9.3f' % (
            r['format'], r['file'] // MiB, virtual, r['create'],
            virtual / r['create'], r['floor'], virtual / r['floor'],
            r['create'] / r['floor'], r['get']))
    print()
    print('CPU ms per volume from image (floor: ms of its qemu-img)')
    groups = list(rows[0]['cpu'])
    print('%-6s ' % 'image' + ' '.join('%15s' % g for g in groups)
          + ' %10s %10s' % ('total', 'floor'))
    for r in rows:
        print('%-6s ' % r['format'] + ' '.join(
            '%15.0f' % (r['cpu'][g] * 1000) for g in groups)
            + ' %10.0f %10.0f' % (sum(r['cpu'].values()) * 1000,
                                  r['floor_cpu'] * 1000))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--size', type=int, default=1,
                        help='GiB of the image\'s disk (and the volume)')
    parser.add_argument('--fill', type=float, default=0.5,
                        help='fraction of the disk written')
    parser.add_argument('--reps', type=int, default=3)
    parser.add_argument('--dir', default=None,
                        help='where the images, Glance and cinder_lite '
                             'keep their files (default: a temporary '
                             'directory under /var/tmp)')
    args = parser.parse_args()
    util.need('qemu-img')
    workdir = tempfile.mkdtemp(prefix='cl-images-bench-',
                               dir=args.dir or '/var/tmp')
    try:
        fs = subprocess.run(['df', '--output=fstype', workdir],
                            capture_output=True, text=True).stdout.split()
        rows = run(workdir, args.size, args.fill, args.reps)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(rows, args.size, args.fill, args.reps, fs[-1] if fs else '?')


if __name__ == '__main__':
    main()
