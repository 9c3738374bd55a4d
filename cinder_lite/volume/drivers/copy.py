"""Point-in-time copies of files, for snapshots and clones of the file
driver.

``copy_file`` tries a reflink first (the ``FICLONE`` ioctl: XFS with
reflink, btrfs, bcachefs, OCFS2...): the new file shares the source's
blocks and the filesystem takes it in one step under the source's inode
lock, so it holds exactly what the source held at that instant, however
many writers are busy.  Where the filesystem has no reflink (ext4, tmpfs)
it copies the data the source has, and only that: holes are found with
``SEEK_DATA``/``SEEK_HOLE`` and stay holes, and each extent of data is
moved by ``copy_file_range`` (in the kernel, no trip through this
process).  Such a copy takes time, and a block written while it runs may
be copied before or after that write (doc/source/snapshots.rst).
"""
import errno
import fcntl
import logging
import os

LOG = logging.getLogger(__name__)

FICLONE = 0x40049409
# errors that mean "this filesystem (or this pair of files) cannot
# reflink", not that something is wrong
NO_REFLINK = (errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL,
              errno.ENOSYS, errno.EPERM)
CHUNK = 64 * 1024 * 1024

REFLINK = 'reflink'
SPARSE_COPY = 'sparse copy'


def _reflink(src_fd, dst_fd):
    try:
        fcntl.ioctl(dst_fd, FICLONE, src_fd)
        return True
    except OSError as e:
        if e.errno in NO_REFLINK:
            return False
        raise


def _extents(fd, end):
    """(offset, length) of each run of data in the first ``end`` bytes."""
    offset = 0
    while offset < end:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:      # only a hole is left
                return
            raise
        if start >= end:
            return
        stop = min(os.lseek(fd, start, os.SEEK_HOLE), end)
        yield start, stop - start
        offset = stop


def _copy_range(src_fd, dst_fd, offset, length):
    while length > 0:
        try:
            done = os.copy_file_range(src_fd, dst_fd, min(length, CHUNK),
                                      offset, offset)
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP,
                               errno.EINVAL):
                raise
            done = _copy_by_hand(src_fd, dst_fd, offset,
                                 min(length, CHUNK))
        if done == 0:       # the source is shorter than it was
            return
        offset += done
        length -= done


def _copy_by_hand(src_fd, dst_fd, offset, length):
    data = os.pread(src_fd, length, offset)
    if data:
        os.pwrite(dst_fd, data, offset)
    return len(data)


def copy_file(src, dst, size):
    """Make ``dst`` (a new file) a copy of ``src`` as it is now, ``size``
    bytes long (longer than the source: the rest reads as zeros; shorter:
    the source's first ``size`` bytes).  Returns how it was made
    (``REFLINK`` or ``SPARSE_COPY``).  ``dst`` is synced to disk; on
    failure it is removed."""
    src_fd = os.open(src, os.O_RDONLY)
    try:
        dst_fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            if _reflink(src_fd, dst_fd):
                how = REFLINK
            else:
                how = SPARSE_COPY
                end = min(os.fstat(src_fd).st_size, size)
                for offset, length in _extents(src_fd, end):
                    _copy_range(src_fd, dst_fd, offset, length)
            os.ftruncate(dst_fd, size)
            os.fsync(dst_fd)
        except BaseException:
            os.close(dst_fd)
            _unlink(dst)
            raise
        os.close(dst_fd)
    finally:
        os.close(src_fd)
    return how


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
