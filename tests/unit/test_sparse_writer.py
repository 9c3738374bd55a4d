"""The sparse writer of downloaded images: what it writes reads back as
the stream, its blocks of zeros are holes, and a stream without zeros
is written whole, whatever the sizes of the pieces it comes in."""
import os
import random

import pytest

from cinder_lite.common import sparse
from tests.harness.volumes import data_extents

BLOCK = sparse.BLOCK


def stream(layout, seed=7):
    """Bytes from a layout of (kind, length): 'z' zeros, 'd' data (no
    zero byte in it, so a block of it is never taken for zeros)."""
    rng = random.Random(seed)
    out = bytearray()
    for kind, length in layout:
        out += bytes(length) if kind == 'z' else \
            rng.randbytes(length).replace(b'\0', b'\1')
    return bytes(out)


def pieces(data, size):
    return [data[i:i + size] for i in range(0, len(data), size)]


def write(path, parts, existing_size=None):
    if existing_size is None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    else:
        with open(path, 'wb') as f:
            f.truncate(existing_size)
        fd = os.open(path, os.O_WRONLY)
    try:
        writer = sparse.SparseWriter(fd)
        for part in parts:
            writer.write(part)
        writer.finish()
    finally:
        os.close(fd)
    return writer


LAYOUT = [('d', 3 * BLOCK), ('z', 4 * BLOCK), ('d', BLOCK + 100),
          ('z', 3 * BLOCK - 100), ('d', 10), ('z', 2 * BLOCK + 5)]


@pytest.mark.parametrize('size', [BLOCK * 16, BLOCK, 1000, 65537, 4093])
def test_blocks_of_zeros_become_holes(tmp_path, size):
    data = stream(LAYOUT)
    path = str(tmp_path / 'image')
    writer = write(path, pieces(data, size))
    with open(path, 'rb') as f:
        assert f.read() == data
    assert writer.written == len(data)
    # whole blocks of zeros only, at block offsets of the file (the
    # blocks with the last 100 bytes of the second data and with the
    # 10 bytes of the third are written)
    expected = [(0, 3 * BLOCK), (7 * BLOCK, 9 * BLOCK),
                (11 * BLOCK, 12 * BLOCK)]
    assert writer.skipped == len(data) - sum(e - s for s, e in expected)
    extents = data_extents(path)
    if extents != [(0, len(data))]:     # the filesystem keeps holes
        assert extents == expected


def test_a_stream_without_zero_blocks_is_written_whole(tmp_path):
    data = stream([('d', 5 * BLOCK + 3)])
    path = str(tmp_path / 'image')
    writer = write(path, pieces(data, 4096))
    assert writer.skipped == 0
    with open(path, 'rb') as f:
        assert f.read() == data
    assert data_extents(path) == [(0, len(data))]


def test_zeros_at_the_end_give_the_file_its_length(tmp_path):
    data = bytes(3 * BLOCK + 1)
    path = str(tmp_path / 'image')
    writer = write(path, [bytearray(data)])
    assert writer.skipped == len(data)
    assert os.path.getsize(path) == len(data)
    assert data_extents(path) == []


def test_into_a_longer_file_of_holes_it_is_never_shortened(tmp_path):
    data = stream([('z', BLOCK), ('d', 2 * BLOCK), ('z', BLOCK)])
    path = str(tmp_path / 'volume')
    write(path, [memoryview(data)], existing_size=16 * BLOCK)
    assert os.path.getsize(path) == 16 * BLOCK
    with open(path, 'rb') as f:
        assert f.read() == data + bytes(16 * BLOCK - len(data))
