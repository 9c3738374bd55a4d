"""SCSI over iSCSI: the commands a block device needs (SBC-3, SPC-4),
status and sense data, and the errors they become."""
import errno
import struct

from cinder_lite.iscsi import errors

GOOD = 0x00
CHECK_CONDITION = 0x02
RESERVATION_CONFLICT = 0x18
SENSE_UNIT_ATTENTION = 0x6
SENSE_DATA_PROTECT = 0x7
SENSE_KEYS = {0x0: 'NO SENSE', 0x1: 'RECOVERED ERROR', 0x2: 'NOT READY',
              0x3: 'MEDIUM ERROR', 0x4: 'HARDWARE ERROR',
              0x5: 'ILLEGAL REQUEST', 0x6: 'UNIT ATTENTION',
              0x7: 'DATA PROTECT', 0xB: 'ABORTED COMMAND'}

MAX_TRANSFER = 4 * 1024 * 1024   # bytes per SCSI command


# -- command descriptor blocks ---------------------------------------------
def test_unit_ready():
    return bytes(6)


def read_capacity_16(length=32):
    return struct.pack('>BB8xIBB', 0x9E, 0x10, length, 0, 0)


def parse_capacity_16(data):
    """(blocks, block size) of READ CAPACITY (16) data."""
    last_lba, block_size = struct.unpack('>QI', data[:12])
    return last_lba + 1, block_size


def mode_sense_6(length=4):
    """All pages, header only wanted: its device-specific byte holds the
    write-protect bit."""
    return bytes([0x1A, 0x08, 0x3F, 0, length, 0])


def read_16(lba, blocks):
    return struct.pack('>BBQIBB', 0x88, 0, lba, blocks, 0, 0)


def write_16(lba, blocks):
    return struct.pack('>BBQIBB', 0x8A, 0, lba, blocks, 0, 0)


def synchronize_cache_10():
    return bytes([0x35] + [0] * 9)


def unmap(lba, blocks):
    """(CDB, parameter list) of UNMAP for one range."""
    params = struct.pack('>HH4xQI4x', 6 + 16, 16, lba, blocks)
    return struct.pack('>B5xBHB', 0x42, 0, len(params), 0), params


# -- status ------------------------------------------------------------------
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


def check_status(status, sense):
    """Raise the error a command's SCSI ``status`` (and ``sense`` data)
    means; nothing for GOOD."""
    if status == GOOD:
        return
    if status == RESERVATION_CONFLICT:
        raise errors.ReservationConflict(
            errno.EBADE, 'RESERVATION CONFLICT: another host holds a '
            'persistent reservation of this LUN')
    if status != CHECK_CONDITION:
        raise errors.IscsiError(errno.EIO, 'SCSI status 0x%02x' % status)
    key, asc, ascq = parse_sense(sense)
    err = errors.IscsiError(
        errno.EROFS if key == SENSE_DATA_PROTECT else errno.EIO,
        'CHECK CONDITION: %s, ASC/ASCQ 0x%02x/0x%02x' % (
            SENSE_KEYS.get(key, 'sense key 0x%x' % (key or 0)),
            asc or 0, ascq or 0))
    err.sense_key, err.asc, err.ascq = key, asc, ascq
    raise err


def settled(call, attempts=4):
    """Run ``call`` (a command of a session); a UNIT ATTENTION -- the
    target telling a new nexus, or one whose registrations or reservation
    changed -- is answered by asking again."""
    for _ in range(attempts - 1):
        try:
            return call()
        except errors.ReservationConflict:
            raise
        except errors.IscsiError as e:
            if e.sense_key != SENSE_UNIT_ATTENTION:
                raise
    return call()
