"""The OSD caps of an attachment's key (drivers/rbd.py ``key_caps``):
what each mode may do to which objects of its image."""
from cinder_lite.volume.drivers import rbd


def _grants(caps):
    return dict(reversed(g.rsplit(' object_prefix ', 1))
                for g in caps.split(', '))


def test_a_writer_may_write_its_image_only():
    grants = _grants(rbd.key_caps('abc', 'volume-1', 'rw', False))
    assert grants == {'rbd_data.abc.': 'allow rwx',
                      'rbd_header.abc': 'allow rwx',
                      'rbd_object_map.abc': 'allow rwx',
                      'rbd_id.volume-1': 'allow r class-read',
                      'rbd_info': 'allow r class-read'}


def test_the_data_of_an_image_whose_id_extends_this_one_is_not_reached():
    # object_prefix matches by prefix: rbd_data.abc would match the data
    # objects of an image with the id abc1 (rbd_data.abc1.<n>)
    grants = _grants(rbd.key_caps('abc', 'volume-1', 'rw', False, ['p']))
    for prefix in ('rbd_data.abc.', 'rbd_data.p.'):
        assert prefix in grants
    assert not any('rbd_data.abc1.0'.startswith(p) for p in grants)


def test_a_reader_may_write_nothing_and_call_no_writing_method():
    grants = _grants(rbd.key_caps('abc', 'volume-1', 'ro', False))
    assert grants['rbd_data.abc.'] == 'allow r'
    assert grants['rbd_object_map.abc'] == 'allow r class-read'
    assert grants['rbd_header.abc'] == 'allow r class-read'
    assert not any('w' in g.split()[1] or 'x' in g.split()[1]
                   for g in grants.values())


def test_a_reader_that_may_watch_writes_the_header_only():
    grants = _grants(rbd.key_caps('abc', 'volume-1', 'ro', True))
    assert grants['rbd_header.abc'] == 'allow rw class-read'
    assert grants['rbd_data.abc.'] == 'allow r'


def test_a_clone_reads_its_ancestors_and_the_directory():
    grants = _grants(rbd.key_caps('abc', 'volume-1', 'rw', False,
                                  ['p1', 'p2']))
    for parent in ('p1', 'p2'):
        assert grants['rbd_data.%s.' % parent] == 'allow r'
        assert grants['rbd_header.%s' % parent] == 'allow r class-read'
    assert grants['rbd_directory'] == 'allow r class-read'
    assert 'rbd_directory' not in _grants(
        rbd.key_caps('abc', 'volume-1', 'rw', False))
