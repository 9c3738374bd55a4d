"""A small NBD client (fixed-newstyle handshake, NBD_OPT_GO, simple
replies): enough to read, write and flush an export from a compute node
where the kernel has no NBD driver.

PyPI has no maintained pure-Python NBD client, and the libnbd binding is
tied to the system Python; the protocol subset needed here is small.
"""
import errno
import os
import socket
import struct
import threading

NBDMAGIC = b'NBDMAGIC'
IHAVEOPT = 0x49484156454F5054
OPT_REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698

FLAG_FIXED_NEWSTYLE = 1
FLAG_NO_ZEROES = 2
OPT_GO = 7
REP_ACK = 1
REP_INFO = 3
INFO_EXPORT = 0
REP_ERROR_BIT = 1 << 31

CMD_READ = 0
CMD_WRITE = 1
CMD_DISC = 2
CMD_FLUSH = 3

TFLAG_READ_ONLY = 2
TFLAG_SEND_FLUSH = 4


class NbdError(OSError):
    """An error the server or the handshake reported; ``errno`` is the
    server's error code for command failures (EPERM for a write to a
    read-only export)."""


class NbdClient:

    def __init__(self, host, port, export_name='', timeout=30,
                 source_address=None):
        self.host = host
        self.port = int(port)
        self.export_name = export_name
        self.timeout = timeout
        self.source_address = source_address
        self.size = None
        self.flags = 0
        self._sock = None
        self._handle = 0
        self._lock = threading.Lock()

    # -- connection ------------------------------------------------------------
    def connect(self):
        sock = socket.create_connection(
            (self.host, self.port), timeout=self.timeout,
            source_address=(self.source_address, 0)
            if self.source_address else None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        try:
            self._handshake()
        except Exception:
            self._sock.close()
            self._sock = None
            raise
        return self

    def _handshake(self):
        magic, opt_magic, hflags = struct.unpack('>8sQH', self._recv(18))
        if magic != NBDMAGIC or opt_magic != IHAVEOPT or \
                not hflags & FLAG_FIXED_NEWSTYLE:
            raise NbdError(errno.EPROTO, 'not a fixed-newstyle NBD server')
        self._send(struct.pack('>I', FLAG_FIXED_NEWSTYLE |
                               (hflags & FLAG_NO_ZEROES)))
        name = self.export_name.encode()
        data = struct.pack('>I', len(name)) + name + struct.pack(
            '>HH', 1, INFO_EXPORT)
        self._send(struct.pack('>QII', IHAVEOPT, OPT_GO, len(data)) + data)
        while True:
            magic, _opt, rtype, length = struct.unpack('>QIII',
                                                       self._recv(20))
            payload = self._recv(length) if length else b''
            if magic != OPT_REPLY_MAGIC:
                raise NbdError(errno.EPROTO, 'bad option reply magic')
            if rtype & REP_ERROR_BIT:
                raise NbdError(errno.ENOENT,
                               'export %r refused: %s' % (
                                   self.export_name,
                                   payload.decode(errors='replace')))
            if rtype == REP_INFO and len(payload) >= 12:
                info, size, flags = struct.unpack('>HQH', payload[:12])
                if info == INFO_EXPORT:
                    self.size, self.flags = size, flags
            elif rtype == REP_ACK:
                break
        if self.size is None:
            raise NbdError(errno.EPROTO, 'server sent no export size')

    @property
    def read_only(self):
        return bool(self.flags & TFLAG_READ_ONLY)

    def close(self):
        if self._sock is None:
            return
        try:
            self._send(struct.pack('>IHHQQI', REQUEST_MAGIC, 0, CMD_DISC,
                                   self._next_handle(), 0, 0))
        except OSError:
            pass
        self._sock.close()
        self._sock = None

    def __enter__(self):
        return self.connect()

    def __exit__(self, *exc):
        self.close()

    # -- I/O -------------------------------------------------------------------
    def read(self, offset, length):
        return self._command(CMD_READ, offset, length, reply_len=length)

    def write(self, offset, data):
        """Send a write even to a read-only export: the server, not this
        client, decides."""
        self._command(CMD_WRITE, offset, len(data), payload=data)

    def flush(self):
        self._command(CMD_FLUSH, 0, 0)

    def _command(self, cmd, offset, length, payload=b'', reply_len=0):
        with self._lock:
            handle = self._next_handle()
            self._send(struct.pack('>IHHQQI', REQUEST_MAGIC, 0, cmd, handle,
                                   offset, length))
            if payload:
                self._send(payload)
            magic, error, got = struct.unpack('>IIQ', self._recv(16))
            if magic != SIMPLE_REPLY_MAGIC or got != handle:
                raise NbdError(errno.EPROTO, 'unexpected reply')
            if error:
                raise NbdError(error, os.strerror(error))
            return self._recv(reply_len) if reply_len else None

    def _next_handle(self):
        self._handle += 1
        return self._handle

    def _send(self, data):
        self._sock.sendall(data)

    def _recv(self, n):
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self._sock.recv_into(view[got:], n - got)
            if not k:
                raise NbdError(errno.ECONNRESET, 'server closed the '
                                                 'connection')
            got += k
        return buf
