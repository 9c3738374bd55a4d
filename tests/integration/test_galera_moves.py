"""Migrations, manage and unmanage and image uploads through two API
processes on two nodes of a Galera cluster (issue 52): the deployment of
test_galera.py (the cluster's services on node 1, a second API process
on node 2), with a Glance of its own (tests/harness/glance.py) for the
uploads.

Each race sends its requests half through each node at once.  The
transactions these requests run change the same rows (the volume's,
the project's quota usage) on two nodes, so Galera refuses one of two at
its commit; they run through ``db_api.run_writer`` and are run again
from their start, and each request answers as on one server.  Each test
repeats its race (a few rounds at most) until the logs show a retry of
the transactions it races, then checks that one was seen.
"""
import collections
import hashlib
import os
import re
import shutil
import tempfile
import threading
import uuid

import pytest

from tests.harness import cluster as cluster_mod
from tests.harness import util
from tests.integration import test_galera
from tests.integration.test_galera import race
from tests.integration.test_galera import spread
from tests.integration.test_galera import statuses
from tests.integration.test_galera import two_apis

# test_galera.py's client fixture, on this module's deployment
api = test_galera.api

MiB = 1024 ** 2
GiB = 1024 ** 3
MAX_ROUNDS = 4
MA_POOL = 'node-ma@ma#ma'
BACKENDS = {'ma': 'node-ma@ma', 'noma': 'node-noma@noma'}
WAIT = 90


@pytest.fixture(scope='module')
def deployment(galera):
    """test_galera's deployment, and a Glance started alongside (the
    cluster finds it through ``glance_api_servers``)."""
    from tests.harness import glance as glance_mod
    where = tempfile.mkdtemp(prefix='cinder-lite-galera-glance-')
    # (one request at a time: the uploads that win run at once)
    server = glance_mod.Glance(where, port=util.free_port(), threads=1)
    started = {}

    def start():
        try:
            started['server'] = server.start()
        except Exception as e:     # reported by the test that needs it
            started['reason'] = 'Glance did not start: %s' % e
    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    try:
        with two_apis(galera, extra_default={
                'glance_api_servers': server.url}) as deployed:
            thread.join(glance_mod.START_TIMEOUT + 60)
            deployed[0].glance = started
            yield deployed
    finally:
        thread.join()
        server.stop()
        if os.environ.get('CINDER_LITE_KEEP_WORKDIR') != '1':
            shutil.rmtree(where, ignore_errors=True)


# -- what the services logged and hold ---------------------------------------

def retried_in(deployment, *names):
    """Deadlock retries logged (by the API processes and the services)
    in the transactions whose qualified names contain one of ``names``."""
    c, api2, _port2 = deployment
    text = api2.read_log() + ''.join(p.read_log()
                                     for p in c.processes.values())
    return sum(1 for where in re.findall(
        r'database deadlock \(attempt \d+ of \d+\) in (\S+):', text)
        if any(name in where for name in names))


def _backend_dir(cluster, section):
    return os.path.join(cluster.workdir, 'state', 'volumes', section)


def _file(cluster, section, volume_id):
    return os.path.join(_backend_dir(cluster, section),
                        'volume-%s' % volume_id)


def _section(volume):
    return volume['os-vol-host-attr:host'].partition('@')[2].partition(
        '#')[0]


def _digest(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(8 * MiB), b''):
            h.update(chunk)
    return h.hexdigest()


def _show(api, volume_id):
    resp = api.get('/volumes/%s' % volume_id)
    assert resp.status_code == 200, resp.text
    return resp.json()['volume']


def _settle(api, volume_id, done):
    """The volume once ``done(volume)``; failed if it stays in a
    transitional state."""
    return util.wait_for(lambda: (lambda v: done(v) and v)(
        _show(api, volume_id)), WAIT, interval=0.2,
        what='volume %s settled' % volume_id)


def _quota_checks(cluster):
    check = cluster.manage('quota', 'check', '--project',
                           cluster_mod.PROJECT, check=False)
    assert check.returncode == 0, (check.stdout, check.stderr)


def _no_temporary_volume(api):
    def none_left():
        return not [v for v in api.get(
            '/volumes/detail?all_tenants=1').json()['volumes']
            if (v.get('migration_status') or '').startswith('target:')]
    util.wait_for(none_left, WAIT, interval=0.2,
                  what='no temporary volume of a migration left')


def _bad_request(reply):
    assert reply.status == 400, reply
    assert reply.body['badRequest']['code'] == 400, reply
    return reply.body['badRequest']['message']


# -- os-migrate_volume ------------------------------------------------------

def test_migrates_of_one_volume_through_two_nodes(deployment, api):
    """Eight os-migrate_volume of one volume at once, half through each
    node: one is accepted (202) and the others refused with Cinder's 400
    (the volume migrates already), none a 5xx; the migration runs to its
    end, the data moved byte for byte, no temporary volume left.  Then
    back again, until the API's transaction was seen run again."""
    c, _api2, _port2 = deployment
    vol = api.create_volume(size=1)
    vid = vol['id']
    path = _file(c, _section(vol), vid)
    with open(path, 'r+b') as f:
        for offset in (0, 300 * MiB, GiB - 4 * MiB):
            f.seek(offset)
            f.write(os.urandom(4 * MiB))
        os.fsync(f.fileno())
    digest = _digest(path)
    rounds = 0
    while rounds < 2 or (rounds < MAX_ROUNDS and not retried_in(
            deployment, 'MigrationService.start')):
        rounds += 1
        here = _section(_show(api, vid))
        there = 'noma' if here == 'ma' else 'ma'
        replies = spread(deployment, 'POST', [
            ('/volumes/%s/action' % vid,
             {'os-migrate_volume': {'host': BACKENDS[there]}})] * 8)
        assert statuses(replies) == {202: 1, 400: 7}, (rounds, replies)
        for reply in replies:
            if reply.status == 400:
                message = _bad_request(reply)
                assert vid in message or 'Destination host must be ' \
                    'different' in message, message
        moved = _settle(api, vid, lambda v: v['migration_status'] in (
            'success', 'error') and v['status'] == 'available')
        assert moved['migration_status'] == 'success', moved
        assert _section(moved) == there, moved
        _no_temporary_volume(api)
        util.wait_for(lambda: not os.path.exists(_file(c, here, vid)),
                      WAIT, interval=0.2, what='old storage removed')
        assert _digest(_file(c, there, vid)) == digest
    assert retried_in(deployment, 'MigrationService.start'), \
        'no migration start was run again in %d rounds' % rounds
    print('migration starts run again: %d in %d rounds' % (
        retried_in(deployment, 'MigrationService.start'), rounds))
    _quota_checks(c)
    assert api.delete('/volumes/%s' % vid).status_code == 202
    api.wait_deleted(vid)


# -- manage and unmanage ------------------------------------------------------

def _outside_files(cluster, n):
    """``n`` files of 1 GiB written on ma's backend outside cinder_lite:
    [(name, first 4 KiB)]."""
    made = []
    for _ in range(n):
        name = 'outside-%s.raw' % uuid.uuid4().hex[:12]
        content = os.urandom(4096)
        with open(os.path.join(_backend_dir(cluster, 'ma'), name),
                  'wb') as f:
            f.write(content)
            f.truncate(GiB)
        made.append((name, content))
    return made


def _manage_body(name):
    return {'volume': {'host': MA_POOL, 'ref': {'source-name': name},
                       'name': 'adopted-%s' % name}}


def test_manages_through_two_nodes(deployment, api):
    """Eight manages at once, half through each node: seven files, one
    of them asked for twice.  Each is answered 202 as on one server (the
    API cannot tell the second ask of a file from the first); every file
    is adopted by one volume (``available``, its data under the
    volume's name), the second ask of the doubled one ends
    ``error_managing`` (shown ``error``) with nothing adopted, and the
    quota usage is what the volumes say.  The records meet on the
    project's usage row."""
    c, _api2, _port2 = deployment
    rounds = 0
    while rounds < 1 or (rounds < MAX_ROUNDS and not retried_in(
            deployment, 'ManageService.manage')):
        rounds += 1
        files = _outside_files(c, 7)
        names = [files[0][0]] + [name for name, _ in files]
        replies = spread(deployment, 'POST', [
            ('/os-volume-manage', _manage_body(name)) for name in names])
        assert statuses(replies) == {202: 8}, (rounds, replies)
        ended = collections.defaultdict(list)
        for name, reply in zip(names, replies):
            # (shown as Cinder shows managing, and error_managing)
            assert reply.body['volume']['status'] == 'creating', reply
            vol = _settle(api, reply.body['volume']['id'],
                          lambda v: v['status'] in ('available', 'error'))
            ended[name].append(vol)
        contents = dict(files)
        for name, vols in ended.items():
            adopted = [v for v in vols if v['status'] == 'available']
            assert len(adopted) == 1, (name, vols)
            assert [v['status'] for v in vols if v not in adopted] == \
                ['error'] * (len(vols) - 1), vols
            assert (adopted[0]['size'],
                    adopted[0]['os-vol-host-attr:host']) == (1, MA_POOL)
            with open(_file(c, 'ma', adopted[0]['id']), 'rb') as f:
                assert f.read(4096) == contents[name]
            assert not os.path.exists(os.path.join(_backend_dir(c, 'ma'),
                                                   name))
        _quota_checks(c)
        for vols in ended.values():
            for vol in vols:
                resp = api.delete('/volumes/%s' % vol['id'])
                assert resp.status_code == 202, resp.text
        for vols in ended.values():
            for vol in vols:
                api.wait_deleted(vol['id'])
    assert retried_in(deployment, 'ManageService.manage'), \
        'no manage record was run again in %d rounds' % rounds
    print('manage records run again: %d in %d rounds' % (
        retried_in(deployment, 'ManageService.manage'), rounds))
    _quota_checks(c)


def test_unmanage_or_update_through_two_nodes(deployment, api):
    """Four volumes, each unmanaged through one node while it is renamed
    through the other, all at once: the unmanage is accepted (202) and
    the rename answers 200 (or 404 once the record is gone), none a 5xx;
    the records go, the files stay on the backend and the quota is given
    back.  Both lock the volume's row."""
    c, _api2, port2 = deployment
    ports = (c.port, port2)
    rounds = 0
    while rounds < 1 or (rounds < MAX_ROUNDS and not retried_in(
            deployment, 'ManageService.unmanage', 'VolumeService.update')):
        rounds += 1
        vols = [api.create_volume(size=1, wait=False) for _ in range(4)]
        vols = [api.wait_volume(v['id'], 'available') for v in vols]
        requests_ = []
        for i, vol in enumerate(vols):
            requests_ += [
                (ports[i % 2], 'POST', '/volumes/%s/action' % vol['id'],
                 {'os-unmanage': None}),
                (ports[(i + 1) % 2], 'PUT', '/volumes/%s' % vol['id'],
                 {'volume': {'name': 'renamed-%d' % i}})]
        replies = race(requests_)
        for i, vol in enumerate(vols):
            unmanage, update = replies[2 * i], replies[2 * i + 1]
            assert unmanage.status == 202, (rounds, unmanage)
            assert update.status in (200, 404), (rounds, update)
            if update.status == 200:
                assert update.body['volume']['name'] == 'renamed-%d' % i
        for vol in vols:
            api.wait_deleted(vol['id'])
            path = _file(c, 'ma', vol['id']) if _section(vol) == 'ma' \
                else _file(c, 'noma', vol['id'])
            assert os.path.exists(path), path
            os.unlink(path)
        _quota_checks(c)
    assert retried_in(deployment, 'ManageService.unmanage',
                      'VolumeService.update'), \
        'neither an unmanage nor an update was run again in %d rounds' \
        % rounds
    print('unmanages, updates run again: %d, %d in %d rounds' % (
        retried_in(deployment, 'ManageService.unmanage'),
        retried_in(deployment, 'VolumeService.update'), rounds))


# -- volumes and images ----------------------------------------------------

def _glance(cluster):
    started = cluster.glance
    if 'server' not in started:
        util.skip_or_fail(started.get('reason', 'Glance did not start'))
    return started['server']


def _images_named(server, name):
    return server.call('GET', '/images?name=%s' % name, 200).json()[
        'images']


def test_upload_or_delete_through_two_nodes(deployment, api):
    """Four volumes, each uploaded to an image through one node while it
    is deleted through the other, at once: one of the two wins, the
    other is refused with 400 (a volume uploading cannot be deleted, one
    being deleted cannot be uploaded; 404 once it is gone), never both
    and never a 5xx.  A won upload ends with the volume ``available``
    and its image active in Glance; a lost one leaves no image.  Both
    lock the volume's row."""
    c, _api2, port2 = deployment
    server = _glance(c)
    ports = (c.port, port2)
    outcomes = collections.Counter()
    rounds = 0
    while rounds < 1 or (rounds < MAX_ROUNDS and not retried_in(
            deployment, 'ImageService.upload', 'VolumeService.delete')):
        rounds += 1
        name = 'galera-upload-%s' % uuid.uuid4().hex[:8]
        vols = [api.create_volume(size=1, wait=False) for _ in range(4)]
        vols = [api.wait_volume(v['id'], 'available') for v in vols]
        requests_ = []
        for i, vol in enumerate(vols):
            requests_ += [
                (ports[i % 2], 'POST', '/volumes/%s/action' % vol['id'],
                 {'os-volume_upload_image': {
                     'image_name': name, 'disk_format': 'qcow2'}}),
                (ports[(i + 1) % 2], 'DELETE', '/volumes/%s' % vol['id'],
                 None)]
        replies = race(requests_)
        uploaded = []
        for i, vol in enumerate(vols):
            upload, delete = replies[2 * i], replies[2 * i + 1]
            outcomes[(upload.status, delete.status)] += 1
            assert (upload.status, delete.status) in (
                (202, 400), (400, 202), (404, 202)), (rounds, upload,
                                                      delete)
            if upload.status == 202:
                body = upload.body['os-volume_upload_image']
                assert (body['id'], body['status']) == (vol['id'],
                                                        'uploading')
                assert 'Volume status must be' in _bad_request(delete)
                uploaded.append((vol['id'], body['image_id']))
            else:
                if upload.status == 400:
                    assert vol['id'] in _bad_request(upload)
                api.wait_deleted(vol['id'])
        for vid, image_id in uploaded:
            _settle(api, vid, lambda v: v['status'] == 'available')
            util.wait_for(lambda: server.call(
                'GET', '/images/%s' % image_id, 200).json()['status'] ==
                'active', WAIT, interval=0.2, what='image %s active'
                % image_id)
        assert sorted(i['id'] for i in _images_named(server, name)) == \
            sorted(image_id for _vid, image_id in uploaded)
        for vid, image_id in uploaded:
            server.call('DELETE', '/images/%s' % image_id, 204)
            assert api.delete('/volumes/%s' % vid).status_code == 202
            api.wait_deleted(vid)
        _quota_checks(c)
    assert retried_in(deployment, 'ImageService.upload',
                      'VolumeService.delete'), \
        'neither an upload nor a delete was run again in %d rounds' % rounds
    print('(upload, delete) answers: %s; run again: %d, %d in %d rounds' % (
        dict(outcomes), retried_in(deployment, 'ImageService.upload'),
        retried_in(deployment, 'VolumeService.delete'), rounds))


def test_image_metadata_set_through_two_nodes(deployment, api):
    """Eight os-set_image_metadata of one volume at once, each a key of
    its own, half through each node: all 200, and the volume keeps all
    eight keys (none lost to a transaction refused at its commit)."""
    vol = api.create_volume(size=1)
    rounds = 0
    keys = []
    while rounds < 1 or (rounds < MAX_ROUNDS and not retried_in(
            deployment, 'ImageService.set_metadata')):
        rounds += 1
        these = ['k%d-%d' % (rounds, i) for i in range(8)]
        keys += these
        replies = spread(deployment, 'POST', [
            ('/volumes/%s/action' % vol['id'],
             {'os-set_image_metadata': {'metadata': {key: key}}})
            for key in these])
        assert statuses(replies) == {200: 8}, (rounds, replies)
        for key, reply in zip(these, replies):
            assert reply.body['metadata'][key] == key, reply
        assert _show(api, vol['id'])['volume_image_metadata'] == \
            {key: key for key in keys}
    assert retried_in(deployment, 'ImageService.set_metadata'), \
        'no image metadata change was run again in %d rounds' % rounds
    print('image metadata changes run again: %d in %d rounds' % (
        retried_in(deployment, 'ImageService.set_metadata'), rounds))
    replies = spread(deployment, 'POST', [
        ('/volumes/%s/action' % vol['id'],
         {'os-unset_image_metadata': {'key': key}}) for key in keys[:8]])
    assert statuses(replies) == {200: 8}, replies
    assert (_show(api, vol['id']).get('volume_image_metadata') or {}) == \
        {key: key for key in keys[8:]}
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])
