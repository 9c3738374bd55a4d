"""NBD-specific behaviour of the data path: port exhaustion and what a
volume service restart does to nbdkit exports."""
import os
import socket
import tempfile
import uuid

from tests.harness import dataplane as dp
from tests.harness import stack as stack_mod
from tests.harness import util


def test_port_range_exhausted_leaves_nothing(tmp_path):
    util.need('nbdkit')
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
        resp = api.post('/attachments', json={'attachment': {
            'volume_uuid': vol['id'],
            'connector': dp.attacher(s, 'a').connector}})
        assert resp.status_code == 503
        assert 'no free port' in resp.json()['serviceUnavailable'][
            'message']
        (att,) = api.get('/attachments/detail').json()['attachments']
        assert att['status'] == 'error_attaching'
        assert 'no free port' in att['status_reason']
        assert util.processes('nbdkit', dp.volume_path(s, vol['id'])) == []
        assert dp.backend_target(s).exports() == {}
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
    host = dp.attacher(nbd_stack, 'a')
    att = host.attach(vol['id'], str(uuid.uuid4()))
    info = att['connection_info']
    path = dp.volume_path(nbd_stack, vol['id'])
    manager = nbd_stack.volume_service('file').endpoints[0]
    target = manager.driver.target
    # the daemon died, and an export nobody owns is running
    target.remove_export(att['id'])
    assert util.processes('nbdkit', path) == []
    stray = str(uuid.uuid4())
    target.create_export(path, vol['id'], stray, 'ro', None)
    assert len(util.processes('nbdkit', path)) == 1

    manager.init_host()

    assert set(target.exports()) == {att['id']}
    assert target.exports()[att['id']]['port'] == info['port']
    assert len(util.processes('nbdkit', path)) == 1
    dev = host.open(att)
    dev.write(0, b'back again')
    dev.flush()
    assert dev.read(0, 10) == b'back again'
    host.detach(att['id'], dev)
    assert util.processes('nbdkit', path) == []


def test_restart_ends_an_nbdkit_left_without_its_record(nbd_stack):
    """A volume service killed after starting nbdkit but before writing
    its record left an export running that no record names (seen in the
    crash tests): the next start ends it, and leaves every other nbdkit
    alone."""
    api = nbd_stack.client()
    vol = api.create_volume()
    host = dp.attacher(nbd_stack, 'a')
    att = host.attach(vol['id'], str(uuid.uuid4()))
    path = dp.volume_path(nbd_stack, vol['id'])
    manager = nbd_stack.volume_service('file').endpoints[0]
    target = manager.driver.target
    # the export of an attachment that was never recorded, and its record
    # lost as by a kill just before it was written
    lost = str(uuid.uuid4())
    target.create_export(path, vol['id'], lost, 'ro', None)
    os.unlink(target._state_file(lost))
    assert len(util.processes('nbdkit', path)) == 2

    manager.init_host()

    assert set(target.exports()) == {att['id']}
    (left,) = util.processes('nbdkit', path)
    assert left == target.exports()[att['id']]['pid']
    dev = host.open(att)
    dev.write(0, b'still here')
    dev.flush()
    host.detach(att['id'], dev)
    assert util.processes('nbdkit', path) == []


def test_a_long_state_and_temporary_directory_still_export(tmp_path,
                                                           monkeypatch):
    """The pause control socket of an export lives beside its record
    unless that path passes the 107 bytes of a Unix socket address, then
    under the temporary directory, and when that is long too, under
    /tmp: nbdkit exited at once on a path too long for its socket, and
    the attach was answered 503 "no free port"."""
    util.need('nbdkit')
    deep = tmp_path / ('d' * 60) / ('e' * 60)
    long_tmp = tmp_path / ('t' * 100)
    long_tmp.mkdir(parents=True)
    monkeypatch.setattr(tempfile, 'tempdir', str(long_tmp))
    s = stack_mod.Stack(deep, backends={'file': {
        'target_protocol': 'nbd'}}).start()
    try:
        api = s.client()
        vol = api.create_volume()
        host = dp.attacher(s, 'a')
        att = host.attach(vol['id'], str(uuid.uuid4()))
        record = dp.backend_target(s).exports()[att['id']]
        assert record['pause'].startswith('/tmp/cinder-lite-nbd-'), record
        assert len(record['pause'].encode()) <= 107
        dev = host.open(att)
        dev.write(0, b'a long way')
        dev.flush()
        assert dev.read(0, 10) == b'a long way'
        host.detach(att['id'], dev)
        assert not os.path.exists(record['pause'])
    finally:
        s.stop()
