"""The POSIX backup driver: backups as files in ``backup_posix_path``
(in production an NFS or other shared mount, the same on every backup
service), laid out by ``cinder_lite.backup.chunked``.

A container is a sub-directory of ``backup_posix_path`` (the request's,
else ``backup_container``, else ``<id[0:2]>/<id[2:4]>/<volume id>`` as
Cinder's POSIX driver makes it); directories are created 0700 and files
0600, since a backup holds a volume's data.  A file appears under its
name only once written whole and synced: it is written as
``.<name>.tmp-<random>`` and renamed, so a crash leaves a temporary
file, never half an object, and the delete of the backup removes it.
"""
import errno
import logging
import os
import uuid

from cinder_lite.backup import chunked
from cinder_lite.common import exception

LOG = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600
BUFFER = 1024 * 1024
TMP_MARK = '.tmp-'
# what a path that names nothing raises: nothing there, or a part of it
# that is a file (a container that could never be made holds nothing)
ABSENT = (FileNotFoundError, NotADirectoryError)


class _FileWriter:
    """One object being written under a temporary name."""

    def __init__(self, directory, name, make_directory):
        self.directory = directory
        self.name = name
        self.tmp = '.%s%s%s' % (name, TMP_MARK, uuid.uuid4().hex)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        path = os.path.join(directory, self.tmp)
        try:
            fd = os.open(path, flags, FILE_MODE)
        except FileNotFoundError:
            # the container was pruned by the delete of its last backup
            # between our mkdir and this open
            make_directory()
            fd = os.open(path, flags, FILE_MODE)
        self._file = os.fdopen(fd, 'wb', buffering=BUFFER)
        self.stored = 0

    def write(self, data):
        if data:
            self._file.write(data)
            self.stored += len(data)

    def commit(self):
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        os.rename(os.path.join(self.directory, self.tmp),
                  os.path.join(self.directory, self.name))
        _fsync_dir(self.directory)
        return self.stored

    def abort(self):
        try:
            self._file.close()
        except OSError:
            pass
        try:
            os.unlink(os.path.join(self.directory, self.tmp))
        except FileNotFoundError:
            pass


class PosixBackupDriver(chunked.ChunkedBackupDriver):

    @property
    def root(self):
        return os.path.abspath(self.conf.backup_posix_path)

    def check_for_setup_error(self):
        super().check_for_setup_error()
        root = self.root
        try:
            _make_dirs(root)
        except OSError as e:
            raise exception.BackendError(
                reason='backup_posix_path %s cannot be created: %s'
                % (root, e.strerror))
        if not os.path.isdir(root):
            raise exception.BackendError(
                reason='backup_posix_path %s is not a directory' % root)
        # access() answers for this process's ids, not for what an NFS
        # server squashes them to: a real write is the only proof
        probe = os.path.join(root, '.probe%s%s' % (TMP_MARK,
                                                   uuid.uuid4().hex))
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                         FILE_MODE)
            try:
                os.write(fd, b'probe')
                os.fsync(fd)
            finally:
                os.close(fd)
            os.unlink(probe)
        except OSError as e:
            raise exception.BackendError(
                reason='backup_posix_path %s is not writable by this '
                       'service: %s' % (root, e.strerror))

    def default_container(self, backup):
        volume_id = str(backup.get('volume_id') or '')
        if not chunked.PLAIN_NAME.fullmatch(volume_id):
            raise exception.InvalidInput(
                reason='a backup needs a volume id to find its container, '
                       'not %r' % volume_id)
        if len(volume_id) < 4:
            return volume_id
        return '%s/%s/%s' % (volume_id[0:2], volume_id[2:4], volume_id)

    def container_path(self, container):
        """The directory of ``container``, refused when it would not be
        inside ``backup_posix_path``."""
        if not isinstance(container, str) or not container:
            raise exception.InvalidInput(
                reason='a backup container is a non-empty name')
        parts = container.split('/')
        # (an absolute path begins with an empty part; '.', '..' and
        # the names of temporary files begin with a dot)
        if '\0' in container or any(
                p == '' or p.startswith('.') for p in parts):
            raise exception.InvalidInput(
                reason='backup container %r is not a relative path of '
                       'names inside the backup store (no part empty or '
                       'beginning with a dot)' % container)
        root = self.root
        path = os.path.join(root, *parts)
        # a symbolic link inside the store must not lead out of it
        real_root = os.path.realpath(root)
        real = os.path.realpath(path)
        if os.path.commonpath([real_root, real]) != real_root:
            raise exception.InvalidInput(
                reason='backup container %r leads out of the backup store'
                % container)
        return path

    def open_object(self, container, name):
        path = self.container_path(container)
        _make_dirs(path)
        return _FileWriter(path, name, lambda: _make_dirs(path))

    def read_object(self, container, name):
        path = os.path.join(self.container_path(container), name)
        try:
            return open(path, 'rb')
        except ABSENT:
            raise exception.BackendError(
                reason='backup file %s is missing from container %s'
                % (name, container))

    def delete_object(self, container, name):
        directory = self.container_path(container)
        try:
            os.unlink(os.path.join(directory, name))
        except ABSENT:
            return
        _fsync_dir(directory)

    def list_objects(self, container, prefix):
        found = {}
        try:
            entries = os.scandir(self.container_path(container))
        except ABSENT:
            return found
        with entries:
            for entry in entries:
                if entry.name.startswith(prefix) and entry.is_file():
                    try:
                        found[entry.name] = entry.stat().st_size
                    except FileNotFoundError:
                        pass
        return found

    def forget_unfinished(self, container, prefix):
        directory = self.container_path(container)
        try:
            names = os.listdir(directory)
        except ABSENT:
            return
        for name in names:
            if not name.startswith('.') or TMP_MARK not in name:
                continue
            target = name[1:name.rindex(TMP_MARK)]
            if chunked.belongs_to(target, prefix):
                try:
                    os.unlink(os.path.join(directory, name))
                except FileNotFoundError:
                    pass

    def container_emptied(self, container):
        """Remove the container's directories that are now empty, up to
        (not including) ``backup_posix_path``: tidiness only, so a
        failure is logged, never raised over what the caller does."""
        root = self.root
        path = self.container_path(container)
        while path != root and path.startswith(root + os.sep):
            try:
                os.rmdir(path)
            except ABSENT:
                pass
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    LOG.warning('cannot remove the empty backup container '
                                'directory %s: %s', path, e)
                return
            path = os.path.dirname(path)


def _make_dirs(path):
    """Create ``path`` and the missing directories above it, each 0700
    (``os.makedirs`` gives the mode to the last only)."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent != path:
        _make_dirs(parent)
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
