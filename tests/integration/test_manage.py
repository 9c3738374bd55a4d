"""cinder-lite-manage and cinder-lite-status against a distributed cluster
(separate API, scheduler and volume processes on RabbitMQ and MariaDB).

Node ``ma`` exports over NBD here, so ``volume show-exports`` reads the
records a real volume process wrote.  The test that stops ``noma`` starts
it again before it returns.
"""
import json
import os
import shutil
import socket
import uuid

import pytest

from cinder_lite.connector import host as host_connector
from cinder_lite.db import migration
from tests.harness import cluster as cluster_mod
from tests.harness import util

CLUSTER_KINDS = ['mysql']


CLUSTER_OPTIONS = {'extra_sections': {'ma': {
    'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1',
    'target_port_range': util.free_range(20)}}}

VOLUME_BINARY = 'cinder-volume'
MA = 'node-ma@ma'
NOMA = 'node-noma@noma'


def run(cluster, module, *args, node=None):
    extra = [cluster.node_conf(node)] if node else []
    return cluster.command(module, *args, extra_conf=extra)


def manage(cluster, *args, node=None):
    return run(cluster, 'cinder_lite.cmd.manage', *args, node=node)


def service_states(cluster):
    proc = cluster.manage('service', 'list')
    return {(cols[0], cols[1]): cols[4] for cols in
            (line.split() for line in proc.stdout.splitlines()[1:])}


def pinned_volume(api, backend, multiattach=False):
    specs = {'volume_backend_name': backend}
    if multiattach:
        specs['multiattach'] = '<is> True'
    vtype = api.create_type(specs=specs)
    return api.create_volume(volume_type=vtype['name'])


def attach(api, volume_id, name, ip, mode='rw'):
    conn = host_connector.get_connector(host=name, ip=ip)
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': volume_id, 'instance_uuid': str(uuid.uuid4()),
        'connector': conn, 'mode': mode}})
    assert resp.status_code == 200, resp.text
    att = resp.json()['attachment']
    resp = api.post('/attachments/%s/action' % att['id'],
                    json={'os-complete': None})
    assert resp.status_code == 204, resp.text
    return att


def wait_state(cluster, key, state):
    util.wait_for(lambda: service_states(cluster).get(key) == state,
                  timeout=cluster.service_down_time + 15, interval=0.3,
                  what='%s %s' % (key, state))


def test_service_remove_refuses_services_that_are_up(cluster):
    for binary, host in ((VOLUME_BINARY, MA),
                         ('cinder-scheduler', 'node-ctl')):
        proc = manage(cluster, 'service', 'remove', binary, host)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert 'Service %s on host %s is up' % (binary, host) in proc.stderr
        assert service_states(cluster)[(binary, host)] == 'up'


def test_service_remove_of_a_stopped_node(cluster, api):
    vol = pinned_volume(api, 'noma')
    assert vol['os-vol-host-attr:host'] == NOMA + '#noma'
    try:
        cluster.kill('noma')
        wait_state(cluster, (VOLUME_BINARY, NOMA), 'down')
        proc = manage(cluster, 'service', 'remove', VOLUME_BINARY, NOMA)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert 'still has 1 volume(s)' in proc.stderr
        assert (VOLUME_BINARY, NOMA) in service_states(cluster)

        # empty it (its service must run to delete the volume), stop it
        cluster.start_process('noma')
        cluster.wait_ready()
        assert api.delete('/volumes/%s' % vol['id']).status_code == 202
        api.wait_deleted(vol['id'])
        cluster.kill('noma')
        wait_state(cluster, (VOLUME_BINARY, NOMA), 'down')
        proc = manage(cluster, 'service', 'remove', VOLUME_BINARY, NOMA)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.strip() == \
            'Service cinder-volume on host %s removed.' % NOMA
        assert (VOLUME_BINARY, NOMA) not in service_states(cluster)
        pools = api.get('/scheduler-stats/get_pools').json()['pools']
        assert [p['name'] for p in pools] == [MA + '#ma']

        proc = manage(cluster, 'service', 'remove', VOLUME_BINARY, NOMA)
        assert proc.returncode == 2
        assert 'not found' in proc.stderr
    finally:
        # the node registers again when it starts
        if not cluster.processes['noma'].alive():
            cluster.start_process('noma')
        cluster.wait_ready()
    assert service_states(cluster)[(VOLUME_BINARY, NOMA)] == 'up'


def test_a_clean_stop_is_down_at_once_and_quiet(cluster, api):
    """SIGTERM to a volume process over RabbitMQ: it exits 0, is shown
    down at once (not after service_down_time), and its log has no amqp
    warnings about channels it closed while stopping."""
    try:
        assert cluster.processes['noma'].stop() == 0
        assert service_states(cluster)[(VOLUME_BINARY, NOMA)] == 'down'
        log = cluster.processes['noma'].read_log()
        assert 'stopped: recorded down' in log
        assert 'Received method' not in log, log[-2000:]
    finally:
        if not cluster.processes['noma'].alive():
            cluster.start_process('noma')
        cluster.wait_ready()
    assert service_states(cluster)[(VOLUME_BINARY, NOMA)] == 'up'


def need_nbdkit():
    if shutil.which('nbdkit') is None:
        if os.environ.get('CINDER_LITE_REQUIRE_SERVICES') == '1':
            pytest.fail('nbdkit not installed')
        pytest.skip('nbdkit not installed')


def test_attachments_and_exports_of_a_volume_node(cluster, api):
    need_nbdkit()
    vol = pinned_volume(api, 'ma', multiattach=True)
    rw = attach(api, vol['id'], 'host-a', '127.0.0.2')
    ro = attach(api, vol['id'], 'host-b', '127.0.0.3', 'ro')

    proc = manage(cluster, 'attachment', 'list', '--volume', vol['id'])
    assert proc.returncode == 0, proc.stderr
    listed = {cols[0]: cols[1:6] for cols in
              (line.split() for line in proc.stdout.splitlines()[1:])}
    assert listed == {
        rw['id']: [vol['id'], 'attached', 'rw', 'host-a', rw['instance']],
        ro['id']: [vol['id'], 'attached', 'ro', 'host-b', ro['instance']]}

    def exports():
        proc = manage(cluster, 'volume', 'show-exports', node='ma')
        table = {cols[1]: cols for cols in
                 (line.split(None, 8)
                  for line in proc.stdout.splitlines()[1:-1])}
        return proc.returncode, table

    code, table = exports()
    assert code == 0, table
    assert set(table) == {rw['id'], ro['id']}
    for att, mode in ((rw, 'rw'), (ro, 'ro')):
        row = table[att['id']]
        assert row[0] == MA and row[2:5] == [vol['id'], 'nbd', mode]
        assert row[5] == '127.0.0.1:%d' % att['connection_info']['port']
        assert row[7:] == ['attached', '-']

    # the record of one export under a name no attachment has: that
    # export is unknown to the database and the attachment lacks one
    records = os.path.join(cluster.workdir, 'state', 'targets', 'ma', 'nbd')
    stray = str(uuid.uuid4())
    os.rename(os.path.join(records, '%s.json' % rw['id']),
              os.path.join(records, '%s.json' % stray))
    try:
        code, table = exports()
    finally:
        os.rename(os.path.join(records, '%s.json' % stray),
                  os.path.join(records, '%s.json' % rw['id']))
    assert code == 1
    assert table[stray][8] == 'unknown to the database'
    assert table[rw['id']][5:] == ['-', '-', 'attached', 'export missing']
    assert table[ro['id']][8] == '-'

    for att in (rw, ro):
        assert api.delete('/attachments/%s' % att['id']).status_code == 200
    code, table = exports()
    assert (code, table) == (0, {})
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])


def test_upgrade_check(cluster):
    need_nbdkit()
    proc = run(cluster, 'cinder_lite.cmd.status', 'upgrade', 'check',
               '--json', node='ma')
    checks = {c['check']: c for c in json.loads(proc.stdout)['checks']}
    assert proc.returncode == 0, checks
    assert checks['Database schema']['details'] == \
        'Schema at revision %s, the newest.' % migration.head_revision()
    assert '(ma: nbd)' in checks['Volume targets']['details']


def test_upgrade_check_of_a_database_behind(cluster):
    name = 'cl_it_status_%s' % uuid.uuid4().hex[:8]
    url = cluster_mod.create_database('mysql', name)
    try:
        conf = cluster_mod.write_conf(
            os.path.join(cluster.workdir, 'behind.conf'),
            {'database': {'connection': url}})
        proc = cluster.command('cinder_lite.cmd.manage', 'db', 'sync',
                               '0001', extra_conf=[conf])
        assert proc.returncode == 0, proc.stderr
        proc = cluster.command('cinder_lite.cmd.status', 'upgrade',
                               'check', extra_conf=[conf])
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert 'revision 0001, the newest is %s' % (
            migration.head_revision()) in proc.stdout
    finally:
        cluster_mod.drop_database('mysql', name)


def test_attachment_reconcile_resolves_an_interrupted_detach(cluster, api):
    """An attachment left ``detaching`` (the API recorded the detach, the
    volume service never ran it): ``attachment reconcile`` has the volume
    service roll it forward and prints the change."""
    import sqlalchemy as sa

    from cinder_lite.db import models
    from cinder_lite.common import states

    vol = pinned_volume(api, 'ma')
    att = attach(api, vol['id'], 'host-r', '127.0.0.2')
    engine = sa.create_engine(cluster.db_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.update(models.VolumeAttachment).where(
                models.VolumeAttachment.id == att['id']).values(
                attach_status='detaching',
                operation=states.DISCONNECTING))
            conn.execute(sa.update(models.Volume).where(
                models.Volume.id == vol['id']).values(status='detaching'))
    finally:
        engine.dispose()
    proc = manage(cluster, 'attachment', 'reconcile', '--host', MA,
                  '--older-than', '0')
    assert proc.returncode == 0, proc.stderr
    assert 'attachment %s: detaching -> detached' % att['id'] in proc.stdout
    assert api.get('/attachments/%s' % att['id']).status_code == 404
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'available'
    again = manage(cluster, 'attachment', 'reconcile', '--host', MA,
                   '--older-than', '0')
    assert again.returncode == 0 and 'nothing to change' in again.stdout
    assert manage(cluster, 'attachment', 'reconcile', '--host',
                  'node-x@none').returncode == 2


def test_attachment_reconcile_completes_a_connection_never_completed(
        cluster, api):
    """An attachment connected (the host got its connection info) but
    never completed: reconcile rolls it forward to ``attached`` with its
    export kept, a late complete is still accepted, and the owner detaches
    it as usual."""
    vol = pinned_volume(api, 'ma')
    conn = host_connector.get_connector(host='host-late', ip='127.0.0.2')
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4()),
        'connector': conn}})
    assert resp.status_code == 200, resp.text
    att = resp.json()['attachment']
    assert att['status'] == 'attaching' and att['connection_info']
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'attaching'
    info = att['connection_info']
    proc = manage(cluster, 'attachment', 'reconcile', '--host', MA,
                  '--older-than', '0')
    assert proc.returncode == 0, proc.stderr
    assert 'attachment %s: attaching -> attached' % att['id'] in proc.stdout
    assert api.get('/attachments/%s' % att['id']).json()['attachment'][
        'status'] == 'attached'
    assert api.get('/volumes/%s' % vol['id']).json()['volume'][
        'status'] == 'in-use'
    # the export the host holds stays up
    socket.create_connection((info['host'], info['port']), timeout=2).close()
    events = api.get('/os-attachment-events?attachment_id=%s'
                     % att['id']).json()['attachment_events']
    assert any('completed by reconcile' in (e['reason'] or '')
               for e in events), events
    assert api.post('/attachments/%s/action' % att['id'],
                    json={'os-complete': None}).status_code == 204
    assert api.delete('/attachments/%s' % att['id']).status_code == 200
    api.wait_volume(vol['id'], 'available')
    assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    api.wait_deleted(vol['id'])
