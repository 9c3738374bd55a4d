"""Compute-side attach client over REST and over the bus."""
import pytest

from cinder_lite.common import exception
from cinder_lite.connector import client
from cinder_lite.connector import host
from tests import stack as stack_mod

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
def test_takeover_of_a_local_file_is_refused(stack, api, kind):
    """A local attachment is the file itself: no target could cut the
    writer off, so a takeover is refused (400, over REST and the bus) and
    changes nothing.  NBD and iSCSI: tests/dataplane/test_takeover.py."""
    api.create_type('single', {'multiattach': '<is> True', 'mode': 'RO'})
    vol = api.create_volume(volume_type='single')
    transport = _transports(stack)[kind]
    hosts = [client.AttachClient(transport, host.get_connector(
        host='compute-%s-%d' % (kind, n), ip='127.0.0.%d' % (n + 2)))
        for n in range(2)]
    writer = hosts[0].attach(vol['id'])
    reader = hosts[1].attach(vol['id'])
    assert (writer['attach_mode'], reader['attach_mode']) == ('rw', 'ro')
    with pytest.raises(exception.CinderLiteError) as e:
        hosts[1].takeover(reader['id'])
    assert 'no target stands between the writer and the volume' in str(
        e.value)
    modes = {a['id']: a['attach_mode'] for a in api.get(
        '/attachments/detail?volume_id=%s' % vol['id']).json()[
            'attachments']}
    assert modes == {writer['id']: 'rw', reader['id']: 'ro'}
    for h, a in zip(hosts, (writer, reader)):
        h.detach(a['id'])


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
