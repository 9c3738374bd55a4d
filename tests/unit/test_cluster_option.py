"""The ``cluster`` option: a name without ``@``, ``#`` or blanks, since
it becomes the node part of ``cluster@backend#pool``."""
import pytest
from oslo_config import cfg

from cinder_lite.conf import volume as volume_conf


def _conf(tmp_path, value):
    path = tmp_path / 'c.conf'
    path.write_text('[DEFAULT]\ncluster = %s\n' % value)
    conf = cfg.ConfigOpts()
    volume_conf.register_opts(conf)
    conf(['--config-file', str(path)])
    return conf


def test_a_plain_name_is_accepted(tmp_path):
    assert _conf(tmp_path, 'shared-a').cluster == 'shared-a'


@pytest.mark.parametrize('value', ['a@b', 'a#b', 'a b'])
def test_names_that_would_break_host_strings_are_refused(tmp_path, value):
    conf = _conf(tmp_path, value)
    with pytest.raises(cfg.ConfigFileValueError):
        conf.cluster
