"""iSCSI on a cluster: the two members of cluster ``aa`` (one volumes
directory) each run their own tgtd on their own address.  Six hosts
attach one multiattach volume at once (five read-write, one read-only);
the attachments split 3/3 over the members, each member's targets hold
the ACL entries of its own attachments only, bytes written through one
member's portal are read through the other's, the read-only host's
write is refused by its member's target, and detaching everything leaves
no target for the volume on either tgtd."""
import concurrent.futures
import errno
import os
import uuid

import pytest

from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from cinder_lite.connector import iscsi
from tests.dataplane import conftest as dp
from tests.integration import cluster as cluster_mod

CLUSTER_KINDS = ['postgresql']
ADDRESSES = {'ma': '127.0.0.3', 'ma2': '127.0.0.4'}
PORTS = {name: cluster_mod.free_port(address)
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
        'ma2': {'DEFAULT': {'cluster': 'aa',
                            'state_path': '{workdir}/state-ma2'}}},
}


@pytest.fixture(autouse=True)
def _data_path_programs():
    dp.need('tgtd')


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


def test_iscsi_members_share_a_volume_and_enforce_ro(cluster, api):
    vtype = api.create_type('aa-iscsi', {'multiattach': '<is> True',
                                         'volume_backend_name': 'ma'})
    vol = api.create_volume(volume_type=vtype['name'])
    transport = client.RestTransport(cluster.url + '/v3',
                                     cluster_mod.PROJECT)
    hosts = [client.AttachClient(transport, host_connector.get_connector(
        host='compute-%d' % n, ip='127.0.2.%d' % (n + 1)))
        for n in range(6)]
    modes = ['rw'] * 5 + ['ro']
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        attached = list(pool.map(
            lambda hm: hm[0].attach_device(vol['id'], str(uuid.uuid4()),
                                           mode=hm[1]), zip(hosts, modes)))
    on = {name: [(h, a, d) for h, (a, d) in zip(hosts, attached)
                 if _member(a) == name] for name in ADDRESSES}
    assert sorted(len(v) for v in on.values()) == [3, 3], on
    for name, entries in on.items():
        assert _acl(name, vol['id']) == sorted(
            h.connector['initiator'] for h, _a, _d in entries)

    writer = next(d for _h, a, d in on['ma']
                  if a['connection_info']['access_mode'] == 'rw')
    reader = next(d for _h, _a, d in on['ma2'])
    block = os.urandom(65536)
    writer.write(0, block)
    writer.flush()
    assert reader.read(0, len(block)) == block
    ro = next(d for _h, a, d in on['ma'] + on['ma2']
              if a['connection_info']['access_mode'] == 'ro')
    assert ro.read_only
    with pytest.raises(iscsi.IscsiError) as e:
        ro.write(0, b'\xff' * 4096)
    assert e.value.errno == errno.EROFS
    assert reader.read(0, len(block)) == block

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
