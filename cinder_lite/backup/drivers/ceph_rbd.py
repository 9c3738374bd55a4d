"""Differential backups of RBD volumes for the Ceph backup driver: each
backup is an RBD snapshot of one image per volume in the backup pool,
as Cinder's Ceph driver keeps them.

Names (Cinder's)
    The backups of volume V live in the image ``volume-V.backup.base``
    of ``backup_ceph_pool`` (its default namespace); backup B is its
    snapshot ``backup.B.snap.<timestamp>`` (the backup's creation time,
    in seconds), and the volume service made a snapshot of the same name
    of the source image, the point in time B holds.

A backup writes only what changed
    The newest snapshot name that both the source image and the backup
    image have is the base (normally the backup made last: a success
    keeps that one snapshot on the source).  What differs between the
    source at the base and at the new snapshot is librbd's diff of the
    source image (by object, or its object map): those ranges only are
    read and written into the backup image, which is then snapshotted.
    With no common snapshot (the first backup, the base snapshot
    removed, a parent in the chunked layout) the whole image is
    written: every range the source holds data in, and what the backup
    image held elsewhere is discarded.  Holes stay holes.

A backup cut short
    The backup image's head is marked (image metadata ``WRITING``) from
    the first write until the snapshot is made.  The next backup finds
    the mark (or a head that moved past the base: a newer backup was
    deleted) and rewrites also what the head changed since the base, so
    a backup killed half way leaves no snapshot and nothing that a later
    one copies wrongly.  Its snapshot on the source is removed by
    whoever settles it (the backup manager asks the volume service).

Restore, delete
    A restore reads the backup's snapshot alone (it holds the whole
    volume): the ranges it has data in are written, the others made to
    read as zeros where the target holds data.  A delete removes the
    snapshot, and the image with its last one.
"""
import calendar
import contextlib
import logging
import time
import uuid

from cinder_lite.backup import chunked
from cinder_lite.common import exception
from cinder_lite.common import system_bindings

LOG = logging.getLogger(__name__)

LAYOUT = 'rbd'
MiB = 1024 * 1024
# the largest range read and written at once (an RBD object)
PIECE = 4 * MiB
# 4 MiB objects, the RBD default
ORDER = 22
# the head is being written by this backup (image metadata)
WRITING = 'cinder_lite.writing'
SNAP_PREFIX = 'backup.'
# one writer of a backup image at a time (two backups of one volume at
# once, a delete): a RADOS lock on ``<image>.lock`` that lapses when its
# holder dies, renewed while held
LOCK_NAME = 'cinder_lite.backup.writer'
LOCK_SECONDS = 60
LOCK_FLAG_MAY_RENEW = 1


def rados_module():
    return system_bindings.load('rados', 'python3-rados',
                                accept=lambda m: hasattr(m, 'Rados'))


def rbd_module():
    rados_module()      # rbd's extension imports rados
    return system_bindings.load('rbd', 'python3-rbd',
                                accept=lambda m: hasattr(m, 'RBD'))


def image_name(volume_id):
    return 'volume-%s.backup.base' % volume_id


def snapshot_name(backup):
    """``backup.<id>.snap.<timestamp>``: one name for the backup's
    snapshot of the source and of the backup image."""
    created = backup.get('created_at')
    stamp = calendar.timegm(created.utctimetuple()) if created else 0
    return '%s%s.snap.%d' % (SNAP_PREFIX, backup['id'], stamp)


def metadata_of(backup):
    meta = backup.get('service_metadata')
    return meta if isinstance(meta, dict) else {}


def is_rbd(backup):
    return metadata_of(backup).get('layout') == LAYOUT


def _merge(ranges):
    out = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def _subtract(ranges, covered):
    """The parts of merged ``ranges`` outside merged ``covered``."""
    out = []
    i = 0
    for start, end in ranges:
        while i < len(covered) and covered[i][1] <= start:
            i += 1
        j = i
        pos = start
        while j < len(covered) and covered[j][0] < end:
            if covered[j][0] > pos:
                out.append((pos, covered[j][0]))
            pos = max(pos, covered[j][1])
            j += 1
        if pos < end:
            out.append((pos, end))
    return out


def _pieces(start, end):
    """``[start, end)`` cut at PIECE boundaries."""
    offset = start
    while offset < end:
        n = min(end, (offset // PIECE + 1) * PIECE) - offset
        yield offset, n
        offset += n


def _diff(image, from_snapshot, size):
    found = []
    image.diff_iterate(0, size, from_snapshot,
                       lambda off, n, exists: found.append((off, n, exists)))
    return found


class RbdLayout:
    """The differential layout of a CephBackupDriver (``driver``: its
    cluster connection, conf and zero-restore helper)."""

    def __init__(self, driver):
        self.driver = driver

    @staticmethod
    def usable(device):
        """Whether the source is an RBD image read at a snapshot or as a
        whole (its diffs can be asked)."""
        return callable(getattr(device, 'changed_extents', None))

    # -- the backup pool -----------------------------------------------------

    def _ioctx(self):
        rados = rados_module()
        cluster = self.driver._connected()
        try:
            return cluster.open_ioctx(self.driver.pool)
        except rados.Error as e:
            raise exception.BackendError(
                reason='cannot open backup_ceph_pool %s: %s'
                % (self.driver.pool, e))

    def _call(self, what, method, *args):
        rbd = rbd_module()
        try:
            return method(*args)
        except rbd.PermissionError as e:
            raise exception.BackendError(
                reason='%s in pool %s: client.%s is not allowed (its OSD '
                       'caps must be "profile rbd pool=%s"): %s'
                       % (what, self.driver.pool, self.driver.user,
                          self.driver.pool, e))
        except rbd.Error as e:
            raise exception.BackendError(
                reason='%s in pool %s: %s' % (what, self.driver.pool, e))

    def _open_image(self, ioctx, name, snapshot=None, read_only=False):
        rbd = rbd_module()
        try:
            return rbd.Image(ioctx, name, snapshot=snapshot,
                             read_only=read_only)
        except rbd.ImageNotFound:
            return None
        except rbd.Error as e:
            raise exception.BackendError(
                reason='backup image %s%s in pool %s cannot be opened: %s'
                % (name, '@%s' % snapshot if snapshot else '',
                   self.driver.pool, e))

    @contextlib.contextmanager
    def _writer(self, ioctx, name, backup, progress=None):
        """Hold the writer lock of the image ``name``, waiting for another
        holder to finish (``progress`` is called meanwhile, so that a
        backup deleted while it waits stops); yields a function that
        renews it."""
        rados = rados_module()
        key = name + '.lock'
        cookie = '%s.%s' % (backup['id'], uuid.uuid4().hex[:8])
        waited = False
        while True:
            try:
                ioctx.lock_exclusive(key, LOCK_NAME, cookie,
                                     desc='backup %s' % backup['id'],
                                     duration=LOCK_SECONDS)
                break
            except (rados.ObjectBusy, rados.ObjectExists):
                if not waited:
                    LOG.info('backup %s: waiting for the other writer of '
                             '%s', backup['id'], name)
                    waited = True
                if progress:
                    progress(0, 0)
                time.sleep(1)
            except rados.Error as e:
                raise exception.BackendError(
                    reason='the writer lock of backup image %s in pool %s '
                           'cannot be taken: %s' % (name, self.driver.pool,
                                                    e))
        renewed = [time.monotonic()]

        def renew():
            if time.monotonic() - renewed[0] < LOCK_SECONDS / 3:
                return
            try:
                ioctx.lock_exclusive(key, LOCK_NAME, cookie,
                                     desc='backup %s' % backup['id'],
                                     duration=LOCK_SECONDS,
                                     flags=LOCK_FLAG_MAY_RENEW)
            except rados.Error as e:
                raise exception.BackendError(
                    reason='the writer lock of backup image %s was lost: %s'
                    % (name, e))
            renewed[0] = time.monotonic()
        try:
            yield renew
        finally:
            try:
                ioctx.unlock(key, LOCK_NAME, cookie)
            except rados.ObjectNotFound:
                pass        # removed with its image
            except rados.Error as e:
                LOG.warning('cannot release the writer lock of %s: %s',
                            name, e)

    # -- a backup ------------------------------------------------------------

    def backup(self, backup, device, progress=None):
        name = image_name(backup['volume_id'])
        ioctx = self._ioctx()
        try:
            with self._writer(ioctx, name, backup, progress) as renew:
                return self._backup(ioctx, name, backup, device, progress,
                                    renew)
        finally:
            ioctx.close()

    def _backup(self, ioctx, name, backup, device, progress, renew):
        rbd = rbd_module()
        snap = snapshot_name(backup)
        image = self._open_image(ioctx, name)
        created = image is None
        if created:
            # layering only: no exclusive lock that a backup service
            # killed while writing would leave for the next to break
            self._call('create of backup image %s' % name,
                       rbd.RBD().create, ioctx, name, device.size,
                       ORDER, False, rbd.RBD_FEATURE_LAYERING)
            image = self._open_image(ioctx, name)
        try:
            result = self._write(backup, image, name, snap, device,
                                 progress, renew)
        except BaseException:
            self._drop_if_empty(ioctx, image, name)
            raise
        finally:
            image.close()
        if created:
            LOG.info('backup %s: made backup image %s', backup['id'],
                     name)
        return result

    def _write(self, backup, image, name, snap, device, progress, renew):
        size = device.size
        if image.size() != size:
            self._call('resize of %s' % name, image.resize, size)
        backup_snaps = [s['name'] for s in sorted(image.list_snaps(),
                                                  key=lambda s: s['id'])]
        source_snaps = set(device.snapshots())
        base = None
        if device.snapshot and device.snapshot.startswith(SNAP_PREFIX):
            common = [s for s in backup_snaps if s in source_snaps and
                      s != device.snapshot]
            base = common[-1] if common else None
        try:
            dirty = image.metadata_get(WRITING)
        except KeyError:
            dirty = None
        if base is not None:
            changed = device.changed_extents(base)
            # the head differs from the base where a backup was cut short
            # or a newer one was made (and since deleted)
            head = _diff(image, base, size) if (
                dirty or backup_snaps[-1] != base) else []
        else:
            changed = device.changed_extents(None)
            head = _diff(image, None, size)
        self._call('mark of %s' % name, image.metadata_set, WRITING,
                   backup['id'])
        done = [0, 0]

        def advance(nbytes, objects=0):
            done[0] += nbytes
            done[1] += objects
            renew()
            if progress:
                progress(done[0], done[1])

        # what the source diff names: its data, or a discard
        covered = _merge((o, o + n) for o, n, _ in changed)
        for offset, n, exists in changed:
            self._copy(device, image, offset, offset + n, exists, advance)
        # what only the head changed: back to the source's bytes
        extra = _subtract(_merge((o, o + n) for o, n, _ in head), covered)
        for start, end in extra:
            self._copy(device, image, start, end, True, advance)
        self._call('flush of %s' % name, image.flush)
        self._call('snapshot %s of %s' % (snap, name), image.create_snap,
                   snap)
        self._call('mark of %s' % name, image.metadata_remove, WRITING)
        LOG.info('backup %s of volume %s: snapshot %s@%s, %d bytes written '
                 'from %s (%s)', backup['id'], backup['volume_id'], name,
                 snap, done[0], device.snapshot or 'the image',
                 'the difference from %s' % base if base else 'full copy')
        return {'container': self.driver.pool,
                'service_metadata': {
                    'layout': LAYOUT, 'pool': self.driver.pool,
                    'image': name, 'snapshot': snap,
                    'source_snapshot': device.snapshot,
                    'base_snapshot': base, 'size_bytes': size,
                    'written_bytes': done[0]},
                'object_count': done[1]}

    @staticmethod
    def _copy(device, image, start, end, exists, advance):
        for offset, n in _pieces(start, end):
            data = device.read(offset, n) if exists else None
            if data is not None and len(data) != n:
                raise exception.BackendError(
                    reason='the volume read %d bytes at %d, not %d'
                    % (len(data), offset, n))
            if data is None or not any(data):
                # zeros are a hole in the backup too
                image.discard(offset, n)
            elif image.write(data, offset) != n:
                raise exception.BackendError(
                    reason='short write to the backup image at %d' % offset)
            advance(n, 1)

    def _drop_if_empty(self, ioctx, image, name):
        """The backup image goes when no backup is left in it."""
        rbd = rbd_module()
        try:
            if list(image.list_snaps()):
                return
        except rbd.Error:
            return
        image.close()
        try:
            rbd.RBD().remove(ioctx, name)
            LOG.info('removed backup image %s: no backup left in it', name)
            # its lock object with it (the lock held now goes too: a
            # waiting writer makes the object again when it locks)
            ioctx.remove_object(name + '.lock')
        except rbd.ImageNotFound:
            pass
        except rbd.Error as e:
            LOG.warning('cannot remove the empty backup image %s: %s', name,
                        e)

    # -- restore -------------------------------------------------------------

    def restore(self, backup, device, progress=None):
        meta = metadata_of(backup)
        name, snap = meta['image'], meta['snapshot']
        ioctx = self._ioctx()
        try:
            image = self._open_image(ioctx, name, snapshot=snap,
                                     read_only=True)
            if image is None:
                raise exception.BackendError(
                    reason='backup %s: its snapshot %s@%s is not in pool %s'
                    % (backup['id'], name, snap, self.driver.pool))
            try:
                self._restore(backup, image, device, progress)
            finally:
                image.close()
        finally:
            ioctx.close()

    def _restore(self, backup, image, device, progress):
        size = image.size()
        if device.size < size:
            raise exception.InvalidInput(
                reason='the volume (%d bytes) is smaller than the backup '
                       '(%d bytes)' % (device.size, size))
        done = [0, 0]

        def advance(nbytes, objects=0):
            done[0] += nbytes
            done[1] += objects
            if progress:
                progress(done[0], done[1])

        held = _merge((o, o + n) for o, n, exists in _diff(image, None, size)
                      if exists)
        for start, end in _subtract([(0, size)], held):
            self.driver._restore_zeros(device, start, end, advance)
        for start, end in held:
            for offset, n in _pieces(start, end):
                data = image.read(offset, n)
                if any(data):
                    device.write(offset, data)
                else:
                    self.driver._restore_zeros(device, offset, offset + n,
                                               lambda _n: None)
                advance(n, 1)
        if device.size > size and \
                self.driver.conf.restore_discard_excess_bytes:
            self.driver._restore_zeros(device, size, device.size,
                                       lambda n: None)
        device.flush()
        LOG.info('restored backup %s from %s: %d bytes of data written',
                 backup['id'], snapshot_name(backup), done[0])

    # -- delete and verify ---------------------------------------------------

    def delete(self, backup):
        """Remove the backup's snapshot (the name its record gives, or
        the one it would have had: a backup cut short), and the image
        with the last one."""
        meta = metadata_of(backup)
        name = meta.get('image') or image_name(backup['volume_id'])
        snap = meta.get('snapshot') or snapshot_name(backup)
        ioctx = self._ioctx()
        try:
            image = self._open_image(ioctx, name, read_only=True)
            if image is None:
                # (no lock taken: it would make the lock object)
                return
            image.close()
            with self._writer(ioctx, name, backup):
                self._delete(ioctx, backup, name, snap)
        finally:
            ioctx.close()

    def _delete(self, ioctx, backup, name, snap):
        rbd = rbd_module()
        image = self._open_image(ioctx, name)
        if image is None:
            return
        try:
            if snap in [s['name'] for s in image.list_snaps()]:
                self._call('removal of %s@%s' % (name, snap),
                           image.remove_snap, snap)
                LOG.info('backup %s: removed %s@%s', backup['id'],
                         name, snap)
            # (a head a dead writer left marked goes with it: no writer
            # runs while the lock is held)
            self._drop_if_empty(ioctx, image, name)
        finally:
            try:
                image.close()
            except rbd.Error:
                pass

    def verify(self, backup):
        meta = metadata_of(backup)
        for key in ('image', 'snapshot'):
            if not isinstance(meta.get(key), str) or not meta[key]:
                raise exception.BackendError(
                    reason='the service_metadata of backup %s names no %s'
                    % (backup['id'], key))
        if not chunked.PLAIN_NAME.fullmatch(meta['image'].replace('.', '_')):
            raise exception.BackendError(
                reason='backup image %r is not a plain name' % meta['image'])
        ioctx = self._ioctx()
        try:
            image = self._open_image(ioctx, meta['image'],
                                     snapshot=meta['snapshot'],
                                     read_only=True)
            if image is None:
                raise exception.BackendError(
                    reason='backup %s: snapshot %s@%s is not in pool %s'
                    % (backup['id'], meta['image'], meta['snapshot'],
                       self.driver.pool))
            image.close()
        finally:
            ioctx.close()
