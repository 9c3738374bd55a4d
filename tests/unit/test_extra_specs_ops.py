import pytest

from cinder_lite.common import capabilities
from cinder_lite.common import exception


@pytest.mark.parametrize('value,req,expected', [
    (True, '<is> True', True),
    (False, '<is> True', False),
    ('True', '<is> true', True),
    (False, '<is> False', True),
    (None, '<is> False', False),
    ('file', '<in> fil', True),
    ('iscsi', '<in> fil', False),
    ('ma', '<or> x <or> ma', True),
    ('mb', '<or> x <or> ma', False),
    (10, '>= 10', True),
    (9.5, '>= 10', False),
    (10, '= 5', True),
    (10, '== 10', True),
    (10, '!= 10', False),
    (3, '< 4', True),
    (3, '<= 2', False),
    ('abc', 's== abc', True),
    ('abc', 's< abd', True),
    ('abc', 's>= abd', False),
    ('ma', 'ma', True),
    ('ma', 'noma', False),
    (True, 'True', True),
    ('text', '>= 3', False),
])
def test_match(value, req, expected):
    assert capabilities.match(value, req) is expected


@pytest.mark.parametrize('req', ['<is> maybe', '>= many', '== x'])
def test_validate_refuses(req):
    with pytest.raises(exception.InvalidInput):
        capabilities.validate(req)


def test_validate_accepts():
    for req in ('<is> True', '>= 10', 'plain', '<in> x', 's== y', ''):
        capabilities.validate(req)


def test_capability_requirements_skip_other_scopes():
    specs = {'multiattach': '<is> True', 'capabilities:dedup': '<is> True',
             'qos:iops': '100', 'mode': 'RO', 'os:thing': 'x'}
    assert capabilities.capability_requirements(specs) == {
        'multiattach': '<is> True', 'dedup': '<is> True'}


def test_satisfies():
    caps = {'multiattach': False, 'volume_backend_name': 'noma'}
    assert capabilities.satisfies(caps, {})
    assert not capabilities.satisfies(caps,
                                      {'multiattach': '<is> True'})
    assert capabilities.satisfies(caps,
                                  {'volume_backend_name': 'noma'})
    assert not capabilities.satisfies(caps, {'missing': 'x'})
