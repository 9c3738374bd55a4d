"""Network faults of one node while the rest of the deployment goes on,
on hosts of the test's own: network namespaces on this machine
(tests/harness/netns_cluster.py, doc/source/reliability.rst "Network faults").

A volume node cut off the bus and the database (iptables in its
namespace dropping what goes to and comes from the infra node) for longer
than ``service_down_time`` while a compute node is attached through it
and writing: the export keeps serving (its data path, compute <-> volume
node, stays up), the other member of the cluster takes the new work,
nothing is exported twice, and once the cut heals the node converges
without an operator.

Skipped with the reason where network namespaces are not permitted
(failed instead under CINDER_LITE_REQUIRE_SERVICES=1).  Nothing here
waits a fixed time and then asserts: each wait is for a condition, with
a bound derived from ``service_down_time`` that only a broken deployment
reaches.
"""
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from tests.harness import cluster as cluster_mod
from tests.harness import netns
from tests.harness import netns_cluster
from tests.harness import util

SERVICE_DOWN_TIME = 5
# oslo.messaging's heartbeat_timeout_threshold: the broker gives up a
# silent consumer after it, and hands what that consumer had not
# acknowledged to the cluster's other member
HEARTBEAT_TIMEOUT = 10
# the bound of every wait for something that must happen: generous for a
# 2-core machine shared with other work, reached only when it never does
PATIENCE = 20 * SERVICE_DOWN_TIME + 2 * HEARTBEAT_TIMEOUT
V354 = {'OpenStack-API-Version': 'volume 3.54'}
CREATED = re.compile(r'created ([0-9a-f-]{36}) ')
# writes the compute node must complete while a condition holds (each is
# 64 KiB, flushed: a few milliseconds)
SOME_WRITES = 20


def _missing():
    reason = netns.unavailable()
    if reason:
        return 'network namespaces: %s' % reason
    for program in ('rabbitmq-server', 'nbdkit'):
        if not shutil.which(program):
            return '%s not installed' % program
    if not glob.glob('/usr/lib/postgresql/*/bin/postgres'):
        return 'PostgreSQL not installed'
    if not os.path.exists('/usr/lib/python3/dist-packages/nbd.py'):
        return "libnbd's Python bindings (python3-libnbd) not installed"
    return None


@pytest.fixture(scope='module')
def deployment():
    reason = _missing()
    if reason:
        util.skip_or_fail(reason)
    d = netns_cluster.Deployment(
        'postgresql', service_down_time=SERVICE_DOWN_TIME,
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        keep_workdir=os.environ.get('CINDER_LITE_KEEP_WORKDIR') == '1')
    try:
        d.start()
    except cluster_mod.ClusterError as e:
        pytest.fail('the namespace deployment did not start: %s' % e,
                    pytrace=False)
    yield d
    codes = d.stop()
    logs = d.logs()
    bad = {name: rc for name, rc in codes.items() if rc != 0}
    assert not bad, 'did not stop cleanly on SIGTERM: %r\n%s' % (bad, logs)
    assert d.leftovers == {}, 'left running in the namespaces: %r' % (
        d.leftovers,)


def _reaches(net, node, peer, port, timeout=10.0):
    """A TCP connection from ``node`` to ``peer``'s ``port`` opens
    (within ``timeout``: a refusal is meant to wait only that long, a
    connection that opens does at once)."""
    return netns.port_open(net.ns[node], net.address[peer], port,
                           timeout=timeout)


def test_network_isolates_and_makes_faults_per_node():
    """The harness itself: nodes reach each other over the bridge and
    nothing else; each fault takes away what it says and its counterpart
    gives it back; teardown leaves no namespace and no process."""
    if netns.unavailable():
        util.skip_or_fail('network namespaces: %s' % netns.unavailable())
    net = netns.Network(['a', 'b', 'c']).create()
    names = set(net.ns.values()) | {net.switch}
    sleeper = None
    try:
        # a listener on b and on c (sockets made inside their namespaces)
        listeners = []
        for node in ('b', 'c'):
            with netns.entered(net.ns[node]):
                sock = socket.socket()
            sock.bind((net.address[node], 0))
            sock.listen(64)
            listeners.append(sock)
        port_b, port_c = (s.getsockname()[1] for s in listeners)
        assert _reaches(net, 'a', 'b', port_b)
        assert _reaches(net, 'a', 'c', port_c)
        # no route out: a namespace reaches only its own network
        for cmd in (['ip', 'route'], ['ip', '-6', 'route']):
            assert 'default' not in net.run('a', *cmd).stdout
        # and from the root namespace the subnet goes nowhere: a stray
        # packet to it is dropped on this machine, not routed out of it
        guard = subprocess.run(['ip', 'route', 'show', 'type', 'blackhole'],
                               capture_output=True, text=True).stdout
        assert '%s.0/24' % net.subnet in guard, guard
        # a cut from b only: c still answers
        net.cut('a', ['b'])
        assert not _reaches(net, 'a', 'b', port_b, timeout=1.0)
        assert _reaches(net, 'a', 'c', port_c)
        assert net.cuts() == {'a': {'b'}}
        net.heal('a')
        assert _reaches(net, 'a', 'b', port_b)
        # the link down: nothing; up: all back
        net.link('a', False)
        assert not _reaches(net, 'a', 'c', port_c, timeout=1.0)
        net.link('a', True)
        util.wait_for(lambda: _reaches(net, 'a', 'c', port_c), 30,
                      interval=0.2, what='a link back up')
        # every packet lost at random is every packet lost
        net.lose('a', 100)
        assert not _reaches(net, 'a', 'b', port_b, timeout=1.0)
        net.heal('a')
        assert _reaches(net, 'a', 'b', port_b)
        net.limit_rate('a', rate='8mbit')
        assert 'tbf' in net.run('a', 'tc', 'qdisc', 'show', 'dev',
                                net.interface('a')).stdout
        assert _reaches(net, 'a', 'b', port_b)
        net.clear_qdisc('a')
        if netns.netem_unavailable():
            with pytest.raises(netns.Unsupported):
                net.netem('a', delay='5ms')
        else:
            net.netem('a', delay='5ms')
            assert _reaches(net, 'a', 'b', port_b)
        # a process started on b runs inside b, and teardown ends it
        sleeper = subprocess.Popen(net.argv('b', ['sleep', '600']))
        util.wait_for(lambda: sleeper.pid in net.processes('b'), 30,
                      interval=0.05, what='sleep inside b')
        assert sleeper.pid not in net.processes('a')
        for sock in listeners:
            sock.close()
    finally:
        left = net.destroy()
    assert sleeper is not None and set(left) == {sleeper.pid}, left
    assert sleeper.wait(10) == -signal.SIGTERM
    assert not names & set(os.listdir(netns.NETNS_DIR))
    assert '%s.0/24' % net.subnet not in subprocess.run(
        ['ip', 'route', 'show', 'type', 'blackhole'], capture_output=True,
        text=True).stdout


def _service(api, deployment, node):
    services = deployment.services(api) or {}
    return services.get(('cinder-volume', deployment.member_host(node)))


def _state_is(api, deployment, node, state):
    service = _service(api, deployment, node)
    return service is not None and service['state'] == state and service


def _wait_writes(host, attachment_id, more, what):
    """Until the compute node completed ``more`` writes more than now."""
    start, _error = host.writes(attachment_id)

    def _done():
        done, error = host.writes(attachment_id)
        assert error is None, 'the writes stopped: %s' % error
        return done >= start + more
    util.wait_for(_done, PATIENCE, interval=0.1,
                  what='%d more writes %s' % (more, what))


def _wait_status(api, volume_id, status):
    def _check():
        vol = api.get('/volumes/%s' % volume_id).json()['volume']
        assert vol['status'] not in ('error', 'error_deleting'), vol
        return vol if vol['status'] == status else None
    return util.wait_for(_check, PATIENCE, interval=0.2,
                         what='volume %s %s' % (volume_id, status))


def _created_by(deployment, volume_id):
    """{member: how often its log says it created ``volume_id``}."""
    counts = {}
    for node in netns_cluster.MEMBERS:
        log = deployment.processes[node].read_log()
        counts[node] = CREATED.findall(log).count(volume_id)
    return counts


def _show_exports(deployment, node):
    done = deployment.manage(node, 'volume', 'show-exports')
    return done.returncode, done.stdout + done.stderr


def test_volume_node_cut_off_from_bus_and_database(deployment):
    d = deployment
    api = d.client()
    host = d.compute_host()
    vol = _wait_status(api, api.create_volume(wait=False)['id'],
                       'available')
    first = host.attach(vol['id'])
    member = d.member_of_address(first['connection_info']['host'])
    (other,) = set(netns_cluster.MEMBERS) - {member}
    host.call('write', attachment_id=first['id'], blocks=32)
    _wait_writes(host, first['id'], SOME_WRITES, 'before the cut')

    # the member exporting the attachment loses the bus and the database;
    # its link to the compute node stays up
    d.net.cut(member, ['infra'])
    cut_at = time.monotonic()
    down = util.wait_for(lambda: _state_is(api, d, member, 'down'),
                         PATIENCE, interval=0.2,
                         what='%s seen down' % d.member_host(member))
    assert _state_is(api, d, other, 'up'), d.services(api)
    # the export serves all along
    _wait_writes(host, first['id'], SOME_WRITES, 'with its node down')
    shown = api.get('/attachments/%s' % first['id'], headers=V354)
    assert shown.json()['attachment']['status'] == 'attached', shown.text
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'in-use'

    # the other member takes the new work: a create ...
    made = _wait_status(api, api.create_volume(wait=False)['id'],
                        'available')
    assert made['os-vol-host-attr:host'] == netns_cluster.POOL, made
    # ... and an attach, which it exports
    second = host.attach(made['id'])
    assert d.member_of_address(second['connection_info']['host']) == \
        other, second['connection_info']
    host.call('write', attachment_id=second['id'], blocks=8)
    _wait_writes(host, second['id'], SOME_WRITES, 'through the other member')

    # the cut lasts past service_down_time and the broker's heartbeat
    # timeout (it then drops the node's connections): a wait for the
    # duration, not for an outcome
    util.wait_for(lambda: time.monotonic() - cut_at >
                  max(3 * SERVICE_DOWN_TIME, 2 * HEARTBEAT_TIMEOUT),
                  PATIENCE, interval=0.2, what='the cut to last')
    _wait_writes(host, first['id'], SOME_WRITES, 'late in the cut')
    assert _state_is(api, d, member, 'down'), d.services(api)

    d.net.heal(member)
    # its heartbeats resume: up again, and the heartbeat time moves on
    back = util.wait_for(lambda: _state_is(api, d, member, 'up'), PATIENCE,
                         interval=0.2,
                         what='%s up again' % d.member_host(member))
    assert back['updated_at'] > down['updated_at'], (down, back)
    util.wait_for(lambda: (_service(api, d, member) or back)['updated_at']
                  > back['updated_at'], PATIENCE, interval=0.2,
                  what='a heartbeat of %s after the first'
                  % d.member_host(member))
    d.check_alive()

    # what users see: both attachments attached where they were, both
    # volumes in use, nothing in a transitional status
    for att, node in ((first, member), (second, other)):
        now = api.get('/attachments/%s' % att['id'], headers=V354).json()[
            'attachment']
        assert now['status'] == 'attached', now
        assert now['connection_info']['host'] == d.net.address[node]
    volumes = api.get('/volumes/detail').json()['volumes']
    assert sorted((v['id'], v['status']) for v in volumes) == sorted(
        [(vol['id'], 'in-use'), (made['id'], 'in-use')]), volumes
    # what is left: each export once, on its member; each volume made once
    assert (len(d.exports(member)), len(d.exports(other))) == (1, 1), (
        d.net.processes(member), d.net.processes(other))
    for node in netns_cluster.MEMBERS:
        code, out = _show_exports(d, node)
        assert code == 0 and '%s: 1 export(s), 0 missing, 0 row(s) with ' \
            'problems' % d.member_host(node) in out, out
    assert sum(_created_by(d, vol['id']).values()) == 1
    assert _created_by(d, made['id']) == {member: 0, other: 1}

    # the data: every block reads back what was last written to it
    _wait_writes(host, first['id'], SOME_WRITES, 'after the cut healed')
    for att in (first, second):
        host.call('stop', attachment_id=att['id'])
        assert host.writes(att['id'])[1] is None
        assert host.call('verify', attachment_id=att['id'])['bad'] == []

    # and the node works as before: the detaches go to each export's
    # member, which removes it
    for att in (first, second):
        host.call('detach', attachment_id=att['id'])
    util.wait_for(lambda: not d.exports(member) and not d.exports(other),
                  PATIENCE, interval=0.2, what='the exports removed')
    for v in (vol, made):
        _wait_status(api, v['id'], 'available')
        assert api.delete('/volumes/%s' % v['id']).status_code == 202
    for v in (vol, made):
        util.wait_for(lambda: api.get('/volumes/%s' % v['id']).status_code
                      == 404, PATIENCE, interval=0.2,
                      what='volume %s deleted' % v['id'])
