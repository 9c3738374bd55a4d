"""Migration between a file backend and an RBD backend on the run's Ceph
pool, both ways: the data arrives byte for byte, the RBD image takes the
volume's name, nothing is left behind on either backend (no image, no
export, no file)."""
import hashlib
import os

import pytest

from cinder_lite.volume.drivers import rbd as rbd_driver
from tests.conftest import rbd_backend
from tests.harness import stack as stack_mod
from tests.harness import util

MiB = 1024 ** 2


@pytest.fixture
def mixed(ceph, tmp_path):
    s = stack_mod.Stack(tmp_path / 'st', backends={
        'f': {'volume_backend_name': 'file-b'},
        'rbd': rbd_backend(ceph, volume_backend_name='rbd-b')}).start()
    yield s
    driver = s.volume_service('rbd').endpoints[0].driver
    left = driver.list_exports()
    s.stop()
    assert left == [], 'exports left behind: %s' % left


def _digest(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(8 * MiB), b''):
            h.update(chunk)
    return h.hexdigest()


def _wait(api, vid, host):
    def done():
        v = api.get('/volumes/%s' % vid).json()['volume']
        return v['migration_status'] in ('success', 'error') and v
    vol = util.wait_for(done, timeout=120, what='migration of %s' % vid)
    assert vol['migration_status'] == 'success', vol
    assert vol['os-vol-host-attr:host'] == host
    return vol


def _images(driver):
    rbd = rbd_driver.rbd_module()
    return sorted(rbd.RBD().list(driver.ioctx()))


def test_file_to_rbd_and_back(mixed):
    api = mixed.client()
    driver = mixed.volume_service('rbd').endpoints[0].driver
    before = _images(driver)
    api.create_type('on-file', {'volume_backend_name': 'file-b'})
    vol = api.create_volume(size=1, volume_type='on-file')
    vid = vol['id']
    api.create_type('anywhere',
                    {'volume_backend_name': '<or> file-b <or> rbd-b'})
    resp = api.post('/volumes/%s/action' % vid, json={
        'os-retype': {'new_type': 'anywhere'}})
    assert resp.status_code == 202, resp.text
    path = os.path.join(mixed.state_path, 'volumes', 'f', 'volume-%s' % vid)
    with open(path, 'r+b') as f:
        for offset in (0, 300 * MiB, 1023 * MiB):
            f.seek(offset)
            f.write(os.urandom(MiB))
    digest = _digest(path)
    resp = api.post('/volumes/%s/action' % vid, json={
        'os-migrate_volume': {'host': 'testnode@rbd'}})
    assert resp.status_code == 202, resp.text
    _wait(api, vid, 'testnode@rbd#rbd-b')
    util.wait_for(lambda: not os.path.exists(path), timeout=30,
                  what='old file removed')
    assert set(_images(driver)) - set(before) == {
        rbd_driver.volume_name(vid)}
    resp = api.post('/volumes/%s/action' % vid, json={
        'os-migrate_volume': {'host': 'testnode@f'}})
    assert resp.status_code == 202, resp.text
    _wait(api, vid, 'testnode@f#file-b')
    assert _digest(path) == digest
    util.wait_for(lambda: _images(driver) == before, timeout=30,
                  what='old image removed')
    api.delete('/volumes/%s' % vid)
    api.wait_deleted(vid)
