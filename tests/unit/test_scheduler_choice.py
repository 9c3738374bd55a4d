import datetime

import pytest

from cinder_lite.common import exception
from cinder_lite.scheduler import host_state
from cinder_lite.scheduler import manager

NOW = datetime.datetime(2026, 1, 1)


def backend(host, free, total=100, az='nova', reserved=0, **caps):
    caps.update(free_capacity_gb=free, total_capacity_gb=total,
                reserved_percentage=reserved)
    return host_state.BackendState(host, az, caps, NOW)


def spec(size=1, az=None, **extra_specs):
    return {'size': size, 'availability_zone': az,
            'extra_specs': extra_specs}


def test_most_free_wins():
    chosen = manager.choose_backend(
        [backend('a@x', 10), backend('b@y', 50), backend('c@z', 20)],
        spec())
    assert chosen.host == 'b@y'


def test_filters_apply_in_order():
    backends = [backend('a@x', 90, multiattach=False),
                backend('b@y', 10, multiattach=True)]
    chosen = manager.choose_backend(backends,
                                    spec(multiattach='<is> True'))
    assert chosen.host == 'b@y'
    with pytest.raises(exception.NoValidBackend) as e:
        manager.choose_backend(backends, spec(size=20,
                                              multiattach='<is> True'))
    assert 'CapabilitiesFilter' in e.value.message


def test_reserved_share_counts():
    with pytest.raises(exception.NoValidBackend) as e:
        manager.choose_backend([backend('a@x', 10, total=100,
                                        reserved=95)], spec(size=6))
    assert 'CapacityFilter' in e.value.message


def test_availability_zone():
    backends = [backend('a@x', 90, az='az1'), backend('b@y', 10, az='az2')]
    assert manager.choose_backend(backends, spec(az='az2')).host == 'b@y'
    with pytest.raises(exception.NoValidBackend):
        manager.choose_backend(backends, spec(az='az3'))


def test_no_backend():
    with pytest.raises(exception.NoValidBackend):
        manager.choose_backend([], spec())


def test_consume_lowers_free_until_next_report():
    state = backend('a@x', 10)
    state.consume(4)
    assert state.free_capacity_gb == 6
    state.update({'free_capacity_gb': 10, 'total_capacity_gb': 100},
                 NOW)
    assert state.free_capacity_gb == 10
    assert state.pool == 'a@x#x'


def thin(host, free, provisioned, total=100, ratio=2.0, reserved=0):
    return host_state.BackendState(host, 'nova', {
        'free_capacity_gb': free, 'total_capacity_gb': total,
        'reserved_percentage': reserved,
        'thin_provisioning_support': True,
        'provisioned_capacity_gb': provisioned,
        'max_over_subscription_ratio': ratio}, NOW)


def test_thin_backends_count_provisioned_space():
    # 100 GiB x 2 may be provisioned; 150 already are
    state = thin('a@x', free=90, provisioned=150)
    assert manager.choose_backend([state], spec(size=50)).host == 'a@x'
    with pytest.raises(exception.NoValidBackend):
        manager.choose_backend([state], spec(size=51))
    # placing a volume provisions it and leaves free space alone
    state.consume(50)
    assert (state.provisioned_capacity_gb, state.free_capacity_gb) == (
        200, 90)
    with pytest.raises(exception.NoValidBackend):
        manager.choose_backend([state], spec(size=1))
    # a full filesystem takes nothing, however little is provisioned
    with pytest.raises(exception.NoValidBackend):
        manager.choose_backend([thin('b@y', free=0, provisioned=0)],
                               spec(size=1))


def test_thin_backend_with_more_room_wins():
    roomy = thin('a@x', free=10, provisioned=0)
    crowded = thin('b@y', free=90, provisioned=190)
    assert manager.choose_backend([roomy, crowded], spec()).host == 'a@x'
