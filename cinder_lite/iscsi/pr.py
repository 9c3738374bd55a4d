"""SCSI persistent reservations (SPC-4 6.15, 6.16): the commands, their
answers, and the key an attachment registers with."""
import struct
import uuid

# persistent reservation types (SPC-4 table 212)
PR_WRITE_EXCLUSIVE = 1
PR_EXCLUSIVE_ACCESS = 3
PR_WRITE_EXCLUSIVE_REGISTRANTS_ONLY = 5
PR_EXCLUSIVE_ACCESS_REGISTRANTS_ONLY = 6
PR_WRITE_EXCLUSIVE_ALL_REGISTRANTS = 7
PR_EXCLUSIVE_ACCESS_ALL_REGISTRANTS = 8
# PERSISTENT RESERVE IN service actions
READ_KEYS = 0x00
READ_RESERVATION = 0x01
# PERSISTENT RESERVE OUT service actions
REGISTER = 0x00
RESERVE = 0x01
RELEASE = 0x02
CLEAR = 0x03
PREEMPT = 0x04
PREEMPT_AND_ABORT = 0x05
REGISTER_AND_IGNORE = 0x06

READ_KEYS_LENGTH = 8192
READ_RESERVATION_LENGTH = 24


def reserve_in(action, length):
    return struct.pack('>BB5xHB', 0x5E, action, length, 0)


def parse_keys(data):
    """(generation, [registered keys]) of READ KEYS data."""
    generation, length = struct.unpack('>II', data[:8])
    keys = data[8:8 + length]
    return generation, [struct.unpack('>Q', keys[i:i + 8])[0]
                        for i in range(0, len(keys) - 7, 8)]


def parse_reservation(data):
    """(generation, holder's key, type) of READ RESERVATION data, holder
    and type None when nothing is reserved."""
    generation, length = struct.unpack('>II', data[:8])
    if length < 16 or len(data) < 24:
        return generation, None, None
    key = struct.unpack('>Q', data[8:16])[0]
    return generation, key, data[21] & 0x0F


def reserve_out(action, key=0, sa_key=0, rtype=0, aptpl=False):
    """(CDB, parameter list) of PERSISTENT RESERVE OUT."""
    params = struct.pack('>QQ4xB3x', key, sa_key, 0x01 if aptpl else 0)
    return struct.pack('>BBB2xIB', 0x5F, action, rtype & 0x0F,
                       len(params), 0), params


def attachment_key(attachment_id):
    """The persistent-reservation key of an attachment: its id's first
    64 bits (never 0, which means "no key").  A host that registers with
    it (``connection_info['reservation_key']``) has its registration
    removed when the attachment ends."""
    return int(uuid.UUID(str(attachment_id)).hex[:16], 16) or 1
