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
    # the filter that removed a backend earlier is named too, with why
    assert "CapacityFilter: not enough free capacity for 20 GiB (b@y); " \
        "CapabilitiesFilter: capabilities do not satisfy the volume " \
        "type's extra specs (a@x)" in e.value.message, e.value.message


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


def random_backend(rng, i):
    caps = {'volume_backend_name': rng.choice(['fast', 'slow', 'b%d' % i]),
            'multiattach': rng.random() < 0.5,
            'storage_protocol': rng.choice(['iSCSI', 'nbd']),
            'total_capacity_gb': rng.choice([10, 100, 1000]),
            'free_capacity_gb': rng.randrange(0, 1000),
            'reserved_percentage': rng.choice([0, 10]),
            'thin_provisioning_support': rng.random() < 0.5,
            'provisioned_capacity_gb': rng.randrange(0, 2000),
            'max_over_subscription_ratio': rng.choice([1, 2, 20])}
    return host_state.BackendState('node%d@s%d' % (i % 7, i),
                                   rng.choice(['az1', 'az2']), caps, NOW)


def random_spec(rng):
    extra = rng.choice([
        {}, {'multiattach': '<is> True'},
        {'capabilities:storage_protocol': 'nbd'},
        {'volume_backend_name': 'fast'},
        {'volume_backend_name': '<or> slow <or> fast'},
        {'free_capacity_gb': '>= 500'},
        {'volume_backend_name': 'nosuch'},
        {'qos:read_iops_sec': '100', 'multiattach': '<is> False'}])
    return {'size': rng.choice([1, 5, 50, 400, 5000]),
            'availability_zone': rng.choice([None, 'az1', 'az2', 'az3']),
            'extra_specs': extra}


@pytest.mark.parametrize('seed', range(30))
def test_index_picks_what_the_filters_pick(seed):
    """The scheduler's index (groups by capabilities, heaps by weight)
    answers as the filters and weighers over every live backend do, as
    reports, placements and outages change the backends."""
    import random
    rng = random.Random(seed)
    index = host_state.BackendIndex()
    backends = [random_backend(rng, i) for i in range(rng.choice([1, 5,
                                                                  60]))]
    for b in backends:
        index.put(b)
    down = set()
    for _ in range(60):
        event = rng.random()
        victim = rng.choice(backends)
        if event < 0.25:
            fresh = random_backend(rng, backends.index(victim))
            victim.availability_zone = fresh.availability_zone
            victim.update(fresh.capabilities, NOW)
            index.put(victim)
        elif event < 0.35:
            down.symmetric_difference_update({victim.host})
        request = random_spec(rng)
        live = [b for b in backends if b.host not in down]
        try:
            expected = manager.choose_backend(live, request)
        except exception.NoValidBackend:
            expected = None
        got = index.best(request, lambda b: b.host not in down,
                         manager.choose_backend)
        assert got is expected, (request, got and got.host,
                                 expected and expected.host)
        if got is not None:
            got.consume(request['size'])
            index.put(got)
        # a backend is filed under its present name only
        for name, states in index._named.items():
            assert states and all(str(b.backend_name) == name
                                  for b in states)


def test_index_exact_fit_and_set_aside():
    index = host_state.BackendIndex()
    exact = backend('a@x', 5)
    roomy = thin('b@y', free=10, provisioned=195)   # 5 GiB provisionable
    for b in (exact, roomy):
        index.put(b)

    def best(size, exclude=()):
        return index.best(spec(size=size), lambda b: True,
                          manager.choose_backend, exclude)
    assert best(5).host == 'b@y'          # equal weights: larger name
    assert best(5, exclude={'b@y'}) is exact
    assert best(6) is None
    exact.consume(5)
    index.put(exact)
    assert best(1, exclude={'b@y'}) is None


class _Row:
    """A services row as HostManager reads it."""

    def __init__(self, host, heartbeat_at, cluster_name=None,
                 disabled=False, az='nova'):
        self.host = host
        self.cluster_name = cluster_name
        self.disabled = disabled
        self.heartbeat_at = heartbeat_at
        self.availability_zone = az


@pytest.mark.parametrize('cluster', [None, 'c1@x'])
def test_a_report_after_a_clean_stop_is_taken(cluster):
    """A volume service that stopped cleanly is recorded with no heartbeat
    but keeps its capabilities: the scheduler that reads it so at its own
    start must take the service's first report after its restart (it
    compared the report's time with None)."""
    hosts = host_state.HostManager(conf=None)
    name = cluster or 'a@x'
    caps = {'free_capacity_gb': 10, 'total_capacity_gb': 100}
    with hosts._lock:
        hosts._note_members(name, [_Row('a@x', None, cluster)],
                            (None, caps))
    assert hosts._index.states[name].reported_at is None
    hosts.update_from_report(name, 'nova', dict(caps, free_capacity_gb=40),
                             NOW.isoformat())
    state = hosts._index.states[name]
    assert state.reported_at == NOW
    assert state.free_capacity_gb == 40
