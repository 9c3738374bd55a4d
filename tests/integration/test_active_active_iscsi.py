"""iSCSI on a cluster: the two members of cluster ``aa`` (one volumes
directory) each run their own tgtd on their own address.  Six hosts
attach one multiattach volume at once (five read-write, one read-only).
The volume's hosts share persistent reservations, which live in one
tgtd, so all six are exported by one member (the first attach picks the
less loaded one) and the other member's tgtd never sees the volume;
bytes one host writes the others read, the read-only host's write is
refused by the target, and detaching everything leaves no target for the
volume on either tgtd.  A second volume goes to the other member."""
import concurrent.futures
import errno
import os
import uuid

import pytest

from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from cinder_lite import iscsi
from tests.harness import dataplane as dp
from tests.harness import cluster as cluster_mod
from tests.harness import util

CLUSTER_KINDS = ['postgresql']
ADDRESSES = {'ma': '127.0.0.3', 'ma2': '127.0.0.4'}
PORTS = {name: util.free_port(address)
         for name, address in ADDRESSES.items()}
# tgtd control sockets are machine-wide numbers up to 32767
CONTROL = {name: port % 32768 for name, port in PORTS.items()}
if CONTROL['ma'] == CONTROL['ma2']:
    CONTROL['ma2'] = (CONTROL['ma2'] + 1) % 32768


def _iscsi(name):
    return {'target_protocol': 'iscsi',
            'target_ip_address': ADDRESSES[name],
            'target_port': PORTS[name],
            'target_control_port': CONTROL[name]}


CLUSTER_OPTIONS = {
    'node_options': {'ma': _iscsi('ma')},
    'extra_nodes': {'ma2': ('node-ma2', 'ma', dict(
        _iscsi('ma2'), volumes_dir='{workdir}/state/volumes/ma'))},
    'process_sections': {
        'ma': {'DEFAULT': {'cluster': 'aa'}},
        # a state directory of its own (the cluster gives every process
        # the deployment's one credential key)
        'ma2': {'DEFAULT': {'cluster': 'aa',
                            'state_path': '{workdir}/state-ma2'}}},
}


@pytest.fixture(autouse=True)
def _data_path_programs():
    util.need('tgtd')


def _member(attachment):
    portal = attachment['connection_info']['target_portal']
    return next(name for name, address in ADDRESSES.items()
                if portal == '%s:%d' % (address, PORTS[name]))


def _acl(name, volume_id):
    """Initiators the tgtd of member ``name`` admits to the volume's
    targets."""
    return sorted(initiator
                  for iqn, target in dp.tgt_targets(CONTROL[name]).items()
                  if volume_id in iqn for initiator in target['acl'])


def _volume_and_hosts(cluster, api, type_name, specs, prefix, count, first):
    """A volume of a new type pinned to backend ``ma`` (the cluster), and
    ``count`` attach clients ``<prefix>-<n>`` on 127.0.2.<first + n>."""
    vtype = api.create_type(type_name, dict(specs,
                                            volume_backend_name='ma'))
    vol = api.create_volume(volume_type=vtype['name'])
    transport = client.RestTransport(cluster.url + '/v3',
                                     cluster_mod.PROJECT)
    return vol, [client.AttachClient(transport, host_connector.get_connector(
        host='%s-%d' % (prefix, n), ip='127.0.2.%d' % (first + n)))
        for n in range(count)]


def test_iscsi_members_share_a_volume_and_enforce_ro(cluster, api):
    vol, hosts = _volume_and_hosts(cluster, api, 'aa-iscsi', {
        'multiattach': '<is> True'}, 'compute', 6, 1)
    modes = ['rw'] * 5 + ['ro']
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        attached = list(pool.map(
            lambda hm: hm[0].attach_device(vol['id'], str(uuid.uuid4()),
                                           mode=hm[1]), zip(hosts, modes)))
    assert all(a['connection_info']['persistent_reservations'] is True
               for a, _d in attached)
    members = {_member(a) for a, _d in attached}
    assert len(members) == 1, members
    holder = members.pop()
    other = next(name for name in ADDRESSES if name != holder)
    assert _acl(holder, vol['id']) == sorted(
        h.connector['initiator'] for h in hosts)
    assert _acl(other, vol['id']) == []

    devices = [d for _a, d in attached]
    writer, reader = devices[0], devices[3]
    block = os.urandom(65536)
    writer.write(0, block)
    writer.flush()
    assert reader.read(0, len(block)) == block
    ro = next(d for a, d in attached
              if a['connection_info']['access_mode'] == 'ro')
    assert ro.read_only
    with pytest.raises(iscsi.IscsiError) as e:
        ro.write(0, b'\xff' * 4096)
    assert e.value.errno == errno.EROFS
    assert reader.read(0, len(block)) == block

    # the next volume's first attach goes to the member with fewer exports
    second = api.create_volume(volume_type='aa-iscsi')
    att, dev = hosts[0].attach_device(second['id'], str(uuid.uuid4()))
    assert _member(att) == other
    hosts[0].detach(att['id'], dev)

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda pair: pair[0].detach(pair[1][0]['id'],
                                                  pair[1][1]),
                      zip(hosts, attached)))
    for name in ADDRESSES:
        assert _acl(name, vol['id']) == []
        assert not [iqn for iqn in dp.tgt_targets(CONTROL[name])
                    if vol['id'] in iqn], name
    api.wait_volume(vol['id'], 'available')
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


def test_takeover_on_a_cluster_after_a_member_restarts(cluster, api):
    """A single-writer volume on the cluster: its writer and reader are
    exported by one member.  That member's volume service is killed and
    started again (its tgtd keeps serving both hosts); then the reader
    takes over: the old writer's session is ended by the target and the
    reader writes through its new read-write connection."""
    vol, (writer, reader) = _volume_and_hosts(cluster, api, 'aa-single', {
        'multiattach': '<is> True', 'mode': 'RO'}, 'compute', 2, 20)
    w_att, w_dev = writer.attach_device(vol['id'])
    r_att, r_dev = reader.attach_device(vol['id'])
    assert (w_att['attach_mode'], r_att['attach_mode']) == ('rw', 'ro')
    holder = _member(w_att)
    assert _member(r_att) == holder
    w_dev.write(0, b'written before the restart')
    w_dev.flush()

    cluster.kill(holder)
    cluster.start_process(holder)
    assert r_dev.read(0, 26) == b'written before the restart'

    att, dev = reader.takeover(r_att['id'], r_dev)
    assert att['attach_mode'] == 'rw'
    assert att['connection_info']['access_mode'] == 'rw'
    assert _member(att) == holder
    with pytest.raises(iscsi.IscsiError):
        w_dev.write(0, b'late')
    w_dev.close()
    dev.write(0, b'the new writer')
    dev.flush()
    assert _acl(holder, vol['id']) == [reader.connector['initiator']]
    events = api.get('/os-attachment-events?attachment_id=%s'
                     % w_att['id']).json()['attachment_events']
    assert events[-1]['reason'] == 'taken over by %s' % r_att['id']
    reader.detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')


def test_reservations_fence_across_the_cluster(cluster, api):
    """fence_scsi's steps on the cluster: three writers attach at once,
    all land on one member, so a reservation one takes fences the
    others; the survivor preempts the failed node, which is then
    force-detached and leaves no registration behind."""
    vol, hosts = _volume_and_hosts(cluster, api, 'aa-fence', {
        'multiattach': '<is> True',
        'persistent_reservations': '<is> True'}, 'fence', 3, 40)
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        atts = list(pool.map(lambda h: h.attach(vol['id']), hosts))
    assert len({_member(a) for a in atts}) == 1
    keys = [int(a['connection_info']['reservation_key'], 16) for a in atts]
    sessions = [iscsi.IscsiSession(
        a['connection_info']['target_portal'],
        a['connection_info']['target_iqn'], 1, h.connector['initiator'],
        timeout=5, source_address=h.connector['ip'],
        chap=(a['connection_info']['auth_username'],
              a['connection_info']['auth_password'])).connect()
        for h, a in zip(hosts, atts)]
    first, second, outsider = sessions
    block = b'\x11' * first.block_size
    we_ro = iscsi.PR_WRITE_EXCLUSIVE_REGISTRANTS_ONLY
    try:
        iscsi.settled(lambda: first.register(keys[0]))
        iscsi.settled(lambda: second.register(keys[1]))
        iscsi.settled(lambda: first.reserve(keys[0], we_ro))
        iscsi.settled(lambda: second.write(0, block))
        with pytest.raises(iscsi.ReservationConflict):
            iscsi.settled(lambda: outsider.write(0, block))
        # first fails: second preempts it and writes; first is refused
        iscsi.settled(lambda: second.preempt(keys[1], keys[0], we_ro))
        with pytest.raises(iscsi.ReservationConflict):
            iscsi.settled(lambda: first.write(0, block))
        resp = api.post('/volumes/%s/action' % vol['id'], json={
            'os-force_detach': {'attachment_id': atts[0]['id']}})
        assert resp.status_code == 202, resp.text
        assert iscsi.settled(second.read_keys)[1] == [keys[1]]
        assert iscsi.settled(second.read_reservation)[1:] == (keys[1], we_ro)
    finally:
        for session in sessions:
            session.close()
        for h, a in zip(hosts[1:], atts[1:]):
            h.detach(a['id'])
    api.wait_volume(vol['id'], 'available')


def _service_state(api, host):
    return {s['host']: s['state'] for s in api.get(
        '/os-services').json()['services']}.get(host)


def test_a_reservation_volume_waits_for_its_member(cluster, api):
    """The member exporting a volume with persistent reservations stops:
    the host attached through it keeps writing (that member's tgtd keeps
    serving, with the reservation state), a new attachment answers 503
    naming the member and records nothing, rather than landing on the
    other member where no reservation would fence it; once the member is
    back, the new attachment lands on it."""
    vol, hosts = _volume_and_hosts(cluster, api, 'aa-wait', {
        'multiattach': '<is> True'}, 'wait', 2, 60)
    att, dev = hosts[0].attach_device(vol['id'])
    holder = _member(att)
    service = '%s@ma' % cluster.nodes[holder][0]
    cluster.kill(holder)
    util.wait_for(lambda: _service_state(api, service) == 'down',
                  30, what='%s down' % service)
    dev.write(0, b'written while the member is down')
    dev.flush()
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'connector': hosts[1].connector}})
    assert resp.status_code == 503, resp.text
    assert service in resp.text and 'persistent reservations' in resp.text
    listed = api.get('/attachments?volume_id=%s' % vol['id']).json()
    assert [a['id'] for a in listed['attachments']] == [att['id']]

    cluster.start_process(holder)
    util.wait_for(lambda: _service_state(api, service) == 'up',
                  60, what='%s up' % service)
    second, second_dev = hosts[1].attach_device(vol['id'])
    assert _member(second) == holder
    assert second_dev.read(0, 32) == b'written while the member is down'
    hosts[1].detach(second['id'], second_dev)
    hosts[0].detach(att['id'], dev)
    api.wait_volume(vol['id'], 'available')
