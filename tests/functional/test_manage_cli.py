"""cinder-lite-manage and cinder-lite-status as an operator runs them: a
separate process reading the config file of a running in-process stack
(its SQLite database, its state directory).  The processes fork from
tests/harness/forkrun.py's server, which imported cinder_lite once; the
commands that need an environment of their own start a real
interpreter."""
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

from cinder_lite.db import migration
from tests.harness.attach import attach
from tests.harness.attach import connector
from tests.harness import forkrun
from tests.harness import stack as stack_mod
from tests.harness import util

VOLUME_BINARY = 'cinder-volume'
SCHEDULER_BINARY = 'cinder-scheduler'
REQUIRE_ENV = 'CINDER_LITE_REQUIRE_SERVICES'


def run(module, config_files, *args):
    argv = []
    for path in config_files:
        argv += ['--config-file', str(path)]
    return forkrun.run(module, argv + list(args), timeout=60)


def manage(s, *args):
    return run('cinder_lite.cmd.manage',
               [os.path.join(s.state_path, 'cinder-lite.conf')], *args)


def rows(proc):
    """The rows under the header of a table whose cells hold no spaces."""
    return [line.split() for line in proc.stdout.splitlines()[1:]]


def services(api):
    return {(s['binary'], s['host']): s['state']
            for s in api.get('/os-services').json()['services']}


def shared_volume(api):
    shared = api.create_type(specs={'multiattach': '<is> True'})
    return api.create_volume(volume_type=shared['name'])


# -- attachment list ---------------------------------------------------------
def test_attachment_list(stack, api):
    vol = api.create_volume()
    other = api.create_volume()
    reserved = attach(api, vol['id'])
    connected = attach(api, other['id'], connector('host-a'))

    proc = manage(stack, 'attachment', 'list')
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[0].split('  ')
    assert [h.strip() for h in header if h.strip()] == [
        'ID', 'Volume ID', 'Status', 'Mode', 'Attached Host', 'Instance',
        'Attach Time']
    table = {r[0]: r for r in rows(proc)}
    assert set(table) == {reserved['id'], connected['id']}
    assert table[reserved['id']][1:4] == [vol['id'], 'reserved', 'rw']
    assert table[reserved['id']][4] == '-'          # no host yet
    assert table[connected['id']][1:5] == [other['id'], 'attached', 'rw',
                                           'host-a']
    assert table[connected['id']][5] == connected['instance']
    assert table[connected['id']][6].startswith('20')   # ISO time

    proc = manage(stack, 'attachment', 'list', '--volume', vol['id'])
    assert proc.returncode == 0, proc.stderr
    assert [r[0] for r in rows(proc)] == [reserved['id']]

    # a detached attachment is no longer listed
    assert api.delete('/attachments/%s' % reserved['id']).status_code == 200
    proc = manage(stack, 'attachment', 'list')
    assert [r[0] for r in rows(proc)] == [connected['id']]


def test_attachment_list_of_unknown_volume(stack):
    missing = str(uuid.uuid4())
    proc = manage(stack, 'attachment', 'list', '--volume', missing)
    assert proc.returncode == 2
    assert 'Volume %s not found' % missing in proc.stderr


# -- service remove ----------------------------------------------------------
def test_service_remove_refusals_and_removal(tmp_path):
    s = stack_mod.Stack(tmp_path / 'st', backends={'file': {},
                                                   'spare': {}}).start()
    try:
        api = s.client()
        pinned = api.create_type(specs={'volume_backend_name': 'file'})
        vol = api.create_volume(volume_type=pinned['name'])
        assert vol['os-vol-host-attr:host'] == 'testnode@file#file'

        # up: refused, whatever the binary
        for binary, host in ((VOLUME_BINARY, 'testnode@spare'),
                             (SCHEDULER_BINARY, 'testnode')):
            proc = manage(s, 'service', 'remove', binary, host)
            assert proc.returncode == 1, proc.stdout
            assert 'is up' in proc.stderr and 'not removed' in proc.stderr
            assert services(api)[(binary, host)] == 'up'

        # down but a volume still lives there: refused, with the count
        s.stop_backend('file')
        proc = manage(s, 'service', 'remove', VOLUME_BINARY,
                      'testnode@file')
        assert proc.returncode == 1, proc.stdout
        assert 'still has 1 volume(s)' in proc.stderr
        assert vol['id'] in proc.stderr
        assert (VOLUME_BINARY, 'testnode@file') in services(api)

        # down and empty: removed
        s.stop_backend('spare')
        proc = manage(s, 'service', 'remove', VOLUME_BINARY,
                      'testnode@spare')
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == \
            'Service cinder-volume on host testnode@spare removed.'
        assert (VOLUME_BINARY, 'testnode@spare') not in services(api)
        listed = manage(s, 'service', 'list').stdout
        assert 'testnode@spare' not in listed
        assert 'testnode@file' in listed

        # gone: not found
        proc = manage(s, 'service', 'remove', VOLUME_BINARY,
                      'testnode@spare')
        assert proc.returncode == 2
        assert 'not found' in proc.stderr
    finally:
        s.stop()


# -- volume show-exports -----------------------------------------------------
def _target(s, section='file'):
    return s.volume_service(section).endpoints[0].driver.target


def _volume_path(s, volume_id):
    return os.path.join(s.state_path, 'volumes', 'file',
                        'volume-%s' % volume_id)


def _exports_table(proc):
    table = {}
    for line in proc.stdout.splitlines()[1:-1]:
        cols = line.split(None, 8)
        table[cols[1]] = cols
    return table


@pytest.fixture
def nbd_stack(tmp_path):
    util.need('nbdkit')
    s = stack_mod.Stack(tmp_path / 'st', backends={'file': {
        'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1',
        'target_port_range': util.free_range(20)}}).start()
    yield s
    target = _target(s)
    for attachment_id in target.exports():
        target.remove_export(attachment_id)
    s.stop()


def test_show_exports_nbd(nbd_stack):
    s = nbd_stack
    api = s.client()
    vol = shared_volume(api)
    rw = attach(api, vol['id'], connector('host-a', '127.0.0.2'))
    ro = attach(api, vol['id'], connector('host-b', '127.0.0.3'), 'ro')
    target = _target(s)
    ports = {a: r['port'] for a, r in target.exports().items()}
    assert set(ports) == {rw['id'], ro['id']}

    proc = manage(s, 'volume', 'show-exports')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = _exports_table(proc)
    assert table[rw['id']] == [
        'testnode@file', rw['id'], vol['id'], 'nbd', 'rw',
        '127.0.0.1:%d' % ports[rw['id']], '-', 'attached', '-']
    assert table[ro['id']][3:] == [
        'nbd', 'ro', '127.0.0.1:%d' % ports[ro['id']], '-', 'attached',
        '-']
    assert proc.stdout.splitlines()[-1] == \
        'testnode@file: 2 export(s), 0 missing, 0 row(s) with problems.'

    # An export nobody asked for, and a connected attachment whose
    # nbdkit died with its record.
    stray = str(uuid.uuid4())
    target.create_export(_volume_path(s, vol['id']), vol['id'], stray, 'rw',
                         None)
    target.remove_export(ro['id'])
    try:
        proc = manage(s, 'volume', 'show-exports')
        assert proc.returncode == 1, proc.stdout + proc.stderr
        table = _exports_table(proc)
        assert table[stray][7:] == ['-', 'unknown to the database']
        assert table[ro['id']][3:] == ['nbd', 'ro', '-', '-', 'attached',
                                       'export missing']
        assert table[rw['id']][8] == '-'
        assert proc.stdout.splitlines()[-1] == \
            'testnode@file: 2 export(s), 1 missing, 2 row(s) with problems.'

        # --host names the volume service, or another node (which has
        # nothing on this database)
        proc = manage(s, 'volume', 'show-exports', '--host',
                      'testnode@file')
        assert set(_exports_table(proc)) == {rw['id'], ro['id'], stray}
        proc = manage(s, 'volume', 'show-exports', '--host', 'othernode')
        table = _exports_table(proc)
        assert table[rw['id']][0] == 'othernode@file'
        assert table[rw['id']][8] == \
            'the database does not expect it here (attachment attached)'
    finally:
        target.remove_export(stray)

    # a record whose nbdkit is gone, and whose mode was changed
    path = os.path.join(target.state_dir, '%s.json' % rw['id'])
    with open(path) as f:
        record = json.load(f)
    saved = dict(record)
    record.update(pid=os.getpid(), mode='ro')
    with open(path, 'w') as f:
        json.dump(record, f)
    try:
        proc = manage(s, 'volume', 'show-exports')
        problem = _exports_table(proc)[rw['id']][8]
        assert problem == 'nbdkit (pid %d) not running; database says ' \
                          'mode rw' % os.getpid()
    finally:
        with open(path, 'w') as f:
            json.dump(saved, f)


def test_show_exports_iscsi(tmp_path):
    util.need('tgtd', 'tgtadm')
    port = util.free_port()
    s = stack_mod.Stack(tmp_path / 'st', backends={'file': {
        'target_protocol': 'iscsi', 'target_ip_address': '127.0.0.1',
        'target_port': port, 'target_control_port': port % 32768}}).start()
    try:
        api = s.client()
        vol = shared_volume(api)
        conn_a = connector('host-a', '127.0.0.2')
        conn_b = connector('host-b', '127.0.0.3')
        rw = attach(api, vol['id'], conn_a)
        ro = attach(api, vol['id'], conn_b, 'ro')
        proc = manage(s, 'volume', 'show-exports')
        assert proc.returncode == 0, proc.stdout + proc.stderr
        table = _exports_table(proc)
        prefix = 'iqn.2026-11.org.cinder-lite:volume-%s' % vol['id']
        assert table[rw['id']][2:] == [
            vol['id'], 'iscsi', 'rw', prefix, conn_a['initiator'],
            'attached', '-']
        assert table[ro['id']][2:] == [
            vol['id'], 'iscsi', 'ro', prefix + '-ro', conn_b['initiator'],
            'attached', '-']
        for att in (rw, ro):
            assert api.delete('/attachments/%s' % att['id']).status_code \
                == 200
        proc = manage(s, 'volume', 'show-exports')
        assert proc.returncode == 0
        assert _exports_table(proc) == {}
    finally:
        target = _target(s)
        for attachment_id in target.exports():
            target.remove_export(attachment_id)
        s.stop()


# -- cinder-lite-status upgrade check ----------------------------------------
@pytest.fixture
def status_conf(tmp_path):
    """A config whose SQLite database is at the newest schema; returns a
    function running the check with an extra config file."""
    base = tmp_path / 'base.conf'
    base.write_text('[DEFAULT]\nstate_path = %s\nenabled_backends = file\n'
                    % tmp_path)
    proc = run('cinder_lite.cmd.manage', [base], 'db', 'sync')
    assert proc.returncode == 0, proc.stderr

    def check(extra=''):
        overlay = tmp_path / ('overlay-%s.conf' % uuid.uuid4().hex)
        overlay.write_text(extra)
        proc = run('cinder_lite.cmd.status', [base, overlay], 'upgrade',
                   'check', '--json')
        assert proc.returncode in (0, 1, 2), proc.stdout + proc.stderr
        results = {c['check']: c for c in json.loads(proc.stdout)['checks']}
        return proc.returncode, results
    check.base = base
    return check


def test_upgrade_check_passes(status_conf):
    code, results = status_conf()
    assert code == 0, results
    assert results['Database schema']['details'] == \
        'Schema at revision %s, the newest.' % migration.head_revision()
    assert {c['result'] for c in results.values()} == {0}


def test_upgrade_check_schema(tmp_path):
    # a distributed node's config: the embedded mode migrates by itself
    conf = tmp_path / 'c.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\nenabled_backends = file\n'
                    'transport_url = %s\n' % (tmp_path, DISTRIBUTED_BUS))
    proc = run('cinder_lite.cmd.status', [conf], 'upgrade', 'check',
               '--json')
    assert proc.returncode == 2
    # (from the JSON: the table wraps long paths across its lines)
    (schema,) = [c for c in json.loads(proc.stdout)['checks']
                 if c['check'] == 'Database schema']
    assert 'does not exist' in schema['details']
    # the check did not create the file
    assert not (tmp_path / 'cinder-lite.sqlite').exists()

    assert run('cinder_lite.cmd.manage', [conf], 'db', 'sync', '0001') \
        .returncode == 0
    proc = run('cinder_lite.cmd.status', [conf], 'upgrade', 'check',
               '--json')
    assert proc.returncode == 2
    (schema,) = [c for c in json.loads(proc.stdout)['checks']
                 if c['check'] == 'Database schema']
    assert schema['result'] == 2
    assert 'revision 0001, the newest is %s' % (
        migration.head_revision()) in schema['details']

    assert run('cinder_lite.cmd.manage', [conf], 'db', 'sync').returncode \
        == 0
    proc = run('cinder_lite.cmd.status', [conf], 'upgrade', 'check')
    assert proc.returncode == 0, proc.stdout


DISTRIBUTED_BUS = 'rabbit://guest:guest@127.0.0.1:5672/'


def test_upgrade_check_of_the_embedded_mode_passes(tmp_path):
    """Issue 25, item 11: the config of cinder-lite-all (no bus, SQLite,
    no enabled_backends) before its first start: nothing to warn of, as
    it migrates its database and runs its one file backend itself."""
    conf = tmp_path / 'c.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\n' % tmp_path)
    proc = run('cinder_lite.cmd.status', [conf], 'upgrade', 'check',
               '--json')
    assert proc.returncode == 0, proc.stdout
    results = {c['check']: c for c in json.loads(proc.stdout)['checks']}
    assert 'cinder-lite-all makes it at its start' in \
        results['Database schema']['details']
    assert 'embedded mode' in results['Volume backends']['details']
    assert not (tmp_path / 'cinder-lite.sqlite').exists()


KEYSTONE_PLUGIN = ('auth_type = password\nauth_url = http://127.0.0.1:9/v3\n'
                   'username = cinder\npassword = secret\n'
                   'user_domain_name = Default\nproject_name = service\n'
                   'project_domain_name = Default\n')


def test_upgrade_check_keystone(status_conf):
    keystone = '[DEFAULT]\nauth_strategy = keystone\n[keystone_authtoken]\n'
    code, results = status_conf(keystone)
    assert code == 2
    details = results['Keystone auth_token']['details']
    assert 'www_authenticate_uri is not set' in details
    assert 'No auth plugin' in details

    code, results = status_conf(
        keystone + 'www_authenticate_uri = http://127.0.0.1:9/v3\n'
        'auth_type = password\n')
    assert code == 2
    details = results['Keystone auth_token']['details']
    assert 'www_authenticate_uri' not in details
    assert 'auth_type = password needs auth_url' in details

    code, results = status_conf(
        keystone + 'www_authenticate_uri = http://127.0.0.1:9/v3\n'
        'auth_type = no-such-plugin\n')
    assert code == 2
    assert 'not an auth plugin' in results['Keystone auth_token']['details']

    # the old option name only: a warning
    code, results = status_conf(
        keystone + 'auth_uri = http://127.0.0.1:9/v3\n' + KEYSTONE_PLUGIN)
    assert code == 1, results
    assert results['Keystone auth_token']['result'] == 1
    assert 'auth_uri' in results['Keystone auth_token']['details']

    code, results = status_conf(
        keystone + 'www_authenticate_uri = http://127.0.0.1:9/v3\n'
        + KEYSTONE_PLUGIN)
    assert code == 0, results


def test_upgrade_check_targets(status_conf):
    code, results = status_conf(
        '[DEFAULT]\nenabled_backends = a,b,c\n'
        '[a]\ntarget_protocol = nbd\ntarget_port_range = 20-10\n'
        '[b]\ntarget_protocol = iscsi\ntarget_port = 40000\n'
        '[c]\ntarget_protocol = iscsi\ntarget_port = 40000\n'
        'target_control_port = 7000\n')
    assert code == 2
    details = results['Volume targets']['details']
    assert "[a] target_port_range '20-10' is out of bounds." in details
    assert '[b] target_port = 40000 is above 32767' in details
    assert '[c]' not in details

    code, results = status_conf(
        '[DEFAULT]\nenabled_backends = a,c\n'
        '[a]\ntarget_protocol = nbd\n'
        '[c]\ntarget_protocol = iscsi\ntarget_control_port = 7000\n')
    expected = 0 if shutil.which('nbdkit') and shutil.which('tgtd') else 2
    assert code == expected, results


def test_upgrade_check_timeouts(status_conf):
    """The orders of timeouts the services rely on, warned about (1)
    when broken, per backend for the drain."""
    code, results = status_conf()
    assert results['Timeouts']['result'] == 0, results
    code, results = status_conf(
        '[DEFAULT]\nenabled_backends = a,b\nreport_interval = 10\n'
        'service_down_time = 15\nvolume_rpc_timeout = 30\n'
        'reconcile_after = 40\n'
        '[a]\ntarget_drain_timeout = 30\n[b]\ntarget_drain_timeout = 5\n')
    assert code == 1, results
    details = results['Timeouts']['details']
    assert 'service_down_time = 15 is under two report_interval (10)' in \
        details
    assert 'reconcile_after = 40 is not above volume_rpc_timeout plus ' \
        '10 s (40 s' in details
    assert '[a] target_drain_timeout = 30 is not below volume_rpc_timeout ' \
        '(30)' in details
    assert '[b]' not in details
    # just above the longest call: no warning
    code, results = status_conf('[DEFAULT]\nvolume_rpc_timeout = 30\n'
                                'reconcile_after = 41\n')
    assert results['Timeouts']['result'] == 0, results


def test_upgrade_check_missing_programs(status_conf):
    """With a PATH that has no nbdkit, the nbd backend fails the check."""
    overlay = status_conf.base.parent / 'nbd.conf'
    overlay.write_text('[DEFAULT]\nenabled_backends = a\n'
                       '[a]\ntarget_protocol = nbd\n')
    env = dict(os.environ, PATH=os.path.dirname(sys.executable))
    proc = subprocess.run(
        [sys.executable, '-m', 'cinder_lite.cmd.status', '--config-file',
         str(status_conf.base), '--config-file', str(overlay), 'upgrade',
         'check', '--json'], capture_output=True, text=True, timeout=60,
        env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (targets,) = [c for c in json.loads(proc.stdout)['checks']
                  if c['check'] == 'Volume targets']
    assert 'needs nbdkit, which is not on PATH' in targets['details']


def test_a_volume_service_needs_its_backends_named(tmp_path, status_conf):
    """Without enabled_backends a separate volume service refuses to
    start, naming the option (the implicit file backend is the embedded
    mode's), and the upgrade check warns."""
    conf = tmp_path / 'no-backends.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\ntransport_url = %s\n'
                    % (tmp_path, DISTRIBUTED_BUS))
    # (a real interpreter: the functional tier's one start of this script)
    proc = subprocess.run([sys.executable, '-m', 'cinder_lite.cmd.volume',
                           '--config-file', str(conf)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert 'enabled_backends is not set' in proc.stderr
    proc = run('cinder_lite.cmd.status', [conf], 'upgrade', 'check',
               '--json')
    (check,) = [c for c in json.loads(proc.stdout)['checks']
                if c['check'] == 'Volume backends']
    assert check['result'] == 1
    assert 'cinder-lite-volume refuses to start' in check['details']
    code, results = status_conf()
    assert results['Volume backends']['result'] == 0


def test_small_things_an_operator_reads(stack):
    """Issue 15, item 9: show-exports says why a local backend has no
    exports; backend list is a table (JSON on asking); an event of an
    attachment whose mode is not decided yet shows the default."""
    api = stack.client()
    vol = api.create_volume()
    attach(api, vol['id'], {'host': 'host-a', 'ip': '127.0.0.2'})
    proc = manage(stack, 'volume', 'show-exports')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # no empty table before the summary (issue 25, item 11)
    assert proc.stdout.splitlines() == [
        'testnode@file: 0 export(s), 0 missing, 0 row(s) with problems.',
        'testnode@file: 1 live attachment(s) through the local target, '
        'which needs no export.']

    # the backend's report after the volume was made (a heartbeat; an
    # interpreter start used to take longer than report_interval)
    stack.volume_service('file').beat()
    proc = manage(stack, 'backend', 'list')
    assert proc.returncode == 0, proc.stderr
    header, row = proc.stdout.splitlines()[:2]
    assert header.split() == ['Backend', 'State', 'Protocol', 'Multiattach',
                              'Total', 'GiB', 'Free', 'GiB', 'Provisioned',
                              'GiB', 'Cluster']
    assert row.split()[:4] == ['testnode@file', 'up', 'file', 'True']
    assert row.split()[6] == '1.0'
    proc = manage(stack, 'backend', 'list', '--format', 'json')
    (only,) = json.loads(proc.stdout)
    assert only['backend'] == 'testnode@file'
    assert only['capabilities']['multiattach'] is True

    proc = manage(stack, 'quota', 'check')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        'Recorded quota usage of every project equals what the volumes '
        'say.']

    reserved = attach(api, api.create_volume()['id'])
    proc = manage(stack, 'attachment', 'events', '--attachment',
                  reserved['id'])
    (event,) = rows(proc)
    assert event[4:6] == ['reserved', 'rw']


def test_a_database_without_schema_names_the_fix(tmp_path):
    """Issue 25, item 6: a forgotten --config-file (the default SQLite file
    that does not exist) or a database never migrated: one message naming
    db sync, exit 1, and nothing created."""
    env = dict(os.environ, HOME=str(tmp_path))
    run = subprocess.run([sys.executable, '-m', 'cinder_lite.cmd.manage',
                          'service', 'list'], capture_output=True,
                         text=True, timeout=60, env=env, cwd=str(tmp_path))
    assert run.returncode == 1
    assert run.stdout == ''
    (line,) = run.stderr.splitlines()
    default = tmp_path / '.local' / 'state' / 'cinder-lite' / \
        'cinder-lite.sqlite'
    assert line.startswith('The database at sqlite:///%s does not exist: '
                           'run "cinder-lite-manage db sync"' % default)
    assert not (tmp_path / '.local').exists()

    empty = tmp_path / 'empty.sqlite'
    conf = tmp_path / 'c.conf'
    conf.write_text('[database]\nconnection = sqlite:///%s\n' % empty)
    import sqlite3
    sqlite3.connect(empty).close()
    for args in (('service', 'list'), ('quota', 'check'), ('db', 'version')):
        proc = run_manage(conf, *args)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert 'has no schema: run "cinder-lite-manage db sync"' in \
            proc.stderr, proc.stderr
        assert 'Traceback' not in proc.stderr
    proc = run_manage(conf, 'db', 'sync')
    assert proc.returncode == 0, proc.stderr
    assert run_manage(conf, 'service', 'list').returncode == 0


def run_manage(conf, *args):
    return run('cinder_lite.cmd.manage', [conf], *args)


def test_reconcile_in_the_embedded_mode_says_so_at_once(stack):
    """Issue 25, item 8: the embedded bus cannot be reached from another
    process; reconcile says so instead of waiting for an RPC timeout."""
    proc = manage(stack, 'attachment', 'reconcile')
    assert proc.returncode == 1
    assert 'restart cinder-lite-all to reconcile now' in proc.stderr
    assert proc.stdout == ''
