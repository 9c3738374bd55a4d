"""The NBD client of a compute node (and of a target probing its own
exports): libnbd, the NBD project's client library, through its Python
bindings, speaking TLS with a pre-shared key.

Every export of the NBD target requires TLS with the key of its
attachment (targets/nbd.py).  Python 3.11's ``ssl`` has no TLS-PSK (it
comes with 3.13), so the hand-written protocol client connector/nbd.py held
before cannot speak it; libnbd does (GnuTLS underneath), and it is what
nbdinfo, nbdcopy and nbdsh are built on.

The bindings are Debian's ``python3-libnbd``: ``nbd.py`` and the
extension ``libnbdmod`` in the system's dist-packages, not on PyPI.
``bindings()`` imports exactly those two files into this interpreter
(common/system_bindings.py), and says what is missing otherwise.
"""
import errno
import os
import shutil
import socket
import tempfile
import threading
import time

from cinder_lite.common import system_bindings


class NbdError(OSError):
    """An error of the handshake (TLS refused, export name refused) or of
    a command; ``errno`` is the server's error code for command failures
    (EPERM for a write to a read-only export)."""


def bindings():
    """libnbd's Python module ``nbd``."""
    try:
        # nbd.py imports the extension libnbdmod: loaded first
        system_bindings.load('libnbdmod', 'python3-libnbd')
        return system_bindings.load(
            'nbd', 'python3-libnbd',
            accept=lambda module: hasattr(module, 'TLS_REQUIRE'))
    except system_bindings.BindingMissing as e:
        raise NbdError(errno.ENOSYS, str(e)) from None


def _close(h):
    """Close a handle (and its socket) now.  libnbd 1.14's NBD has no
    close(): its ``__del__`` closes the handle, and does nothing once
    ``_o`` is gone, so a garbage collection later does not close twice."""
    if hasattr(h, 'close'):
        h.close()
    elif hasattr(h, '_o'):
        h.__del__()
        del h._o


def psk_line(identity, key):
    """One line of a PSK file as nbdkit, libnbd and QEMU read it."""
    return '%s:%s\n' % (identity, key)


class NbdClient:
    """One connection to an export.  With ``tls_identity`` and
    ``tls_key`` (hex digits) it requires TLS with that pre-shared key;
    without, it speaks plain NBD (which our targets refuse)."""

    def __init__(self, host, port, export_name='', timeout=30,
                 source_address=None, tls_identity=None, tls_key=None):
        self.host = host
        self.port = int(port)
        self.export_name = export_name
        self.timeout = timeout
        self.source_address = source_address
        self.tls_identity = tls_identity
        self.tls_key = tls_key
        self.size = None
        self.read_only = None
        self._nbd = bindings()
        self._h = None
        self._lock = threading.Lock()

    # -- connection ------------------------------------------------------------
    def connect(self):
        nbd = self._nbd
        deadline = time.monotonic() + self.timeout
        try:
            sock = socket.create_connection(
                (self.host, self.port), timeout=self.timeout,
                source_address=(self.source_address, 0)
                if self.source_address else None)
        except OSError as e:
            raise NbdError(e.errno or errno.ECONNREFUSED,
                           'cannot reach %s:%d: %s' % (self.host, self.port,
                                                       e))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        h = nbd.NBD()
        keydir = None
        try:
            if self.tls_key:
                # libnbd reads the key from a file: one of this process,
                # in a directory only it can open, gone once connected
                keydir = tempfile.mkdtemp(prefix='nbd-psk-')
                keyfile = os.path.join(keydir, 'keys.psk')
                fd = os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                             0o600)
                with os.fdopen(fd, 'w') as f:
                    f.write(psk_line(self.tls_identity, self.tls_key))
                h.set_tls(nbd.TLS_REQUIRE)
                h.set_tls_psk_file(keyfile)
                h.set_tls_username(self.tls_identity)
            else:
                h.set_tls(nbd.TLS_DISABLE)
            h.set_export_name(self.export_name)
            # writes to a read-only export go to the server, which
            # refuses them: the target decides, not this client
            h.set_strict_mode(h.get_strict_mode() & ~nbd.STRICT_COMMANDS)
            h.aio_connect_socket(sock.detach())
            while not h.aio_is_ready():
                if h.aio_is_dead() or h.aio_is_closed():
                    raise NbdError(errno.ECONNRESET, 'connection to '
                                   '%s:%d ended in the handshake'
                                   % (self.host, self.port))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise NbdError(errno.ETIMEDOUT, 'no NBD handshake with '
                                   '%s:%d in %ss' % (self.host, self.port,
                                                     self.timeout))
                h.poll(max(1, int(left * 1000)))
            self.size = h.get_size()
            self.read_only = bool(h.is_read_only())
        except nbd.Error as e:
            _close(h)
            raise NbdError(e.errnum or errno.EPROTO,
                           'NBD export %r at %s:%d: %s' % (
                               self.export_name, self.host, self.port,
                               e.string))
        except BaseException:
            _close(h)
            raise
        finally:
            if keydir:
                shutil.rmtree(keydir, ignore_errors=True)
        self._h = h
        return self

    def close(self):
        if self._h is None:
            return
        try:
            self._h.shutdown()
        except self._nbd.Error:
            pass
        _close(self._h)
        self._h = None

    def __enter__(self):
        return self.connect()

    def __exit__(self, *exc):
        self.close()

    # -- I/O -------------------------------------------------------------------
    def read(self, offset, length):
        return bytes(self._do(self._h.pread, length, offset))

    def write(self, offset, data):
        """Sent even to a read-only export: the server, not this client,
        decides."""
        self._do(self._h.pwrite, bytes(data), offset)

    def flush(self):
        self._do(self._h.flush)

    def _do(self, call, *args):
        if self._h is None:
            raise NbdError(errno.ENOTCONN, 'not connected')
        with self._lock:
            try:
                return call(*args)
            except self._nbd.Error as e:
                raise NbdError(e.errnum or errno.EIO, e.string)


def opens(host, port, export_name, identity, key, timeout=2.0):
    """Whether the key of ``identity`` opens ``export_name`` at
    host:port (a full TLS handshake and NBD_OPT_GO): True; False when the
    server refuses it or nothing listens there; None when it cannot be
    told (no answer in ``timeout``, no libnbd here)."""
    try:
        client = NbdClient(host, port, export_name, timeout=timeout,
                           tls_identity=identity, tls_key=key)
        client.connect()
    except NbdError as e:
        if e.errno in (errno.ETIMEDOUT, errno.ENOSYS):
            return None
        return False
    client.close()
    return True
