"""Real guests: QEMU virtual machines with a Debian kernel, whose disks are
the volumes cinder_lite attaches, opened by QEMU's own block drivers from
the connection_info an attachment returns.

The guest is as small as a Linux that reads and writes block devices can
be: Debian's kernel (``linux-image-*-amd64``, fetched with ``apt-get
download`` once and kept under ``~/.cache/cinder_lite/guest``) and an
initramfs holding busybox-static, the virtio modules and a role script.
``/init`` loads the modules, runs the role (an ash script handed in by
the test) and powers the machine off.  What a role prints goes to the
serial console, which the harness reads line by line with the time each
line arrived.

Acceleration: TCG, always.  The machines of this kind expose ``/dev/kvm``
through nested PVM, under which stock kernels crash or stall, so a test
that trusted ``/dev/kvm`` would hang; TCG boots the guest to its role in
about 7 s.  ``-cpu host`` is never used.

Everything a guest is started with is on its command line but the
secrets: TLS-PSK keys go to a key file and iSCSI CHAP passwords to a
secret file, both 0600 in the guest's own directory.
"""
import glob
import json
import lzma
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid

from cinder_lite import nbd
from tests.harness import dataplane as dp
from tests.harness import stack as stack_mod
from tests.harness import util

CACHE = os.path.join(os.path.expanduser('~'), '.cache', 'cinder_lite',
                     'guest')
# what /init loads, in order (each needs the ones before it)
MODULES = ('virtio/virtio_ring.ko', 'virtio/virtio.ko',
           'virtio/virtio_pci_modern_dev.ko',
           'virtio/virtio_pci_legacy_dev.ko', 'virtio/virtio_pci.ko',
           'block/virtio_blk.ko')
INIT = '''#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in %s; do insmod /modules/$m || echo "GUEST insmod $m failed"; done
n=0
while [ ! -b /dev/vda ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done
echo GUEST READY
sh /role
echo "GUEST DONE $?"
poweroff -f
''' % ' '.join(os.path.basename(m) for m in MODULES)


def available():
    """Why guests cannot run here, or None."""
    for program in ('qemu-system-x86_64', 'apt-get', 'dpkg-deb'):
        if shutil.which(program) is None:
            return '%s is not installed' % program
    if not os.path.exists('/bin/busybox') or not _static('/bin/busybox'):
        return 'busybox-static is not installed'
    return None


def _static(path):
    done = subprocess.run(['file', '-L', path], capture_output=True,
                          text=True) if shutil.which('file') else None
    if done is None:
        # no file(1): a dynamic busybox has an interpreter section
        with open(path, 'rb') as f:
            return b'/lib64/ld-linux' not in f.read()
    return 'statically linked' in done.stdout or 'static-pie' in done.stdout


def kernel_package():
    """The kernel image package ``linux-image-amd64`` depends on now."""
    done = subprocess.run(['apt-cache', 'depends', 'linux-image-amd64'],
                          capture_output=True, text=True, check=True)
    for line in done.stdout.splitlines():
        line = line.strip()
        if line.startswith('Depends: linux-image-'):
            return line.split()[1]
    raise RuntimeError('no kernel package behind linux-image-amd64:\n%s'
                       % done.stdout)


_BUILD_LOCK = threading.Lock()


def boot_files():
    """(kernel, base initramfs): built once a machine, from Debian's
    kernel package, under CACHE."""
    with _BUILD_LOCK:
        os.makedirs(CACHE, exist_ok=True)
        kernel = os.path.join(CACHE, 'vmlinuz')
        base = os.path.join(CACHE, 'base.cpio')
        if os.path.exists(kernel) and os.path.exists(base):
            return _unpacked(kernel), base
        work = os.path.join(CACHE, 'build.%d' % os.getpid())
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        try:
            package = kernel_package()
            subprocess.run(['apt-get', 'download', '-qq', package],
                           cwd=work, check=True, capture_output=True)
            deb, = glob.glob(os.path.join(work, '*.deb'))
            tree = os.path.join(work, 'x')
            subprocess.run(['dpkg-deb', '-x', deb, tree], check=True)
            vmlinuz, = glob.glob(os.path.join(tree, 'boot', 'vmlinuz-*'))
            drivers, = glob.glob(os.path.join(tree, 'lib', 'modules', '*',
                                              'kernel', 'drivers'))
            entries = [('bin', None, 0o755), ('proc', None, 0o755),
                       ('sys', None, 0o755), ('dev', None, 0o755),
                       ('tmp', None, 0o1777), ('modules', None, 0o755)]
            with open('/bin/busybox', 'rb') as f:
                entries.append(('bin/busybox', f.read(), 0o755))
            entries.append(('init', INIT.encode(), 0o755))
            for module in MODULES:
                with open(os.path.join(drivers, module), 'rb') as f:
                    entries.append(('modules/' + os.path.basename(module),
                                    f.read(), 0o644))
            with open(base + '.tmp', 'wb') as f:
                f.write(cpio(entries))
            shutil.copyfile(vmlinuz, kernel + '.tmp')
            # (the ELF image of a kernel built before goes with it)
            if os.path.exists(os.path.join(CACHE, 'vmlinux')):
                os.remove(os.path.join(CACHE, 'vmlinux'))
            os.replace(base + '.tmp', base)
            os.replace(kernel + '.tmp', kernel)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return _unpacked(kernel), base


XZ_MAGIC = b'\xfd7zXZ\x00'


def _unpacked(vmlinuz):
    """The kernel QEMU boots: the ELF image inside ``vmlinuz`` (Debian's
    bzImage holds it xz-compressed), unpacked once next to it, or
    ``vmlinuz`` itself when it holds no xz stream.  Under TCG the
    bzImage's own decompressor is the slowest part of a boot (about 8 s
    of 14 on a loaded 2-core machine); QEMU boots the ELF image through
    its PVH entry point."""
    elf = os.path.join(os.path.dirname(vmlinuz), 'vmlinux')
    if os.path.exists(elf):
        return elf
    with open(vmlinuz, 'rb') as f:
        data = f.read()
    start = data.find(XZ_MAGIC)
    if start < 0:
        return vmlinuz
    unpack = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    try:
        image = unpack.decompress(data[start:])
    except lzma.LZMAError:
        return vmlinuz
    if not image.startswith(b'\x7fELF'):
        return vmlinuz
    tmp = '%s.%d.tmp' % (elf, os.getpid())
    with open(tmp, 'wb') as f:
        f.write(image)
    os.replace(tmp, elf)
    return elf


def cpio(entries, trailer=True):
    """A "newc" cpio archive of ``entries`` (path, data or None for a
    directory, mode); the kernel unpacks archives laid end to end, so a
    guest's role is one more archive after the base."""
    out = bytearray()
    ino = 1

    def pad():
        out.extend(b'\0' * (-len(out) % 4))

    def header(name, mode, size):
        nonlocal ino
        fields = (ino, mode, 0, 0, 1, 0, size, 0, 0, 0, 0,
                  len(name) + 1, 0)
        ino += 1
        out.extend(b'070701' + b''.join(b'%08x' % v for v in fields))
        out.extend(name.encode() + b'\0')
        pad()
    for name, data, mode in entries:
        kind = stat.S_IFDIR if data is None else stat.S_IFREG
        header(name, kind | mode, 0 if data is None else len(data))
        if data:
            out.extend(data)
            pad()
    if trailer:
        header('TRAILER!!!', 0, 0)
    return bytes(out)


class Guest:
    """One QEMU guest: ``role`` is the ash script it runs; ``disks`` the
    volumes it has, each a ``Disk``.  ``lines`` holds (time, line) of its
    console as they arrive.  ``control``: the guest has a second serial
    line (its ``/dev/ttyS1``) on which ``tell`` sends it lines, as a
    cluster manager tells a node to start its resources."""

    def __init__(self, name, workdir, role, disks, memory=256,
                 control=False):
        self.name = name
        self.dir = os.path.join(workdir, 'guest-' + name)
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.role = role
        self.disks = disks
        self.memory = memory
        self.control = control
        self.console = os.path.join(self.dir, 'console.log')
        self.qmp_path = os.path.join(self.dir, 'qmp.sock')
        self.control_path = os.path.join(self.dir, 'control.sock')
        self.proc = None
        self._control = None
        self.lines = []
        self._reader = None
        self._stop = threading.Event()

    def argv(self):
        kernel, base = boot_files()
        initrd = os.path.join(self.dir, 'initrd.cpio')
        with open(base, 'rb') as f:
            image = f.read()
        with open(initrd, 'wb') as f:
            f.write(image + cpio([('role', self.role.encode(), 0o755)]))
        argv = ['qemu-system-x86_64', '-accel', 'tcg', '-nodefaults',
                '-no-user-config', '-display', 'none', '-no-reboot',
                '-m', str(self.memory), '-smp', '1',
                '-kernel', kernel, '-initrd', initrd,
                # no_timer_check: the kernel's check that the timer
                # interrupt works fails now and then under TCG on a
                # loaded machine, and panics the guest
                '-append', 'console=ttyS0 quiet panic=-1 no_timer_check '
                'rdinit=/init',
                '-serial', 'file:%s' % self.console,
                '-qmp', 'unix:%s,server=on,wait=off' % self.qmp_path]
        if self.control:
            argv += ['-serial',
                     'unix:%s,server=on,wait=off' % self.control_path]
        for i, disk in enumerate(self.disks):
            argv += disk.qemu_args(self.dir, 'disk%d' % i)
        return argv

    def start(self):
        self.proc = subprocess.Popen(
            self.argv(), stdin=subprocess.DEVNULL,
            stdout=open(os.path.join(self.dir, 'qemu.log'), 'wb'),
            stderr=subprocess.STDOUT)
        self._reader = threading.Thread(target=self._read_console,
                                        name='console-' + self.name,
                                        daemon=True)
        self._reader.start()
        return self

    def _read_console(self):
        offset, pending = 0, b''
        while not self._stop.is_set():
            try:
                with open(self.console, 'rb') as f:
                    f.seek(offset)
                    chunk = f.read()
            except FileNotFoundError:
                chunk = b''
            if chunk:
                offset += len(chunk)
                pending += chunk
                *complete, pending = pending.split(b'\n')
                now = time.monotonic()
                for line in complete:
                    self.lines.append(
                        (now, line.decode(errors='replace').rstrip('\r')))
            elif self.proc.poll() is not None:
                return
            else:
                time.sleep(0.02)

    def qemu_log(self):
        with open(os.path.join(self.dir, 'qemu.log'), errors='replace') as f:
            return f.read()

    def text(self):
        return '\n'.join(line for _, line in self.lines)

    def wait_line(self, prefix, timeout=120.0):
        """The first console line starting with ``prefix`` (time, line)."""
        def found():
            for entry in list(self.lines):
                if entry[1].startswith(prefix):
                    return entry
            if self.proc.poll() is not None and not self._reader.is_alive():
                raise AssertionError(
                    'guest %s ended (rc %s) before %r:\n%s\n%s' % (
                        self.name, self.proc.returncode, prefix,
                        self.text()[-3000:], self.qemu_log()[-2000:]))
            return None
        try:
            return util.wait_for(found, timeout, interval=0.05,
                                 what='guest %s: %r' % (self.name, prefix))
        except AssertionError as e:
            raise AssertionError('%s\nconsole:\n%s\nqemu:\n%s' % (
                e, self.text()[-2000:], self.qemu_log()[-2000:])) from None

    def wait_done(self, timeout=120.0):
        """The role's exit status, once the guest has powered off."""
        _when, line = self.wait_line('GUEST DONE', timeout)
        self.proc.wait(timeout=30)
        return int(line.split()[2])

    def pause(self):
        """The guest stops dead (as a hung host): SIGSTOP to its QEMU."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def tell(self, line):
        """Send ``line`` to the guest's second serial line (the
        connection stays open until the guest stops: QEMU reads what it
        carries as the guest's UART takes it)."""
        if self._control is None:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(30)
            s.connect(self.control_path)
            self._control = s
        self._control.sendall(line.encode() + b'\n')

    def qmp(self, command, **arguments):
        """One QMP command; its ``return``, or RuntimeError with the
        error QEMU answered."""
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(self.qmp_path)
        f = s.makefile('rw')
        try:
            json.loads(f.readline())
            steps = (('qmp_capabilities', {}), (command, arguments))
            for cmd, args in steps:
                f.write(json.dumps({'execute': cmd, 'arguments': args})
                        + '\n')
                f.flush()
                while True:
                    answer = json.loads(f.readline())
                    if 'event' not in answer:
                        break
                if 'error' in answer:
                    raise RuntimeError('%s: %s' % (cmd, answer['error']))
            return answer.get('return')
        finally:
            f.close()
            s.close()

    def stop(self):
        self._stop.set()
        if self._control is not None:
            self._control.close()
            self._control = None
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.proc.kill()
            self.proc.wait(timeout=30)


class NbdDisk:
    """A volume attached over NBD, opened by QEMU's nbd driver with the
    attachment's TLS-PSK key; ``read_only`` as QEMU should open it."""

    def __init__(self, info, read_only=False):
        self.info = info
        self.read_only = read_only

    def _parts(self, guest_dir, node):
        """(tls-creds object properties, blockdev) of this disk."""
        info = self.info
        keydir = os.path.join(guest_dir, 'keys-' + node)
        os.makedirs(keydir, mode=0o700, exist_ok=True)
        keyfile = os.path.join(keydir, 'keys.psk')
        fd = os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(nbd.psk_line(info['tls_psk_identity'],
                                 info['tls_psk_key']))
        creds = {'id': 'tls-' + node, 'dir': keydir,
                 'username': info['tls_psk_identity'],
                 'endpoint': 'client'}
        blockdev = {
            'driver': 'raw', 'node-name': node,
            'read-only': self.read_only,
            'file': {'driver': 'nbd', 'export': info['export_name'],
                     'tls-creds': 'tls-' + node,
                     'server': {'type': 'inet', 'host': info['host'],
                                'port': str(info['port'])}}}
        return creds, blockdev

    def qemu_args(self, guest_dir, node):
        creds, blockdev = self._parts(guest_dir, node)
        creds = ','.join('%s=%s' % kv for kv in creds.items())
        return ['-object', 'tls-creds-psk,' + creds,
                '-blockdev', json.dumps(blockdev),
                '-device', 'virtio-blk-pci,drive=%s' % node]

    def plug(self, guest, node):
        """Plug this disk into the running ``guest`` (QMP), as a
        hypervisor hot-plugs a volume: the guest's kernel finds a new
        virtio disk."""
        creds, blockdev = self._parts(guest.dir, node)
        guest.qmp('object-add', **{'qom-type': 'tls-creds-psk'}, **creds)
        guest.qmp('blockdev-add', **blockdev)
        guest.qmp('device_add', driver='virtio-blk-pci', drive=node,
                  id='dev-' + node)


class IscsiDisk:
    """A volume attached over iSCSI, opened by QEMU's iscsi driver
    (libiscsi) as the attachment's initiator with its CHAP account; the
    password goes to a secret file."""

    def __init__(self, info, initiator, read_only=False):
        self.info = info
        self.initiator = initiator
        self.read_only = read_only

    def _parts(self, guest_dir, node):
        info = self.info
        path = os.path.join(guest_dir, 'chap-' + node)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(info['auth_password'])
        secret = {'id': 'sec-' + node, 'file': path}
        blockdev = {
            'driver': 'raw', 'node-name': node,
            'read-only': self.read_only,
            'file': {'driver': 'iscsi', 'transport': 'tcp',
                     'portal': info['target_portal'],
                     'target': info['target_iqn'],
                     'lun': info['target_lun'],
                     'user': info['auth_username'],
                     'password-secret': 'sec-' + node,
                     'initiator-name': self.initiator}}
        return secret, blockdev

    def qemu_args(self, guest_dir, node):
        secret, blockdev = self._parts(guest_dir, node)
        secret = ','.join('%s=%s' % kv for kv in secret.items())
        return ['-object', 'secret,' + secret,
                '-blockdev', json.dumps(blockdev),
                '-device', 'virtio-blk-pci,drive=%s' % node]

    def plug(self, guest, node):
        secret, blockdev = self._parts(guest.dir, node)
        guest.qmp('object-add', **{'qom-type': 'secret'}, **secret)
        guest.qmp('blockdev-add', **blockdev)
        guest.qmp('device_add', driver='virtio-blk-pci', drive=node,
                  id='dev-' + node)


class RbdDisk:
    """A volume on RBD, opened by QEMU's rbd driver (librbd) with the
    attachment's cephx key: the keyring in a file only its owner reads
    and a ceph.conf naming the monitors, both from the connection_info."""

    def __init__(self, info, read_only=False):
        self.info = info
        self.read_only = read_only

    def _parts(self, guest_dir, node):
        info = self.info
        user = info['auth_username']
        keyring = os.path.join(guest_dir, 'keyring-' + node)
        fd = os.open(keyring, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(info['keyring'])
        conf = os.path.join(guest_dir, 'ceph-%s.conf' % node)
        with open(conf, 'w') as f:
            f.write('[global]\nmon_host = %s\nkeyring = %s\n'
                    'admin_socket =\nlog_file =\n' % (
                        ','.join('[v1:%s:%s]' % hp for hp in zip(
                            info['hosts'], info['ports'])), keyring))
        pool, _, image = info['name'].partition('/')
        # cache.direct: QEMU then turns librbd's cache off, so that a
        # write the guest sees acknowledged is on the OSDs (with the
        # cache, a refused write is acknowledged and fails at a flush)
        return {'driver': 'raw', 'node-name': node,
                'read-only': self.read_only,
                'cache': {'direct': True},
                'file': {'driver': 'rbd', 'pool': pool, 'image': image,
                         'user': user, 'conf': conf,
                         'cache': {'direct': True}}}

    def qemu_args(self, guest_dir, node):
        return ['-blockdev', json.dumps(self._parts(guest_dir, node)),
                '-device', 'virtio-blk-pci,drive=%s' % node]

    def plug(self, guest, node):
        guest.qmp('blockdev-add', **self._parts(guest.dir, node))
        guest.qmp('device_add', driver='virtio-blk-pci', drive=node,
                  id='dev-' + node)


def disk(info, connector, read_only=False):
    """The Disk for an attachment's ``info`` (its driver_volume_type),
    as the host of ``connector`` would open it."""
    kind = info.get('driver_volume_type', 'nbd')
    if kind == 'iscsi':
        return IscsiDisk(info, connector['initiator'], read_only)
    if kind == 'nbd':
        return NbdDisk(info, read_only)
    if kind == 'rbd':
        return RbdDisk(info, read_only)
    raise ValueError('guests open nbd, iscsi and rbd volumes, not %s'
                     % kind)


# -- roles -----------------------------------------------------------------

def writer_role(tag, count, interval=0.1, first=1, device='/dev/vda'):
    """Write records ``<tag> <n>`` to sectors first..first+count-1 of
    ``device``, one every ``interval`` s, each flushed to the disk (dd's
    fsync: busybox's ``oflag=direct`` falls back to the page cache for a
    buffer it cannot align, and a write that fails there would be
    reported only later); print ``ACK <tag> <n>`` after each write the
    disk acknowledged and ``FAIL <tag> <n>`` after each it refused.
    ``first``: a number, or a shell expression the role evaluates when it
    gets there."""
    return '''
i=%(first)s
end=$((i + %(count)d))
while [ $i -lt $end ]; do
  printf '%(tag)s %%010d\\n' $i > /tmp/record
  if dd if=/tmp/record of=%(device)s bs=512 seek=$i count=1 \\
       conv=sync,notrunc,fsync oflag=direct 2>/tmp/err; then
    echo "ACK %(tag)s $i"
  else
    echo "FAIL %(tag)s $i $(head -n 1 /tmp/err)"
  fi
  i=$((i + 1))
  sleep %(interval)s
done
''' % {'tag': tag, 'count': count, 'interval': interval, 'first': first,
       'device': device}


def last_record(sectors, device='/dev/vda'):
    """Shell: ``$last`` := the last record on sectors 1..``sectors`` of
    ``device`` (direct I/O), ``$next`` := the sector after it."""
    # the page cache is dropped first: what is read is the disk's
    return '''
echo 3 > /proc/sys/vm/drop_caches
dd if=%(device)s of=/tmp/disk bs=512 skip=1 count=%(sectors)d \\
   iflag=direct 2>/dev/null
last=$(tr -d '\\000' < /tmp/disk | tail -n 1)
n=$(echo "$last" | sed 's/^[A-Z] 0*//')
next=$(( ${n:-0} + 1 ))
''' % {'sectors': sectors, 'device': device}


def passive_role(sectors, count, interval=0.1):
    """The passive node: watch /dev/vda (read-only) and print ``SEEN
    <record>`` until a second disk, the read-write one a takeover gives,
    is plugged in; then print ``TOOK OVER <last record>`` and write
    ``count`` records ``B <n>`` on it after the last one found."""
    # each look at the read-only disk runs in the background: a takeover
    # ends that disk's session, and a read on it may then wait for good
    # (an initiator logging in again to a target that is gone)
    return '''
pid=
while [ ! -b /dev/vdb ]; do
  if [ -z "$pid" ] || ! kill -0 $pid 2>/dev/null; then
    (
%(watch)s
    echo "SEEN $last"
    ) &
    pid=$!
  fi
  sleep %(interval)s
done
%(found)s
echo "TOOK OVER $last"
%(write)s
''' % {'watch': last_record(sectors), 'interval': interval,
       'found': last_record(sectors, '/dev/vdb'),
       'write': writer_role('B', count, interval, first='$next',
                            device='/dev/vdb')}


def standby_role(sectors, count, interval=0.1):
    """The passive node of a cluster that Pacemaker fences: its disk is
    read-write at the target (a multi-writer volume) but held read-only
    by its own kernel (``blockdev --setro``) while the other node is
    active; it prints ``SEEN <record>`` as it watches, until its cluster
    manager tells it (a line on /dev/ttyS1) that the other node is
    fenced.  Then it makes the disk writable, prints ``TOOK OVER <last
    record>`` and writes ``count`` records ``B <n>`` after it."""
    # ttyS1 is opened before the first look, so that what the cluster
    # manager sends once B has seen A is read, not flushed by the open
    return '''
blockdev --setro /dev/vda
exec 3< /dev/ttyS1
stty -echo <&3 2>/dev/null
(
while true; do
%(watch)s
  echo "SEEN $last"
  sleep %(interval)s
done
) &
watcher=$!
read go <&3
kill $watcher
blockdev --setrw /dev/vda
%(found)s
echo "TOOK OVER $last"
%(write)s
''' % {'watch': last_record(sectors), 'interval': interval,
       'found': last_record(sectors),
       'write': writer_role('B', count, interval, first='$next')}


def reader_role(sectors, until=None, rounds=600, interval=0.1):
    """Read sectors 1..``sectors`` of /dev/vda with direct I/O and print
    the last record found as ``SEEN <record>``, once a round, until a
    record equal to ``until`` appears (or ``rounds`` rounds); then
    ``FOUND yes`` or ``FOUND no``, and the role goes on with what
    follows."""
    return '''
r=0
found=no
while [ $r -lt %(rounds)d ]; do
  echo 3 > /proc/sys/vm/drop_caches
  dd if=/dev/vda of=/tmp/disk bs=512 skip=1 count=%(sectors)d \\
     iflag=direct 2>/dev/null
  last=$(tr -d '\\000' < /tmp/disk | tail -n 1)
  echo "SEEN $last"
  if [ -n "%(until)s" ] && [ "$last" = "%(until)s" ]; then
    found=yes
    break
  fi
  r=$((r + 1))
  sleep %(interval)s
done
echo "FOUND $found"
''' % {'sectors': sectors, 'until': until or '', 'rounds': rounds,
       'interval': interval}


def acknowledged(guest, tag):
    """(time, n) of each write of ``tag`` the guest's disk acknowledged."""
    out = []
    for when, line in list(guest.lines):
        parts = line.split()
        if len(parts) >= 3 and parts[0] == 'ACK' and parts[1] == tag:
            out.append((when, int(parts[2])))
    return out


def refused(guest, tag):
    """(time, n, reason) of each write of ``tag`` the disk refused."""
    out = []
    for when, line in list(guest.lines):
        parts = line.split(None, 3)
        if len(parts) >= 3 and parts[0] == 'FAIL' and parts[1] == tag:
            out.append((when, int(parts[2]),
                        parts[3] if len(parts) > 3 else ''))
    return out


def read_records(s, volume_id, sectors):
    """``records`` of a volume as a third host (``c``) reads it through a
    read-only attachment of its own, whatever the backend."""
    host = dp.attacher(s, 'c')
    attachment, device = host.attach_device(volume_id, mode='ro')
    try:
        data = device.read(512, 512 * sectors)
    finally:
        host.detach(attachment['id'], device)
    found = {}
    for sector in range(1, sectors + 1):
        chunk = data[(sector - 1) * 512:sector * 512].rstrip(b'\0')
        text = chunk.decode(errors='replace').strip()
        if text:
            found[sector] = text
    return found


def records(path, sectors):
    """The records on sectors 1..``sectors`` of the volume file at
    ``path``: {sector: record}."""
    found = {}
    with open(path, 'rb') as f:
        for sector in range(1, sectors + 1):
            f.seek(sector * 512)
            data = f.read(512).rstrip(b'\0').decode(errors='replace')
            if data.strip():
                found[sector] = data.strip()
    return found


# -- the active/passive cluster ---------------------------------------------

SINGLE_WRITER = {'multiattach': '<is> True', 'mode': 'RO'}
SHARED = {'multiattach': '<is> True'}
FENCE_REASON = 'heartbeat of node a lost'


def fence_agent():
    """The path of this checkout's ``fence_cinder_lite`` (the console
    script next to the Python that runs us)."""
    path = os.path.join(os.path.dirname(sys.executable),
                        'fence_cinder_lite')
    if not os.path.exists(path):
        raise RuntimeError('%s is not installed (pip install -e .)' % path)
    return path


def fence(s, action, host, volume_id, reason=None):
    """Run ``fence_cinder_lite`` as pacemaker-fenced does (options on
    stdin) against stack ``s``: (exit code, stdout, stderr)."""
    options = {'action': action, 'port': host, 'volume': volume_id,
               'endpoint': s.url + '/v3', 'login': 'pacemaker',
               'project_id': stack_mod.PROJECT}
    if reason:
        options['reason'] = reason
    text = ''.join('%s=%s\n' % kv for kv in options.items())
    done = subprocess.run([fence_agent()], input=text, text=True,
                          capture_output=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


class ActivePassive:
    """What one ``active_passive`` run saw: (time, n) of the writes each
    guest's disk acknowledged, (time, n, why) of those A's refused, the
    records on the volume afterwards, and the moments of the run
    (``times``: paused, asked, answered, plugged, took, resumed; for a
    fence, "plugged" is when B's cluster manager told B to go)."""

    def __init__(self, protocol, detection, via='takeover'):
        self.protocol = protocol
        self.detection = detection
        self.via = via
        self.times = {}
        self.acked_before = []
        self.a_acks = self.b_acks = self.a_refused = self.b_refused = []
        self.on_disk = {}
        self.a_console = self.b_console = ''
        self.writer_attachment = self.reader_attachment = None
        self.fence_status = None

    def lost(self):
        """A's acknowledged writes missing from the volume."""
        return [n for _, n in self.a_acks
                if self.on_disk.get(n) != 'A %010d' % n]

    def a_after(self):
        """Records of A on the volume at or after B's first."""
        first = self.b_acks[0][1]
        return [n for n, r in self.on_disk.items() if r.startswith('A ')
                and n >= first]

    def gap(self):
        """From A's last acknowledged write to B's first, less the time
        B's host took to decide that A was gone."""
        return (self.b_acks[0][0] - self.acked_before[-1][0]
                - self.detection)

    def summary(self):
        t = self.times
        if self.via == 'fence':
            steps = ('fence_cinder_lite off %.2f s (process included), B '
                     'told %.2f s later, B has its disk writable %.2f s '
                     'later' % (t['answered'] - t['asked'],
                                t['plugged'] - t['answered'],
                                t['took'] - t['plugged']))
        else:
            steps = ('takeover request %.2f s, plug %.2f s, B sees its '
                     'disk %.2f s later' % (t['answered'] - t['asked'],
                                            t['plugged'] - t['answered'],
                                            t['took'] - t['plugged']))
        return ('%s %s seen by guests: A last acknowledged write -> '
                'B first write %.2f s beyond a %.1f s detection (%s, '
                'first write %.2f s later); A writes lost %d of %d; A '
                'writes after B took over %d (refused %d)' % (
                    self.protocol, self.via, self.gap(), self.detection,
                    steps, self.b_acks[0][0] - t['took'],
                    len(self.lost()), len(self.a_acks), len(self.a_after()),
                    len(self.a_refused)))


def _type(api, name, specs):
    if not any(t['name'] == name for t in api.get('/types').json()[
            'volume_types']):
        api.create_type(name, specs)


def active_passive(s, start, sectors=400, b_writes=20, detection=1.0,
                   via='takeover'):
    """The multi-attach blueprint's cluster on stack ``s`` (a file backend
    exporting over NBD or iSCSI, or RBD): guest A writes, guest B
    watches; A hangs (SIGSTOP of its QEMU), B's host sees no record of
    A's for ``detection`` s and takes over, and B writes ``b_writes``
    records; then A is let go.  ``start(name, role, disks, **kw)``
    starts a guest (``kw`` for ``Guest``).

    ``via='takeover'``: a single-writer volume, B's attachment read-only;
    B's host takes over (os-takeover) and plugs the read-write disk the
    answer describes into B.  The old writer's attachment is gone
    afterwards (the takeover ended it).

    ``via='fence'``: the Pacemaker way.  A multi-writer volume, both
    attachments read-write, B's kernel holding its disk read-only while
    passive; B's cluster manager runs ``fence_cinder_lite`` ``off``
    against A's host as pacemaker-fenced does, and once it exited 0 tells
    B to go: B's kernel makes the disk writable.  A's attachment stays
    (fenced: cut at the target, ``status`` says off); it is detached
    afterwards, as an operator does with a dead node's.

    B's attachment is detached at the end."""
    api = s.client()
    protocol = ('rbd' if 'rbd' in s.backends else 'iscsi'
                if hasattr(s, 'tgt_control') else 'nbd')
    if via not in ('takeover', 'fence'):
        raise ValueError('via takeover or fence, not %r' % via)
    run = ActivePassive(protocol, detection, via)
    fenced = via == 'fence'
    kind = 'shared' if fenced else 'single'
    _type(api, kind, SHARED if fenced else SINGLE_WRITER)
    vid = api.create_volume(volume_type=kind)['id']
    ha, hb = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    w_att = ha.attach(vid, str(uuid.uuid4()))
    r_att = hb.attach(vid, str(uuid.uuid4()))
    run.writer_attachment, run.reader_attachment = w_att['id'], r_att['id']
    assert (w_att['attach_mode'], r_att['attach_mode']) == (
        'rw', 'rw' if fenced else 'ro')
    a = start('a', writer_role('A', sectors - 100),
              [disk(w_att['connection_info'], ha.connector)])
    if fenced:
        b = start('b', standby_role(sectors, b_writes),
                  [disk(r_att['connection_info'], hb.connector)],
                  control=True)
    else:
        b = start('b', passive_role(sectors, b_writes),
                  [disk(r_att['connection_info'], hb.connector, True)])
    try:
        a.wait_line('ACK A 10', 180)
        b.wait_line('SEEN A ', 120)
        a.pause()
        run.times['paused'] = paused = time.monotonic()
        # B's cluster manager: A's heartbeat (its records) is stale once
        # none came for ``detection`` s
        util.wait_for(lambda: time.monotonic() - max(
            [paused] + [t for t, _ in acknowledged(a, 'A')]) >= detection,
            30, what='stale heartbeat of A')
        run.acked_before = acknowledged(a, 'A')
        run.times['asked'] = time.monotonic()
        if fenced:
            code, out, err = fence(s, 'off', ha.connector['host'], vid,
                                   FENCE_REASON)
            run.times['answered'] = time.monotonic()
            assert (code, out) == (0, 'Success: Powered OFF\n'), \
                (code, err)
            b.tell('fenced')
        else:
            taken = hb.transport.takeover(r_att['id'])
            run.times['answered'] = time.monotonic()
            assert taken['attach_mode'] == 'rw', taken
            disk(taken['connection_info'], hb.connector).plug(b, 'rw')
        run.times['plugged'] = time.monotonic()
        run.times['took'], _line = b.wait_line('TOOK OVER', 120)
        util.wait_for(lambda: len(acknowledged(b, 'B')) == b_writes, 180,
                      what='%d writes of B' % b_writes)
        a.resume()
        run.times['resumed'] = time.monotonic()
        if protocol in ('nbd', 'rbd'):
            # the export A had is gone (RBD: A's client is blocklisted):
            # QEMU fails the requests and the guest's kernel reports
            # I/O errors
            util.wait_for(lambda: len(refused(a, 'A')) >= 3, 120,
                          what='A refused')
        else:
            # the session A had is ended, its CHAP account deleted and
            # its initiator off the ACL (by the takeover or the fence
            # alike): QEMU's iSCSI driver (libiscsi) tries to log in
            # again, is refused,
            # and keeps the guest's requests waiting (it tries again
            # every second or two: a write let in would be acknowledged
            # well within this)
            time.sleep(5)
        run.times['end'] = time.monotonic()
    finally:
        a.stop()
        run.a_console, run.b_console = a.text(), b.text()
    run.a_acks, run.a_refused = acknowledged(a, 'A'), refused(a, 'A')
    run.b_acks, run.b_refused = acknowledged(b, 'B'), refused(b, 'B')
    b.stop()
    if fenced:
        run.fence_status = fence(s, 'status', ha.connector['host'], vid)
        ha.detach(w_att['id'])
    hb.detach(r_att['id'])
    run.on_disk = read_records(s, vid, sectors)
    return run


def timeline_svg(run, path):
    """Draw ``run`` as an SVG timeline: A's acknowledged writes, the
    hang, the takeover, B's writes, A's refused writes."""
    t0 = min([t for t, _ in run.a_acks] + [run.times['paused']])
    end = run.times['end']
    width, left, right = 960, 120, 20
    scale = (width - left - right) / max(end - t0, 1e-3)

    def x(t):
        return left + (t - t0) * scale
    rows = {'A writes': 60, 'B writes': 120}
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" '
           'height="230" font-family="sans-serif" font-size="13">' % width,
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="24" font-size="15" font-weight="bold">'
           'Active/passive %s seen by two guest kernels (%s)</text>'
           % ('takeover by fence_cinder_lite off' if run.via == 'fence'
              else 'takeover', run.protocol)]
    for label, y in rows.items():
        out.append('<text x="10" y="%d">%s</text>' % (y + 4, label))
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#ccc"/>'
                   % (left, width - right, y, y))
    for t, _n in run.a_acks:
        out.append('<circle cx="%.1f" cy="60" r="3" fill="#1f6fb2"/>'
                   % x(t))
    for t, _n, _why in run.a_refused:
        out.append('<text x="%.1f" y="65" fill="#c0392b" '
                   'text-anchor="middle" font-weight="bold">x</text>' % x(t))
    for t, _n in run.b_acks:
        out.append('<circle cx="%.1f" cy="120" r="3" fill="#27ae60"/>'
                   % x(t))
    marks = [('paused', 'A hangs'),
             ('asked', 'fence off' if run.via == 'fence'
              else 'takeover asked'),
             ('took', 'B has its disk'), ('resumed', 'A wakes')]
    for i, (key, label) in enumerate(marks):
        xx = x(run.times[key])
        out.append('<line x1="%.1f" x2="%.1f" y1="40" y2="140" '
                   'stroke="#888" stroke-dasharray="4,3"/>' % (xx, xx))
        out.append('<text x="%.1f" y="%d" text-anchor="middle" '
                   'fill="#444">%s</text>' % (xx, 160 + 16 * (i % 2), label))
    out.append('<text x="10" y="215" fill="#444">%s</text>' % (
        'A: %d writes acknowledged, %d lost, %d after B took over, %d '
        'refused at the target; B: %d writes; %.2f s from A\'s last write '
        'to B\'s first beyond %.1f s detection' % (
            len(run.a_acks), len(run.lost()), len(run.a_after()),
            len(run.a_refused), len(run.b_acks), run.gap(),
            run.detection)))
    out.append('</svg>')
    with open(path, 'w') as f:
        f.write('\n'.join(out) + '\n')
    return path
