"""The API's check before a create (``admission.admit``) against its
definition: every backend of the zone that is up and reports what the
type asks for is a candidate; the zone must have one up, a candidate
must exist, and one must be large enough.  ``admit`` walks groups of
alike backends, the largest first, and stops early; the definition
below walks every backend.  Random clouds, types and requests, the same
answer."""
import datetime
import random
import types

import pytest

from cinder_lite.common import capabilities
from cinder_lite.common import exception
from cinder_lite.volume import admission

NOW = datetime.datetime(2026, 12, 1, 12, 0, 0)
CUTOFF = NOW - datetime.timedelta(seconds=60)
CONF = types.SimpleNamespace(default_availability_zone=None,
                             storage_availability_zone='nova')
NAMES = ('gold', 'silver', 'bronze')
SPECS = ({}, {'multiattach': '<is> True'}, {'volume_backend_name': 'gold'},
         {'storage_protocol': 'nbd'},
         {'multiattach': '<is> True', 'storage_protocol': 'iSCSI'},
         {'total_capacity_gb': '>= 100'},
         {'volume_backend_name': 'silver', 'multiattach': '<is> False'})


def cloud(rng):
    rows = []
    for i in range(rng.randrange(0, 60)):
        caps = None if rng.random() < 0.1 else {
            'volume_backend_name': rng.choice(NAMES),
            'multiattach': rng.random() < 0.5,
            'storage_protocol': rng.choice(('nbd', 'iSCSI')),
            'total_capacity_gb': float(rng.choice((5, 50, 500))),
            'thin_provisioning_support': rng.random() < 0.5,
            'max_over_subscription_ratio': float(rng.choice((1, 20)))}
        heard = None if rng.random() < 0.05 else \
            NOW - datetime.timedelta(seconds=rng.randrange(0, 120))
        rows.append(types.SimpleNamespace(
            host='node%d@b%d' % (i, i),
            availability_zone=rng.choice(('nova', 'nova', 'east')),
            disabled=rng.random() < 0.1, heartbeat_at=heard,
            capabilities=caps))
    return rows


def defined(rows, request, vtype):
    """What the check answers, by its definition: (zone, the hosts that
    can hold it), or the exception it raises (type, message)."""
    def up(row):
        return not row.disabled and row.heartbeat_at is not None and \
            row.heartbeat_at >= CUTOFF
    az = request.get('availability_zone') or 'nova'
    zones = {row.availability_zone for row in rows if up(row)}
    if az not in zones:
        return (exception.InvalidInput if request.get('availability_zone')
                else exception.ServiceUnavailable), None
    specs = vtype['extra_specs']
    candidates = [row for row in rows if row.availability_zone == az
                  and up(row)
                  and capabilities.satisfies(row.capabilities or {}, specs)]
    if not candidates:
        if any(row.availability_zone == az and up(row)
               and not row.capabilities for row in rows):
            return exception.ServiceUnavailable, None
        return exception.NoValidBackend, 'reports the capabilities'
    limits = {row.host: capabilities.capacity_limit(row.capabilities or {})
              for row in candidates}
    largest = max(limits.values())
    if request['size'] > largest:
        return exception.NoValidBackend, '(largest: %.0f GiB)' % largest
    return az, {host for host, limit in limits.items()
                if limit >= request['size']}


@pytest.mark.parametrize('seed', range(40))
def test_admit_answers_what_its_definition_does(seed):
    rng = random.Random(seed)
    for _ in range(50):
        rows = cloud(rng)
        copy = admission.copy_of(rows)
        vtype = {'name': 'shared', 'extra_specs': rng.choice(SPECS)}
        request = {'size': rng.choice((1, 10, 100, 1000, 100000)),
                   'availability_zone': rng.choice((None, None, 'nova',
                                                    'east', 'west'))}
        want, detail = defined(rows, request, vtype)
        if isinstance(want, type):
            with pytest.raises(want) as caught:
                admission.admit(copy, request, vtype, CONF, CUTOFF)
            if detail:
                assert detail in str(caught.value)
            continue
        az, able = admission.admit(copy, request, vtype, CONF, CUTOFF)
        hosts = [b.host for b in able]
        assert az == want
        # a few of them, each one of those that can hold it
        assert len(hosts) == len(set(hosts)) == min(
            len(detail), admission.CONFIRM_AT_MOST)
        assert set(hosts) <= detail


def test_admit_stops_at_what_it_confirms_among_many():
    """10,000 alike backends of which the type matches all: the check
    confirms a few and walks no further (each create asked every one
    of them whether it was up, 631ac61)."""
    rows = [types.SimpleNamespace(host='node%d@b%d' % (i, i),
                                  availability_zone='nova', disabled=False,
                                  heartbeat_at=NOW, capabilities={
                                      'volume_backend_name': 'b%d' % i,
                                      'multiattach': True,
                                      'total_capacity_gb': 1000.0})
            for i in range(10000)]
    groups, named, zones = admission.copy_of(rows)
    seen = []

    class Counted(list):
        def __iter__(self):
            for b in list.__iter__(self):
                seen.append(b.host)
                yield b

    groups = {key: Counted(members) for key, members in groups.items()}
    shared = {'name': 'shared', 'extra_specs': {'multiattach': '<is> True'}}
    az, able = admission.admit((groups, named, zones), {'size': 1}, shared,
                               CONF, CUTOFF)
    assert az == 'nova' and len(able) == admission.CONFIRM_AT_MOST
    assert len(seen) == admission.CONFIRM_AT_MOST
