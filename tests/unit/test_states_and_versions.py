import pytest
import webob.exc

from cinder_lite.api import microversion
from cinder_lite.api.schemas import transfers as transfer_schemas
from cinder_lite.api.schemas import volumes as volume_schemas
from cinder_lite.common import states
from cinder_lite.db import query


@pytest.mark.parametrize('attachments,expected', [
    ([], states.AVAILABLE),
    ([states.ATTACHED, states.ATTACH_RESERVED], states.IN_USE),
    ([states.ATTACH_ATTACHING, states.ATTACH_RESERVED], states.ATTACHING),
    ([states.ATTACH_DETACHING], states.DETACHING),
    ([states.ATTACH_RESERVED, states.ERROR_ATTACHING], states.RESERVED),
    ([states.ATTACH_RESERVED, states.ATTACH_LEGACY_RESERVED],
     states.ATTACHING),
    ([states.ATTACHED, states.ATTACH_LEGACY_RESERVED], states.IN_USE),
    ([states.ERROR_ATTACHING], states.AVAILABLE),
])
def test_derived_volume_status(attachments, expected):
    assert states.derive_volume_status(attachments) == expected


def _windows(choices):
    return [(low or microversion.MIN, high or microversion.MAX)
            for (low, high), _ in choices]


@pytest.mark.parametrize('choices', [volume_schemas.CREATE,
                                     volume_schemas.UPDATE,
                                     transfer_schemas.CREATE,
                                     transfer_schemas.CREATE_LEGACY])
def test_schema_windows_cover_every_version_once(choices):
    windows = _windows(choices)
    for major, minor in [(3, m) for m in range(microversion.MAX[1] + 1)]:
        holding = [w for w in windows if w[0] <= (major, minor) <= w[1]]
        assert len(holding) == 1, (major, minor, holding)


def test_version_header_parsing():
    assert microversion.from_headers({}) == microversion.MIN
    assert microversion.from_headers(
        {'OpenStack-API-Version': 'volume 3.27'}) == (3, 27)
    assert microversion.from_headers(
        {'OpenStack-API-Version': 'compute 2.1, volume 3.5'}) == (3, 5)
    assert microversion.from_headers(
        {'OpenStack-Volume-microversion': '3.44'}) == (3, 44)
    assert microversion.from_headers(
        {'OpenStack-API-Version': 'volume latest'}) == microversion.MAX
    with pytest.raises(webob.exc.HTTPNotAcceptable):
        microversion.from_headers({'OpenStack-API-Version': 'volume 3.99'})
    with pytest.raises(webob.exc.HTTPBadRequest):
        microversion.from_headers({'OpenStack-API-Version': 'volume 3.x'})
    with pytest.raises(webob.exc.HTTPBadRequest):
        microversion.from_headers({'OpenStack-API-Version': 'volume 3.01'})


def test_parse_sort():
    assert query.parse_sort('name:asc,size', allowed=('name', 'size')) == (
        ['name', 'size'], ['asc', 'desc'])
    assert query.parse_sort(None, 'size', 'asc', allowed=('size',)) == (
        ['size'], ['asc'])
    assert query.parse_sort(allowed=('created_at',)) == (['created_at'],
                                                          ['desc'])


def test_policy_enforcer_is_whole_when_threads_race_for_it():
    import threading

    from oslo_config import cfg

    from cinder_lite.common import policy
    policy.reset()
    errors = []
    barrier = threading.Barrier(16)

    def first_use():
        barrier.wait()
        try:
            enforcer = policy.get_enforcer(cfg.ConfigOpts())
            assert policy.ATTACHMENT_CREATE in enforcer.registered_rules
        except Exception as e:  # collected, asserted below
            errors.append(e)
    threads = [threading.Thread(target=first_use) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    policy.reset()
    assert errors == []
