"""Manage and unmanage on the RBD backend against the run's Ceph cluster:
an image made outside cinder_lite (``rbd import``) is listed, managed (it
is renamed ``volume-<id>``), attached through librbd and read back;
unmanaged, the image stays; an RBD snapshot of a volume's image is
unmanaged and managed again."""
import os
import subprocess
import uuid

from tests.harness import dataplane as dp
from tests.harness.snapshots import snapshot
from tests.harness.snapshots import wait_gone
from tests.harness.snapshots import wait_snapshot
from tests.rbd.test_rbd import _image

GiB = 1024 ** 3


def _rbd(ceph, *args):
    subprocess.run(['rbd', '--conf', ceph.conf, '--keyring',
                    ceph.admin_keyring] + list(args), check=True,
                   capture_output=True, timeout=120)


def _listed(api, kind='volumes'):
    resp = api.get('/manageable_%s/detail?host=testnode@rbd' % kind)
    assert resp.status_code == 200, resp.text
    return {e['reference']['source-name']: e
            for e in resp.json()['manageable-%s' % kind]}


def test_manage_an_image_and_unmanage_it(rbd_stack, ceph, tmp_path):
    api = rbd_stack.client()
    content = os.urandom(4096)
    src = tmp_path / 'outside.raw'
    with open(src, 'wb') as f:
        f.truncate(GiB + 4096)
        f.seek(GiB)
        f.write(content)
    name = 'outside-%s' % uuid.uuid4().hex[:8]
    _rbd(ceph, 'import', str(src), '%s/%s' % (ceph.pool, name))
    listed = _listed(api)
    assert listed[name]['safe_to_manage'] is True
    assert listed[name]['size'] == 2
    resp = api.post('/os-volume-manage', json={'volume': {
        'host': 'testnode@rbd', 'ref': {'source-name': name}}})
    assert resp.status_code == 202, resp.text
    vol = api.wait_volume(resp.json()['volume']['id'], 'available')
    assert vol['size'] == 2
    assert _image(ceph, name) is None
    assert _image(ceph, 'volume-%s' % vol['id'])['size'] == 2 * GiB
    assert _listed(api)['volume-%s' % vol['id']]['cinder_id'] == vol['id']

    host = dp.attacher(rbd_stack, 'a')
    att, dev = host.attach_device(vol['id'])
    assert att['connection_info']['driver_volume_type'] == 'rbd'
    assert dev.read(GiB, 4096) == content
    host.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')

    snap = snapshot(api, vol['id'])
    resp = api.post('/snapshots/%s/action' % snap['id'],
                    json={'os-unmanage': None})
    assert resp.status_code == 202, resp.text
    wait_gone(api, snap['id'])
    snaps = _listed(api, 'snapshots')
    entry = snaps['snapshot-%s' % snap['id']]
    assert entry['safe_to_manage'] is True
    assert entry['source_reference'] == {
        'source-name': 'volume-%s' % vol['id']}
    resp = api.post('/os-snapshot-manage', json={'snapshot': {
        'volume_id': vol['id'],
        'ref': {'source-name': 'snapshot-%s' % snap['id']}}})
    assert resp.status_code == 202, resp.text
    again = wait_snapshot(api, resp.json()['snapshot']['id'])
    assert again['size'] == 2
    assert api.delete('/snapshots/%s' % again['id']).status_code == 202
    wait_gone(api, again['id'])

    resp = api.post('/volumes/%s/action' % vol['id'],
                    json={'os-unmanage': None})
    assert resp.status_code == 202, resp.text
    api.wait_deleted(vol['id'])
    assert _image(ceph, 'volume-%s' % vol['id']) is not None
    assert _listed(api)['volume-%s' % vol['id']]['safe_to_manage'] is True
    _rbd(ceph, 'rm', '%s/volume-%s' % (ceph.pool, vol['id']))
