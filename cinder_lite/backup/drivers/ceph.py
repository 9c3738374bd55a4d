"""The Ceph backup driver: backups as RADOS objects in the pool
``backup_ceph_pool`` of a Ceph cluster, laid out by
``cinder_lite.backup.chunked`` (the objects, the sha256 file and the
metadata of each backup, as the POSIX driver writes them as files).

Where things are
    A container is a RADOS namespace of the backup pool: the key needs
    caps on that one pool whatever container a request names.  The
    default container is the pool's name, which is what Cinder's Ceph
    driver shows as a backup's container (Cinder's takes the container
    for a pool; here it is a namespace of the one pool).

A chunked object is cut into RADOS objects
    A chunked object (``backup_<id>-00001``, up to
    ``backup_ceph_chunk_size`` bytes before compression) is kept as RADOS
    objects of at most PART_BYTES each: ``<name>``, ``<name>.1``,
    ``<name>.2``...  Each part is written whole with one ``write_full``
    (one request, applied whole or not at all, far under the OSDs'
    ``osd_max_write_size``), and no RADOS object comes near
    ``osd_max_object_size`` however large the chunk or the sha256 file
    of a big volume gets.  The parts of an object are always a run from
    0: written upwards, removed downwards.

Which objects a backup has: an omap index per backup
    ``<prefix>.index`` (a name no chunked object or part can have) holds
    in its omap one key per object of the backup: ``{"state": "begun"}``
    from before its first part is written, then ``{"bytes": N,
    "part_bytes": P}`` once the last part is written.  An object
    appears (list, read) only once committed in the index, so a writer
    that died leaves a *begun* entry, never a half object that lists as
    whole; the backup's delete removes what its begun entries name.
    Not an object listing of the namespace: librados lists a namespace
    by visiting every placement group of the pool, a cost that grows
    with every backup the pool holds, and a listing cannot tell a
    finished object from one a dead writer left.  The index is read
    with one omap request per thousand objects of that backup only.

Volumes on RBD: differential backups (ceph_rbd.py)
    A backup of an RBD volume in the default container is not chunked:
    it is an RBD snapshot of the image ``volume-<id>.backup.base`` of
    the pool, written with what changed since the backup before, as
    Cinder's Ceph driver does.  A backup's service_metadata names its
    ``layout``: ``rbd``, or ``chunked`` (and a record without one, made
    before there were two, is chunked).  A chunked backup of a volume
    whose last backup is a snapshot is a full one.

What is atomic
    RADOS has no rename, so nothing appears whole at once as the POSIX
    driver's renamed files do; what makes a backup a backup is its
    metadata object, committed last (chunked.py): a backup cut short has
    objects and no metadata, and is deleted, never restored.
"""
import contextlib
import errno
import json
import logging
import os
import threading
import uuid

from cinder_lite.backup import chunked
from cinder_lite.backup.drivers import ceph_rbd
from cinder_lite.common import exception
from cinder_lite.common import system_bindings

LOG = logging.getLogger(__name__)

MiB = 1024 * 1024
# the largest RADOS object this driver writes (the size of an RBD
# image's objects): each is one write_full
PART_BYTES = 4 * MiB
INDEX_SUFFIX = '.index'
BEGUN = {'state': 'begun'}
# omap keys read at once
OMAP_BATCH = 1000
# seconds the connect to the monitors may take (a wrong monitor address
# or a dead cluster fails the setup instead of hanging it)
CONNECT_TIMEOUT = 30
MAX_CONTAINER = 255


def rados_module():
    return system_bindings.load(
        'rados', 'python3-rados', accept=lambda m: hasattr(m, 'Rados'))


def index_name(prefix):
    return prefix + INDEX_SUFFIX


def part_name(name, number):
    return name if number == 0 else '%s.%d' % (name, number)


def prefix_of_object(name):
    """The backup prefix of a chunked object's name."""
    for suffix in ('_metadata', '_sha256file'):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    head, dash, number = name.rpartition('-')
    if dash and number.isdigit() and head:
        return head
    raise exception.InvalidInput(
        reason='%r is not the name of an object of a backup' % name)


class _PartWriter:
    """One chunked object being written as parts of PART_BYTES."""

    def __init__(self, driver, ioctx, name):
        self._driver = driver
        self._ioctx = ioctx
        self.name = name
        self._buffer = bytearray()
        self._parts = 0
        self.stored = 0

    def write(self, data):
        if not data:
            return
        self._buffer += data
        self.stored += len(data)
        while len(self._buffer) >= PART_BYTES:
            self._put(bytes(self._buffer[:PART_BYTES]))
            del self._buffer[:PART_BYTES]

    def _put(self, data):
        self._driver._call(
            self._ioctx.write_full, part_name(self.name, self._parts), data,
            what='write of part %d of %s' % (self._parts, self.name))
        self._parts += 1

    def commit(self):
        if self._buffer or not self._parts:
            self._put(bytes(self._buffer))
            self._buffer = bytearray()
        self._driver._set_index(self._ioctx, self.name, {
            'bytes': self.stored, 'part_bytes': PART_BYTES})
        self._ioctx.close()
        return self.stored

    def abort(self):
        try:
            self._driver._remove_parts(self._ioctx, self.name, self._parts)
            self._driver._unindex(self._ioctx, self.name)
            self._driver._drop_index_if_empty(
                self._ioctx, prefix_of_object(self.name))
        except exception.CinderLiteError as e:
            # the begun entry stays: the backup's delete removes it
            LOG.warning('cannot remove the unfinished backup object %s: %s',
                        self.name, e)
        finally:
            self._ioctx.close()


class _PartReader:
    """The bytes of a committed chunked object, read part by part (a
    binary file for chunked.py: ``read(n)`` and a context manager)."""

    def __init__(self, driver, ioctx, name, size, part_bytes):
        self._driver = driver
        self._ioctx = ioctx
        self.name = name
        self._size = size
        self._part_bytes = part_bytes
        self._pos = 0

    def read(self, n=-1):
        if n is None or n < 0:
            n = self._size - self._pos
        n = min(n, self._size - self._pos, self._part_bytes)
        if n <= 0:
            return b''
        number, offset = divmod(self._pos, self._part_bytes)
        n = min(n, self._part_bytes - offset)
        data = self._driver._call(
            self._ioctx.read, part_name(self.name, number), n, offset,
            what='read of part %d of %s' % (number, self.name),
            absent='part %d of backup object %s is missing'
            % (number, self.name))
        # a short part ends the object early: chunked.py finds it
        # truncated
        self._pos = self._size if len(data) < n else self._pos + n
        return data

    def close(self):
        self._ioctx.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class CephBackupDriver(chunked.ChunkedBackupDriver):

    object_size_option = 'backup_ceph_chunk_size'

    def __init__(self, conf):
        super().__init__(conf)
        self._cluster = None
        self._lock = threading.Lock()
        self._rbd = ceph_rbd.RbdLayout(self)

    @property
    def pool(self):
        return self.conf.backup_ceph_pool

    @property
    def user(self):
        return self.conf.backup_ceph_user

    # -- the cluster ---------------------------------------------------------

    def close(self):
        with self._lock:
            cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.shutdown()

    def _connected(self):
        with self._lock:
            if self._cluster is None:
                self._cluster = self._connect()
            return self._cluster

    def _connect(self):
        rados = rados_module()
        path = self.conf.backup_ceph_conf
        if not os.path.isfile(path):
            raise exception.BackendError(
                reason='backup_ceph_conf %s is not a file' % path)
        try:
            cluster = rados.Rados(rados_id=self.user or None, conffile=path)
        except rados.Error as e:
            raise exception.BackendError(
                reason='backup_ceph_conf %s cannot be read: %s' % (path, e))
        try:
            cluster.connect(timeout=CONNECT_TIMEOUT)
        except rados.Error as e:
            cluster.shutdown()
            raise exception.BackendError(
                reason=self._connect_failure(e)) from None
        return cluster

    def _connect_failure(self, e):
        who = 'client.%s' % (self.user or 'admin')
        code = getattr(e, 'errno', None)
        if code == errno.EACCES or code == errno.EPERM:
            return ('the Ceph cluster of %s refused %s: a wrong or '
                    'removed key, or one without the monitor cap "allow '
                    'r": %s' % (self.conf.backup_ceph_conf, who, e))
        if code == errno.ENOENT:
            return ('no keyring holding a key of %s found through %s (its '
                    '"keyring" setting): %s'
                    % (who, self.conf.backup_ceph_conf, e))
        if code in (errno.ETIMEDOUT, errno.EINTR):
            return ('no monitor of %s answered %s within %d s: %s'
                    % (self.conf.backup_ceph_conf, who, CONNECT_TIMEOUT, e))
        return 'cannot connect to the Ceph cluster of %s as %s: %s' % (
            self.conf.backup_ceph_conf, who, e)

    def _open(self, container):
        """An ioctx of the backup pool in the namespace of
        ``container`` (the caller closes it)."""
        namespace = self._namespace(container)
        rados = rados_module()
        cluster = self._connected()
        try:
            ioctx = cluster.open_ioctx(self.pool)
        except rados.ObjectNotFound:
            raise exception.BackendError(
                reason='backup_ceph_pool %s does not exist in the Ceph '
                       'cluster of %s (make it: ceph osd pool create %s)'
                       % (self.pool, self.conf.backup_ceph_conf, self.pool))
        except rados.Error as e:
            raise exception.BackendError(
                reason='cannot open backup_ceph_pool %s: %s'
                % (self.pool, e))
        ioctx.set_namespace(namespace)
        return ioctx

    @contextlib.contextmanager
    def _ioctx(self, container):
        ioctx = self._open(container)
        try:
            yield ioctx
        finally:
            ioctx.close()

    def _call(self, method, *args, what, absent=None):
        """``method(*args)`` of librados, its errors made BackendError:
        ``absent`` (a reason) for a missing object, else None returned
        for it."""
        rados = rados_module()
        try:
            return method(*args)
        except rados.ObjectNotFound:
            if absent:
                raise exception.BackendError(reason=absent)
            return None
        except (rados.PermissionError, rados.PermissionDeniedError) as e:
            raise exception.BackendError(
                reason='%s in pool %s: client.%s is not allowed (its OSD '
                       'caps must allow rw on the pool): %s'
                       % (what, self.pool, self.user, e))
        except rados.Error as e:
            raise exception.BackendError(
                reason='%s in pool %s: %s' % (what, self.pool, e))

    def check_for_setup_error(self):
        super().check_for_setup_error()
        self._probe()

    def _probe(self):
        """Write, read back and remove an object in the default
        container: the key may do what backups need, or the service does
        not start."""
        rados = rados_module()
        name = '.probe-%s' % uuid.uuid4().hex
        payload = b'cinder_lite backup probe'
        with self._ioctx(self.default_container(None)) as ioctx:
            try:
                ioctx.write_full(name, payload)
                back = ioctx.read(name, len(payload) + 1)
                ioctx.remove_object(name)
            except (rados.PermissionError,
                    rados.PermissionDeniedError) as e:
                raise exception.BackendError(
                    reason='client.%s may not write and read objects of '
                           'backup_ceph_pool %s (its OSD caps must allow '
                           'rw on it: osd "profile rbd pool=%s"): %s'
                           % (self.user, self.pool, self.pool, e))
            except rados.Error as e:
                raise exception.BackendError(
                    reason='a probe object in backup_ceph_pool %s cannot '
                           'be written and read back: %s' % (self.pool, e))
        if back != payload:
            raise exception.BackendError(
                reason='backup_ceph_pool %s gave back other bytes than '
                       'were written to it' % self.pool)

    # -- the two layouts ------------------------------------------------------

    def _differential(self, backup):
        """Whether ``backup`` may be a snapshot of a backup image (the
        images are in the pool's default namespace: a backup to another
        container is chunked)."""
        return backup.get('container') in (None, self.pool)

    def source_snapshot(self, backup):
        if not self._differential(backup):
            return None
        return ceph_rbd.snapshot_name(backup)

    def source_snapshot_of(self, backup):
        if not ceph_rbd.is_rbd(backup):
            return None
        return ceph_rbd.metadata_of(backup).get('source_snapshot')

    def backup(self, backup, device, parent=None, progress=None):
        if self._differential(backup) and ceph_rbd.RbdLayout.usable(device):
            return self._rbd.backup(backup, device, progress)
        if parent is not None and ceph_rbd.is_rbd(parent):
            # no chunked object to be incremental to: all of it
            LOG.info('backup %s: chunked, and full (its parent %s is an RBD '
                     'snapshot)', backup['id'], parent['id'])
            parent = None
        result = super().backup(backup, device, parent, progress)
        result['service_metadata']['layout'] = 'chunked'
        return result

    def restore(self, chain, device, progress=None):
        if ceph_rbd.is_rbd(chain[-1]):
            # a snapshot holds the whole volume
            return self._rbd.restore(chain[-1], device, progress)
        for i in range(len(chain) - 1, -1, -1):
            if ceph_rbd.is_rbd(chain[i]):
                # the chunked backup after it is a full one
                chain = chain[i + 1:]
                break
        return super().restore(chain, device, progress)

    def delete(self, backup):
        if ceph_rbd.is_rbd(backup):
            return self._rbd.delete(backup)
        if not backup.get('service_metadata'):
            # cut short before its layout was recorded: either may hold
            # part of it
            try:
                self._rbd.delete(backup)
            except exception.BackendError as e:
                LOG.warning('backup %s: no backup snapshot looked for: %s',
                            backup['id'], e)
        return super().delete(backup)

    # -- containers ----------------------------------------------------------

    def default_container(self, backup):
        return self.pool

    @staticmethod
    def _namespace(container):
        if not isinstance(container, str) or not container:
            raise exception.InvalidInput(
                reason='a backup container is a non-empty name')
        if len(container) > MAX_CONTAINER or any(
                ord(c) < 32 or ord(c) == 127 for c in container):
            raise exception.InvalidInput(
                reason='backup container %r is not a name of at most %d '
                       'printable characters' % (container, MAX_CONTAINER))
        return container

    # -- the index -----------------------------------------------------------

    def _index(self, ioctx, prefix, limit=None):
        """``{name: entry}`` of the index of backup ``prefix`` (its first
        ``limit`` entries; all when None)."""
        rados = rados_module()
        found = {}
        start = ''
        while True:
            batch_size = OMAP_BATCH if limit is None else min(
                OMAP_BATCH, limit - len(found))
            with rados.ReadOpCtx() as op:
                values, _ = ioctx.get_omap_vals(op, start, '', batch_size)
                try:
                    ioctx.operate_read_op(op, index_name(prefix))
                except rados.ObjectNotFound:
                    return found
                except rados.Error as e:
                    raise exception.BackendError(
                        reason='the index of backup %s cannot be read: %s'
                        % (prefix, e))
                batch = list(values)
            for key, value in batch:
                try:
                    found[key] = json.loads(value)
                except ValueError:
                    raise exception.BackendError(
                        reason='the index of backup %s has an entry for %s '
                               'that is not JSON' % (prefix, key))
            if len(batch) < batch_size or (
                    limit is not None and len(found) >= limit):
                return found
            start = batch[-1][0]

    def _drop_index_if_empty(self, ioctx, prefix):
        """Remove the index of ``prefix`` once it names nothing (a
        leftover empty index is harmless: tidiness only)."""
        rados = rados_module()
        if self._index(ioctx, prefix, limit=1):
            return
        try:
            ioctx.remove_object(index_name(prefix))
        except rados.ObjectNotFound:
            pass
        except rados.Error as e:
            LOG.warning('cannot remove the empty index of backup %s: %s',
                        prefix, e)

    def _exists(self, ioctx, name):
        rados = rados_module()
        try:
            ioctx.stat(name)
            return True
        except rados.ObjectNotFound:
            return False

    def _entry(self, ioctx, name):
        rados = rados_module()
        prefix = prefix_of_object(name)
        with rados.ReadOpCtx() as op:
            values, _ = ioctx.get_omap_vals_by_keys(op, (name,))
            self._call(ioctx.operate_read_op, op, index_name(prefix),
                       what='read of the index of %s' % prefix)
            values = dict(values)
        if name not in values:
            return None
        try:
            return json.loads(values[name])
        except ValueError:
            raise exception.BackendError(
                reason='the index of backup %s has an entry for %s that is '
                       'not JSON' % (prefix, name))

    def _set_index(self, ioctx, name, entry):
        rados = rados_module()
        prefix = prefix_of_object(name)
        with rados.WriteOpCtx() as op:
            ioctx.set_omap(op, (name,), (json.dumps(entry).encode(),))
            self._call(ioctx.operate_write_op, op, index_name(prefix),
                       what='index entry of %s' % name)

    def _unindex(self, ioctx, name):
        rados = rados_module()
        prefix = prefix_of_object(name)
        with rados.WriteOpCtx() as op:
            ioctx.remove_omap_keys(op, (name,))
            self._call(ioctx.operate_write_op, op, index_name(prefix),
                       what='index entry of %s' % name)

    # -- parts ---------------------------------------------------------------

    def _part_count(self, ioctx, name, entry):
        """How many parts ``name`` has in the store: what its committed
        entry says, or as many as are there (an unfinished write)."""
        if entry and 'bytes' in entry:
            size, part = entry['bytes'], entry['part_bytes']
            known = max(1, -(-size // part))
        else:
            known = 0
        # (parts past the known ones: a write of this name that died
        # after more parts than the one committed)
        while self._exists(ioctx, part_name(name, known)):
            known += 1
        return known

    def _remove_parts(self, ioctx, name, count):
        """Remove parts ``count - 1`` down to 0 (the parts left are a run
        from 0 whenever this stops)."""
        for number in range(count - 1, -1, -1):
            self._call(ioctx.remove_object, part_name(name, number),
                       what='removal of part %d of %s' % (number, name))

    # -- the store's primitives ----------------------------------------------

    def open_object(self, container, name):
        ioctx = self._open(container)
        try:
            entry = self._entry(ioctx, name)
            if entry is not None:
                # a name written again: what was there goes first
                self._remove_parts(ioctx, name,
                                   self._part_count(ioctx, name, entry))
            self._set_index(ioctx, name, BEGUN)
        except BaseException:
            ioctx.close()
            raise
        return _PartWriter(self, ioctx, name)

    def read_object(self, container, name):
        ioctx = self._open(container)
        try:
            entry = self._entry(ioctx, name)
            if entry is None or 'bytes' not in entry:
                raise exception.BackendError(
                    reason='backup object %s is missing from container %s'
                    % (name, container))
        except BaseException:
            ioctx.close()
            raise
        return _PartReader(self, ioctx, name, entry['bytes'],
                           entry['part_bytes'])

    def delete_object(self, container, name):
        with self._ioctx(container) as ioctx:
            entry = self._entry(ioctx, name)
            count = self._part_count(ioctx, name, entry)
            self._remove_parts(ioctx, name, count)
            if entry is not None:
                self._unindex(ioctx, name)
            self._drop_index_if_empty(ioctx, prefix_of_object(name))

    def list_objects(self, container, prefix):
        """The committed objects of the backup ``prefix`` (chunked.py
        lists by a backup's prefix: the index is per backup)."""
        with self._ioctx(container) as ioctx:
            return {name: entry['bytes']
                    for name, entry in self._index(ioctx, prefix).items()
                    if name.startswith(prefix) and 'bytes' in entry}

    def forget_unfinished(self, container, prefix):
        """Remove the objects whose writes were begun and never
        committed, then the index once it is empty."""
        with self._ioctx(container) as ioctx:
            for name, entry in self._index(ioctx, prefix).items():
                if 'bytes' not in entry and chunked.belongs_to(name, prefix):
                    self._remove_parts(ioctx, name,
                                       self._part_count(ioctx, name, None))
                    self._unindex(ioctx, name)
            self._drop_index_if_empty(ioctx, prefix)

    # -- import --------------------------------------------------------------

    def verify(self, backup):
        """The chunked checks (metadata, sha256 file, every object
        committed with the bytes written), then every RADOS part of
        every object there with its size; of a snapshot: that it is
        there."""
        if ceph_rbd.is_rbd(backup):
            return self._rbd.verify(backup)
        super().verify(backup)
        container = self.container_of(backup)
        prefix = chunked.prefix_of(backup)
        with self._ioctx(container) as ioctx:
            index = self._index(ioctx, prefix)
            names = [chunked.sha_name(prefix), chunked.metadata_name(prefix)]
            names += [o['name'] for o in
                      self._metadata(container, prefix)['objects']]
            for name in names:
                self._verify_parts(ioctx, name, index.get(name) or {})

    def _verify_parts(self, ioctx, name, entry):
        rados = rados_module()
        if 'bytes' not in entry:
            raise exception.BackendError(
                reason='backup object %s was never written whole' % name)
        size, part = entry['bytes'], entry['part_bytes']
        count = max(1, -(-size // part))
        for number in range(count):
            want = min(part, size - number * part)
            try:
                have, _ = ioctx.stat(part_name(name, number))
            except rados.ObjectNotFound:
                raise exception.BackendError(
                    reason='part %d of backup object %s is missing'
                    % (number, name))
            except rados.Error as e:
                raise exception.BackendError(
                    reason='part %d of backup object %s cannot be '
                           'checked: %s' % (number, name, e))
            if have != want:
                raise exception.BackendError(
                    reason='part %d of backup object %s holds %d bytes, %d '
                           'were written' % (number, name, have, want))
