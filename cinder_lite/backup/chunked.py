"""What the object-store backup drivers share: how a volume becomes
objects, how an incremental backup finds what changed, and how a chain
of backups becomes a volume again.  A driver (``drivers/posix.py``) only
says how to write, read, list and delete an object of a container.

A backup named ``backup_<id>`` (its *prefix*) is, in its container:

``backup_<id>-00001``, ``-00002``...
    the objects: each a run of consecutive blocks of the volume, at most
    ``backup_file_size`` bytes of it (the POSIX store's option; the Ceph
    store's is ``backup_ceph_chunk_size``), compressed as one stream with
    ``backup_compression_algorithm`` (a run of zeros shorter than
    ZERO_GAP between blocks of data stays in the object).
``backup_<id>_sha256file``
    the SHA-256 of every ``backup_sha_block_size_bytes`` block of the
    volume as it was (JSON: ``block_size``, ``sha256s``, hex), compressed
    with zlib whatever the objects' compression: the hashes of a sparse
    volume are mostly the one of a block of zeros, and an incremental
    backup that changed one block should not store megabytes of them.
``backup_<id>_metadata``
    written last, so a backup without it is not a backup: the size of
    the volume, the parent, the objects (``name``, ``offset``,
    ``length``, ``compression``, ``stored_bytes``) and the zero extents
    (``[offset, length]``: blocks that read as zeros, stored as nothing).

A full backup accounts for every block: in an object or in a zero
extent.  An incremental one compares each block's SHA-256 with its
parent's and holds only the blocks that differ, so a restore takes each
block from the newest backup of the chain that holds it.
"""
import abc
import bisect
import bz2
import hashlib
import json
import logging
import re
import zlib

from oslo_utils import units

from cinder_lite.backup.drivers import base
from cinder_lite.common import exception

LOG = logging.getLogger(__name__)

FORMAT_VERSION = 1
MiB = 1024 * 1024
# bytes read from a device (or from an object) at once, and so between
# two calls of the progress callback
READ_BYTES = 4 * MiB
# a run of zeros shorter than this inside a run of data stays in the
# object (compressed to almost nothing) rather than cutting it in two:
# a filesystem's scattered empty blocks would otherwise make an object
# of every few blocks
ZERO_GAP = 1 * MiB

PLAIN_NAME = re.compile(r'[A-Za-z0-9_-]+')

ALIASES = {'none': 'none', 'off': 'none', 'no': 'none',
           'zlib': 'zlib', 'gzip': 'zlib',
           'bz2': 'bz2', 'bzip2': 'bz2',
           'zstd': 'zstd'}


# -- compression --------------------------------------------------------------

class _Identity:
    def compress(self, data):
        return bytes(data)

    def flush(self):
        return b''


class _ZlibReader:
    """A zlib stream read back ``n`` bytes at a time (the standard
    library only has a file reader for gzip's framing)."""

    def __init__(self, raw):
        self._raw = raw
        self._d = zlib.decompressobj()

    def read(self, n):
        out = []
        want = n
        while want and not self._d.eof:
            data = self._d.unconsumed_tail
            if not data:
                data = self._raw.read(READ_BYTES)
                if not data:
                    break
            piece = self._d.decompress(data, want)
            out.append(piece)
            want -= len(piece)
        return b''.join(out)


def _zstandard():
    try:
        import zstandard
    except ImportError:
        raise exception.BackendError(
            reason='backup_compression_algorithm zstd needs the Python '
                   'package zstandard')
    return zstandard


def compressor(algorithm):
    """An object with ``compress(data)`` and ``flush()`` that makes one
    stream of ``algorithm`` (a name of ALIASES' values)."""
    if algorithm == 'none':
        return _Identity()
    if algorithm == 'zlib':
        return zlib.compressobj()
    if algorithm == 'bz2':
        return bz2.BZ2Compressor()
    if algorithm == 'zstd':
        return _zstandard().ZstdCompressor().compressobj()
    raise exception.InvalidInput(
        reason='unknown compression %r' % algorithm)


def decompressing_reader(algorithm, raw):
    """A reader of ``raw`` (a binary file) that ``read(n)``s what the
    stream of ``algorithm`` in it decompresses to."""
    if algorithm == 'none':
        return raw
    if algorithm == 'zlib':
        return _ZlibReader(raw)
    if algorithm == 'bz2':
        return bz2.BZ2File(raw, 'rb')
    if algorithm == 'zstd':
        return _zstandard().ZstdDecompressor().stream_reader(raw)
    raise exception.BackendError(
        reason='a backup object is compressed with %r, which this '
               'service does not know' % algorithm)


def canonical_compression(name):
    try:
        return ALIASES[(name or 'none').lower()]
    except KeyError:
        raise exception.InvalidInput(
            reason='backup_compression_algorithm %r is none of %s'
            % (name, ', '.join(sorted(ALIASES))))


def read_exact(reader, n):
    """``n`` bytes of ``reader``, fewer only at its end."""
    parts = []
    while n:
        piece = reader.read(n)
        if not piece:
            break
        parts.append(piece)
        n -= len(piece)
    return b''.join(parts)


# -- names and hashes ---------------------------------------------------------

def prefix_of(backup):
    """The name every file of ``backup`` starts with (its
    service_metadata says, as a dict or as the JSON text of one; a
    record the driver never returned to is named after its id)."""
    meta = backup.get('service_metadata') or {}
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            meta = {}
    prefix = meta.get('prefix') if isinstance(meta, dict) else None
    if prefix:
        if not PLAIN_NAME.fullmatch(prefix):
            raise exception.InvalidInput(
                reason='backup prefix %r is not a plain name' % prefix)
        return prefix
    backup_id = backup.get('id')
    if not backup_id or not PLAIN_NAME.fullmatch(str(backup_id)):
        raise exception.InvalidInput(
            reason='backup id %r is not a plain name' % backup.get('id'))
    return 'backup_%s' % backup['id']


def object_name(prefix, number):
    return '%s-%05d' % (prefix, number)


def metadata_name(prefix):
    return prefix + '_metadata'


def sha_name(prefix):
    return prefix + '_sha256file'


def belongs_to(name, prefix):
    """Whether ``name`` is one of the files of the backup ``prefix``."""
    if name in (metadata_name(prefix), sha_name(prefix)):
        return True
    rest = name[len(prefix) + 1:]
    return (name.startswith(prefix + '-') and rest.isdigit())


def blocks(offset, length, block_size):
    """(start, end) of each block of ``[offset, offset + length)``, the
    last one shorter when the length is no multiple of the block."""
    end = offset + length
    for start in range(offset, end, block_size):
        yield start, min(start + block_size, end)


_ZERO_HASHES = {}


def zero_hash(length):
    if length not in _ZERO_HASHES:
        _ZERO_HASHES[length] = hashlib.sha256(bytes(length)).hexdigest()
    return _ZERO_HASHES[length]


UNCHANGED, ZEROS, DATA = 'unchanged', 'zeros', 'data'


def block_states(data, block_size, first, old_hashes=None):
    """``(start, end, sha256, state)`` of each block of ``data``, the
    piece of a volume that begins with block number ``first``: state
    UNCHANGED when ``old_hashes`` (the parent's, None for a full backup)
    has the same hash for it, else ZEROS or DATA.  Blocks of zeros are
    not hashed: their hash is known."""
    full_zero = bytes(block_size)
    all_zero = data == bytes(len(data))
    view = memoryview(data)
    for i, (start, end) in enumerate(blocks(0, len(data), block_size),
                                     first):
        n = end - start
        if all_zero:
            zero = True
        else:
            zero = data.startswith(full_zero if n == block_size
                                   else bytes(n), start, end)
        h = (zero_hash(n) if zero else
             hashlib.sha256(view[start:end]).hexdigest())
        if (old_hashes is not None and i < len(old_hashes) and
                old_hashes[i] == h):
            state = UNCHANGED
        else:
            state = ZEROS if zero else DATA
        yield start, end, h, state


def hole_states(length, block_size, first, old_hashes=None):
    """What ``block_states`` gives for ``length`` bytes of zeros, without
    the zeros."""
    for i, (start, end) in enumerate(blocks(0, length, block_size), first):
        h = zero_hash(end - start)
        if (old_hashes is not None and i < len(old_hashes) and
                old_hashes[i] == h):
            yield start, end, h, UNCHANGED
        else:
            yield start, end, h, ZEROS


# -- cutting a volume into objects --------------------------------------------

class Layout:
    """The objects and zero extents of one backup as its changed blocks
    come in, in order of offset: ``data`` for a block to store,
    ``zeros`` for a block that reads as zeros, ``unchanged`` for one the
    parent holds.  Runs of data become objects of at most ``limit``
    bytes, written as they come through ``open_object(number)`` (which
    returns a writer with ``write``, ``commit() -> stored bytes`` and
    ``abort()``)."""

    def __init__(self, open_object, prefix, algorithm, limit):
        self._open_object = open_object
        self.prefix = prefix
        self.algorithm = algorithm
        self.limit = limit
        self.objects = []       # committed: the metadata's entries
        self.opened = []        # names of every object begun
        self.zero_extents = []  # [offset, length]
        self._writer = None
        self._compressor = None
        self._start = self._length = 0
        self._zeros = None      # [offset, length] of a run not yet placed

    @property
    def object_count(self):
        return len(self.objects) + (1 if self._writer else 0)

    def data(self, offset, view):
        if self._zeros:
            start, length = self._zeros
            if (self._writer and length < ZERO_GAP and
                    self._length + length + len(view) <= self.limit):
                self._feed_zeros(length)
            else:
                self._close_object()
                self.zero_extents.append([start, length])
            self._zeros = None
        if self._writer and self._length + len(view) > self.limit:
            self._close_object()
        if not self._writer:
            self._new_object(offset)
        self._feed(view)

    def zeros(self, offset, length):
        if self._zeros:
            self._zeros[1] += length
        else:
            self._zeros = [offset, length]
        if self._writer and self._zeros[1] >= ZERO_GAP:
            self._close_object()

    def unchanged(self):
        self._close_object()
        if self._zeros:
            self.zero_extents.append(self._zeros)
            self._zeros = None

    def finish(self):
        self.unchanged()

    def abort(self):
        """Drop the object being written (the caller deletes the
        committed ones)."""
        if self._writer:
            writer, self._writer = self._writer, None
            writer.abort()

    def _new_object(self, offset):
        name = object_name(self.prefix, len(self.objects) + 1)
        self.opened.append(name)
        self._writer = self._open_object(name)
        self._compressor = compressor(self.algorithm)
        self._start, self._length = offset, 0

    def _feed(self, view):
        self._writer.write(self._compressor.compress(view))
        self._length += len(view)

    def _feed_zeros(self, length):
        zeros = bytes(min(length, READ_BYTES))
        while length:
            piece = memoryview(zeros)[:min(length, len(zeros))]
            self._feed(piece)
            length -= len(piece)

    def _close_object(self):
        if not self._writer:
            return
        writer, self._writer = self._writer, None
        try:
            writer.write(self._compressor.flush())
            stored = writer.commit()
        except BaseException:
            writer.abort()
            raise
        self.objects.append({
            'name': object_name(self.prefix, len(self.objects) + 1),
            'offset': self._start, 'length': self._length,
            'compression': self.algorithm, 'stored_bytes': stored})


# -- putting a chain back together --------------------------------------------

class Covered:
    """Disjoint, sorted ranges ``[start, end)`` of a volume already
    taken from a newer backup of the chain."""

    def __init__(self):
        self.starts = []
        self.ends = []

    def take(self, start, end):
        """The parts of ``[start, end)`` not yet covered, which are
        covered from now on."""
        free = []
        pos = start
        i = bisect.bisect_right(self.ends, start)
        while i < len(self.starts) and self.starts[i] < end:
            if self.starts[i] > pos:
                free.append((pos, self.starts[i]))
            pos = max(pos, self.ends[i])
            i += 1
        if pos < end:
            free.append((pos, end))
        self._add(start, end)
        return free

    def _add(self, start, end):
        lo = bisect.bisect_left(self.ends, start)
        hi = bisect.bisect_right(self.starts, end)
        if lo < hi:
            start = min(start, self.starts[lo])
            end = max(end, self.ends[hi - 1])
        self.starts[lo:hi] = [start]
        self.ends[lo:hi] = [end]

    def total(self):
        return sum(e - s for s, e in zip(self.starts, self.ends))


def restore_plan(metadatas):
    """What to write for the chain whose metadata are ``metadatas``
    (oldest first): ``(pieces, zero_ranges)`` where ``pieces`` maps
    ``(member index, object name)`` to the ranges of the volume to take
    from that object, and ``zero_ranges`` are the ranges that must read
    as zeros.  Each block comes from the newest member holding it."""
    size = metadatas[-1]['size_bytes']
    covered = Covered()
    pieces = {}
    zero_ranges = []
    for index in range(len(metadatas) - 1, -1, -1):
        meta = metadatas[index]
        extents = [(o['offset'], o['offset'] + o['length'], o)
                   for o in meta['objects']]
        extents += [(z[0], z[0] + z[1], None) for z in meta['zero_extents']]
        for start, end, obj in sorted(extents, key=lambda e: e[0]):
            end = min(end, size)
            if start >= end:
                continue
            free = covered.take(start, end)
            if not free:
                continue
            if obj is None:
                zero_ranges.extend(free)
            else:
                pieces.setdefault((index, obj['name']), []).extend(free)
    if covered.total() != size:
        raise exception.BackendError(
            reason='the backups of the chain do not account for every '
                   'block of the volume (%d of %d bytes): its full backup '
                   'is damaged' % (covered.total(), size))
    for ranges in pieces.values():
        ranges.sort()
    zero_ranges.sort()
    return pieces, zero_ranges


# -- the driver ---------------------------------------------------------------

class ChunkedBackupDriver(base.BackupDriver):
    """A backup driver over a store of named objects in containers; the
    subclass provides the store's primitives."""

    # -- the store (subclasses) --

    @abc.abstractmethod
    def default_container(self, backup):
        """The container of a backup whose request and configuration
        name none."""

    @abc.abstractmethod
    def open_object(self, container, name):
        """A writer of a new object: ``write(data)``, ``commit()`` (the
        object appears whole and durable under ``name``; returns the
        bytes stored) or ``abort()`` (nothing of it is left)."""

    @abc.abstractmethod
    def read_object(self, container, name):
        """A binary file of the object's bytes (a context manager);
        BackendError when it is absent."""

    @abc.abstractmethod
    def delete_object(self, container, name):
        """Remove the object; absent is fine."""

    @abc.abstractmethod
    def list_objects(self, container, prefix):
        """``{name: stored bytes}`` of the objects whose name starts
        with ``prefix``, and of no unfinished writes."""

    def forget_unfinished(self, container, prefix):
        """Remove what a process that died while writing objects of
        ``prefix`` left behind (nothing, where the store has no such
        leftovers)."""

    def container_emptied(self, container):
        """Called when a backup's objects are gone from ``container``."""

    # -- the options --

    @property
    def block_size(self):
        return self.conf.backup_sha_block_size_bytes

    # the option that bounds an object (before compression): each store
    # has its own, as in Cinder
    object_size_option = 'backup_file_size'

    @property
    def object_size(self):
        return getattr(self.conf, self.object_size_option)

    @property
    def algorithm(self):
        return canonical_compression(self.conf.backup_compression_algorithm)

    def container_of(self, backup):
        return (backup.get('container') or self.conf.backup_container or
                self.default_container(backup))

    def check_for_setup_error(self):
        canonical_compression(self.conf.backup_compression_algorithm)
        if self.object_size % self.block_size:
            raise exception.InvalidInput(
                reason='%s (%d) is no multiple of '
                       'backup_sha_block_size_bytes (%d)'
                       % (self.object_size_option, self.object_size,
                          self.block_size))
        if self.algorithm == 'zstd':
            _zstandard()

    # -- backup --

    def backup(self, backup, device, parent=None, progress=None):
        container = self.container_of(backup)
        prefix = prefix_of(backup)
        block_size = self.block_size
        parent_id = old_hashes = None
        if parent is not None:
            parent_id = parent['id']
            pmeta = self._metadata(self.container_of(parent),
                                   prefix_of(parent))
            # an incremental compares blocks of its parent's size, even
            # if the option changed since
            block_size = pmeta['block_size']
            old_hashes = self._hashes(self.container_of(parent),
                                      prefix_of(parent), block_size)
        limit = max(block_size,
                    self.object_size // block_size * block_size)
        layout = Layout(lambda name: self.open_object(container, name),
                        prefix, self.algorithm, limit)
        try:
            hashes = self._cut(device, block_size, old_hashes, layout,
                               progress)
            self._write_json(container, sha_name(prefix), {
                'backup_id': backup['id'], 'block_size': block_size,
                'sha256s': hashes}, compress=True)
            self._write_json(container, metadata_name(prefix), {
                'version': FORMAT_VERSION, 'backup_id': backup['id'],
                'volume_id': backup.get('volume_id'),
                'parent_id': parent_id, 'size_bytes': device.size,
                'block_size': block_size, 'objects': layout.objects,
                'zero_extents': layout.zero_extents})
        except BaseException:
            layout.abort()
            for name in layout.opened + [sha_name(prefix),
                                         metadata_name(prefix)]:
                self.delete_object(container, name)
            self.container_emptied(container)
            raise
        stored = sum(o['stored_bytes'] for o in layout.objects)
        LOG.info('backup %s of volume %s: %d objects, %d bytes stored, '
                 '%s', backup['id'], backup.get('volume_id'),
                 len(layout.objects), stored,
                 'incremental to %s' % parent_id if parent_id else 'full')
        return {'container': container,
                'service_metadata': {'prefix': prefix,
                                     'format_version': FORMAT_VERSION},
                'object_count': len(layout.objects)}

    def _cut(self, device, block_size, old_hashes, layout, progress):
        """Read ``device`` once, feed ``layout`` and return the hash of
        every block."""
        size = device.size
        step = max(block_size, READ_BYTES // block_size * block_size)
        hashes = []
        offset = 0
        holds_data = getattr(device, 'holds_data', None)
        while offset < size:
            length = min(step, size - offset)
            if holds_data is None or holds_data(offset, length):
                data = _read_device(device, offset, length)
                states = block_states(data, block_size, len(hashes),
                                      old_hashes)
            else:
                # a hole: zeros, not read
                data = b''
                states = hole_states(length, block_size, len(hashes),
                                     old_hashes)
            view = memoryview(data)
            for start, end, h, state in states:
                hashes.append(h)
                if state == UNCHANGED:
                    layout.unchanged()
                elif state == ZEROS:
                    layout.zeros(offset + start, end - start)
                else:
                    layout.data(offset + start, view[start:end])
            offset += length
            if progress:
                progress(offset, layout.object_count)
        layout.finish()
        return hashes

    def _write_json(self, container, name, doc, compress=False):
        raw = json.dumps(doc, separators=(',', ':')).encode()
        if compress:
            raw = zlib.compress(raw)
        writer = self.open_object(container, name)
        try:
            writer.write(raw)
            writer.commit()
        except BaseException:
            writer.abort()
            raise

    # -- reading a backup back --

    def _read_json(self, container, name):
        with self.read_object(container, name) as f:
            raw = f.read()
        try:
            if not raw.startswith(b'{'):
                raw = zlib.decompress(raw)
            return json.loads(raw)
        except (ValueError, zlib.error):
            raise exception.BackendError(
                reason='%s in container %s is not JSON' % (name, container))

    def _metadata(self, container, prefix):
        meta = self._read_json(container, metadata_name(prefix))
        if meta.get('version') != FORMAT_VERSION:
            raise exception.BackendError(
                reason='backup %s has metadata of format %r, not %d'
                % (prefix, meta.get('version'), FORMAT_VERSION))
        return meta

    def _hashes(self, container, prefix, block_size):
        doc = self._read_json(container, sha_name(prefix))
        if doc.get('block_size') != block_size:
            raise exception.BackendError(
                reason='the sha256 file of backup %s is of %r-byte blocks, '
                       'its metadata says %d'
                % (prefix, doc.get('block_size'), block_size))
        return doc['sha256s']

    # -- restore --

    def restore(self, chain, device, progress=None):
        metas = []
        for i, record in enumerate(chain):
            meta = self._metadata(self.container_of(record),
                                  prefix_of(record))
            expected = chain[i - 1]['id'] if i else None
            if meta.get('parent_id') != expected:
                raise exception.BackendError(
                    reason='backup %s is incremental to %s, not to %s: '
                           'the chain handed to the restore is wrong'
                    % (record['id'], meta.get('parent_id'), expected))
            if metas and meta['block_size'] != metas[0]['block_size']:
                raise exception.BackendError(
                    reason='backup %s has blocks of another size than its '
                           'full backup' % record['id'])
            metas.append(meta)
        size = metas[-1]['size_bytes']
        if device.size < size:
            raise exception.InvalidInput(
                reason='the volume (%d bytes) is smaller than the backup '
                       '(%d bytes)' % (device.size, size))
        block_size = metas[0]['block_size']
        pieces, zero_ranges = restore_plan(metas)
        done = [0, 0]

        def advance(nbytes, objects=0):
            done[0] += nbytes
            done[1] += objects
            if progress:
                progress(done[0], done[1])

        for start, end in zero_ranges:
            self._restore_zeros(device, start, end, advance)
        entries = {(i, o['name']): o for i, m in enumerate(metas)
                   for o in m['objects']}
        hashes = {}
        for key in sorted(pieces, key=lambda k: pieces[k][0]):
            index, name = key
            if index not in hashes:
                record = chain[index]
                hashes[index] = self._hashes(self.container_of(record),
                                             prefix_of(record), block_size)
            self._restore_object(
                device, self.container_of(chain[index]), entries[key],
                pieces[key], block_size, hashes[index], advance)
            advance(0, 1)
        if device.size > size and self.conf.restore_discard_excess_bytes:
            # (not counted: the progress is of the backup's bytes)
            self._restore_zeros(device, size, device.size, lambda n: None)
        device.flush()
        LOG.info('restored backup %s (%d in its chain): %d objects read, '
                 '%d bytes written or checked', chain[-1]['id'], len(chain),
                 done[1], done[0])

    def _restore_zeros(self, device, start, end, advance):
        """Make ``[start, end)`` read as zeros, writing only where it
        does not already (a new volume stays sparse; an old one loses
        its data)."""
        step = READ_BYTES
        zeros = bytes(step)
        holds_data = getattr(device, 'holds_data', None)
        for offset in range(start, end, step):
            n = min(step, end - offset)
            if (holds_data is None or holds_data(offset, n)) and \
                    _read_device(device, offset, n) != zeros[:n]:
                device.write(offset, zeros[:n])
            advance(n)

    def _restore_object(self, device, container, entry, ranges, block_size,
                        hashes, advance):
        """Write ``ranges`` of the volume from the object ``entry``,
        checking each block against the hash the backup recorded."""
        name = entry['name']
        step = max(block_size, READ_BYTES // block_size * block_size)
        with self.read_object(container, name) as raw:
            reader = _Decoded(entry['compression'], raw, name)
            pos = entry['offset']
            for start, end in ranges:
                reader.skip(start - pos)
                for offset in range(start, end, step):
                    n = min(step, end - offset)
                    data = reader.read(n)
                    _check(data, offset, block_size, hashes, name)
                    device.write(offset, data)
                    advance(n)
                pos = end

    # -- delete and verify --

    def delete(self, backup):
        container = self.container_of(backup)
        prefix = prefix_of(backup)
        # the metadata first: a backup half deleted no longer verifies
        self.delete_object(container, metadata_name(prefix))
        for name in self.list_objects(container, prefix):
            if belongs_to(name, prefix):
                self.delete_object(container, name)
        self.forget_unfinished(container, prefix)
        self.container_emptied(container)
        LOG.info('deleted backup %s from container %s', backup['id'],
                 container)

    def verify(self, backup):
        container = self.container_of(backup)
        prefix = prefix_of(backup)
        meta = self._metadata(container, prefix)
        # a record may be imported under a new id: its prefix names the
        # objects of the backup it was exported from, whose size it has
        size = backup.get('size')
        if meta.get('backup_id') != backup['id'] and \
                meta.get('size_bytes') != (size or 0) * units.Gi:
            raise exception.BackendError(
                reason='the objects of %s in container %s hold %s bytes, '
                       'not the %d GiB of the record'
                       % (prefix, container, meta.get('size_bytes'), size))
        found = self.list_objects(container, prefix)
        if sha_name(prefix) not in found:
            raise exception.BackendError(
                reason='backup %s has no sha256 file in container %s'
                % (backup['id'], container))
        for entry in meta['objects']:
            stored = found.get(entry['name'])
            if stored is None:
                raise exception.BackendError(
                    reason='object %s of backup %s is missing from '
                           'container %s'
                    % (entry['name'], backup['id'], container))
            if stored != entry['stored_bytes']:
                raise exception.BackendError(
                    reason='object %s of backup %s holds %d bytes, %d '
                           'were written' % (entry['name'], backup['id'],
                                             stored, entry['stored_bytes']))


def _read_device(device, offset, length):
    parts = []
    got = 0
    while got < length:
        piece = device.read(offset + got, length - got)
        if not piece:
            raise exception.BackendError(
                reason='the volume ended at byte %d, before its size %d'
                % (offset + got, device.size))
        parts.append(piece)
        got += len(piece)
    return parts[0] if len(parts) == 1 else b''.join(parts)


class _Decoded:
    """The decompressed bytes of one object, read in order; whatever
    goes wrong in the object (truncated, not of its compression) is a
    BackendError naming it."""

    def __init__(self, algorithm, raw, name):
        self.name = name
        self._errors = _decode_errors(algorithm)
        self._reader = decompressing_reader(algorithm, raw)

    def read(self, n):
        try:
            data = read_exact(self._reader, n)
        except self._errors as e:
            raise exception.BackendError(
                reason='backup object %s cannot be read: %s'
                % (self.name, e))
        if len(data) != n:
            raise exception.BackendError(
                reason='backup object %s is truncated' % self.name)
        return data

    def skip(self, n):
        while n > 0:
            n -= len(self.read(min(n, READ_BYTES)))


def _decode_errors(algorithm):
    errors = (OSError, EOFError, ValueError, zlib.error)
    if algorithm == 'zstd':
        errors += (_zstandard().ZstdError,)
    return errors


def _check(data, offset, block_size, hashes, name):
    view = memoryview(data)
    for start, end in blocks(0, len(data), block_size):
        i = (offset + start) // block_size
        if hashlib.sha256(view[start:end]).hexdigest() != hashes[i]:
            raise exception.BackendError(
                reason='block %d of backup object %s does not match the '
                       'SHA-256 recorded when it was written' % (i, name))
