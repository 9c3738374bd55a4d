"""The connector dict that describes this host to the volume service."""
import os
import platform
import socket

INITIATOR_FILE = '/etc/iscsi/initiatorname.iscsi'


def initiator_name(hostname):
    """This host's iSCSI initiator name (open-iscsi's file when present,
    else one derived from the host name)."""
    try:
        with open(INITIATOR_FILE) as f:
            for line in f:
                if line.startswith('InitiatorName='):
                    return line.split('=', 1)[1].strip()
    except OSError:
        pass
    return 'iqn.2026-11.org.cinder-lite:%s' % hostname


def get_connector(host=None, ip='127.0.0.1', initiator=None, mode=None,
                  mountpoint=None):
    host = host or socket.gethostname()
    connector = {
        'host': host,
        'ip': ip,
        'initiator': initiator or initiator_name(host),
        'platform': platform.machine(),
        'os_type': os.uname().sysname.lower(),
        'multipath': False,
    }
    if mode is not None:
        connector['mode'] = mode
    if mountpoint is not None:
        connector['mountpoint'] = mountpoint
    return connector
