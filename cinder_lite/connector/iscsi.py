"""A small userspace iSCSI initiator (RFC 7143): one session with one
connection, no digests, no authentication, one SCSI command at a time.

It is what a compute node without a kernel initiator needs to read, write
and flush a LUN: the login phase, SCSI Command / Data-In / R2T / Data-Out
/ Response PDUs, and logout.  Written in Python rather than bound to
libiscsi so that it can connect from a chosen local address (the host's
own address on a multi-homed machine) and needs nothing from the system.
"""
import errno
import os
import socket
import struct
import threading
import uuid

BHS_LEN = 48

# opcodes (initiator -> target)
OP_NOP_OUT = 0x00
OP_SCSI_CMD = 0x01
OP_LOGIN_REQ = 0x03
OP_DATA_OUT = 0x05
OP_LOGOUT_REQ = 0x06
# opcodes (target -> initiator)
OP_NOP_IN = 0x20
OP_SCSI_RSP = 0x21
OP_LOGIN_RSP = 0x23
OP_DATA_IN = 0x25
OP_LOGOUT_RSP = 0x26
OP_R2T = 0x31
OP_ASYNC = 0x32
OP_REJECT = 0x3F

IMMEDIATE = 0x40
FINAL = 0x80
RESERVED_TAG = 0xFFFFFFFF

STAGE_SECURITY = 0
STAGE_OPERATIONAL = 1
STAGE_FULL_FEATURE = 3

# SCSI
GOOD = 0x00
CHECK_CONDITION = 0x02
RESERVATION_CONFLICT = 0x18
SENSE_UNIT_ATTENTION = 0x6
SENSE_DATA_PROTECT = 0x7
SENSE_KEYS = {0x0: 'NO SENSE', 0x1: 'RECOVERED ERROR', 0x2: 'NOT READY',
              0x3: 'MEDIUM ERROR', 0x4: 'HARDWARE ERROR',
              0x5: 'ILLEGAL REQUEST', 0x6: 'UNIT ATTENTION',
              0x7: 'DATA PROTECT', 0xB: 'ABORTED COMMAND'}

# what this initiator offers at login; the target's answers are the result
RECEIVE_SEGMENT = 256 * 1024
OFFER = (('HeaderDigest', 'None'), ('DataDigest', 'None'),
         ('MaxConnections', '1'), ('InitialR2T', 'No'),
         ('ImmediateData', 'Yes'),
         ('MaxRecvDataSegmentLength', str(RECEIVE_SEGMENT)),
         ('MaxBurstLength', str(16 * 1024 * 1024 - 1024)),
         ('FirstBurstLength', str(256 * 1024)),
         ('DefaultTime2Wait', '0'), ('DefaultTime2Retain', '0'),
         ('MaxOutstandingR2T', '1'), ('DataPDUInOrder', 'Yes'),
         ('DataSequenceInOrder', 'Yes'), ('ErrorRecoveryLevel', '0'))
# RFC 7143 defaults for keys a target leaves out of its answer
DEFAULTS = {'InitialR2T': 'Yes', 'ImmediateData': 'Yes',
            'FirstBurstLength': '65536', 'MaxBurstLength': '262144',
            'MaxRecvDataSegmentLength': '8192'}

MAX_TRANSFER = 4 * 1024 * 1024   # bytes per SCSI command

# persistent reservation types (SPC-4 table 212)
PR_WRITE_EXCLUSIVE = 1
PR_EXCLUSIVE_ACCESS = 3
PR_WRITE_EXCLUSIVE_REGISTRANTS_ONLY = 5
PR_EXCLUSIVE_ACCESS_REGISTRANTS_ONLY = 6
PR_WRITE_EXCLUSIVE_ALL_REGISTRANTS = 7
PR_EXCLUSIVE_ACCESS_ALL_REGISTRANTS = 8
# PERSISTENT RESERVE OUT service actions
_PR_REGISTER = 0x00
_PR_RESERVE = 0x01
_PR_RELEASE = 0x02
_PR_CLEAR = 0x03
_PR_PREEMPT = 0x04
_PR_PREEMPT_AND_ABORT = 0x05
_PR_REGISTER_AND_IGNORE = 0x06


class IscsiError(OSError):
    """A login the target refused, a SCSI command it failed (``sense_key``,
    ``asc``, ``ascq`` set; errno EROFS for a write-protected LUN) or a
    broken session."""

    sense_key = asc = ascq = None


class ReservationConflict(IscsiError):
    """The target refused a command with RESERVATION CONFLICT: another
    host holds a persistent reservation that excludes this one (errno
    EBADE, as Linux reports it).  The session stays usable."""


def _pad(n):
    return (4 - n % 4) % 4


def _encode_keys(pairs):
    return b''.join(('%s=%s' % kv).encode() + b'\0' for kv in pairs)


def _decode_keys(data):
    keys = {}
    for item in data.split(b'\0'):
        if item:
            k, _, v = item.decode(errors='replace').partition('=')
            keys[k] = v
    return keys


def _lun_field(lun):
    """The 8-byte LUN of SAM's peripheral/flat addressing."""
    if lun < 256:
        return struct.pack('>BB6x', 0, lun)
    return struct.pack('>H6x', 0x4000 | lun)


def parse_sense(sense):
    """(key, asc, ascq) of fixed or descriptor format sense data."""
    if len(sense) < 2:
        return None, None, None
    code = sense[0] & 0x7F
    if code in (0x72, 0x73) and len(sense) >= 4:
        return sense[1] & 0x0F, sense[2], sense[3]
    if len(sense) >= 14:
        return sense[2] & 0x0F, sense[12], sense[13]
    return sense[2] & 0x0F if len(sense) > 2 else None, None, None


def settled(call, attempts=4):
    """Run ``call`` (a command of a session); a UNIT ATTENTION -- the
    target telling a new nexus, or one whose registrations or reservation
    changed -- is answered by asking again."""
    for _ in range(attempts - 1):
        try:
            return call()
        except ReservationConflict:
            raise
        except IscsiError as e:
            if e.sense_key != SENSE_UNIT_ATTENTION:
                raise
    return call()


def attachment_key(attachment_id):
    """The persistent-reservation key of an attachment: its id's first
    64 bits (never 0, which means "no key").  A host that registers with
    it (``connection_info['reservation_key']``) has its registration
    removed when the attachment ends."""
    return int(uuid.UUID(str(attachment_id)).hex[:16], 16) or 1


class IscsiSession:
    """One logged-in session to ``target_iqn`` at ``portal`` ("ip:port")
    as ``initiator``, using ``lun``."""

    def __init__(self, portal, target_iqn, lun, initiator, timeout=30,
                 source_address=None):
        host, _, port = portal.rpartition(':')
        self.address = (host.strip('[]'), int(port))
        self.target_iqn = target_iqn
        self.lun = int(lun)
        self.initiator = initiator
        self.timeout = timeout
        self.source_address = source_address
        self.block_size = None
        self.blocks = None
        self.read_only = None
        self.params = {}
        self._sock = None
        self._lock = threading.Lock()
        self._itt = 0
        self._cmdsn = 1
        self._exp_statsn = 0

    @property
    def size(self):
        return self.blocks * self.block_size

    # -- session -------------------------------------------------------------
    def connect(self):
        try:
            sock = socket.create_connection(
                self.address, timeout=self.timeout,
                source_address=(self.source_address, 0)
                if self.source_address else None)
        except OSError as e:
            raise IscsiError(e.errno or errno.ECONNREFUSED,
                             'cannot reach the portal %s:%d: %s'
                             % (self.address + (e,)))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        try:
            self._login()
            self._probe()
        except BaseException:
            # a command that failed may already have dropped the socket
            if self._sock is not None:
                self._sock.close()
                self._sock = None
            raise
        return self

    def _login(self):
        isid = b'\x80' + os.urandom(3) + b'\x00\x00'   # random ISID format
        stage = STAGE_SECURITY
        pairs = [('InitiatorName', self.initiator), ('SessionType', 'Normal'),
                 ('TargetName', self.target_iqn), ('AuthMethod', 'None')]
        answered = {}
        for _ in range(16):
            following = (STAGE_OPERATIONAL if stage == STAGE_SECURITY
                         else STAGE_FULL_FEATURE)
            data = _encode_keys(pairs)
            bhs = struct.pack(
                '>BBBBB3s6sHIHHII16x',
                OP_LOGIN_REQ | IMMEDIATE, FINAL | stage << 2 | following,
                0, 0, 0, len(data).to_bytes(3, 'big'), isid, 0,
                self._next_itt(), 0, 0, self._cmdsn, self._exp_statsn)
            self._send(bhs, data)
            rsp, payload = self._read_pdu()
            if rsp[0] & 0x3F != OP_LOGIN_RSP:
                raise IscsiError(errno.EPROTO, 'unexpected PDU 0x%02x '
                                 'during login' % rsp[0])
            status_class, detail = rsp[36], rsp[37]
            if status_class != 0:
                raise IscsiError(
                    errno.EACCES if status_class == 2 else errno.EIO,
                    'login to %s refused (status 0x%02x%02x%s)' % (
                        self.target_iqn, status_class, detail,
                        ': target not found or access denied'
                        if (status_class, detail) == (2, 3) else ''))
            statsn, exp_cmdsn = struct.unpack('>II', rsp[24:32])
            self._exp_statsn = statsn + 1
            self._cmdsn = exp_cmdsn
            answered.update(_decode_keys(payload))
            flags = rsp[1]
            if not flags & FINAL:
                pairs = []          # the target wants another round
                continue
            stage = flags & 0x03
            if stage == STAGE_FULL_FEATURE:
                break
            pairs = list(OFFER) if stage == STAGE_OPERATIONAL else []
        else:
            raise IscsiError(errno.EPROTO, 'login did not complete')
        params = dict(DEFAULTS)
        params.update(answered)
        self.params = params
        self._max_xmit = int(params['MaxRecvDataSegmentLength'])
        self._first_burst = int(params['FirstBurstLength'])
        self._immediate = params['ImmediateData'] == 'Yes'

    def _probe(self):
        """Clear the unit attention of a fresh nexus, then read the LUN's
        geometry and write-protect bit.  SPC allows these to a host that
        another host's reservation excludes; a target that refuses one
        anyway makes the connect fail with ReservationConflict (MODE
        SENSE refused leaves ``read_only`` unknown, None)."""
        for _ in range(3):
            try:
                self._scsi(bytes(6))               # TEST UNIT READY
                break
            except ReservationConflict:
                break
            except IscsiError as e:
                if e.sense_key != SENSE_UNIT_ATTENTION:
                    raise
        cap = self._scsi(struct.pack('>BB8xIBB', 0x9E, 0x10, 32, 0, 0),
                         read_len=32)              # READ CAPACITY (16)
        last_lba, self.block_size = struct.unpack('>QI', cap[:12])
        self.blocks = last_lba + 1
        try:
            header = self._scsi(bytes([0x1A, 0x08, 0x3F, 0, 4, 0]),
                                read_len=4)        # MODE SENSE (6)
        except ReservationConflict:
            self.read_only = None
            return
        self.read_only = bool(header[2] & 0x80) if len(header) > 2 else False

    def close(self):
        if self._sock is None:
            return
        try:
            with self._lock:
                bhs = struct.pack('>BB14xIHHII16x', OP_LOGOUT_REQ | IMMEDIATE,
                                  FINAL | 0, self._next_itt(), 0, 0,
                                  self._cmdsn, self._exp_statsn)
                self._send(bhs)
                self._read_pdu()
        except OSError:
            pass            # the session is going away either way
        finally:
            if self._sock is not None:
                self._sock.close()
                self._sock = None

    def __enter__(self):
        return self.connect()

    def __exit__(self, *exc):
        self.close()

    # -- block I/O ---------------------------------------------------------
    def read(self, offset, length):
        """``length`` bytes at ``offset``; any alignment."""
        bs = self.block_size
        first, end = offset // bs, -(-(offset + length) // bs)
        out = bytearray((end - first) * bs)
        view = memoryview(out)
        lba = first
        while lba < end:
            count = min(end - lba, MAX_TRANSFER // bs)
            at = (lba - first) * bs
            self._scsi(struct.pack('>BBQIBB', 0x88, 0, lba, count, 0, 0),
                       read_len=count * bs, into=view[at:at + count * bs])
            lba += count
        skip = offset - first * bs
        if skip == 0 and length == len(out):
            return out
        return bytes(view[skip:skip + length])

    def write(self, offset, data):
        """Write ``data`` at ``offset``; a partial block is read, patched
        and written back.  The write is sent whatever the LUN's
        write-protect bit says: the target decides."""
        data = bytes(data)
        bs = self.block_size
        head = offset % bs
        tail = -(offset + len(data)) % bs
        if head or tail:
            start = offset - head
            whole = bytearray(self.read(start, head + len(data) + tail))
            whole[head:head + len(data)] = data
            data, offset = bytes(whole), start
        view = memoryview(data)
        done = 0
        while done < len(data):
            n = min(len(data) - done, MAX_TRANSFER)
            self._scsi(struct.pack('>BBQIBB', 0x8A, 0, (offset + done) // bs,
                                   n // bs, 0, 0),
                       data_out=view[done:done + n])
            done += n

    def flush(self):
        self._scsi(bytes([0x35] + [0] * 9))        # SYNCHRONIZE CACHE (10)

    def discard(self, offset, length):
        """Unmap the whole blocks within [offset, offset+length): a thin
        LUN gives their space back."""
        bs = self.block_size
        first, end = -(-offset // bs), (offset + length) // bs
        while first < end:
            count = min(end - first, 0xFFFFFFFF)
            params = struct.pack('>HH4xQI4x', 6 + 16, 16, first, count)
            self._scsi(struct.pack('>B5xBHB', 0x42, 0, len(params), 0),
                       data_out=params)                  # UNMAP
            first += count

    # -- persistent reservations (SPC-4 6.15, 6.16) ---------------------------
    def read_keys(self):
        """(generation, [registered keys]) -- PERSISTENT RESERVE IN, READ
        KEYS."""
        data = self._scsi(struct.pack('>BB5xHB', 0x5E, 0x00, 8192, 0),
                          read_len=8192)
        generation, length = struct.unpack('>II', data[:8])
        keys = data[8:8 + length]
        return generation, [struct.unpack('>Q', keys[i:i + 8])[0]
                            for i in range(0, len(keys) - 7, 8)]

    def read_reservation(self):
        """(generation, holder's key, type), holder and type None when
        nothing is reserved -- PERSISTENT RESERVE IN, READ RESERVATION."""
        data = self._scsi(struct.pack('>BB5xHB', 0x5E, 0x01, 24, 0),
                          read_len=24)
        generation, length = struct.unpack('>II', data[:8])
        if length < 16 or len(data) < 24:
            return generation, None, None
        key = struct.unpack('>Q', data[8:16])[0]
        return generation, key, data[21] & 0x0F

    def _reserve_out(self, action, key=0, sa_key=0, rtype=0, aptpl=False):
        params = struct.pack('>QQ4xB3x', key, sa_key, 0x01 if aptpl else 0)
        self._scsi(struct.pack('>BBB2xIB', 0x5F, action, rtype & 0x0F,
                               len(params), 0), data_out=params)

    def register(self, key, old_key=0, aptpl=False):
        """Register ``key`` for this I_T nexus (``old_key`` its current
        one, 0 if none; ``key`` 0 unregisters)."""
        self._reserve_out(_PR_REGISTER, old_key, key, aptpl=aptpl)

    def register_and_ignore(self, key, aptpl=False):
        """Register ``key`` whatever this nexus had (0 unregisters)."""
        self._reserve_out(_PR_REGISTER_AND_IGNORE, 0, key, aptpl=aptpl)

    def reserve(self, key, rtype):
        self._reserve_out(_PR_RESERVE, key, rtype=rtype)

    def release(self, key, rtype):
        self._reserve_out(_PR_RELEASE, key, rtype=rtype)

    def clear(self, key):
        """Remove every registration and the reservation."""
        self._reserve_out(_PR_CLEAR, key)

    def preempt(self, key, victim, rtype):
        """Remove the registrations of ``victim`` (and take its
        reservation, as ``rtype``, if it held it)."""
        self._reserve_out(_PR_PREEMPT, key, victim, rtype)

    def preempt_and_abort(self, key, victim, rtype):
        """As ``preempt``, and the target aborts the victim's commands in
        flight: what fencing a failed node needs."""
        self._reserve_out(_PR_PREEMPT_AND_ABORT, key, victim, rtype)

    # -- commands ------------------------------------------------------------
    def _scsi(self, cdb, data_out=None, read_len=0, into=None):
        """Run one command.  Data-In lands in ``into`` (a writable
        memoryview of ``read_len`` bytes) when given, else the data read is
        returned."""
        with self._lock:
            if self._sock is None:
                raise IscsiError(errno.ENOTCONN, 'session is closed')
            buf = None
            if read_len and into is None:
                buf = bytearray(read_len)
                into = memoryview(buf)
            try:
                received = self._exchange(cdb, data_out, read_len, into)
                return bytes(buf[:received]) if buf is not None else None
            except socket.timeout:
                self._abandon()
                raise IscsiError(errno.ETIMEDOUT, 'the target did not '
                                 'answer within %ss' % self.timeout)
            except ReservationConflict:
                raise                              # the session is fine
            except IscsiError as e:
                if e.sense_key is None:
                    self._abandon()
                raise
            except OSError as e:
                self._abandon()
                raise IscsiError(e.errno or errno.EIO,
                                 'session lost: %s' % e)

    def _abandon(self):
        self._sock.close()
        self._sock = None

    def _exchange(self, cdb, data_out, read_len, into):
        itt = self._next_itt()
        flags = FINAL | 0x01                       # simple task attribute
        if read_len:
            flags |= 0x40
        total = 0
        immediate = b''
        if data_out is not None:
            flags |= 0x20
            total = len(data_out)
            if self._immediate:
                immediate = data_out[:min(self._first_burst, self._max_xmit)]
        else:
            total = read_len
        bhs = struct.pack('>BBxxB3s8sIIII16s', OP_SCSI_CMD, flags, 0,
                          len(immediate).to_bytes(3, 'big'),
                          _lun_field(self.lun), itt, total, self._cmdsn,
                          self._exp_statsn, cdb.ljust(16, b'\0'))
        self._cmdsn += 1
        self._send(bhs, immediate)
        received = 0
        while True:
            rsp, payload = self._read_pdu(into)
            op = rsp[0] & 0x3F
            if op == OP_NOP_IN:
                self._answer_nop(rsp)
                continue
            if op == OP_ASYNC:
                raise IscsiError(errno.ECONNRESET, 'the target ended the '
                                 'session (async event %d)' % rsp[36])
            if op == OP_REJECT:
                raise IscsiError(errno.EPROTO, 'the target rejected a PDU '
                                 '(reason 0x%02x)' % rsp[2])
            if struct.unpack('>I', rsp[16:20])[0] != itt:
                continue                           # a stale answer
            if op == OP_R2T:
                ttt, _r2tsn, where, length = struct.unpack('>I12xIII',
                                                           rsp[20:48])
                self._send_burst(itt, ttt, data_out, where, length)
            elif op == OP_DATA_IN:
                # _read_pdu put the payload in place
                received = max(received, payload)
                if rsp[1] & 0x01:                  # status is in this PDU
                    self._exp_statsn = struct.unpack('>I', rsp[24:28])[0] + 1
                    self._check_status(rsp[3], b'')
                    return received
            elif op == OP_SCSI_RSP:
                self._exp_statsn = struct.unpack('>I', rsp[24:28])[0] + 1
                if rsp[2] != 0:
                    raise IscsiError(errno.EIO, 'the target could not '
                                     'complete the command (response %d)'
                                     % rsp[2])
                sense = b''
                if len(payload) >= 2:
                    n = struct.unpack('>H', payload[:2])[0]
                    sense = payload[2:2 + n]
                self._check_status(rsp[3], sense)
                return received
            else:
                raise IscsiError(errno.EPROTO, 'unexpected PDU 0x%02x' % op)

    def _send_burst(self, itt, ttt, data_out, where, length):
        if data_out is None or where + length > len(data_out):
            raise IscsiError(errno.EPROTO, 'R2T for data that was not '
                             'offered')
        end = where + length
        datasn = 0
        while where < end:
            n = min(end - where, self._max_xmit)
            bhs = struct.pack('>BBxxB3s8sII4sI4sII4s', OP_DATA_OUT,
                              FINAL if where + n == end else 0, 0,
                              n.to_bytes(3, 'big'), _lun_field(self.lun),
                              itt, ttt, b'', self._exp_statsn, b'', datasn,
                              where, b'')
            self._send(bhs, data_out[where:where + n])
            where += n
            datasn += 1

    def _answer_nop(self, rsp):
        ttt = struct.unpack('>I', rsp[20:24])[0]
        if ttt == RESERVED_TAG:
            return                                 # no answer wanted
        self._send(struct.pack('>BBxxB3s8sIIII16x', OP_NOP_OUT | IMMEDIATE,
                               FINAL, 0, b'\0\0\0', rsp[8:16],
                               RESERVED_TAG, ttt, self._cmdsn,
                               self._exp_statsn))

    @staticmethod
    def _check_status(status, sense):
        if status == GOOD:
            return
        if status == RESERVATION_CONFLICT:
            raise ReservationConflict(
                errno.EBADE, 'RESERVATION CONFLICT: another host holds a '
                'persistent reservation of this LUN')
        if status != CHECK_CONDITION:
            raise IscsiError(errno.EIO, 'SCSI status 0x%02x' % status)
        key, asc, ascq = parse_sense(sense)
        err = IscsiError(
            errno.EROFS if key == SENSE_DATA_PROTECT else errno.EIO,
            'CHECK CONDITION: %s, ASC/ASCQ 0x%02x/0x%02x' % (
                SENSE_KEYS.get(key, 'sense key 0x%x' % (key or 0)),
                asc or 0, ascq or 0))
        err.sense_key, err.asc, err.ascq = key, asc, ascq
        raise err

    # -- PDUs --------------------------------------------------------------
    def _next_itt(self):
        self._itt = (self._itt + 1) % RESERVED_TAG
        return self._itt

    def _send(self, bhs, data=b''):
        if data:
            self._sock.sendall(bhs)
            self._sock.sendall(data)
            pad = _pad(len(data))
            if pad:
                self._sock.sendall(b'\0' * pad)
        else:
            self._sock.sendall(bhs)

    def _read_pdu(self, into=None):
        """(header, data) of the next PDU.  The data of a Data-In PDU is
        received straight into ``into`` at its buffer offset, and the end
        offset is returned in place of the data."""
        bhs = self._recv(BHS_LEN)
        ahs = bhs[4] * 4
        length = int.from_bytes(bhs[5:8], 'big')
        if ahs:
            self._recv(ahs)
        if bhs[0] & 0x3F == OP_DATA_IN:
            where = struct.unpack('>I', bhs[40:44])[0]
            if into is None or where + length > len(into):
                raise IscsiError(errno.EPROTO, 'Data-In beyond the '
                                 'expected transfer')
            self._recv_into(into[where:where + length])
            if _pad(length):
                self._recv(_pad(length))
            return bhs, where + length
        data = self._recv(length + _pad(length)) if length else b''
        return bhs, data[:length]

    def _recv(self, n):
        buf = bytearray(n)
        self._recv_into(memoryview(buf))
        return bytes(buf)

    def _recv_into(self, view):
        n = len(view)
        got = 0
        while got < n:
            k = self._sock.recv_into(view[got:], n - got)
            if not k:
                raise IscsiError(errno.ECONNRESET, 'the target closed the '
                                 'connection')
            got += k
