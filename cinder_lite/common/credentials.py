"""Per-attachment credentials: derived, never stored.

Every target gives an attachment a credential of its own (a CHAP secret
on tgt, a TLS pre-shared key on nbdkit, a cephx key on Ceph).  None is
kept anywhere: each is an HMAC-SHA256 of the deployment's key
(``credential_key_file``, 0600, the same file on every API and volume
node) over the attachment id and the connection_info key it fills,
made again wherever it is needed: by the target when it exports (also
when it re-creates an export after a restart), by the API when it shows
connection_info to a caller allowed to connect.

connection_info is recorded and sent over the bus with every secret
replaced by ``MASK`` (``conceal``); ``reveal`` puts the secrets back for
the callers that may see them.  A secret key is one of ``SECRET_KEYS``:
a target that adds a credential adds its key here, nothing else.
"""
import base64
import hashlib
import hmac
import logging
import os
import struct
import threading

LOG = logging.getLogger(__name__)

MASK = '***'
# connection_info keys whose values are secrets (os-brick's CHAP keys,
# the NBD target's TLS pre-shared key, the keyring os-brick's RBD
# connector takes when there is no libvirt secret)
SECRET_KEYS = frozenset(('auth_password', 'discovery_auth_password',
                         'tls_psk_key', 'keyring'))
KEY_BYTES = 32

_lock = threading.Lock()
_keyrings = {}


class Keyring:
    """The deployment key of one file, read once."""

    def __init__(self, path):
        self.path = path
        self._key = _load_or_create(path)

    def secret(self, attachment_id, purpose):
        """The secret ``purpose`` (a connection_info key) of an
        attachment, in hex digits (``SECRET_LENGTHS``)."""
        length = SECRET_LENGTHS.get(purpose, 32)
        digest = hmac.new(self._key, ('%s\0%s' % (purpose, attachment_id)
                                      ).encode(), hashlib.sha256)
        return digest.hexdigest()[:length]

    def reveal(self, info, attachment_id):
        """``info`` (a connection_info) with its masked secrets filled
        in; a copy when there is any to fill."""
        if not info or not any(info.get(k) == MASK for k in SECRET_KEYS):
            return info
        shown = dict(info)
        for key in SECRET_KEYS:
            if shown.get(key) == MASK:
                shown[key] = self.secret(attachment_id, key)
        if info.get('keyring') == MASK:
            shown['keyring'] = self.cephx_keyring(
                attachment_id, 'client.%s' % info.get('auth_username'))
        return shown

    def cephx_key(self, attachment_id):
        """The attachment's cephx key, as ``ceph auth`` shows keys."""
        return cephx_key(bytes.fromhex(self.secret(attachment_id,
                                                   'keyring')))

    def cephx_keyring(self, attachment_id, entity):
        """A keyring file's text holding the attachment's key for
        ``entity`` (``client.<user>``)."""
        return '[%s]\n\tkey = %s\n' % (entity, self.cephx_key(attachment_id))


# the lengths the targets use (CHAP secrets: tgt and open-iscsi take up
# to 255 characters, Windows initiators 12 to 16; a PSK key: 32 bytes; a
# cephx secret: 16 bytes, AES-128)
SECRET_LENGTHS = {'auth_password': 32, 'discovery_auth_password': 32,
                  'tls_psk_key': 64, 'keyring': 32}
CEPHX_AES = 1


def cephx_key(secret):
    """A cephx key of the 16 bytes ``secret``, encoded as Ceph encodes
    one (CryptoKey: type, creation time, length, secret, little-endian)
    and shown (base64).  The creation time is 0: the key is derived, the
    same wherever it is made."""
    return base64.b64encode(struct.pack('<HIIH', CEPHX_AES, 0, 0,
                                        len(secret)) + secret).decode()


def cephx_key_of(keyring_text):
    """The key of the first entity of a keyring file's text; None when it
    holds none."""
    for line in (keyring_text or '').splitlines():
        name, sep, value = line.partition('=')
        if sep and name.strip() == 'key':
            return value.strip()
    return None


def conceal(info):
    """``info`` with every secret replaced by ``MASK`` (a copy when it
    has any): what is recorded, sent over the bus and shown to readers."""
    if not info or not any(info.get(k) not in (None, MASK)
                           for k in SECRET_KEYS):
        return info
    return {k: (MASK if k in SECRET_KEYS and v is not None else v)
            for k, v in info.items()}


def keyring(conf):
    """The keyring of ``conf.credential_key_file``, made once per file."""
    path = os.path.abspath(conf.credential_key_file)
    with _lock:
        ring = _keyrings.get(path)
        if ring is None:
            ring = _keyrings[path] = Keyring(path)
        return ring


def _load_or_create(path):
    try:
        with open(path, 'rb') as f:
            key = f.read()
    except FileNotFoundError:
        key = None
    if key is None:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        key = os.urandom(KEY_BYTES)
        # written whole under another name, then linked into place: a
        # process of this node starting at the same moment reads either
        # no file or the whole key, and the second link fails
        tmp = '%s.%d.tmp' % (path, os.getpid())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'wb') as f:
            f.write(key)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return _load_or_create(path)
        finally:
            os.unlink(tmp)
        LOG.info('made a new credential key in %s: every API and volume '
                 'node of this deployment needs the same file', path)
        return key
    mode = os.stat(path).st_mode & 0o777
    if mode & 0o077:
        raise RuntimeError('credential_key_file %s is readable by others '
                           '(mode %o): chmod 600 it' % (path, mode))
    if len(key) < 16:
        raise RuntimeError('credential_key_file %s holds %d bytes; at '
                           'least 16 are needed' % (path, len(key)))
    return key
