"""iSCSI PDUs (RFC 7143): opcodes, the basic header segments an
initiator sends, login text keys, and what an initiator offers at login.

Builders return the 48-byte basic header segment; the data segment (and
its padding) is sent after it.
"""
import struct

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


def pad(n):
    """Bytes of padding after a data segment of ``n`` bytes."""
    return (4 - n % 4) % 4


def encode_keys(pairs):
    return b''.join(('%s=%s' % kv).encode() + b'\0' for kv in pairs)


def decode_keys(data):
    keys = {}
    for item in data.split(b'\0'):
        if item:
            k, _, v = item.decode(errors='replace').partition('=')
            keys[k] = v
    return keys


def lun_field(lun):
    """The 8-byte LUN of SAM's peripheral/flat addressing."""
    if lun < 256:
        return struct.pack('>BB6x', 0, lun)
    return struct.pack('>H6x', 0x4000 | lun)


def login_request(stage, following, data_len, isid, itt, cmdsn,
                  exp_statsn, transit=True):
    """A Login Request; ``transit`` False stays in ``stage`` (another
    round of keys follows, as in the CHAP exchange)."""
    return struct.pack(
        '>BBBBB3s6sHIHHII16x',
        OP_LOGIN_REQ | IMMEDIATE,
        (FINAL | following if transit else 0) | stage << 2,
        0, 0, 0, data_len.to_bytes(3, 'big'), isid, 0,
        itt, 0, 0, cmdsn, exp_statsn)


def logout_request(itt, cmdsn, exp_statsn):
    return struct.pack('>BB14xIHHII16x', OP_LOGOUT_REQ | IMMEDIATE,
                       FINAL | 0, itt, 0, 0, cmdsn, exp_statsn)


def scsi_command(flags, data_len, lun, itt, total, cmdsn, exp_statsn,
                 cdb):
    return struct.pack('>BBxxB3s8sIIII16s', OP_SCSI_CMD, flags, 0,
                       data_len.to_bytes(3, 'big'), lun_field(lun), itt,
                       total, cmdsn, exp_statsn, cdb.ljust(16, b'\0'))


def data_out(final, data_len, lun, itt, ttt, exp_statsn, datasn, offset):
    return struct.pack('>BBxxB3s8sII4sI4sII4s', OP_DATA_OUT,
                       FINAL if final else 0, 0,
                       data_len.to_bytes(3, 'big'), lun_field(lun),
                       itt, ttt, b'', exp_statsn, b'', datasn,
                       offset, b'')


def nop_out(lun_bytes, ttt, cmdsn, exp_statsn):
    """The answer to a NOP-In that asked for one (``lun_bytes`` and
    ``ttt`` echo the NOP-In's)."""
    return struct.pack('>BBxxB3s8sIIII16x', OP_NOP_OUT | IMMEDIATE,
                       FINAL, 0, b'\0\0\0', lun_bytes,
                       RESERVED_TAG, ttt, cmdsn, exp_statsn)
