"""Stacks whose file backend exports over NBD (nbdkit) or iSCSI (tgt), and
what the tests look at from the storage side.  Each "host" is its own
loopback address (127.0.0.2, .3, .4) that its client connects from."""
import os
import shutil
import socket
import subprocess

import pytest

from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from cinder_lite.volume.targets import iscsi as iscsi_target
from tests import stack as stack_mod  # noqa: F401 (re-exported)

REQUIRE_ENV = 'CINDER_LITE_REQUIRE_SERVICES'
HOSTS = {'a': '127.0.0.2', 'b': '127.0.0.3', 'c': '127.0.0.4'}


def need(*programs):
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        if os.environ.get(REQUIRE_ENV) == '1':
            pytest.fail('%s not installed and %s=1' % (missing, REQUIRE_ENV))
        pytest.skip('%s not installed' % missing)


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def free_range(count):
    """``count`` consecutive ports starting at a free one (best effort)."""
    start = min(free_port(), 65535 - count)
    return '%d-%d' % (start, start + count - 1)


def backend_target(s):
    return s.volume_service('file').endpoints[0].driver.target


def volume_path(s, volume_id):
    return os.path.join(s.state_path, 'volumes', 'file',
                        'volume-%s' % volume_id)


def attacher(s, name, address=None):
    """The attach client of host ``name`` (its address from HOSTS)."""
    transport = client.RestTransport(s.url + '/v3', stack_mod.PROJECT)
    return client.AttachClient(transport, host_connector.get_connector(
        host='host-' + name, ip=address or HOSTS[name]))


def processes(name, needle):
    """Pids of processes called ``name`` whose argv holds ``needle``."""
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == name.encode() and \
                any(needle.encode() in a for a in argv):
            found.append(int(pid))
    return found


def tgt_targets(port):
    """What the tgtd on control port ``port`` serves now ({} when none
    runs)."""
    done = subprocess.run(['tgtadm', '-C', str(port), '--lld', 'iscsi',
                           '--mode', 'target', '--op', 'show'],
                          capture_output=True, text=True)
    return iscsi_target.parse_show(done.stdout) if done.returncode == 0 \
        else {}


def _start(tmp_path, backend):
    return stack_mod.Stack(tmp_path / 'st', backends={'file': backend}
                           ).start()


def _stop(s):
    """Stop the stack; fail when exports or daemons were left behind."""
    target = backend_target(s)
    leftovers = target.exports()
    for attachment_id in leftovers:
        target.remove_export(attachment_id)
    s.stop()
    assert leftovers == {}, 'exports left behind: %s' % leftovers


@pytest.fixture
def nbd_stack(tmp_path):
    need('nbdkit')
    s = _start(tmp_path, {'target_protocol': 'nbd',
                          'target_ip_address': '127.0.0.1',
                          'target_port_range': free_range(20)})
    yield s
    _stop(s)
    assert processes('nbdkit', s.state_path) == []


@pytest.fixture
def iscsi_stack(tmp_path):
    need('tgtd', 'tgtadm')
    port = free_port()
    s = _start(tmp_path, {'target_protocol': 'iscsi',
                          'target_ip_address': '127.0.0.1',
                          'target_port': port,
                          'target_control_port': port % 32768})
    s.tgt_control = port % 32768
    yield s
    _stop(s)
    # the service stopped with no export left: its tgtd is gone
    assert processes('tgtd', 'portal=127.0.0.1:%d' % port) == []
