"""Slow storage (issue 48): the target of an attachment stalls.

Node ma exports over iSCSI (a tgtd of its own), node noma over NBD (an
nbdkit per attachment), both with ``target_drain_timeout`` DRAIN_S, in
the distributed deployment (API, scheduler and volume services in
processes of their own over RabbitMQ and PostgreSQL).  The test freezes
the target process of an attachment with SIGSTOP, by pid (a process the
deployment started), and asks for a detach (``DELETE
/attachments/{id}``) and a host fence (``os-fence``):

* tgtd frozen: nobody can say whether the host's commands are done.
  Each request answers 503 within the drain timeout (plus the RPC round
  trip), saying the cut-off cannot be confirmed; the detach leaves the
  attachment ``error_detaching`` (not ``detached``), the fence keeps its
  mark and is not reported done, and the fence report never says the
  host is unreachable.  After SIGCONT, with nobody asking again,
  reconciliation retries the disconnect: the attachment ends
  ``detached``, tgtd holds no target of the volume, ``volume
  show-exports`` finds the node's exports equal to the database, and
  nothing is left in a transitional state; the fence asked again is
  confirmed (200) and the report says the host cannot reach the volume.
* nbdkit frozen: SIGKILL ends a stopped process, so the cut-off is real:
  the detach and the fence answer 200 within the drain timeout and the
  export's nbdkit is gone.
"""
import os
import signal
import time
import uuid

import pytest

from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from tests.harness import cluster as cluster_mod
from tests.harness import dataplane as dp
from tests.harness import util

CLUSTER_KINDS = ['postgresql']
DRAIN_S = 2.0
RPC_TIMEOUT = 10
# above volume_rpc_timeout plus 10 s (see the option's help)
RECONCILE_AFTER = 22
RECONCILE_INTERVAL = 2
# what a request may take past the drain timeout: the RPC round trip and
# the API's own transactions on a busy 2-core machine
SLACK_S = 4.0
ISCSI_ADDRESS = '127.0.0.3'
ISCSI_PORT = util.free_port(ISCSI_ADDRESS)
CONTROL = ISCSI_PORT % 32768
TRANSITIONAL = {'attaching', 'detaching', 'reserved', 'creating',
                'deleting', 'extending'}

CLUSTER_OPTIONS = {
    'extra_default': {'volume_rpc_timeout': RPC_TIMEOUT,
                      'reconcile_after': RECONCILE_AFTER,
                      'reconcile_interval': RECONCILE_INTERVAL},
    'node_options': {
        'ma': {'target_protocol': 'iscsi',
               'target_ip_address': ISCSI_ADDRESS,
               'target_port': ISCSI_PORT,
               'target_control_port': CONTROL,
               'target_drain_timeout': DRAIN_S},
        'noma': {'target_protocol': 'nbd',
                 'target_ip_address': '127.0.0.1',
                 'target_port_range': util.free_range(20),
                 'target_drain_timeout': DRAIN_S}},
}


@pytest.fixture(autouse=True)
def _data_path_programs():
    util.need('tgtd', 'tgtadm', 'nbdkit')


def _host(cluster, name, ip):
    transport = client.RestTransport(cluster.url + '/v3',
                                     cluster_mod.PROJECT)
    return client.AttachClient(transport, host_connector.get_connector(
        host=name, ip=ip))


def _volume(api, backend, multiattach=False):
    specs = {'volume_backend_name': backend}
    if multiattach:
        specs['multiattach'] = '<is> True'
    vtype = api.create_type(specs=specs)
    return api.create_volume(volume_type=vtype['name'])


def _tgtd():
    pids = util.processes('tgtd', 'portal=%s:%d' % (ISCSI_ADDRESS,
                                                    ISCSI_PORT))
    assert len(pids) == 1, pids
    return pids[0]


def _targets_of(volume_id):
    return [iqn for iqn in dp.tgt_targets(CONTROL) if volume_id in iqn]


@pytest.fixture
def frozen():
    """freeze(pid): SIGSTOP now, SIGCONT at the latest at teardown;
    returns thaw()."""
    stopped = []

    def thaw():
        while stopped:
            pid, started = stopped.pop()
            # (the kill of a cut-off may have ended it; the pid is not
            # someone else's)
            fields = util.stat_fields(pid)
            if fields is not None and fields[19] == started:
                os.kill(pid, signal.SIGCONT)

    def freeze(pid):
        os.kill(pid, signal.SIGSTOP)
        stopped.append((pid, util.stat_fields(pid)[19]))
        return thaw
    yield freeze
    thaw()


def _timed(call, *args, **kwargs):
    begin = time.monotonic()
    resp = call(*args, **kwargs)
    took = time.monotonic() - begin
    # (shown with -s: the figures of doc/source/reliability.rst)
    print('%s %s -> %d in %.2f s: %s' % (call.__name__.upper(), args[0],
                                         resp.status_code, took,
                                         resp.text[:300]))
    return resp, took


def _exports_match(cluster, node):
    report = cluster.command('cinder_lite.cmd.manage', 'volume',
                             'show-exports',
                             extra_conf=[cluster.node_conf(node)])
    assert report.returncode == 0, report.stdout + report.stderr
    return report.stdout


def _settled(api):
    """Nothing of the project in a transitional state."""
    left = [('volume', v['id'], v['status'])
            for v in api.get('/volumes/detail').json()['volumes']
            if v['status'] in TRANSITIONAL]
    left += [('attachment', a['id'], a['status'])
             for a in api.get('/attachments/detail').json()['attachments']
             if a['status'] in TRANSITIONAL]
    return left


def test_detach_with_tgtd_frozen(cluster, api, frozen):
    vol = _volume(api, 'ma')
    host = _host(cluster, 'slow-a', '127.0.2.1')
    att, dev = host.attach_device(vol['id'], str(uuid.uuid4()))
    assert _targets_of(vol['id'])
    thaw = frozen(_tgtd())
    resp, took = _timed(api.delete, '/attachments/%s' % att['id'])
    assert resp.status_code == 503, resp.text
    assert 'cannot be confirmed' in resp.text, resp.text
    assert took < DRAIN_S + SLACK_S, took
    # not reported detached: the host may still reach the target
    shown = api.get('/attachments/%s' % att['id']).json()['attachment']
    assert shown['status'] == 'error_detaching', shown
    thaw()
    thawed = time.monotonic()
    dev.close()
    # nobody asks again: reconciliation retries the disconnect
    util.wait_for(
        lambda: api.get('/attachments/%s' % att['id']).status_code == 404
        or None, timeout=RECONCILE_AFTER + 30,
        what='attachment %s detached by reconciliation' % att['id'])
    print('detached by reconciliation %.1f s after SIGCONT'
          % (time.monotonic() - thawed))
    api.wait_volume(vol['id'], 'available')
    assert _targets_of(vol['id']) == []
    _exports_match(cluster, 'ma')
    assert _settled(api) == []
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


def test_fence_with_tgtd_frozen(cluster, api, frozen):
    vol = _volume(api, 'ma', multiattach=True)
    host = _host(cluster, 'slow-b', '127.0.2.2')
    att, dev = host.attach_device(vol['id'], str(uuid.uuid4()))
    fence = '/os-host-fences/slow-b/action'
    thaw = frozen(_tgtd())
    resp, took = _timed(api.post, fence, json={'os-fence': {
        'volume_id': vol['id'], 'reason': 'tgtd frozen'}})
    assert resp.status_code == 503, resp.text
    assert 'cannot be confirmed' in resp.text, resp.text
    assert took < DRAIN_S + SLACK_S, took
    # the mark is written (nothing exports to the host again) but the
    # cut is not reported: the targets cannot say the host is cut
    # (within the drain timeout too, naming why it cannot tell)
    report, took = _timed(api.get, '/os-host-fences/slow-b?volume_id=%s'
                          % vol['id'])
    assert report.status_code == 200, report.text
    assert took < DRAIN_S + SLACK_S, took
    shown = report.json()['host_fence']
    assert shown['fenced'] is True and shown['reachable'] is None, shown
    [entry] = shown['volumes']
    assert entry['reachable'] is None, entry
    assert any('does not answer' in e for e in entry['errors']), entry
    refused = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'connector': host.connector}})
    assert refused.status_code == 409 and 'is fenced' in refused.text
    thaw()
    # asked again once tgtd answers: cut and drained, and said so
    resp = api.post(fence, json={'os-fence': {'volume_id': vol['id']}})
    assert resp.status_code == 200, resp.text
    report = api.get('/os-host-fences/slow-b?volume_id=%s' % vol['id'])
    assert report.status_code == 200, report.text
    shown = report.json()['host_fence']
    assert shown['reachable'] is False, shown
    assert [e['reachable'] for e in shown['volumes']] == [False], shown
    dev.close()
    # the host's attachment stays attached (cut, not detached); the
    # exports the node holds are what the database says
    assert api.get('/attachments/%s' % att['id']).json()['attachment'][
        'status'] == 'attached'
    _exports_match(cluster, 'ma')
    assert api.post(fence, json={'os-unfence': {
        'volume_id': vol['id']}}).status_code == 200
    assert api.delete('/attachments/%s' % att['id']).status_code == 200
    assert _targets_of(vol['id']) == []
    assert _settled(api) == []
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


def _nbdkit_of(cluster, attachment_id):
    return util.processes('nbdkit', attachment_id)


def test_detach_and_fence_with_nbdkit_frozen(cluster, api, frozen):
    vol = _volume(api, 'noma')
    host = _host(cluster, 'slow-c', '127.0.2.3')
    att = host.attach(vol['id'], str(uuid.uuid4()))
    [pid] = _nbdkit_of(cluster, att['id'])
    frozen(pid)
    resp, took = _timed(api.post, '/os-host-fences/slow-c/action',
                        json={'os-fence': {'volume_id': vol['id']}})
    assert resp.status_code == 200, resp.text
    assert took < DRAIN_S + SLACK_S, took
    assert _nbdkit_of(cluster, att['id']) == []
    assert api.post('/os-host-fences/slow-c/action', json={'os-unfence': {
        'volume_id': vol['id']}}).status_code == 200
    [pid] = _nbdkit_of(cluster, att['id'])
    frozen(pid)
    resp, took = _timed(api.delete, '/attachments/%s' % att['id'])
    assert resp.status_code == 200, resp.text
    assert took < DRAIN_S + SLACK_S, took
    assert _nbdkit_of(cluster, att['id']) == []
    _exports_match(cluster, 'noma')
    assert _settled(api) == []
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])
