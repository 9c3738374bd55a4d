import os

from cinder_lite.volume.drivers import file as file_driver

GiB = 1024 ** 3


class Conf:
    def __init__(self, root):
        self.volumes_dir = str(root)
        self.state_path = str(root)
        self.section = 'file'
        self.multiattach = True
        self.reserved_percentage = 0
        self.max_over_subscription_ratio = 20.0
        self.target_protocol = 'local'
        self.target_ip_address = '127.0.0.1'
        self.target_port_range = '10809-10999'


def driver(tmp_path):
    d = file_driver.FileDriver(Conf(tmp_path), 'file', 'node@file')
    d.do_setup()
    return d


def test_stats_count_provisioned_apparent_sizes(tmp_path):
    d = driver(tmp_path)
    d.create_volume({'id': 'a', 'size': 2})
    d.create_volume({'id': 'b', 'size': 3})
    stats = d.get_volume_stats()
    assert stats['provisioned_capacity_gb'] == 5
    assert stats['thin_provisioning_support'] is True
    assert stats['multiattach'] is True
    d.delete_volume({'id': 'a'})
    assert d.get_volume_stats()['provisioned_capacity_gb'] == 3


def test_stats_survive_a_file_vanishing_while_listed(tmp_path):
    # a volume deleted between listing and stat looks like this
    os.symlink(str(tmp_path / 'gone'), str(tmp_path / 'volume-gone'))
    assert driver(tmp_path).get_volume_stats()[
        'provisioned_capacity_gb'] == 0


def test_multiattach_capability_follows_config(tmp_path):
    conf = Conf(tmp_path)
    conf.multiattach = False
    d = file_driver.FileDriver(conf, 'noma', 'node@noma')
    d.do_setup()
    assert d.get_volume_stats()['multiattach'] is False


def test_create_is_sparse_and_delete_is_idempotent(tmp_path):
    d = driver(tmp_path)
    d.create_volume({'id': 'v', 'size': 1})
    st = os.stat(d.path('v'))
    assert st.st_size == GiB and st.st_blocks == 0
    d.extend_volume({'id': 'v'}, 2)
    assert os.path.getsize(d.path('v')) == 2 * GiB
    d.delete_volume({'id': 'v'})
    d.delete_volume({'id': 'v'})
    assert not os.path.exists(d.path('v'))


def test_a_size_the_file_system_refuses_is_told_in_words(tmp_path):
    import pytest
    from cinder_lite.common import exception
    d = driver(tmp_path)
    d.create_volume({'id': 'a', 'size': 1})
    with pytest.raises(exception.CinderLiteError) as e:
        d.extend_volume({"id": "a", "size": 1}, 2 ** 30)
    assert "could not grow the file of volume a to 1073741824 GiB" in \
        e.value.message
    assert 'Errno' not in e.value.message
    assert os.path.getsize(d.path('a')) == GiB


def _private(path):
    return os.stat(path).st_mode & 0o077 == 0


def test_volume_files_are_readable_by_this_user_only(tmp_path):
    # whatever the umask: a volume holds a tenant's data
    old = os.umask(0o022)
    try:
        d = driver(tmp_path / 'root')
        d.create_volume({'id': 'v', 'size': 1})
        d.create_snapshot({'id': 's', 'volume_id': 'v', 'volume_size': 1})
        d.create_volume_from_snapshot({'id': 'w', 'size': 1}, {'id': 's'})
        d.create_cloned_volume({'id': 'c', 'size': 1}, {'id': 'v'})
    finally:
        os.umask(old)
    for path in (d.path('v'), d.snapshot_path('s'), d.path('w'),
                 d.path('c')):
        assert os.stat(path).st_mode & 0o777 == 0o600, oct(
            os.stat(path).st_mode)
    assert os.stat(d.root).st_mode & 0o777 == 0o700


def test_a_crash_left_world_readable_file_is_made_again_private(tmp_path):
    d = driver(tmp_path)
    tmp = d.path('v') + '.creating'
    with open(tmp, 'wb'):
        pass
    os.chmod(tmp, 0o644)
    d.create_volume({'id': 'v', 'size': 1})
    assert _private(d.path('v'))


def test_setup_makes_files_of_an_earlier_version_private(tmp_path):
    for name in ('volume-old', 'snapshot-old', 'unrelated'):
        with open(tmp_path / name, 'wb'):
            pass
        os.chmod(tmp_path / name, 0o644)
    driver(tmp_path)
    assert _private(tmp_path / 'volume-old')
    assert _private(tmp_path / 'snapshot-old')
    # not ours: left as it is
    assert os.stat(tmp_path / 'unrelated').st_mode & 0o777 == 0o644
