"""The hash of a downloaded image: the one Glance recorded, over every
chunk in order, and a mismatch named."""
import hashlib
import os

import pytest

from cinder_lite.volume import glance

CHUNKS = [os.urandom(n) for n in (1, 4096, 65536, 100000)] * 5


def hashed(image, chunks=CHUNKS):
    hashing = glance.Hashing(image)
    for chunk in chunks:
        hashing.update(chunk)
    return hashing.mismatch


def digest(algo, chunks=CHUNKS):
    return hashlib.new(algo, b''.join(chunks)).hexdigest()


def test_the_hash_glance_recorded_matches():
    assert hashed({'os_hash_algo': 'sha512',
                   'os_hash_value': digest('sha512'),
                   'checksum': 'not looked at'}) is None
    assert hashed({'checksum': digest('md5')}) is None


@pytest.mark.parametrize('image,words', [
    ({'os_hash_algo': 'sha512', 'os_hash_value': 'f00', 'checksum': 'x'},
     'its sha512 hash does not match'),
    # the chunks in another order are other data
    ({'os_hash_algo': 'sha512',
      'os_hash_value': digest('sha512', CHUNKS[::-1])},
     'its sha512 hash does not match'),
    # an algorithm hashlib does not have: the checksum then
    ({'os_hash_algo': 'nosuch', 'os_hash_value': 'f00', 'checksum': 'x'},
     'its checksum does not match'),
])
def test_a_mismatch_is_named(image, words):
    assert hashed(image) == words


def test_nothing_recorded_nothing_checked():
    assert hashed({}) is None
    assert hashed({'os_hash_algo': 'sha512', 'os_hash_value': None}) \
        is None
