"""``fence_cinder_lite`` driven as pacemaker-fenced drives it: options on
stdin, the answer in the exit code (status: 0 on, 2 off, 1 error),
against a real cinder_lite exporting over NBD and iSCSI, and on Ceph RBD.  Two hosts write
a shared volume; ``off`` for host a returns only once a is cut and
drained (nothing of a is acknowledged after it; its next write is
refused; b goes on); a restart of the volume service and of tgtd leaves a
off; ``on`` lets it write again; ``status`` and ``list`` agree
throughout."""
import os
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

import pytest

from cinder_lite import nbd
from cinder_lite import iscsi
from tests.harness import dataplane as dp
from tests.harness import stack as stack_mod
from tests.harness import util

AGENT = os.path.join(os.path.dirname(sys.executable), 'fence_cinder_lite')
PROTOCOLS = {'nbd': ('nbd_stack', (nbd.NbdError, ConnectionError)),
             'iscsi': ('iscsi_stack', iscsi.IscsiError),
             # a cut client's I/O fails (ESHUTDOWN); a removed key does
             # not connect (the monitors let it wait, then time out)
             'rbd': ('rbd_stack', None)}


def agent(stdin_options, **kw):
    """Run the agent as fenced does; (exit code, stdout, stderr)."""
    text = ''.join('%s=%s\n' % item for item in stdin_options.items())
    done = subprocess.run([AGENT], input='# from fenced\n\n' + text,
                          capture_output=True, text=True, timeout=120,
                          **kw)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(params=sorted(PROTOCOLS))
def proto(request):
    if not os.path.exists(AGENT):
        pytest.fail('%s is not installed (pip install -e .)' % AGENT)
    fixture, error = PROTOCOLS[request.param]
    s = request.getfixturevalue(fixture)
    if request.param == 'rbd':
        from cinder_lite.volume.drivers import rbd as rbd_driver
        error = (rbd_driver.rbd_module().Error,
                 rbd_driver.rados_module().Error)
    api = s.client()
    api.create_type('shared', {'multiattach': '<is> True'})
    return request.param, s, api, error


def test_metadata_is_what_pacemaker_reads():
    code, out, _err = agent({'action': 'metadata'})
    assert code == 0
    root = ET.fromstring(out)
    assert root.tag == 'resource-agent'
    assert root.get('name') == 'fence_cinder_lite' and root.get('shortdesc')
    assert root.find('longdesc').text and root.find('vendor-url').text
    params = {p.get('name'): p for p in root.find('parameters')}
    for name in ('action', 'plug', 'port', 'endpoint', 'volume', 'project',
                 'username', 'password', 'auth_url'):
        assert name in params, name
        assert params[name].find('content').get('type')
        assert params[name].find('shortdesc').get('lang') == 'en'
    assert params['action'].get('required') == '1'
    assert params['port'].get('obsoletes') == 'plug'
    actions = {a.get('name'): a.attrib for a in root.find('actions')}
    assert set(actions) == {'on', 'off', 'status', 'list', 'monitor',
                            'metadata', 'validate-all'}
    # "on" is the automatic unfencing of provides=unfencing
    assert actions['on'].get('automatic') == '1'


def _writer(dev, stop):
    writes = []

    def run():
        seq = 0
        while not stop.is_set():
            seq += 1
            begin = time.monotonic()
            try:
                dev.write((seq % 64) * 4096, b'A' * 4096 * 4)
                ok = True
            except Exception:
                ok = False
            writes.append((begin, time.monotonic(), ok))
            if not ok:
                return
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return writes, thread


def test_off_status_list_on_through_stdin(proto):
    protocol, s, api, refused = proto
    vid = api.create_volume(volume_type='shared')['id']
    ha, hb = dp.attacher(s, 'a'), dp.attacher(s, 'b')
    a_att, a_dev = ha.attach_device(vid)
    b_att, b_dev = hb.attach_device(vid)
    base = {'endpoint': s.url + '/v3', 'project_id': stack_mod.PROJECT,
            'login': 'pacemaker', 'volume': vid}

    def run(action, **extra):
        return agent(dict(base, action=action, **extra))

    assert run('validate-all')[0] == 0
    assert run('monitor')[0] == 0
    code, out, _ = run('list')
    assert (code, out) == (0, 'host-a,\nhost-b,\n')
    code, out, _ = run('status', port='host-a')
    assert (code, out) == (0, 'Status: ON\n')

    stop = threading.Event()
    writes, thread = _writer(a_dev, stop)
    while len(writes) < 5:
        time.sleep(0.001)
    asked = time.monotonic()
    code, out, err = run('off', port='host-a', verbose='1')
    returned = time.monotonic()
    assert (code, out) == (0, 'Success: Powered OFF\n'), err
    thread.join(30)
    stop.set()
    assert not [w for w in writes if w[2] and w[1] > returned]
    assert writes[-1][2] is False
    print('\n%s fence_cinder_lite off: %.1f ms (process included); %d '
          'writes of a, %d in flight when off began' % (
              protocol, (returned - asked) * 1000, len(writes),
              sum(1 for w in writes if w[0] < asked < w[1])))
    with pytest.raises(refused):
        a_dev.write(0, b'late')
        a_dev.flush()
    a_dev.close()
    b_dev.write(0, b'b goes on')
    b_dev.flush()
    assert run('status', port='host-a')[:2] == (2, 'Status: OFF\n')
    assert run('status', port='host-b')[:2] == (0, 'Status: ON\n')
    # a node name, mapped to its host
    assert run('status', port='node1',
               host_map='node1:host-a;node2:host-b')[0] == 2
    assert run('list')[:2] == (0, 'host-a,\nhost-b,\n')
    # off again: still off, still 0
    assert run('off', port='host-a')[0] == 0

    # the volume service restarts, and tgtd with it
    manager = s.volume_service(
        'rbd' if protocol == 'rbd' else 'file').endpoints[0]
    if protocol == 'iscsi':
        target = manager.driver.target
        b_dev.close()
        os.kill(target._daemon_pid(), signal.SIGKILL)
        util.wait_for(lambda: not util.processes('tgtd', target.portal),
                      what='tgtd to die')
    manager.init_host()
    assert run('status', port='host-a')[0] == 2
    with pytest.raises(refused):
        ha.open(a_att).write(0, b'after the restart')
    if protocol == 'iscsi':
        b_dev = hb.open(b_att)

    code, out, err = run('on', port='host-a')
    assert (code, out) == (0, 'Success: Powered ON\n'), err
    assert run('status', port='host-a')[:2] == (0, 'Status: ON\n')
    a_dev = ha.open(a_att)
    a_dev.write(0, b'a is back')
    a_dev.flush()
    assert b_dev.read(0, 9) == b'a is back'
    ha.detach(a_att['id'], a_dev)
    hb.detach(b_att['id'], b_dev)


def test_errors_are_exit_code_1(proto):
    protocol, s, api, _refused = proto
    vid = api.create_volume(volume_type='shared')['id']
    base = {'endpoint': s.url + '/v3', 'project_id': stack_mod.PROJECT,
            'volume': vid}
    for options, text in (
            (dict(base, action='reboot', port='h'), 'reboot is not '),
            (dict(base, action='off'), 'plug (the host to fence)'),
            (dict(base, action='frobnicate'), 'unknown action'),
            ({'action': 'off', 'port': 'h', 'volume': vid},
             'endpoint is required'),
            (dict(base, action='off', port='h', project='p'),
             'exactly one of volume and project'),
            (dict(base, action='off', port='h', colour='blue'),
             "unknown option 'colour'"),
            (dict(base, action='status', port='h',
                  volume='00000000-0000-4000-8000-000000000000'),
             'could not be found'),
            (dict(base, action='monitor',
                  endpoint='http://127.0.0.1:%d/v3' % util.free_port()),
             'Connection refused')):
        code, _out, err = agent(options)
        assert code == 1 and text in err, (options, err)


PACEMAKER_AGENT = '/usr/sbin/fence_cinder_lite'


def test_pacemaker_reads_the_metadata_and_validates_through_stdin(
        nbd_stack):
    """Pacemaker's own fence library (``stonith_admin``, Debian package
    pacemaker-cli-utils) runs the agent from its directory: it reads the
    metadata and runs validate-all with the options on stdin.  (Fencing
    through ``stonith_admin --fence`` needs a running pacemaker-fenced,
    which needs corosync: not run here.)"""
    util.need('stonith_admin')
    if os.path.realpath(PACEMAKER_AGENT) != os.path.realpath(AGENT):
        pytest.skip('%s must be this checkout\'s agent (ln -s %s %s)'
                    % (PACEMAKER_AGENT, AGENT, PACEMAKER_AGENT))
    done = subprocess.run(['stonith_admin', '--metadata', '--agent',
                           'fence_cinder_lite'], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    actions = {a.get('name'): a.attrib for a in
               ET.fromstring(done.stdout).find('actions')}
    assert actions['on'].get('automatic') == '1'
    assert {'off', 'status', 'list', 'monitor'} <= set(actions)
    api = nbd_stack.client()
    vid = api.create_volume()['id']

    def validate(*options):
        argv = ['stonith_admin', '--validate', '--agent',
                'fence_cinder_lite']
        for option in options:
            argv += ['--option', option]
        return subprocess.run(argv, capture_output=True, text=True,
                              timeout=60)
    ok = validate('endpoint=%s/v3' % nbd_stack.url, 'volume=%s' % vid,
                  'project_id=%s' % stack_mod.PROJECT)
    assert ok.returncode == 0 and 'succeeded' in ok.stdout, (ok.stdout,
                                                             ok.stderr)
    bad = validate('volume=%s' % vid)
    assert bad.returncode != 0
    assert 'endpoint is required' in bad.stdout + bad.stderr
