"""Shared volumes over NBD, proved with bytes.  Each "host" is its own
loopback address (127.0.0.2, .3, .4) that its client connects from."""
import errno
import hashlib
import os
import shutil
import socket
import uuid

import pytest

from cinder_lite.connector import client
from cinder_lite.connector import devices
from cinder_lite.connector import host as host_connector
from cinder_lite.connector import nbd
from tests import stack as stack_mod

BLOCK = 4096
REQUIRE_ENV = 'CINDER_LITE_REQUIRE_SERVICES'


def _free_range(count):
    """``count`` consecutive free ports on 127.0.0.1 (best effort)."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        start = s.getsockname()[1]
    start = min(start, 65535 - count)
    return '%d-%d' % (start, start + count - 1)


@pytest.fixture
def nbd_stack(tmp_path):
    if shutil.which('nbdkit') is None:
        if os.environ.get(REQUIRE_ENV) == '1':
            pytest.fail('nbdkit is not installed and %s=1' % REQUIRE_ENV)
        pytest.skip('nbdkit is not installed')
    s = stack_mod.Stack(tmp_path / 'st', backends={'file': {
        'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1',
        'target_port_range': _free_range(20)}}).start()
    yield s
    target = s.volume_service('file').endpoints[0].driver.target
    leftovers = target.exports()
    for attachment_id in leftovers:
        target.remove_export(attachment_id)
    s.stop()
    assert leftovers == {}, 'exports left behind: %s' % leftovers


def nbdkit_pids(path):
    """Pids of nbdkit processes serving ``path``."""
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        if argv and argv[0].endswith(b'nbdkit') and path.encode() in argv:
            found.append(int(pid))
    return found


def attacher(s, name, address):
    transport = client.RestTransport(s.url + '/v3', stack_mod.PROJECT)
    return client.AttachClient(transport, host_connector.get_connector(
        host=name, ip=address))


def test_three_hosts_share_a_volume_and_ro_is_enforced_by_the_target(
        nbd_stack):
    api = nbd_stack.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    vol = api.create_volume(volume_type='shared')
    path = os.path.join(nbd_stack.state_path, 'volumes', 'file',
                        'volume-%s' % vol['id'])
    hosts = {'a': ('127.0.0.2', 'rw'), 'b': ('127.0.0.3', 'rw'),
             'c': ('127.0.0.4', 'ro')}
    atts, devs = {}, {}
    for name, (address, mode) in hosts.items():
        atts[name] = attacher(nbd_stack, 'host-' + name, address).attach(
            vol['id'], str(uuid.uuid4()), mode=mode)
        info = atts[name]['connection_info']
        assert info['driver_volume_type'] == 'nbd'
        assert info['access_mode'] == mode
        devs[name] = devices.connect(info, source_address=address)
    assert len(nbdkit_pids(path)) == 3
    assert devs['c'].read_only and not devs['a'].read_only
    # each writer writes a random block and a token, the other reads them
    blocks = {n: os.urandom(BLOCK) for n in ('a', 'b')}
    offsets = {'a': 0, 'b': BLOCK}
    for n in ('a', 'b'):
        devs[n].write(offsets[n], blocks[n])
        devs[n].write(8 * BLOCK + offsets[n], b'token-%s' % n.encode())
        devs[n].flush()
    assert devs['b'].read(offsets['a'], BLOCK) == blocks['a']
    assert devs['a'].read(offsets['b'], BLOCK) == blocks['b']
    assert devs['c'].read(8 * BLOCK, 7) == b'token-a'
    assert devs['c'].read(8 * BLOCK + BLOCK, 7) == b'token-b'
    # the read-only host's raw write is refused by nbdkit, not its client
    before = hashlib.sha256(open(path, 'rb').read(16 * BLOCK)).digest()
    with pytest.raises(nbd.NbdError) as e:
        devs['c'].write(0, b'\xff' * BLOCK)
    assert e.value.errno == errno.EPERM
    after = hashlib.sha256(open(path, 'rb').read(16 * BLOCK)).digest()
    assert before == after
    # detaching one host leaves the others working
    devs['a'].close()
    attacher(nbd_stack, 'host-a', '127.0.0.2').detach(atts['a']['id'])
    assert len(nbdkit_pids(path)) == 2
    devs['b'].write(2 * BLOCK, b'still here')
    devs['b'].flush()
    assert devs['c'].read(2 * BLOCK, 10) == b'still here'
    # the last detach removes every export and its daemon
    for n in ('b', 'c'):
        devs[n].close()
        attacher(nbd_stack, 'host-' + n, hosts[n][0]).detach(atts[n]['id'])
    assert nbdkit_pids(path) == []
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'


def test_port_range_exhausted_leaves_nothing(tmp_path):
    if shutil.which('nbdkit') is None:
        pytest.skip('nbdkit is not installed')
    holder = socket.socket()
    holder.bind(('127.0.0.1', 0))
    holder.listen()
    port = holder.getsockname()[1]
    s = stack_mod.Stack(tmp_path / 'st', backends={'file': {
        'target_protocol': 'nbd', 'target_port_range': '%d-%d' % (
            port, port)}}).start()
    try:
        api = s.client()
        vol = api.create_volume()
        path = os.path.join(s.state_path, 'volumes', 'file',
                            'volume-%s' % vol['id'])
        resp = api.post('/attachments', json={'attachment': {
            'volume_uuid': vol['id'],
            'connector': host_connector.get_connector(host='h',
                                                      ip='127.0.0.2')}})
        assert resp.status_code == 503
        assert 'no free port' in resp.json()['serviceUnavailable'][
            'message']
        (att,) = api.get('/attachments/detail').json()['attachments']
        assert att['status'] == 'error_attaching'
        assert 'no free port' in att['status_reason']
        assert nbdkit_pids(path) == []
        target = s.volume_service('file').endpoints[0].driver.target
        assert target.exports() == {}
        assert api.delete('/attachments/%s' % att['id']).status_code == 200
    finally:
        holder.close()
        s.stop()


def test_restart_restores_and_prunes_exports(nbd_stack):
    """What a volume service does at start: exports of connected
    attachments come back on the ports their connection info names, and
    exports no attachment owns go."""
    api = nbd_stack.client()
    vol = api.create_volume()
    att = attacher(nbd_stack, 'host-a', '127.0.0.2').attach(
        vol['id'], str(uuid.uuid4()))
    info = att['connection_info']
    path = os.path.join(nbd_stack.state_path, 'volumes', 'file',
                        'volume-%s' % vol['id'])
    manager = nbd_stack.volume_service('file').endpoints[0]
    target = manager.driver.target
    # the daemon died, and an export nobody owns is running
    (pid,) = nbdkit_pids(path)
    target.remove_export(att['id'])
    assert nbdkit_pids(path) == []
    stray = str(uuid.uuid4())
    target.create_export(path, vol['id'], stray, 'ro')
    assert len(nbdkit_pids(path)) == 1

    manager.init_host()

    assert set(target.exports()) == {att['id']}
    assert target.exports()[att['id']]['port'] == info['port']
    assert len(nbdkit_pids(path)) == 1
    dev = devices.connect(info, source_address='127.0.0.2')
    dev.write(0, b'back again')
    dev.flush()
    assert dev.read(0, 10) == b'back again'
    dev.close()
    attacher(nbd_stack, 'host-a', '127.0.0.2').detach(att['id'])
    assert nbdkit_pids(path) == []
