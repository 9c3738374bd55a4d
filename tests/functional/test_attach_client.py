"""Compute-side attach client over REST and over the bus."""
import pytest

from cinder_lite.common import exception
from cinder_lite.connector import client
from cinder_lite.connector import host
from tests.harness import stack as stack_mod

I1 = '11111111-1111-4111-8111-111111111111'


@pytest.fixture
def ma_volume(api):
    api.create_type('ma', {'multiattach': '<is> True'})
    return api.create_volume(volume_type='ma')


def _transports(stack):
    return {
        'rest': client.RestTransport(stack.url + '/v3', stack_mod.PROJECT,
                                     roles='member'),
        'bus': client.BusTransport(stack_mod.PROJECT),
    }


@pytest.mark.parametrize('kind', ['rest', 'bus'])
def test_attach_and_detach(stack, api, ma_volume, kind):
    transport = _transports(stack)[kind]
    conn = host.get_connector(host='compute-%s' % kind, ip='127.0.0.2')
    assert conn['initiator']
    attacher = client.AttachClient(transport, conn)
    att = attacher.attach(ma_volume['id'], I1, mode='ro')
    assert att['status'] == 'attached'
    assert att['attach_mode'] == 'ro'
    assert att['connection_info']['access_mode'] == 'ro'
    assert att['connection_info']['driver_volume_type'] == 'local'
    vol = api.get('/volumes/%s' % ma_volume['id']).json()['volume']
    assert vol['status'] == 'in-use'
    assert transport.get(att['id'])['id'] == att['id']
    # made by a compute service: a plain member of the project cannot
    # pull it away
    member = stack.client(roles='member')
    assert member.delete('/attachments/%s' % att['id']).status_code == 409
    assert attacher.detach(att['id']) == []
    vol = api.get('/volumes/%s' % ma_volume['id']).json()['volume']
    assert vol['status'] == 'available'


@pytest.mark.parametrize('kind', ['rest', 'bus'])
def test_takeover(stack, api, kind):
    """The reader of a single-writer volume takes over through either
    transport and gets a read-write device; a takeover by the writer is a
    conflict.  (A local attachment is the file itself: nothing stands
    between a host and it to cut anyone off, as nothing enforces its
    read-only mode; NBD and iSCSI, where the target does:
    tests/dataplane/test_takeover.py.)"""
    api.create_type('single', {'multiattach': '<is> True', 'mode': 'RO'})
    vol = api.create_volume(volume_type='single')
    transport = _transports(stack)[kind]
    hosts = [client.AttachClient(transport, host.get_connector(
        host='compute-%s-%d' % (kind, n), ip='127.0.0.%d' % (n + 2)))
        for n in range(2)]
    writer, w_dev = hosts[0].attach_device(vol['id'])
    reader, r_dev = hosts[1].attach_device(vol['id'])
    assert r_dev.read_only and not w_dev.read_only
    att, dev = hosts[1].takeover(reader['id'], r_dev)
    assert (att['attach_mode'], att['connection_info']['access_mode']) == (
        'rw', 'rw')
    assert not dev.read_only
    dev.write(0, b'taken over')
    w_dev.close()
    with pytest.raises(exception.CinderLiteError) as e:
        transport.takeover(att['id'])
    assert 'is the writer of volume' in str(e.value)
    assert [a['id'] for a in api.get('/attachments?volume_id=%s' % vol[
        'id']).json()['attachments']] == [att['id']]
    hosts[1].detach(att['id'], dev)


def test_bus_errors_are_domain_errors(stack, api):
    bus = client.BusTransport(stack_mod.PROJECT)
    with pytest.raises(exception.VolumeNotFound):
        bus.create('00000000-0000-4000-8000-000000000000', None, None, None)
    with pytest.raises(exception.InvalidInput):
        bus.create('not-a-uuid', None, None, None)
    vol = api.create_volume()
    with pytest.raises(exception.InvalidConnector):
        bus.create(vol['id'], I1, {'ip': '1.2.3.4'}, None)
    with pytest.raises(exception.InvalidAttachMode):
        bus.create(vol['id'], I1, None, 'wo')
    assert api.get('/attachments').json()['attachments'] == []


def test_failed_connect_leaves_nothing(stack, api):
    """The client deletes its reservation when connecting fails."""
    vol = api.create_volume()
    stack.stop_backend('file')
    rest = client.RestTransport(stack.url + '/v3', stack_mod.PROJECT)
    attacher = client.AttachClient(rest, host.get_connector(host='c1'))
    with pytest.raises(exception.CinderLiteError) as e:
        attacher.attach(vol['id'], I1)
    assert 'HTTP 503' in str(e.value)
    assert api.get('/attachments').json()['attachments'] == []
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'
