"""Migration across volume services on separate processes over RabbitMQ
(MariaDB and PostgreSQL): node ma's file backend to node noma's, both
exporting over NBD, the copy throttled by ``volume_copy_bps_limit`` (an
operator's option) so that it lasts seconds.

* the source's service (ma) killed with SIGKILL mid-copy: the
  destination's reconciliation deletes the temporary volume and its
  storage, the migration is ``error``, the volume stays on ma with its
  data; ma started again has no export left;
* the destination's service (noma) killed mid-copy: the source gives up
  (``error``), the temporary volume is deleted once noma runs again;
* then a migration that runs to its end moves the data byte for byte.
"""
import hashlib
import os

from tests.harness import cluster as cluster_mod
from tests.harness import stack
from tests.harness import util

CLUSTER_KINDS = ['mysql', 'postgresql']
MiB = 1024 ** 2
DATA = 192 * MiB
NBD = {'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1'}
_PORT = int(util.free_range(40).partition('-')[0])
CLUSTER_OPTIONS = {
    'extra_default': {'reconcile_after': 3, 'reconcile_interval': 1,
                      'volume_rpc_timeout': 5,
                      # 192 MiB of data: about 12 s of copy
                      'volume_copy_bps_limit': 16 * MiB},
    'node_options': {
        'ma': dict(NBD, target_port_range='%d-%d' % (_PORT, _PORT + 19)),
        'noma': dict(NBD, target_port_range='%d-%d' % (
            _PORT + 20, _PORT + 39))},
}
SERVICES = {'ma': 'node-ma@ma', 'noma': 'node-noma@noma'}


def _dir(cluster, section):
    return os.path.join(cluster.workdir, 'state', 'volumes', section)


def _files(cluster, section):
    return sorted(n for n in os.listdir(_dir(cluster, section))
                  if n.startswith('volume-'))


def _digest(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(8 * MiB), b''):
            h.update(chunk)
    return h.hexdigest()


def _exports(cluster, section):
    state = os.path.join(cluster.workdir, 'state', 'targets', section,
                         'nbd')
    if not os.path.isdir(state):
        return []
    return sorted(n for n in os.listdir(state) if n.endswith('.json'))


def _restart(cluster, name):
    cluster.processes[name].expected_dead = False
    del cluster.processes[name]
    cluster.ensure_running(name, 'cinder-volume', SERVICES[name])


def _show(api, vid):
    return api.get('/volumes/%s' % vid).json()['volume']


def _migrate(api, vid, host):
    resp = api.post('/volumes/%s/action' % vid,
                    json={'os-migrate_volume': {'host': host}})
    assert resp.status_code == 202, resp.text


def _copying(cluster, api, vid):
    """Until the copy is under way: migrating, and the new storage on
    noma holds data."""
    def under_way():
        if _show(api, vid)['migration_status'] != 'migrating':
            return False
        others = [n for n in _files(cluster, 'noma')]
        return any(os.stat(os.path.join(_dir(cluster, 'noma'), n))
                   .st_blocks > 16 * 2048 for n in others)
    util.wait_for(under_way, timeout=60, interval=0.1,
                  what='copy of %s under way' % vid)


def _settled(api, vid, want):
    def done():
        v = _show(api, vid)
        return v['migration_status'] == want and v['status'] == \
            'available' and v
    return util.wait_for(done, timeout=90, interval=0.2,
                         what='migration of %s %s' % (vid, want))


def _only(api, vid):
    """The volume is the one live volume: no temporary one is left."""
    def alone():
        ids = [v['id'] for v in api.get(
            '/volumes/detail?all_tenants=1').json()['volumes']]
        return ids == [vid]
    util.wait_for(alone, timeout=60, interval=0.2,
                  what='temporary volume deleted')


def test_service_killed_mid_copy_on_either_side(cluster):
    api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    api.create_type('mig-ma', {'volume_backend_name': 'ma'})
    vol = api.create_volume(size=1, volume_type='mig-ma')
    vid = vol['id']
    # of a type both backends hold (a migration goes only where its type
    # may be), retyped in place
    api.create_type('mig-any', {'volume_backend_name': '<or> ma <or> noma'})
    resp = api.post('/volumes/%s/action' % vid, json={
        'os-retype': {'new_type': 'mig-any'}})
    assert resp.status_code == 202, resp.text
    path = os.path.join(_dir(cluster, 'ma'), 'volume-%s' % vid)
    with open(path, 'r+b') as f:
        for offset in range(0, DATA, 16 * MiB):
            f.seek(offset)
            f.write(os.urandom(16 * MiB))
        os.fsync(f.fileno())
    digest = _digest(path)

    # 1. the source's service dies in the copy
    _migrate(api, vid, 'node-noma@noma')
    _copying(cluster, api, vid)
    cluster.kill('ma')
    util.wait_for(lambda: _show(api, vid)['migration_status'] == 'error',
                  timeout=90, interval=0.2, what='migration error')
    _only(api, vid)
    util.wait_for(lambda: _files(cluster, 'noma') == [], timeout=30,
                  what='nothing left on noma')
    assert _exports(cluster, 'noma') == []
    _restart(cluster, 'ma')
    after = _settled(api, vid, 'error')
    assert after['os-vol-host-attr:host'] == 'node-ma@ma#ma'
    assert _digest(path) == digest
    util.wait_for(lambda: _exports(cluster, 'ma') == [], timeout=30,
                  what='no export left on ma')
    assert util.processes('nbdkit', 'migration-') == []

    # 2. the destination's service dies in the copy
    _migrate(api, vid, 'node-noma@noma')
    _copying(cluster, api, vid)
    cluster.kill('noma')
    util.wait_for(lambda: _show(api, vid)['migration_status'] == 'error',
                  timeout=120, interval=0.2, what='migration error')
    _restart(cluster, 'noma')
    _only(api, vid)
    util.wait_for(lambda: _files(cluster, 'noma') == [], timeout=30,
                  what='nothing left on noma')
    after = _settled(api, vid, 'error')
    assert after['os-vol-host-attr:host'] == 'node-ma@ma#ma'
    assert _digest(path) == digest
    util.wait_for(lambda: _exports(cluster, 'ma') == [] and
                  _exports(cluster, 'noma') == [], timeout=30,
                  what='no export left')

    # 3. one that runs to its end
    _migrate(api, vid, 'node-noma@noma')
    after = _settled(api, vid, 'success')
    assert after['os-vol-host-attr:host'] == 'node-noma@noma#noma'
    _only(api, vid)
    moved = os.path.join(_dir(cluster, 'noma'), 'volume-%s' % vid)
    assert _digest(moved) == digest
    util.wait_for(lambda: _files(cluster, 'ma') == [], timeout=30,
                  what='old storage removed')
    assert _exports(cluster, 'ma') == [] and _exports(cluster, 'noma') == []
    api.delete('/volumes/%s' % vid)
    api.wait_deleted(vid)
    assert _files(cluster, 'noma') == []
