"""Pure logic of QoS specs (per-GiB keys, what nbdkit's rate filter is
given) and of transfer auth keys (Cinder's salted HMAC)."""
import hashlib
import hmac

from cinder_lite.common import qos
from cinder_lite.volume.targets import nbd
from cinder_lite.volume import transfer_api


def test_per_gb_keys_resolve_as_cinder():
    specs = {'read_iops_sec_per_gb': '10', 'read_iops_sec_per_gb_min': '50',
             'write_bytes_sec_per_gb': '100', 'write_bytes_sec_max': '250',
             'total_iops_sec': '7', 'other_per_gb': '3'}
    assert qos.resolve_per_gb(specs, 3) == {
        'read_iops_sec': 50, 'write_bytes_sec': 250, 'total_iops_sec': '7',
        'other_per_gb': '3'}
    assert qos.resolve_per_gb(specs, 10)['read_iops_sec'] == 100
    # not integers: handed on as they are
    assert qos.resolve_per_gb({'read_iops_sec_per_gb': 'x'}, 2) == {
        'read_iops_sec_per_gb': 'x'}


def test_consumers():
    specs = {'consumer': 'both', 'specs': {'a': '1', 'b': None}}
    assert qos.for_consumer(specs, qos.FRONT_END, 1) == {'a': '1'}
    assert qos.for_consumer(specs, qos.BACK_END, 1) == {'a': '1'}
    front = {'consumer': 'front-end', 'specs': {}}
    assert qos.for_consumer(front, qos.FRONT_END, 1) == {}
    assert qos.for_consumer(front, qos.BACK_END, 1) is None
    assert qos.for_consumer(None, qos.FRONT_END, 1) is None


def test_nbd_rate_is_the_smallest_byte_limit_in_bits():
    assert nbd.rate_limit(None) is None
    assert nbd.rate_limit({}) is None
    assert nbd.rate_limit({'total_iops_sec': '100'}) is None
    assert nbd.rate_limit({'total_bytes_sec': '1000'}) == 8000
    assert nbd.rate_limit({'read_bytes_sec': 4000, 'write_bytes_sec': '2000',
                           'total_bytes_sec': '3000'}) == 16000
    # zero and non-integers limit nothing
    assert nbd.rate_limit({'total_bytes_sec': '0',
                           'read_bytes_sec': 'fast'}) is None


def test_auth_key_hash_is_cinders():
    assert transfer_api.crypt_hash('salt', 'key') == hmac.new(
        b'salt', b'key', hashlib.sha1).hexdigest()
    # an integer key (the API takes one) counts as its digits
    assert transfer_api.crypt_hash('s', 1234) == \
        transfer_api.crypt_hash('s', '1234')
