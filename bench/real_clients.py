"""The clients a cloud uses, on the exports cinder_lite makes, next to the
same client on the volume's file (bench/datapath.py ``--real-clients``).

Clients:

* ``qemu-io``: QEMU's own block drivers (nbd; iscsi, on libiscsi, from
  qemu-block-extra) with exactly the credentials of the attachment's
  connection_info: a ``tls-creds-psk`` object on a key file for NBD, a
  ``secret`` object on a file for the CHAP password (neither on a
  command line), cache mode writeback (what a guest's disk with
  ``cache=none`` gets; qemu-io's default, writethrough, flushes after
  every write).  Commands go in on stdin; the time is taken between two
  ``length`` commands that bracket them, so the start, the open and the
  TLS handshake or iSCSI login are not in it.  1 MiB sequential and
  4 KiB random (offsets from a seeded generator), one request in flight
  (``read``/``write``) or 16 (batches of 16 ``aio_read``/``aio_write``
  ended by ``aio_flush``, which waits for them).
* ``qemu-img bench``: QEMU's benchmark, the cleaner figure, but it takes
  no ``--object``, so no TLS or CHAP: the file and the bench's twins of
  the exports without credentials only.  Its 4 KiB pattern is a stride
  (``-S``) of an odd number of 4 KiB blocks, which in an area of a
  power of two blocks visits every block once before repeating.
* ``nbdcopy`` (libnbd): sequential only (it copies), one connection,
  1 MiB requests, 1 or 16 in flight; reading the export to ``null:``
  and writing a file of random bytes to it.  Its floor reads the
  volume's file and writes a file of the area's size beside it (nbdcopy
  truncates a destination file to the source's size, so it cannot write
  into the volume's file).  Timed around the process: the handshake is
  in it.

The exports: the one cinder_lite's driver made for the attachment (TLS
on NBD, CHAP on iSCSI), and a twin without credentials on the same file
made by this bench: for NBD the driver's nbdkit command line read from
``/proc/<pid>/cmdline`` without its TLS options (and with ``--threads``
or file plugin options when a knob is tried), for iSCSI a target with
the driver's LUN and session parameters on the driver's own tgtd, with
no account and an ACL open to all.  Every write is followed by a flush
inside the timed part.
"""
import math
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from cinder_lite import nbd as nbd_client
from cinder_lite.volume.targets import iscsi as iscsi_target

MiB = 1024 * 1024
SMALL = 4096
DEPTHS = (1, 16)
# figures: (kind, op, depth)
FIGURES = [('seq', op, d) for op in ('write', 'read') for d in DEPTHS] + \
    [('rand', op, d) for op in ('write', 'read') for d in DEPTHS]
SEED = 50
TWIN_IQN = 'iqn.2026-12.org.cinder-lite.bench:open-'


def need(*programs):
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        raise SystemExit('%s not installed (apt-get install qemu-utils '
                         'qemu-block-extra libnbd-bin)' % ', '.join(missing))
    formats = subprocess.run(['qemu-img', '--help'], capture_output=True,
                             text=True).stdout
    if ' iscsi' not in formats:
        raise SystemExit('qemu has no iscsi block driver (qemu-block-extra)')


class Path:
    """How each client opens one path: ``opts`` the protocol layer's
    block options (``file.``-prefixed under a raw node limited to the
    area), ``objects`` the --object definitions they need, ``uri`` the
    NBD URI for nbdcopy (None: not NBD), ``file`` the file itself (the
    floor)."""

    def __init__(self, name, opts, objects=(), uri=None, file=None):
        self.name = name
        self.opts = opts
        self.objects = list(objects)
        self.uri = uri
        self.file = file


def file_path(path):
    return Path('file (floor)', {'driver': 'file', 'filename': path},
                file=path)


def nbd_path(name, info, workdir, tls=True):
    """``info``: connection_info data (host, port, export_name and, with
    TLS, the PSK identity and key)."""
    opts = {'driver': 'nbd', 'server.type': 'inet',
            'server.host': info['host'], 'server.port': str(info['port']),
            'export': info['export_name']}
    objects, uri = [], 'nbd://%s:%d/%s' % (info['host'], info['port'],
                                           info['export_name'])
    if tls:
        keydir = tempfile.mkdtemp(prefix='keys-', dir=workdir)
        keyfile = os.path.join(keydir, 'keys.psk')
        fd = os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(nbd_client.psk_line(info['tls_psk_identity'],
                                        info['tls_psk_key']))
        objects.append('tls-creds-psk,id=tls0,dir=%s,username=%s,'
                       'endpoint=client' % (keydir,
                                            info['tls_psk_identity']))
        opts['tls-creds'] = 'tls0'
        # libnbd takes the PSK identity as the URI's user
        uri = 'nbds://%s@%s:%d/%s?tls-psk-file=%s' % (
            info['tls_psk_identity'], info['host'], info['port'],
            info['export_name'], keyfile)
    return Path(name, opts, objects, uri=uri)


def iscsi_path(name, info, initiator, workdir, iqn=None, chap=True):
    opts = {'driver': 'iscsi', 'transport': 'tcp',
            'portal': info['target_portal'],
            'target': iqn or info['target_iqn'],
            'lun': str(info['target_lun']), 'initiator-name': initiator}
    objects = []
    if chap:
        fd, secret = tempfile.mkstemp(prefix='chap-', dir=workdir)
        with os.fdopen(fd, 'w') as f:
            f.write(info['auth_password'])
        objects.append('secret,id=sec0,file=%s' % secret)
        opts.update({'user': info['auth_username'],
                     'password-secret': 'sec0'})
    return Path(name, opts, objects)


def image_opts(path, mib):
    parts = ['driver=raw', 'size=%d' % (mib * MiB)]
    parts += ['file.%s=%s' % kv for kv in path.opts.items()]
    return ','.join(parts)


# -- qemu-io ------------------------------------------------------------------
LENGTH = re.compile(rb'(\d+(\.\d+)? [KMGT]?i?B|\d+ bytes)\n$')


def qemu_io(path, mib, commands, timeout=300):
    """Seconds between the ``length`` before ``commands`` and the one
    after (qemu-io prints its output as it goes)."""
    # writeback, as qemu-img bench and a guest's disk with cache=none:
    # a write is done when the target has it, and the flush after the
    # last one is in the time (qemu-io's own default, writethrough,
    # flushes after every write)
    argv = ['stdbuf', '-oL', 'qemu-io', '--cache=writeback']
    for obj in path.objects:
        argv += ['--object', obj]
    argv += ['--image-opts', image_opts(path, mib)]
    text = ('length\n' + ''.join(c + '\n' for c in commands) +
            'length\n').encode()
    began = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def feed():
        try:
            proc.stdin.write(text)
            proc.stdin.close()
        except BrokenPipeError:
            pass
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    stamps, other, pending = [], [], b''
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    fd = proc.stdout.fileno()
    try:
        # unbuffered reads, each stamped as it arrives: a marker's stamp
        # is late by however long this process waited to be scheduled
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            now = time.perf_counter()
            lines = (pending + chunk).split(b'\n')
            pending = lines.pop()
            for line in lines:
                if LENGTH.search(line + b'\n'):
                    stamps.append(now)
                else:
                    other.append(line.replace(b'qemu-io> ', b''))
    finally:
        timer.cancel()
    feeder.join()
    rc = proc.wait()
    ended = time.perf_counter()
    junk = b''.join(other + [pending.replace(b'qemu-io> ', b'')]).strip()
    if rc != 0 or len(stamps) != 2 or junk:
        raise RuntimeError('qemu-io on %s failed (rc %s): %s' % (
            path.name, rc, junk.decode(errors='replace')[-500:]))
    if stamps[1] == stamps[0]:
        # both markers in one read (a short run, or this process not
        # scheduled meanwhile): the whole run's wall instead, qemu-io's
        # start and open included, so the figure errs low, never high
        print('qemu-io on %s: both markers came in one read; timed as the '
              'whole run' % path.name, file=sys.stderr)
        return ended - began
    return stamps[1] - stamps[0]


def _batches(offsets, op, io, depth):
    """qemu-io commands for ``offsets``: one at a time, or ``depth`` at
    once (aio, then aio_flush, which waits for them)."""
    size = '%dk' % (io // 1024)
    if depth == 1:
        return ['%s -q %d %s' % (op, o, size) for o in offsets]
    out = []
    for i in range(0, len(offsets), depth):
        out += ['aio_%s -q %d %s' % (op, o, size)
                for o in offsets[i:i + depth]]
        out.append('aio_flush')
    return out


def qemu_io_figure(path, mib, kind, op, depth, seconds):
    """MiB/s (seq) or IOPS (rand) of one figure through qemu-io."""
    if kind == 'seq':
        offsets = [i * MiB for i in range(mib)]
        cmds = _batches(offsets, op, MiB, depth)
        if op == 'write':
            cmds.append('flush')
        return mib / qemu_io(path, mib, cmds)
    rng = random.Random(SEED)
    slots = mib * MiB // SMALL

    def run(n):
        offsets = [rng.randrange(slots) * SMALL for _ in range(n)]
        cmds = _batches(offsets, op, SMALL, depth)
        if op == 'write':
            cmds.append('flush')
        return n / qemu_io(path, mib, cmds)
    probe = run(512)
    # at most 20 times the probe: a probe timed short by a busy machine
    # must not turn into minutes
    return run(min(512 * 20, max(512, int(probe * seconds))))


# -- qemu-img bench -----------------------------------------------------------
def qemu_img_bench(path, mib, write, io, depth, count, step):
    # qemu-img refuses a flush interval below the depth
    count = max(count, depth)
    argv = ['qemu-img', 'bench', '--image-opts', '-c', str(count),
            '-d', str(depth), '-s', str(io), '-S', str(step)]
    if write:
        # one flush, after the last request
        argv += ['-w', '--flush-interval=%d' % count]
    argv.append(image_opts(path, mib))
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    m = re.search(r'Run completed in ([\d.]+) seconds', done.stdout)
    if done.returncode != 0 or not m:
        raise RuntimeError('qemu-img bench on %s failed: %s' % (
            path.name, (done.stderr or done.stdout)[-500:]))
    return max(float(m.group(1)), 0.0005)


def qemu_img_figure(path, mib, kind, op, depth, seconds):
    write = op == 'write'
    if kind == 'seq':
        # whole passes over the area, as many as make ~0.3 s (the
        # figure is printed in ms)
        count = max(mib, depth)
        elapsed = qemu_img_bench(path, mib, write, MiB, depth, count, MiB)
        if elapsed < 0.25:
            count *= min(16, math.ceil(0.3 / elapsed))
            elapsed = qemu_img_bench(path, mib, write, MiB, depth, count,
                                     MiB)
        return count / elapsed
    # an odd stride of 4 KiB blocks: a permutation of the area's blocks
    step = SMALL * (2 * (mib * MiB // SMALL // 7) + 1)
    probe = 512 / qemu_img_bench(path, mib, write, SMALL, depth, 512, step)
    count = min(512 * 50, max(512, int(probe * seconds)))
    return count / qemu_img_bench(path, mib, write, SMALL, depth, count,
                                  step)


# -- nbdcopy ------------------------------------------------------------------
def nbdcopy(src, dst, depth):
    argv = ['nbdcopy', '--connections=1', '--request-size=%d' % MiB,
            '--requests=%d' % depth, '--sparse=0']
    if dst != 'null:':
        argv.append('--flush')
    argv += [src, dst]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError('nbdcopy %s -> %s failed: %s' % (
            _shown(src), _shown(dst), done.stderr[-500:]))
    return elapsed


def _shown(uri):
    return uri.split('?')[0].split('@')[-1]


def nbdcopy_figure(path, mib, op, depth, source, floor_target):
    """MiB/s.  Reads copy the export (its allocated part: the area) to
    null:, writes copy ``source`` (random bytes, the area's size) to it;
    on the floor, the volume's file to null: and ``source`` to
    ``floor_target``."""
    if path.file:
        src, dst = (source, floor_target) if op == 'write' else \
            (path.file, 'null:')
    else:
        src, dst = (source, path.uri) if op == 'write' else \
            (path.uri, 'null:')
    return mib / nbdcopy(src, dst, depth)


# -- the bench's twins of the exports, without credentials ------------------
def free_port(ip):
    with socket.socket() as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


class NbdTwin:
    """A second nbdkit on the same file, started with the command line
    of the driver's export (pid ``pid``) on another port, without TLS
    unless ``tls``, plus ``extra`` nbdkit options and file plugin
    parameters (the knobs)."""

    def __init__(self, pid, workdir, tls=False, options=(), params=()):
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            argv = [a.decode() for a in f.read().split(b'\0') if a]
        self.ip = argv[argv.index('-i') + 1]
        self.port = free_port(self.ip)
        out, skip, self.pause_dir = [], False, None
        for arg in argv:
            if skip:
                skip = False
                continue
            if arg == '-p':
                out += ['-p', str(self.port)]
                skip = True
            elif arg.startswith('--tls') and not tls:
                continue
            elif arg.startswith('pause-control='):
                # a control socket of its own (the driver's stays the
                # driver's), in a short path: a socket's address holds
                # 107 bytes
                self.pause_dir = tempfile.mkdtemp(prefix='cl-pause-')
                out.append('pause-control=%s' % os.path.join(
                    self.pause_dir, 'ctl'))
            else:
                out.append(arg)
        at = out.index('--foreground') + 1
        out[at:at] = list(options)
        out += list(params)
        self.argv = out
        self.proc = subprocess.Popen(out, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE,
                                     start_new_session=True)
        deadline = time.monotonic() + 5
        while True:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode()[-500:]
                self.stop()
                raise RuntimeError('nbdkit twin exited: %s' % err)
            try:
                socket.create_connection((self.ip, self.port), 0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError('nbdkit twin did not listen')
                time.sleep(0.02)

    def info(self, base):
        return dict(base, port=self.port)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.pause_dir:
            shutil.rmtree(self.pause_dir, ignore_errors=True)


class IscsiTwin:
    """A target on the driver's tgtd (control port ``control``) with the
    driver's LUN and session parameters on ``file``, no CHAP account, an
    ACL open to all; removed by ``stop``."""

    def __init__(self, control, file, volume_id, tid=900, bsopts=()):
        self.control = str(control)
        self.tid = str(tid)
        self.iqn = TWIN_IQN + volume_id
        self._adm('--mode', 'target', '--op', 'new', '--tid', self.tid,
                  '-T', self.iqn)
        try:
            self._adm('--mode', 'logicalunit', '--op', 'new', '--tid',
                      self.tid, '--lun', str(iscsi_target.LUN), '-b', file,
                      *bsopts)
            self._adm('--mode', 'logicalunit', '--op', 'update', '--tid',
                      self.tid, '--lun', str(iscsi_target.LUN), '--params',
                      'thin_provisioning=1')
            for name, value in iscsi_target.TARGET_PARAMS:
                self._adm('--mode', 'target', '--op', 'update', '--tid',
                          self.tid, '--name', name, '--value', value)
            self._adm('--mode', 'target', '--op', 'bind', '--tid', self.tid,
                      '--initiator-address', 'ALL')
        except Exception:
            self.stop()
            raise

    def _adm(self, *args):
        done = subprocess.run(['tgtadm', '-C', self.control, '--lld',
                               'iscsi'] + list(args), capture_output=True,
                              text=True, timeout=30)
        if done.returncode != 0:
            raise RuntimeError('tgtadm %s: %s' % (' '.join(args[:4]),
                                                  done.stderr.strip()))

    def stop(self):
        self._adm('--mode', 'target', '--op', 'delete', '--force', '--tid',
                  self.tid)


def start_tgtd(threads, workdir, control):
    """A tgtd of the bench's own with ``-t threads`` I/O threads on
    control port ``control``: (its process, control port, portal)."""
    port = free_port('127.0.0.1')
    portal = '127.0.0.1:%d' % port
    log = open(os.path.join(workdir, 'tgtd-%d.log' % threads), 'wb')
    proc = subprocess.Popen(['tgtd', '-f', '-C', str(control), '-t',
                             str(threads), '--iscsi', 'portal=%s' % portal],
                            stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    deadline = time.monotonic() + 5
    while subprocess.run(['tgtadm', '-C', str(control), '--mode',
                          'system', '--op', 'show'],
                         capture_output=True).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_tgtd(proc, control)
            raise RuntimeError('tgtd -t %d did not start' % threads)
        time.sleep(0.05)
    return proc, control, portal


def stop_tgtd(proc, control):
    # tgtd leaves through its control socket once it has no targets
    subprocess.run(['tgtadm', '-C', str(control), '--mode', 'system',
                    '--op', 'delete'], capture_output=True)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for suffix in ('', '.lock'):
        try:
            os.unlink('%s/socket.%d%s' % (iscsi_target.SOCKET_DIR,
                                          control, suffix))
        except FileNotFoundError:
            pass


# -- the table ----------------------------------------------------------------
def measure(client, path, mib, seconds, source=None, floor_target=None):
    """{(kind, op, depth): figure} of one client on one path."""
    out = {}
    for kind, op, depth in FIGURES:
        if client == 'nbdcopy':
            if kind != 'seq':
                continue
            out[kind, op, depth] = nbdcopy_figure(path, mib, op, depth,
                                                  source, floor_target)
        elif client == 'qemu-img':
            out[kind, op, depth] = qemu_img_figure(path, mib, kind, op,
                                                   depth, seconds)
        else:
            out[kind, op, depth] = qemu_io_figure(path, mib, kind, op,
                                                  depth, seconds)
    return out


def label(kind, op, depth):
    return '%s %s QD%d' % ('1M seq' if kind == 'seq' else '4K rand', op,
                           depth)


def print_table(rows, floors, mib, seconds):
    """``rows``: [(client, path name, {figure: value})]; ``floors``:
    {client: {figure: value}}.  One line per figure and path: the value,
    the same client's floor and the ratio."""
    print('real clients, same run: 1 MiB sequential over %d MiB (MiB/s), '
          '4 KiB random in it (IOPS, ~%.1f s a figure); each next to the '
          'same client on the file' % (mib, seconds))
    head = '%-9s | %-30s | %-18s | %9s | %9s | %6s'
    print(head % ('client', 'path', 'figure', 'value', 'floor', 'ratio'))
    print('-' * 10 + '+' + '-' * 32 + '+' + '-' * 20 + '+' + '-' * 11 +
          '+' + '-' * 11 + '+' + '-' * 7)
    for client, name, figures in rows:
        for key in FIGURES:
            if key not in figures:
                continue
            floor = floors[client][key]
            value = figures[key]
            print('%-9s | %-30s | %-18s | %9.0f | %9.0f | %5.0f%%' % (
                client, name, label(*key), value, floor,
                100.0 * value / floor))
