"""The pure pieces of the chunked backup layout: compression streams read
back in any pieces, which blocks an incremental backup takes, how runs
of blocks become objects and zero extents, and which backup of a chain
each block of a restore comes from."""
import hashlib
import io
import os
import random

from oslo_config import cfg
import pytest

from cinder_lite.backup import chunked
from cinder_lite.backup.drivers import posix
from cinder_lite.common import exception
from cinder_lite import conf as cl_conf

KiB = 1024
MiB = 1024 * KiB
ALGORITHMS = ('none', 'zlib', 'bz2', 'zstd')


def compress(algorithm, data, pieces=7):
    c = chunked.compressor(algorithm)
    step = max(1, len(data) // pieces)
    out = b''.join(c.compress(data[i:i + step])
                   for i in range(0, len(data), step))
    return out + c.flush()


def mixed(length, seed=3):
    """Half random, half repetitive: compressible, but not trivially."""
    rng = random.Random(seed)
    return (rng.randbytes(length // 2) + b'cinder lite ' * (length // 24)
            )[:length]


@pytest.mark.parametrize('algorithm', ALGORITHMS)
def test_a_stream_reads_back_whatever_the_sizes_read(algorithm):
    data = mixed(3 * MiB + 17)
    stored = compress(algorithm, data)
    reader = chunked.decompressing_reader(algorithm, io.BytesIO(stored))
    got = []
    sizes = [1, 4095, 1 * MiB, 3, 2 * MiB, 10 * MiB]
    for n in sizes:
        got.append(chunked.read_exact(reader, n))
    assert b''.join(got) == data
    assert chunked.read_exact(reader, 10) == b''


@pytest.mark.parametrize('algorithm', ('zlib', 'bz2', 'zstd'))
def test_compression_stores_less_of_a_compressible_stream(algorithm):
    data = b'\1\2\3\4' * MiB
    assert len(compress(algorithm, data)) < len(data) // 50


@pytest.mark.parametrize('algorithm', ALGORITHMS)
def test_an_empty_stream_round_trips(algorithm):
    stored = compress(algorithm, b'')
    reader = chunked.decompressing_reader(algorithm, io.BytesIO(stored))
    assert chunked.read_exact(reader, 100) == b''


@pytest.mark.parametrize('algorithm', ALGORITHMS)
def test_a_truncated_object_is_a_backend_error(algorithm):
    data = os.urandom(256 * KiB)
    stored = compress(algorithm, data)[:-1000]
    decoded = chunked._Decoded(algorithm, io.BytesIO(stored), 'obj-1')
    with pytest.raises(exception.BackendError, match='obj-1'):
        decoded.read(len(data))


def test_aliases_are_cinders_names():
    assert [chunked.canonical_compression(n) for n in
            ('gzip', 'ZLIB', 'bzip2', 'off', 'no', None, 'zstd')] == \
        ['zlib', 'zlib', 'bz2', 'none', 'none', 'none', 'zstd']
    with pytest.raises(exception.InvalidInput):
        chunked.canonical_compression('lzma')


def test_blocks_end_with_a_short_one():
    assert list(chunked.blocks(0, 10, 4)) == [(0, 4), (4, 8), (8, 10)]
    assert list(chunked.blocks(8, 8, 4)) == [(8, 12), (12, 16)]


def test_block_states_of_a_full_backup():
    data = bytes(4) + b'abcd' + bytes(3) + b'x' + b'ef'
    got = list(chunked.block_states(data, 4, 0))
    assert [s[3] for s in got] == ['zeros', 'data', 'data', 'data']
    assert [s[:2] for s in got] == [(0, 4), (4, 8), (8, 12), (12, 14)]
    assert got[0][2] == hashlib.sha256(bytes(4)).hexdigest()
    assert got[1][2] == hashlib.sha256(b'abcd').hexdigest()
    assert got[3][2] == hashlib.sha256(b'ef').hexdigest()


def test_block_states_compare_with_the_parent_by_position():
    old = [h for _, _, h, _ in chunked.block_states(
        b'aaaabbbb' + bytes(4) + b'dddd', 4, 0)]
    new = b'aaaaBBBB' + bytes(4) + bytes(4) + b'eeee'
    got = [s[3] for s in chunked.block_states(new, 4, 0, old)]
    # same, changed, zeros as before, now zeros, past the parent's end
    assert got == ['unchanged', 'data', 'unchanged', 'zeros', 'data']
    # a piece further into the volume compares with its own blocks
    later = [s[3] for s in chunked.block_states(b'dddd', 4, 3, old)]
    assert later == ['unchanged']


def test_the_hash_of_zeros_is_the_real_one():
    assert chunked.zero_hash(32768) == \
        hashlib.sha256(bytes(32768)).hexdigest()


def test_names_of_a_backup_and_what_belongs_to_it():
    prefix = chunked.prefix_of({'id': 'b1'})
    assert prefix == 'backup_b1'
    assert chunked.prefix_of({'id': 'x', 'service_metadata': {
        'prefix': 'backup_b1'}}) == 'backup_b1'
    assert chunked.prefix_of({'id': 'x', 'service_metadata':
                              '{"prefix": "backup_b1"}'}) == 'backup_b1'
    with pytest.raises(exception.InvalidInput):
        chunked.prefix_of({'id': 'x', 'service_metadata': {
            'prefix': '../backup_b1'}})
    assert chunked.belongs_to(chunked.object_name(prefix, 12), prefix)
    assert chunked.belongs_to('backup_b1_metadata', prefix)
    assert chunked.belongs_to('backup_b1_sha256file', prefix)
    assert not chunked.belongs_to('backup_b10-00001', prefix)
    assert not chunked.belongs_to('backup_b1-00001x', prefix)
    for bad in ('../b', 'a/b', '', None, 'b1\n'):
        with pytest.raises(exception.InvalidInput):
            chunked.prefix_of({'id': bad})


# -- the layout, written into real files through the POSIX driver --------

@pytest.fixture
def store(tmp_path):
    conf = cfg.ConfigOpts()
    cl_conf.register_opts(conf)
    conf([], project='cinder_lite_chunked_test', default_config_files=[])
    conf.set_override('backup_posix_path', str(tmp_path / 'store'))
    return posix.PosixBackupDriver(conf)


def layout(store, limit, algorithm='none'):
    return chunked.Layout(lambda name: store.open_object('c', name),
                          'backup_t', algorithm, limit)


def test_a_run_of_data_is_cut_into_objects_of_the_limit(store):
    lay = layout(store, 8 * KiB)
    data = os.urandom(20 * KiB)
    for start, end in chunked.blocks(0, len(data), 4 * KiB):
        lay.data(start, memoryview(data)[start:end])
    lay.finish()
    assert [(o['name'], o['offset'], o['length']) for o in lay.objects] == [
        ('backup_t-00001', 0, 8 * KiB), ('backup_t-00002', 8 * KiB, 8 * KiB),
        ('backup_t-00003', 16 * KiB, 4 * KiB)]
    assert lay.zero_extents == []
    with store.read_object('c', 'backup_t-00002') as f:
        assert f.read() == data[8 * KiB:16 * KiB]


def test_unchanged_blocks_end_an_object(store):
    lay = layout(store, MiB)
    lay.data(0, b'a' * 4096)
    lay.unchanged()
    lay.data(8192, b'b' * 4096)
    lay.finish()
    assert [(o['offset'], o['length']) for o in lay.objects] == [
        (0, 4096), (8192, 4096)]


def test_short_runs_of_zeros_stay_in_the_object(store):
    lay = layout(store, 4 * MiB, 'zlib')
    lay.data(0, b'a' * 4096)
    lay.zeros(4096, 8192)
    lay.data(12288, b'b' * 4096)
    lay.finish()
    assert [(o['offset'], o['length']) for o in lay.objects] == [(0, 16384)]
    assert lay.zero_extents == []
    with store.read_object('c', 'backup_t-00001') as f:
        reader = chunked.decompressing_reader('zlib', f)
        assert chunked.read_exact(reader, 20000) == \
            b'a' * 4096 + bytes(8192) + b'b' * 4096


def test_long_runs_of_zeros_are_extents_not_objects(store):
    lay = layout(store, 64 * MiB)
    lay.zeros(0, 3 * MiB)
    lay.data(3 * MiB, b'a' * 4096)
    for off in range(3 * MiB + 4096, 5 * MiB, 4096):
        lay.zeros(off, 4096)
    lay.data(5 * MiB, b'b' * 4096)
    lay.zeros(5 * MiB + 4096, 4096)
    lay.finish()
    assert [(o['offset'], o['length']) for o in lay.objects] == [
        (3 * MiB, 4096), (5 * MiB, 4096)]
    assert lay.zero_extents == [[0, 3 * MiB],
                                [3 * MiB + 4096, 2 * MiB - 4096],
                                [5 * MiB + 4096, 4096]]
    # no block of zeros was stored
    assert sum(o['stored_bytes'] for o in lay.objects) == 8192


def test_abort_leaves_no_file(store, tmp_path):
    lay = layout(store, MiB)
    lay.data(0, b'a' * 4096)
    lay.abort()
    assert os.listdir(tmp_path / 'store' / 'c') == []


# -- restore plans ---------------------------------------------------------

def meta(size, objects=(), zeros=()):
    return {'size_bytes': size,
            'objects': [{'name': n, 'offset': o, 'length': ln}
                        for n, o, ln in objects],
            'zero_extents': [list(z) for z in zeros]}


def test_each_block_comes_from_the_newest_backup_holding_it():
    full = meta(100, [('f1', 0, 40), ('f2', 60, 40)], [(40, 20)])
    inc1 = meta(100, [('i1', 30, 20)], [(90, 10)])
    inc2 = meta(100, [('j1', 35, 5)])
    pieces, zeros = chunked.restore_plan([full, inc1, inc2])
    assert pieces == {(2, 'j1'): [(35, 40)],
                      (1, 'i1'): [(30, 35), (40, 50)],
                      (0, 'f1'): [(0, 30)],
                      (0, 'f2'): [(60, 90)]}
    assert zeros == [(50, 60), (90, 100)]


def test_a_chain_that_grew_takes_the_new_end_from_the_incremental():
    full = meta(50, [('f1', 0, 50)])
    inc = meta(80, [('i1', 48, 32)])
    pieces, zeros = chunked.restore_plan([full, inc])
    assert pieces == {(1, 'i1'): [(48, 80)], (0, 'f1'): [(0, 48)]}
    assert zeros == []


def test_a_chain_with_a_hole_is_refused():
    with pytest.raises(exception.BackendError, match='every block'):
        chunked.restore_plan([meta(100, [('f1', 0, 40)], [(50, 50)])])


def test_covered_ranges_merge():
    c = chunked.Covered()
    assert c.take(10, 20) == [(10, 20)]
    assert c.take(30, 40) == [(30, 40)]
    assert c.take(0, 50) == [(0, 10), (20, 30), (40, 50)]
    assert (c.starts, c.ends) == ([0], [50])
    assert c.take(5, 45) == []
