"""Stacks whose file backend exports over NBD (nbdkit) or iSCSI (tgt), and
what the tests look at from the storage side.  Each "host" is its own
loopback address (127.0.0.2, .3, .4) that its client connects from."""
import os
import subprocess

from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from cinder_lite.volume.targets import iscsi as iscsi_target
from tests.harness import stack as stack_mod
from tests.harness import util

HOSTS = {'a': '127.0.0.2', 'b': '127.0.0.3', 'c': '127.0.0.4'}


def backend_target(s, section='file'):
    return s.volume_service(section).endpoints[0].driver.target


def volume_path(s, volume_id):
    return os.path.join(s.state_path, 'volumes', 'file',
                        'volume-%s' % volume_id)


def attacher(s, name, address=None):
    """The attach client of host ``name`` (its address from HOSTS)."""
    transport = client.RestTransport(s.url + '/v3', stack_mod.PROJECT)
    return client.AttachClient(transport, host_connector.get_connector(
        host='host-' + name, ip=address or HOSTS[name]))


def tgt_targets(port):
    """What the tgtd on control port ``port`` serves now ({} when none
    runs)."""
    done = subprocess.run(['tgtadm', '-C', str(port), '--lld', 'iscsi',
                           '--mode', 'target', '--op', 'show'],
                          capture_output=True, text=True)
    return iscsi_target.parse_show(done.stdout) if done.returncode == 0 \
        else {}


def nbd_backend():
    return {'target_protocol': 'nbd', 'target_ip_address': '127.0.0.1',
            'target_port_range': util.free_range(20)}


def iscsi_backend():
    port = util.free_port()
    return {'target_protocol': 'iscsi', 'target_ip_address': '127.0.0.1',
            'target_port': port, 'target_control_port': port % 32768}


def start(tmp_path, backend):
    return stack_mod.Stack(tmp_path / 'st', backends={'file': backend}
                           ).start()


def stop(s):
    """Stop the stack; fail when exports or daemons were left behind."""
    target = backend_target(s)
    leftovers = target.exports()
    for attachment_id in leftovers:
        target.remove_export(attachment_id)
    s.stop()
    assert leftovers == {}, 'exports left behind: %s' % leftovers
