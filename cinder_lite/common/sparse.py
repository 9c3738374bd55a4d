"""Writing a stream of bytes into a file that reads as zeros (a new
file, or a sparse file of holes), leaving the all-zero blocks of the
stream unwritten: they stay holes, which costs neither the writes nor
the disk, and whoever reads the file next (qemu-img, the filesystem,
a copy) sees them as holes instead of reading zeros.

Blocks are ``BLOCK`` bytes at offsets that are multiples of ``BLOCK``
in the file (whatever the sizes of the pieces the stream comes in), so
the holes line up with the filesystem's blocks.
"""
import os
import stat

BLOCK = 64 * 1024
_ZEROS = bytes(BLOCK)


class SparseWriter:
    """Writes to the open file descriptor ``fd`` from offset 0; the file
    must read as zeros wherever it is not written.  ``finish()`` writes
    what is left and makes the file at least as long as the stream (a
    trailing run of zeros becomes a hole at its end); it never shortens
    the file.

    ``written``: bytes of the stream so far; ``skipped``: bytes of it
    left as holes (whole blocks, and a last partial block of zeros)."""

    def __init__(self, fd):
        self.fd = fd
        self.offset = 0         # in the file, of the first byte not done
        self.pending = b''      # a block begun, up to the next boundary
        self.skipped = 0

    @property
    def written(self):
        return self.offset + len(self.pending)

    def write(self, data):
        if not isinstance(data, bytes):
            data = bytes(data)
        begin = 0
        if self.pending:
            # the begun block first: the rest then starts at a boundary
            begin = BLOCK - len(self.pending)
            self.pending += data[:begin]
            if len(self.pending) < BLOCK:
                return
            self._blocks(self.pending, 0, BLOCK)
            self.pending = b''
        whole = begin + (len(data) - begin) // BLOCK * BLOCK
        self._blocks(data, begin, whole)
        if whole < len(data):
            self.pending = data[whole:]

    def finish(self):
        if self.pending:
            self._blocks(self.pending, 0, len(self.pending))
            self.pending = b''
        found = os.fstat(self.fd)
        # (a device has the length it has)
        if stat.S_ISREG(found.st_mode) and found.st_size < self.offset:
            os.ftruncate(self.fd, self.offset)

    def _blocks(self, data, begin, end):
        """Write ``data[begin:end]`` (whole blocks, but for the stream's
        last one) at ``offset``, but for its blocks of zeros; one write
        for each run of blocks with data."""
        view = memoryview(data)
        run = begin         # start of the run of data blocks not written
        for pos in range(begin, end, BLOCK):
            stop = min(end, pos + BLOCK)
            # (startswith compares in place; a slice would be a copy)
            if data.startswith(_ZEROS[:stop - pos], pos):
                if run < pos:
                    self._pwrite(view[run:pos], self.offset + run - begin)
                self.skipped += stop - pos
                run = stop
        if run < end:
            self._pwrite(view[run:end], self.offset + run - begin)
        self.offset += end - begin

    def _pwrite(self, view, offset):
        while len(view):
            done = os.pwrite(self.fd, view, offset)
            view = view[done:]
            offset += done
