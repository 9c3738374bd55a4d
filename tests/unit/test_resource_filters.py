"""The filters file of non-admin list calls: the shipped file is
Cinder's defaults, and a bad file stops the service with the reason."""
import json
import os

import pytest

from cinder_lite.api import resource_filters
from cinder_lite.common import exception

SHIPPED = os.path.join(os.path.dirname(__file__), '..', '..', 'etc',
                       'cinder-lite', 'resource_filters.json')


def test_shipped_file_is_the_default():
    with open(SHIPPED) as f:
        assert json.load(f) == resource_filters.DEFAULTS
    assert resource_filters.load(SHIPPED) == resource_filters.DEFAULTS
    assert resource_filters.load(None) == resource_filters.DEFAULTS


@pytest.mark.parametrize('content', ['not json', '[]', '{"volume": "name"}',
                                     '{"volume": [1]}'])
def test_bad_file_is_refused(tmp_path, content):
    path = tmp_path / 'filters.json'
    path.write_text(content)
    with pytest.raises(exception.InvalidInput) as e:
        resource_filters.load(str(path))
    assert str(path) in str(e.value)


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(exception.InvalidInput):
        resource_filters.load(str(tmp_path / 'none.json'))
