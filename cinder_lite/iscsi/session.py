"""One iSCSI session as an initiator: one connection, no digests, CHAP
(MD5, RFC 7143 section 12.1.3 / RFC 1994) or no authentication, one SCSI
command at a time.

What a compute node without a kernel initiator needs to read, write and
flush a LUN, and what the target's fencer needs to remove a departed
host's reservation key: the login phase, SCSI Command / Data-In / R2T /
Data-Out / Response PDUs, and logout.  Written in Python rather than bound
to libiscsi so that it can connect from a chosen local address (the
host's own address on a multi-homed machine) and needs nothing from the
system.
"""
import base64
import binascii
import errno
import hashlib
import os
import socket
import struct
import threading

from cinder_lite.iscsi import errors
from cinder_lite.iscsi import pdu
from cinder_lite.iscsi import pr
from cinder_lite.iscsi import scsi


class IscsiSession:
    """One logged-in session to ``target_iqn`` at ``portal`` ("ip:port")
    as ``initiator``, using ``lun``; ``chap`` (username, secret) logs in
    with CHAP, else with no authentication."""

    def __init__(self, portal, target_iqn, lun, initiator, timeout=30,
                 source_address=None, chap=None):
        host, _, port = portal.rpartition(':')
        self.address = (host.strip('[]'), int(port))
        self.target_iqn = target_iqn
        self.lun = int(lun)
        self.initiator = initiator
        self.timeout = timeout
        self.source_address = source_address
        self._chap_secret = chap
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
    def connect(self, probe=True):
        """Log in; with ``probe``, read the LUN's geometry too (without,
        the session is good only to tell that the login got in)."""
        try:
            sock = socket.create_connection(
                self.address, timeout=self.timeout,
                source_address=(self.source_address, 0)
                if self.source_address else None)
        except OSError as e:
            raise errors.IscsiError(e.errno or errno.ECONNREFUSED,
                                    'cannot reach the portal %s:%d: %s'
                                    % (self.address + (e,)))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        try:
            self._login()
            if probe:
                self._probe()
        except BaseException:
            # a command that failed may already have dropped the socket
            if self._sock is not None:
                self._sock.close()
                self._sock = None
            raise
        return self

    def _login(self):
        # a new session: a connect after a refused login starts afresh
        self._cmdsn, self._exp_statsn = 1, 0
        isid = b'\x80' + os.urandom(3) + b'\x00\x00'   # random ISID format
        names = [('InitiatorName', self.initiator),
                 ('SessionType', 'Normal'), ('TargetName', self.target_iqn)]
        answered = {}
        if self._chap_secret:
            stage = self._chap(isid, names, answered)
            pairs = list(pdu.OFFER)
        else:
            stage = pdu.STAGE_SECURITY
            pairs = names + [('AuthMethod', 'None')]
        for _ in range(16):
            if stage == pdu.STAGE_FULL_FEATURE:
                break
            following = (pdu.STAGE_OPERATIONAL
                         if stage == pdu.STAGE_SECURITY
                         else pdu.STAGE_FULL_FEATURE)
            flags, keys = self._login_exchange(isid, stage, following, pairs)
            answered.update(keys)
            if stage == pdu.STAGE_SECURITY and \
                    keys.get('AuthMethod', 'None') != 'None':
                raise errors.IscsiError(
                    errno.EACCES, 'login to %s refused: the target asks '
                    'for authentication (AuthMethod=%s) and the connection '
                    'info has no CHAP credentials'
                    % (self.target_iqn, keys['AuthMethod']))
            if not flags & pdu.FINAL:
                pairs = []          # the target wants another round
                continue
            stage = flags & 0x03
            pairs = list(pdu.OFFER) if stage == pdu.STAGE_OPERATIONAL \
                else []
        else:
            raise errors.IscsiError(errno.EPROTO, 'login did not complete')
        params = dict(pdu.DEFAULTS)
        params.update(answered)
        self.params = params
        self._max_xmit = int(params['MaxRecvDataSegmentLength'])
        self._first_burst = int(params['FirstBurstLength'])
        self._immediate = params['ImmediateData'] == 'Yes'

    def _login_exchange(self, isid, stage, following, pairs, transit=True):
        """One Login Request and its Response: (the response's flags,
        its keys); a refusal raises."""
        data = pdu.encode_keys(pairs)
        bhs = pdu.login_request(stage, following, len(data), isid,
                                self._next_itt(), self._cmdsn,
                                self._exp_statsn, transit=transit)
        self._send(bhs, data)
        rsp, payload = self._read_pdu()
        if rsp[0] & 0x3F != pdu.OP_LOGIN_RSP:
            raise errors.IscsiError(errno.EPROTO, 'unexpected PDU '
                                    '0x%02x during login' % rsp[0])
        status_class, detail = rsp[36], rsp[37]
        if status_class != 0:
            error = errors.IscsiError(
                errno.EACCES if status_class == 2 else errno.EIO,
                'login to %s refused (status 0x%02x%02x%s)' % (
                    self.target_iqn, status_class, detail,
                    _REFUSALS.get((status_class, detail), '')))
            error.login_status = (status_class, detail)
            raise error
        statsn, exp_cmdsn = struct.unpack('>II', rsp[24:32])
        self._exp_statsn = statsn + 1
        self._cmdsn = exp_cmdsn
        return rsp[1], pdu.decode_keys(payload)

    def _chap(self, isid, names, answered):
        """The security stage with CHAP (MD5, no mutual CHAP): offer
        CHAP, take the target's identifier and challenge, answer with our
        name and MD5(identifier, secret, challenge); returns the stage
        the target moves on to."""
        user, secret = self._chap_secret
        security, operational = pdu.STAGE_SECURITY, pdu.STAGE_OPERATIONAL
        _flags, keys = self._login_exchange(isid, security, operational,
                                      names + [('AuthMethod', 'CHAP')],
                                      transit=False)
        answered.update(keys)
        if keys.get('AuthMethod') != 'CHAP':
            raise errors.IscsiError(
                errno.EACCES, 'login to %s: the target does not take CHAP '
                '(AuthMethod=%s)' % (self.target_iqn,
                                     keys.get('AuthMethod')))
        _flags, keys = self._login_exchange(isid, security, operational,
                                      [('CHAP_A', '5')], transit=False)
        if keys.get('CHAP_A') != '5' or 'CHAP_I' not in keys or \
                'CHAP_C' not in keys:
            raise errors.IscsiError(
                errno.EPROTO, 'login to %s: the target offers no MD5 CHAP '
                'challenge (CHAP_A=%s)' % (self.target_iqn,
                                           keys.get('CHAP_A')))
        try:
            ident = int(keys['CHAP_I'], 0)
            challenge = _chap_binary(keys['CHAP_C'])
        except ValueError as e:
            raise errors.IscsiError(errno.EPROTO, 'login to %s: bad CHAP '
                                    'challenge: %s' % (self.target_iqn, e))
        if not 0 <= ident <= 255 or not challenge:
            raise errors.IscsiError(errno.EPROTO, 'login to %s: bad CHAP '
                                    'challenge' % self.target_iqn)
        digest = hashlib.md5(bytes([ident]) + secret.encode() +
                             challenge).hexdigest()
        flags, keys = self._login_exchange(isid, security, operational,
                                     [('CHAP_N', user),
                                      ('CHAP_R', '0x' + digest)])
        answered.update(keys)
        for _ in range(4):
            if flags & pdu.FINAL:
                return flags & 0x03
            flags, keys = self._login_exchange(isid, security,
                                               operational, [])
            answered.update(keys)
        raise errors.IscsiError(errno.EPROTO, 'login to %s: the target '
                                'did not leave the security stage'
                                % self.target_iqn)

    def _probe(self):
        """Clear the unit attention of a fresh nexus, then read the LUN's
        geometry and write-protect bit.  SPC allows these to a host that
        another host's reservation excludes; a target that refuses one
        anyway makes the connect fail with ReservationConflict (MODE
        SENSE refused leaves ``read_only`` unknown, None)."""
        for _ in range(3):
            try:
                self._scsi(scsi.test_unit_ready())
                break
            except errors.ReservationConflict:
                break
            except errors.IscsiError as e:
                if e.sense_key != scsi.SENSE_UNIT_ATTENTION:
                    raise
        cap = self._scsi(scsi.read_capacity_16(32), read_len=32)
        self.blocks, self.block_size = scsi.parse_capacity_16(cap)
        try:
            header = self._scsi(scsi.mode_sense_6(4), read_len=4)
        except errors.ReservationConflict:
            self.read_only = None
            return
        self.read_only = bool(header[2] & 0x80) if len(header) > 2 else False

    def close(self):
        if self._sock is None:
            return
        try:
            with self._lock:
                self._send(pdu.logout_request(self._next_itt(), self._cmdsn,
                                              self._exp_statsn))
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
            count = min(end - lba, scsi.MAX_TRANSFER // bs)
            at = (lba - first) * bs
            self._scsi(scsi.read_16(lba, count), read_len=count * bs,
                       into=view[at:at + count * bs])
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
            n = min(len(data) - done, scsi.MAX_TRANSFER)
            self._scsi(scsi.write_16((offset + done) // bs, n // bs),
                       data_out=view[done:done + n])
            done += n

    def flush(self):
        self._scsi(scsi.synchronize_cache_10())

    def discard(self, offset, length):
        """Unmap the whole blocks within [offset, offset+length): a thin
        LUN gives their space back."""
        bs = self.block_size
        first, end = -(-offset // bs), (offset + length) // bs
        while first < end:
            count = min(end - first, 0xFFFFFFFF)
            cdb, params = scsi.unmap(first, count)
            self._scsi(cdb, data_out=params)
            first += count

    # -- persistent reservations (SPC-4 6.15, 6.16) ---------------------------
    def read_keys(self):
        """(generation, [registered keys]) -- PERSISTENT RESERVE IN, READ
        KEYS."""
        return pr.parse_keys(self._scsi(
            pr.reserve_in(pr.READ_KEYS, pr.READ_KEYS_LENGTH),
            read_len=pr.READ_KEYS_LENGTH))

    def read_reservation(self):
        """(generation, holder's key, type), holder and type None when
        nothing is reserved -- PERSISTENT RESERVE IN, READ RESERVATION."""
        return pr.parse_reservation(self._scsi(
            pr.reserve_in(pr.READ_RESERVATION, pr.READ_RESERVATION_LENGTH),
            read_len=pr.READ_RESERVATION_LENGTH))

    def _reserve_out(self, action, key=0, sa_key=0, rtype=0, aptpl=False):
        cdb, params = pr.reserve_out(action, key, sa_key, rtype, aptpl)
        self._scsi(cdb, data_out=params)

    def register(self, key, old_key=0, aptpl=False):
        """Register ``key`` for this I_T nexus (``old_key`` its current
        one, 0 if none; ``key`` 0 unregisters)."""
        self._reserve_out(pr.REGISTER, old_key, key, aptpl=aptpl)

    def register_and_ignore(self, key, aptpl=False):
        """Register ``key`` whatever this nexus had (0 unregisters)."""
        self._reserve_out(pr.REGISTER_AND_IGNORE, 0, key, aptpl=aptpl)

    def reserve(self, key, rtype):
        self._reserve_out(pr.RESERVE, key, rtype=rtype)

    def release(self, key, rtype):
        self._reserve_out(pr.RELEASE, key, rtype=rtype)

    def clear(self, key):
        """Remove every registration and the reservation."""
        self._reserve_out(pr.CLEAR, key)

    def preempt(self, key, victim, rtype):
        """Remove the registrations of ``victim`` (and take its
        reservation, as ``rtype``, if it held it)."""
        self._reserve_out(pr.PREEMPT, key, victim, rtype)

    def preempt_and_abort(self, key, victim, rtype):
        """As ``preempt``, and the target aborts the victim's commands in
        flight: what fencing a failed node needs."""
        self._reserve_out(pr.PREEMPT_AND_ABORT, key, victim, rtype)

    # -- commands ------------------------------------------------------------
    def _scsi(self, cdb, data_out=None, read_len=0, into=None):
        """Run one command.  Data-In lands in ``into`` (a writable
        memoryview of ``read_len`` bytes) when given, else the data read is
        returned."""
        with self._lock:
            if self._sock is None:
                raise errors.IscsiError(errno.ENOTCONN, 'session is closed')
            buf = None
            if read_len and into is None:
                buf = bytearray(read_len)
                into = memoryview(buf)
            try:
                received = self._exchange(cdb, data_out, read_len, into)
                return bytes(buf[:received]) if buf is not None else None
            except socket.timeout:
                self._abandon()
                raise errors.IscsiError(errno.ETIMEDOUT, 'the target did '
                                        'not answer within %ss'
                                        % self.timeout)
            except errors.ReservationConflict:
                raise                              # the session is fine
            except errors.IscsiError as e:
                if e.sense_key is None:
                    self._abandon()
                raise
            except OSError as e:
                self._abandon()
                raise errors.IscsiError(e.errno or errno.EIO,
                                        'session lost: %s' % e)

    def _abandon(self):
        self._sock.close()
        self._sock = None

    def _exchange(self, cdb, data_out, read_len, into):
        itt = self._next_itt()
        flags = pdu.FINAL | 0x01                   # simple task attribute
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
        bhs = pdu.scsi_command(flags, len(immediate), self.lun, itt, total,
                               self._cmdsn, self._exp_statsn, cdb)
        self._cmdsn += 1
        self._send(bhs, immediate)
        received = 0
        while True:
            rsp, payload = self._read_pdu(into)
            op = rsp[0] & 0x3F
            if op == pdu.OP_NOP_IN:
                self._answer_nop(rsp)
                continue
            if op == pdu.OP_ASYNC:
                raise errors.IscsiError(errno.ECONNRESET, 'the target ended '
                                        'the session (async event %d)'
                                        % rsp[36])
            if op == pdu.OP_REJECT:
                raise errors.IscsiError(errno.EPROTO, 'the target rejected '
                                        'a PDU (reason 0x%02x)' % rsp[2])
            if struct.unpack('>I', rsp[16:20])[0] != itt:
                continue                           # a stale answer
            if op == pdu.OP_R2T:
                ttt, _r2tsn, where, length = struct.unpack('>I12xIII',
                                                           rsp[20:48])
                self._send_burst(itt, ttt, data_out, where, length)
            elif op == pdu.OP_DATA_IN:
                # _read_pdu put the payload in place
                received = max(received, payload)
                if rsp[1] & 0x01:                  # status is in this PDU
                    self._exp_statsn = struct.unpack('>I', rsp[24:28])[0] + 1
                    scsi.check_status(rsp[3], b'')
                    return received
            elif op == pdu.OP_SCSI_RSP:
                self._exp_statsn = struct.unpack('>I', rsp[24:28])[0] + 1
                if rsp[2] != 0:
                    raise errors.IscsiError(
                        errno.EIO, 'the target could not complete the '
                        'command (response %d)' % rsp[2])
                sense = b''
                if len(payload) >= 2:
                    n = struct.unpack('>H', payload[:2])[0]
                    sense = payload[2:2 + n]
                scsi.check_status(rsp[3], sense)
                return received
            else:
                raise errors.IscsiError(errno.EPROTO,
                                        'unexpected PDU 0x%02x' % op)

    def _send_burst(self, itt, ttt, data_out, where, length):
        if data_out is None or where + length > len(data_out):
            raise errors.IscsiError(errno.EPROTO, 'R2T for data that was '
                                    'not offered')
        end = where + length
        datasn = 0
        while where < end:
            n = min(end - where, self._max_xmit)
            bhs = pdu.data_out(where + n == end, n, self.lun, itt, ttt,
                               self._exp_statsn, datasn, where)
            self._send(bhs, data_out[where:where + n])
            where += n
            datasn += 1

    def _answer_nop(self, rsp):
        ttt = struct.unpack('>I', rsp[20:24])[0]
        if ttt == pdu.RESERVED_TAG:
            return                                 # no answer wanted
        self._send(pdu.nop_out(rsp[8:16], ttt, self._cmdsn,
                               self._exp_statsn))

    # -- PDUs --------------------------------------------------------------
    def _next_itt(self):
        self._itt = (self._itt + 1) % pdu.RESERVED_TAG
        return self._itt

    def _send(self, bhs, data=b''):
        if data:
            self._sock.sendall(bhs)
            self._sock.sendall(data)
            pad = pdu.pad(len(data))
            if pad:
                self._sock.sendall(b'\0' * pad)
        else:
            self._sock.sendall(bhs)

    def _read_pdu(self, into=None):
        """(header, data) of the next PDU.  The data of a Data-In PDU is
        received straight into ``into`` at its buffer offset, and the end
        offset is returned in place of the data."""
        bhs = self._recv(pdu.BHS_LEN)
        ahs = bhs[4] * 4
        length = int.from_bytes(bhs[5:8], 'big')
        if ahs:
            self._recv(ahs)
        if bhs[0] & 0x3F == pdu.OP_DATA_IN:
            where = struct.unpack('>I', bhs[40:44])[0]
            if into is None or where + length > len(into):
                raise errors.IscsiError(errno.EPROTO, 'Data-In beyond the '
                                        'expected transfer')
            self._recv_into(into[where:where + length])
            if pdu.pad(length):
                self._recv(pdu.pad(length))
            return bhs, where + length
        data = self._recv(length + pdu.pad(length)) if length else b''
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
                raise errors.IscsiError(errno.ECONNRESET, 'the target '
                                        'closed the connection')
            got += k


# what the status of a refused login means (RFC 7143 section 11.13.5)
_REFUSALS = {
    (2, 1): ': authentication failed (CHAP credentials missing or not '
            'accepted)',
    (2, 2): ': authorization failure (this initiator may not log in)',
    (2, 3): ': target not found or access denied',
}


def _chap_binary(value):
    """A CHAP binary value: 0x hex or 0b base64 (RFC 7143 section 6.1)."""
    prefix, digits = value[:2].lower(), value[2:]
    try:
        if prefix == '0x':
            return bytes.fromhex(digits if len(digits) % 2 == 0
                                 else '0' + digits)
        if prefix == '0b':
            return base64.b64decode(digits, validate=True)
    except binascii.Error as e:
        raise ValueError(str(e))
    raise ValueError('%r is neither 0x hex nor 0b base64' % value[:8])
