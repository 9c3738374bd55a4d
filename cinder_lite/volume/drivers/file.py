"""The file driver: each volume is a sparse raw file in ``volumes_dir``,
each snapshot a file next to it (``snapshot-<id>``): a reflink of the
volume where the filesystem has them, a sparse copy otherwise
(``drivers/copy.py``; what each holds of writes made meanwhile is in
doc/source/snapshots.rst).  Volumes from snapshots and clones are copies made
the same way.

Capacity is that of the filesystem holding the directory; the provisioned
capacity counts snapshots too.  Writes go through a temporary name and a
rename so a crash never leaves a file that looks complete but is not.
Files are 0600 and the directory 0700: only this service's user (and
tgtd, as root) reads a volume; nbdkit runs as this user.
"""
import logging
import os
import time

from cinder_lite.common import exception
from cinder_lite.common import qemu_img
from cinder_lite.volume.drivers import base
from cinder_lite.volume.drivers import copy as file_copy
from cinder_lite.volume.targets import iscsi as iscsi_target
from cinder_lite.volume.targets import local as local_target
from cinder_lite.volume.targets import nbd as nbd_target

LOG = logging.getLogger(__name__)
GiB = 1024 ** 3
# the temporary name of a volume's file being reverted to a snapshot
REVERTING_SUFFIX = '.reverting'


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _sync_dir(path):
    """Make a rename in directory ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileDriver(base.VolumeDriver):

    VERSION = '1.0'

    def __init__(self, backend_conf, backend_name, host):
        super().__init__(backend_conf, backend_name, host)
        self.root = backend_conf.volumes_dir or os.path.join(
            backend_conf.state_path, 'volumes', backend_conf.section)
        self.target = None

    def _make_target(self):
        protocol = self.conf.target_protocol
        state_dir = os.path.join(self.conf.state_path, 'targets',
                                 self.conf.section)
        if protocol == 'nbd':
            return nbd_target.NbdTarget(self.conf, state_dir)
        if protocol == 'iscsi':
            return iscsi_target.IscsiTarget(self.conf, state_dir)
        return local_target.LocalTarget(self.conf, state_dir)

    def do_setup(self):
        os.makedirs(self.root, mode=0o700, exist_ok=True)
        self._tighten_modes()
        self.target = self._make_target()
        try:
            self.target.start()
        except exception.CinderLiteError as e:
            # volumes can still be created and deleted; each export tries
            # to start the target again and fails with this reason
            LOG.error('the %s target of %s cannot start: %s',
                      self.target.protocol, self.conf.section, e)

    def stop(self):
        if self.target is not None:
            self.target.stop()

    def _tighten_modes(self):
        """Files an earlier version made 0644 become 0600."""
        tightened = 0
        with os.scandir(self.root) as entries:
            for entry in entries:
                if not entry.name.startswith(('volume-', 'snapshot-')):
                    continue
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                    if entry.is_file(follow_symlinks=False) and \
                            mode & 0o077:
                        os.chmod(entry.path, mode & 0o700)
                        tightened += 1
                except FileNotFoundError:   # deleted meanwhile
                    continue
        if tightened:
            LOG.info('made %d volume and snapshot files of %s readable by '
                     'this user only (0600)', tightened, self.root)

    def check_for_setup_error(self):
        if not os.access(self.root, os.W_OK):
            raise exception.CinderLiteError(
                'volumes_dir %s is not writable' % self.root)

    def path(self, volume_id):
        return os.path.join(self.root, 'volume-%s' % volume_id)

    def create_volume(self, volume):
        path = self.path(volume['id'])
        if os.path.exists(path):
            LOG.info('%s exists already at %s', volume['id'], path)
            return False
        tmp = path + '.creating'
        try:
            os.unlink(tmp)      # left by a crash (maybe 0644): made again
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, volume['size'] * GiB)
        finally:
            os.close(fd)
        os.rename(tmp, path)
        LOG.info('created %s (%d GiB) at %s', volume['id'], volume['size'],
                 path)
        return True

    def snapshot_path(self, snapshot_id):
        return os.path.join(self.root, 'snapshot-%s' % snapshot_id)

    def _copy_to(self, src, path, size_gib, what):
        """Make ``path`` a copy of ``src`` (through a temporary name);
        False when ``path`` exists already."""
        if os.path.exists(path):
            LOG.info('%s exists already at %s', what, path)
            return False
        if not os.path.exists(src):
            raise exception.CinderLiteError(
                'cannot make %s: its source %s is missing' % (what, src))
        tmp = path + '.creating'
        try:
            os.unlink(tmp)      # left by a crash: made again
        except FileNotFoundError:
            pass
        started = time.monotonic()
        how = file_copy.copy_file(src, tmp, size_gib * GiB)
        os.rename(tmp, path)
        LOG.info('made %s (%d GiB) by %s of %s in %.3f s', what, size_gib,
                 how, src, time.monotonic() - started)
        return True

    def create_snapshot(self, snapshot):
        return self._copy_to(self.path(snapshot['volume_id']),
                             self.snapshot_path(snapshot['id']),
                             snapshot['volume_size'],
                             'snapshot %s of volume %s' % (
                                 snapshot['id'], snapshot['volume_id']))

    def delete_snapshot(self, snapshot):
        for path in (self.snapshot_path(snapshot['id']),
                     self.snapshot_path(snapshot['id']) + '.creating'):
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            LOG.info('deleted %s', path)

    def revert_to_snapshot(self, volume, snapshot):
        """A copy of the snapshot (reflink or sparse copy) made under a
        temporary name, then renamed over the volume's file: a crash
        leaves the volume's data whole, before or after.  No export
        holds the old file open (the volume has no attachment)."""
        path = self.path(volume['id'])
        src = self.snapshot_path(snapshot['id'])
        if not os.path.exists(src):
            raise exception.CinderLiteError(
                'cannot revert volume %s: the copy of snapshot %s is '
                'missing' % (volume['id'], snapshot['id']))
        if not os.path.exists(path):
            raise exception.CinderLiteError(
                'cannot revert volume %s: its file is missing'
                % volume['id'])
        tmp = path + REVERTING_SUFFIX
        _unlink(tmp)        # left by a revert a crash cut short
        started = time.monotonic()
        how = file_copy.copy_file(src, tmp, volume['size'] * GiB)
        os.rename(tmp, path)
        _sync_dir(self.root)
        LOG.info('reverted volume %s to snapshot %s by %s in %.3f s',
                 volume['id'], snapshot['id'], how,
                 time.monotonic() - started)

    def create_volume_from_snapshot(self, volume, snapshot):
        return self._copy_to(self.snapshot_path(snapshot['id']),
                             self.path(volume['id']), volume['size'],
                             'volume %s from snapshot %s' % (
                                 volume['id'], snapshot['id']))

    def create_cloned_volume(self, volume, source):
        return self._copy_to(self.path(source['id']),
                             self.path(volume['id']), volume['size'],
                             'volume %s as a clone of %s' % (
                                 volume['id'], source['id']))

    def delete_volume(self, volume):
        for path in (self.path(volume['id']),
                     self.path(volume['id']) + '.creating',
                     self.path(volume['id']) + REVERTING_SUFFIX):
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            LOG.info('deleted %s', path)

    def rename_volume(self, volume, new_id):
        old, new = self.path(volume['id']), self.path(new_id)
        if not os.path.exists(old) and os.path.exists(new):
            return
        if os.path.exists(new):
            raise exception.CinderLiteError(
                'volume %s has a file here already' % new_id)
        os.rename(old, new)
        fd = os.open(self.root, os.O_RDONLY)
        try:
            os.fsync(fd)        # the rename is durable
        finally:
            os.close(fd)
        LOG.info('renamed %s to %s', old, new)

    def extend_volume(self, volume, new_size):
        with open(self.path(volume['id']), 'r+b') as f:
            f.seek(0, os.SEEK_END)
            if f.tell() > new_size * GiB:
                raise exception.CinderLiteError(
                    'refusing to shrink volume %s' % volume['id'])
            try:
                f.truncate(new_size * GiB)
            except OSError as e:
                raise exception.CinderLiteError(
                    'the file system could not grow the file of volume %s '
                    'to %d GiB: %s' % (volume['id'], new_size,
                                       e.strerror or e)) from None

    # -- images ------------------------------------------------------------
    def copy_image_to_volume(self, volume, image_path, image_format):
        # into the existing sparse file: it keeps its size, and what the
        # image leaves out stays a hole
        qemu_img.convert(image_path, image_format, self.path(volume['id']),
                         'raw', dest_exists=True)

    def raw_image_destination(self, volume):
        path = self.path(volume['id'])
        # all holes: a create rolled forward may find what an earlier
        # try wrote, and the zeros of the image are not written
        with open(path, 'r+b') as f:
            f.truncate(0)
            f.truncate(volume['size'] * GiB)
        return path

    def clear_volume(self, volume):
        # all holes, the size kept
        with open(self.path(volume['id']), 'r+b') as f:
            f.truncate(0)
            f.truncate(volume['size'] * GiB)

    def sync_volume(self, volume):
        fd = os.open(self.path(volume['id']), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def copy_volume_to_image(self, volume, image_path, image_format):
        qemu_img.convert(self.path(volume['id']), 'raw', image_path,
                         image_format)

    # -- manage and unmanage ------------------------------------------------
    # A file of volumes_dir that no volume owns becomes a volume's by a new
    # name (a hard link, then the old name goes): the link refuses to
    # replace a file that is there, and a crash between the two steps
    # leaves the data under both names, never under none.  Unmanaged
    # files keep the name they had (volume-<id>, snapshot-<id>).
    def _ref_path(self, ref, own, prefix):
        """The file ``ref`` names (``source-name``: its name in the
        directory; ``source-id``: the id in ``<prefix><id>``); ``own`` (the
        object's own file) for ``ref`` None (a manage rolled forward)."""
        if ref is None:
            return own
        name = ref.get('source-name')
        if name is None and ref.get('source-id'):
            name = prefix + ref['source-id']
        if not isinstance(name, str) or not name or '/' in name or \
                name in ('.', '..') or name.startswith('.') or \
                name.endswith('.creating'):
            raise exception.ManageExistingInvalidReference(
                existing_ref=ref, reason='not the name of a file of %s'
                                         % self.root)
        return os.path.join(self.root, name)

    def _size_of(self, path, ref, own):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            raise exception.ManageExistingInvalidReference(
                existing_ref=ref, reason='no such file in %s'
                                         % self.root) from None
        if not os.path.isfile(path) or os.path.islink(path):
            raise exception.ManageExistingInvalidReference(
                existing_ref=ref, reason='not a regular file')
        if path != own and st.st_nlink > 1:
            raise exception.ManageExistingInvalidReference(
                existing_ref=ref, reason='the file has other names (%d '
                                         'links)' % st.st_nlink)
        # as Cinder: whole GiB, rounded up (a file of 0 bytes is 1 GiB)
        return max(1, -(-st.st_size // GiB))

    def _adopt(self, path, own, size_gib, what):
        if path != own:
            try:
                os.link(path, own)
            except FileExistsError:
                if not os.path.samefile(path, own):
                    raise exception.CinderLiteError(
                        'cannot manage %s: %s exists already'
                        % (path, own)) from None
            os.unlink(path)
        os.chmod(own, 0o600)
        with open(own, 'r+b') as f:
            f.seek(0, os.SEEK_END)
            if f.tell() < size_gib * GiB:
                f.truncate(size_gib * GiB)
        LOG.info('managed %s as %s (%d GiB)', path, what, size_gib)

    def manage_existing_get_size(self, volume, ref):
        own = self.path(volume['id'])
        return self._size_of(self._ref_path(ref, own, 'volume-'), ref, own)

    def manage_existing(self, volume, ref):
        own = self.path(volume['id'])
        path = self._ref_path(ref, own, 'volume-')
        self._adopt(path, own, self._size_of(path, ref, own),
                    'volume %s' % volume['id'])

    def manage_existing_snapshot_get_size(self, snapshot, ref):
        own = self.snapshot_path(snapshot['id'])
        return self._size_of(self._ref_path(ref, own, 'snapshot-'), ref,
                             own)

    def manage_existing_snapshot(self, snapshot, ref):
        own = self.snapshot_path(snapshot['id'])
        path = self._ref_path(ref, own, 'snapshot-')
        self._adopt(path, own, self._size_of(path, ref, own),
                    'snapshot %s of volume %s' % (snapshot['id'],
                                                  snapshot['volume_id']))

    def _files(self):
        with os.scandir(self.root) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith('.') or name.endswith('.creating'):
                    continue
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:       # gone meanwhile
                    continue
                yield name, st

    @staticmethod
    def _entry(name, st, key, prefix):
        owner = name[len(prefix):] if name.startswith(prefix) else None
        return {'reference': {'source-name': name},
                'size': max(1, -(-st.st_size // GiB)),
                key: owner,
                'reason_not_safe': ('the file has other names'
                                    if st.st_nlink > 1 else None),
                'extra_info': None}

    def list_manageable_volumes(self):
        return [self._entry(name, st, 'volume_id', 'volume-')
                for name, st in self._files()
                if not name.startswith('snapshot-')]

    def list_manageable_snapshots(self):
        # which volume a snapshot file was taken of is not written down
        # anywhere on this backend: source_reference stays None
        return [dict(self._entry(name, st, 'snapshot_id', 'snapshot-'),
                     source_reference=None)
                for name, st in self._files()
                if name.startswith('snapshot-')]

    # -- connections: through the backend's target --------------------------
    def create_export(self, volume, connector, mode, attachment_id):
        path = self.path(volume['id'])
        if not os.path.exists(path):
            raise exception.CinderLiteError(
                'the file of volume %s is missing' % volume['id'])
        self.target.create_export(path, volume['id'], attachment_id, mode,
                                  connector, volume.get('qos_specs'))

    def remove_export(self, volume, connector, attachment_id, shared):
        # every target here exports per attachment
        return self.target.remove_export(attachment_id)

    def list_exports(self):
        return list(self.target.exports())

    def export_mode(self, attachment_id):
        return (self.target.exports().get(attachment_id) or {}).get('mode')

    def ensure_export(self, volume, attachment_id, mode, connection_info,
                      connector):
        return self.target.ensure_export(
            self.path(volume['id']), volume['id'], attachment_id, mode,
            connection_info, connector, volume.get('qos_specs'))

    def reach(self, volume_id, attachment_ids, initiators):
        return self.target.reach(volume_id, attachment_ids, initiators)

    def prune_exports(self):
        self.target.prune()

    def initialize_connection(self, volume, connector, mode, attachment_id):
        data = self.target.connection_data(
            self.path(volume['id']), volume['id'], attachment_id, mode)
        # cinder_lite's own key, for the host: whether it can fence the
        # other hosts of the volume with SCSI persistent reservations
        data['persistent_reservations'] = self.keeps_reservations()
        return {'driver_volume_type': self.target.protocol, 'data': data}

    def terminate_connection(self, volume, connector, attachment_id):
        return None

    def create_backup_export(self, volume, snapshot_id, connector, mode,
                             export_id):
        # a snapshot is a file of its own, exported under its own id (a
        # target of its own on iSCSI, never the volume's LUN)
        if snapshot_id:
            path, key = self.snapshot_path(snapshot_id), snapshot_id
        else:
            path, key = self.path(volume['id']), volume['id']
        if not os.path.exists(path):
            raise exception.CinderLiteError(
                'the file of %s %s is missing' % (
                    'snapshot' if snapshot_id else 'volume', key))
        self.target.create_export(path, key, export_id, mode, connector)
        data = self.target.connection_data(path, key, export_id, mode)
        return {'driver_volume_type': self.target.protocol, 'data': data}

    def get_volume_stats(self):
        st = os.statvfs(self.root)
        total = st.f_blocks * st.f_frsize / GiB
        free = st.f_bavail * st.f_frsize / GiB
        provisioned = 0
        with os.scandir(self.root) as entries:
            for entry in entries:
                if not entry.name.startswith(('volume-', 'snapshot-')):
                    continue
                try:
                    provisioned += entry.stat().st_size
                except FileNotFoundError:  # deleted meanwhile
                    continue
        provisioned /= GiB
        return {
            'volume_backend_name': self.backend_name,
            'vendor_name': 'cinder_lite',
            'driver_version': self.VERSION,
            'storage_protocol': ('file' if self.target.protocol == 'local'
                                 else self.target.protocol),
            'total_capacity_gb': round(total, 2),
            'free_capacity_gb': round(free, 2),
            'provisioned_capacity_gb': round(provisioned, 2),
            'max_over_subscription_ratio':
                self.conf.max_over_subscription_ratio,
            'reserved_percentage': self.conf.reserved_percentage,
            'thin_provisioning_support': True,
            'thick_provisioning_support': False,
            'multiattach': bool(self.conf.multiattach),
            'shared_targets': self.shares_targets(),
            'persistent_reservations': self.keeps_reservations(),
            'consistent_group_snapshot_enabled': self.can_hold_writes(),
        }

    def can_hold_writes(self):
        return self.target is not None and hasattr(self.target, 'hold')

    def hold_writes(self, volume_ids):
        if not self.can_hold_writes():
            return super().hold_writes(volume_ids)
        return self.target.hold(volume_ids)

    def shares_targets(self):
        return False

    def keeps_reservations(self):
        # tgt keeps one reservation state per logical unit, and every
        # read-write attachment of a volume logs in to the same target; a
        # cluster exports one such volume from one member at a time
        # (AttachmentService._export_host)
        return self.target.protocol == 'iscsi'
