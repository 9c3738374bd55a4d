"""Turn a connection_info into something a process reads and writes:
``connect(info)`` returns a device with ``read``, ``write``, ``flush``,
``size`` and ``close``.  A device that knows where its data is (a
sparse file, an RBD image) also has ``holds_data(offset, length)``:
False when the range reads as zeros without being stored, so that a
reader of the whole volume (a backup) need not read its holes."""
import bisect
import errno
import os
import time

from cinder_lite.common import credentials
from cinder_lite.common import exception
from cinder_lite.common import system_bindings
from cinder_lite import nbd
from cinder_lite import iscsi


class LocalDevice:
    """The volume's file on this host."""

    def __init__(self, info):
        self.read_only = info.get('access_mode') == 'ro'
        flags = os.O_RDONLY if self.read_only else os.O_RDWR
        self._fd = os.open(info['device_path'], flags)
        self.size = os.fstat(self._fd).st_size

    def read(self, offset, length):
        return os.pread(self._fd, length, offset)

    def holds_data(self, offset, length):
        try:
            found = os.lseek(self._fd, offset, os.SEEK_DATA)
        except OSError as e:
            # ENXIO: no data from offset to the end; anything else (a
            # file system without SEEK_DATA): read it to know
            return e.errno != errno.ENXIO
        return found < offset + length

    def write(self, offset, data):
        if os.pwrite(self._fd, data, offset) != len(data):
            raise OSError('short write')

    def flush(self):
        os.fsync(self._fd)

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class NbdDevice:
    """An NBD export, read and written over the network: over TLS with
    the attachment's pre-shared key when its connection_info says
    ``tls`` (our target's exports all do)."""

    def __init__(self, info, source_address=None):
        tls = bool(info.get('tls'))
        if tls and (not info.get('tls_psk_identity') or
                    not info.get('tls_psk_key') or
                    info.get('tls_psk_key') == credentials.MASK):
            raise exception.InvalidInput(
                reason='the connection_info of this NBD export has no TLS '
                       'key (it is shown only to callers that may connect)')
        self._client = nbd.NbdClient(
            info['host'], info['port'], info.get('export_name', ''),
            source_address=source_address,
            tls_identity=info.get('tls_psk_identity') if tls else None,
            tls_key=info.get('tls_psk_key') if tls else None)
        self._client.connect()
        self.size = self._client.size
        self.read_only = self._client.read_only

    def read(self, offset, length):
        return self._client.read(offset, length)

    def write(self, offset, data):
        self._client.write(offset, data)

    def flush(self):
        self._client.flush()

    def close(self):
        self._client.close()


# a login refused for its credentials (RFC 7143: authentication failure)
AUTH_FAILED = (2, 1)
AUTH_RETRY_S = 0.05


class IscsiDevice:
    """LUN ``target_lun`` of ``target_iqn`` at ``target_portal``, through
    cinder_lite's userspace initiator (``cinder_lite.iscsi``), logged in
    as ``initiator``, with the CHAP credentials it carries (os-brick's
    ``auth_method``, ``auth_username``, ``auth_password``)."""

    def __init__(self, info, source_address=None, initiator=None):
        if not initiator:
            raise exception.InvalidInput(
                reason='an iSCSI connection needs the initiator name the '
                       'attachment was made for')
        self._session = iscsi.IscsiSession(
            info['target_portal'], info['target_iqn'],
            info.get('target_lun', 0), initiator,
            source_address=source_address, chap=_chap(info))
        try:
            self._session.connect()
        except iscsi.IscsiError as e:
            if e.login_status != AUTH_FAILED:
                raise
            # the target re-binds the accounts of a target for a few
            # milliseconds while another attachment's is revoked (see
            # targets/iscsi.py _unbind_account); an initiator retries a
            # login, as open-iscsi does
            time.sleep(AUTH_RETRY_S)
            self._session.connect()
        self.size = self._session.size
        self.read_only = self._session.read_only

    def read(self, offset, length):
        return self._session.read(offset, length)

    def write(self, offset, data):
        self._session.write(offset, data)

    def flush(self):
        self._session.flush()

    def discard(self, offset, length):
        self._session.discard(offset, length)

    def close(self):
        self._session.close()


def _chap(info):
    """(username, secret) of a connection_info that says CHAP, else
    None."""
    method = info.get('auth_method')
    if not method:
        return None
    if str(method).upper() != 'CHAP':
        raise exception.InvalidInput(
            reason='iSCSI auth_method %r is not supported (only CHAP)'
            % method)
    user, secret = info.get('auth_username'), info.get('auth_password')
    if not user or not secret:
        raise exception.InvalidInput(
            reason='the iSCSI connection info says CHAP but has no '
                   'auth_username or auth_password')
    if secret == credentials.MASK:
        raise exception.InvalidInput(
            reason='the iSCSI connection info has its CHAP secret masked: '
                   'it was read by a caller that may not connect (read it '
                   'as the attachment\'s owner, service or admin)')
    return user, secret


class RbdDevice:
    """An RBD image through librbd, as the attachment's own Ceph user
    (``auth_username``, its key in ``keyring``), at the monitors of
    ``hosts`` and ``ports``; opened read-only when the attachment is.
    ``snapshot_name`` (cinder_lite's own key, for a backup service):
    the snapshot of the image to read instead of the image."""

    # seconds a connect may take: a removed key is not refused at once,
    # the monitors let it wait (client_mount_timeout)
    CONNECT_TIMEOUT = 10

    def __init__(self, info):
        key = credentials.cephx_key_of(info.get('keyring'))
        if info.get('keyring') == credentials.MASK or not key:
            raise exception.InvalidInput(
                reason='the connection_info of this RBD volume has no key '
                       '(it is shown only to callers that may connect)')
        pool, _, image = (info.get('name') or '').partition('/')
        if not pool or not image:
            raise exception.InvalidInput(
                reason='RBD connection_info name %r is not pool/image'
                % info.get('name'))
        # Cinder's hosts and ports are the monitors' v1 (legacy messenger)
        # addresses
        mons = ','.join('[v1:%s:%s]' % ('[%s]' % h if ':' in h else h, p)
                        for h, p in zip(info.get('hosts') or (),
                                        info.get('ports') or ()))
        rados = system_bindings.load('rados', 'python3-rados')
        rbd = system_bindings.load('rbd', 'python3-rbd')
        snapshot = info.get('snapshot_name')
        self.read_only = info.get('access_mode') == 'ro' or bool(snapshot)
        # the snapshot read (None: the image itself)
        self.snapshot = snapshot
        self._cluster = rados.Rados(
            rados_id=info['auth_username'],
            clustername=info.get('cluster_name') or 'ceph', conffile=None,
            conf={'mon_host': mons, 'key': key, 'keyring': '',
                  'client_mount_timeout': str(self.CONNECT_TIMEOUT),
                  'rbd_cache': 'false'})
        self._ioctx = self._image = None
        try:
            self._cluster.connect(timeout=self.CONNECT_TIMEOUT)
            self._ioctx = self._cluster.open_ioctx(pool)
            try:
                self._image = rbd.Image(self._ioctx, image,
                                        snapshot=snapshot,
                                        read_only=self.read_only)
            except rbd.ImageNotFound:
                if not snapshot:
                    raise
                # not a user snapshot: an image's snapshot of a group
                # snapshot (the RBD driver's snapshots of an image another
                # client held the lock of) is found by its name here
                self._image = self._open_snapshot_by_id(rbd, image, snapshot)
        except Exception:
            self.close()
            raise
        self.size = self._image.size()

    def _open_snapshot_by_id(self, rbd, image, snapshot):
        opened = rbd.Image(self._ioctx, image, read_only=True)
        try:
            found = [s['id'] for s in opened.list_snaps()
                     if s['name'] == snapshot]
            if not found:
                raise exception.InvalidInput(
                    reason='image %s has no snapshot %s' % (image, snapshot))
            opened.set_snap_by_id(found[0])
        except Exception:
            opened.close()
            raise
        return opened

    def refresh(self):
        """The image's size now (it grows when the volume is extended in
        use: librbd rereads the header it watches), kept in ``size``."""
        self.size = self._image.size()
        self._extents = None
        return self.size

    _extents = None

    def holds_data(self, offset, length):
        """From the image's allocated extents, asked of Ceph once (by
        object; read-only devices: a snapshot or a read-only export do
        not change under the reader)."""
        if not self.read_only:
            return True
        if self._extents is None:
            found = []
            self._image.diff_iterate(
                0, self.size, None,
                lambda off, n, exists: found.append((off, off + n))
                if exists else None)
            found.sort()
            self._extents = ([a for a, _ in found], [b for _, b in found])
        starts, ends = self._extents
        # the last extent that begins before the range ends
        i = bisect.bisect_left(starts, offset + length) - 1
        return i >= 0 and ends[i] > offset

    def snapshots(self):
        """The names of the image's snapshots."""
        return [snap['name'] for snap in self._image.list_snaps()]

    def changed_extents(self, from_snapshot, offset=0, length=None):
        """``[(offset, length, exists)]`` of what differs between the
        snapshot ``from_snapshot`` of the image (None: an image with no
        data) and what this device reads, from librbd's diff of the
        image (by object, or its object map): ``exists`` False for a
        range that reads as zeros now.  Nothing is read but that."""
        found = []
        length = self.size - offset if length is None else length
        self._image.diff_iterate(
            offset, length, from_snapshot,
            lambda off, n, exists: found.append((off, n, exists)))
        found.sort()
        return found

    def read(self, offset, length):
        return self._image.read(offset, length)

    def write(self, offset, data):
        if self._image.write(data, offset) != len(data):
            raise OSError('short write')

    def flush(self):
        self._image.flush()

    def discard(self, offset, length):
        self._image.discard(offset, length)

    def close(self):
        if self._image is not None:
            self._image.close()
            self._image = None
        if self._ioctx is not None:
            self._ioctx.close()
            self._ioctx = None
        if self._cluster is not None:
            self._cluster.shutdown()
            self._cluster = None


def connect(connection_info, source_address=None, initiator=None):
    """A device for ``connection_info`` (the attachment's, as the API
    returns it).  ``source_address`` is the local address network
    protocols connect from (a host's own address on a multi-homed
    machine); ``initiator`` is the iSCSI name of the connector the
    attachment was made with."""
    kind = connection_info.get('driver_volume_type')
    if kind == 'local':
        return LocalDevice(connection_info)
    if kind == 'nbd':
        return NbdDevice(connection_info, source_address)
    if kind == 'iscsi':
        return IscsiDevice(connection_info, source_address, initiator)
    if kind == 'rbd':
        # every local client connects from the host's address (librados
        # has no source address option)
        return RbdDevice(connection_info)
    raise exception.InvalidInput(
        reason='no connector for driver_volume_type %r' % kind)
