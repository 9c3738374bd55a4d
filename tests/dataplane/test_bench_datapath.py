"""bench/datapath.py --real-clients in a tiny mode, so the bench cannot
rot: qemu-io, qemu-img bench and nbdcopy run on the file, on the NBD
export (TLS-PSK, with the attachment's key) and the iSCSI one (CHAP),
on the twins without credentials and with a knob each, every figure is
a positive number next to its floor, and nothing the bench started is
left running."""
import json
import math
import os
import subprocess
import sys

from tests.harness import util

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def test_datapath_real_clients_tiny(tmp_path):
    util.need('nbdkit', 'tgtd', 'tgtadm', 'qemu-io', 'qemu-img', 'nbdcopy')
    out = tmp_path / 'datapath.json'
    port = 20000 + util.free_port() % 12000
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'bench', 'datapath.py'),
         '--paths', 'nbd,iscsi', '--attaches', '1', '--mib', '4',
         '--real-clients', '--iops-seconds', '0.05',
         '--knobs', 'nbd:--threads=2,iscsi:--bstype=aio',
         '--iscsi-port', str(port), '--json', str(out),
         # its processes are told from anyone else's by that path
         '--work-dir', str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())['real_clients']
    seq = ['1M seq %s QD%d' % (op, d) for op in ('write', 'read')
           for d in (1, 16)]
    rand = ['4K rand %s QD%d' % (op, d) for op in ('write', 'read')
            for d in (1, 16)]
    floors = result['floors']
    assert sorted(floors) == ['nbdcopy', 'qemu-img', 'qemu-io']
    assert sorted(floors['nbdcopy']) == sorted(seq)
    assert sorted(floors['qemu-io']) == sorted(seq + rand)
    rows = {(client, name): figures
            for client, name, figures in result['rows']}
    assert sorted(rows) == sorted([
        ('qemu-io', 'nbd, TLS-PSK'), ('nbdcopy', 'nbd, TLS-PSK'),
        ('qemu-io', 'nbd, no TLS (twin)'),
        ('qemu-img', 'nbd, no TLS (twin)'),
        ('nbdcopy', 'nbd, no TLS (twin)'),
        ('qemu-img', 'nbd, no TLS, --threads=2'),
        ('qemu-io', 'iscsi, CHAP'),
        ('qemu-io', 'iscsi, no CHAP (twin)'),
        ('qemu-img', 'iscsi, no CHAP (twin)'),
        ('qemu-img', 'iscsi, no CHAP, --bstype=aio')])
    for (client, name), figures in rows.items():
        assert sorted(figures) == sorted(floors[client]), (client, name)
    for figures in list(rows.values()) + list(floors.values()):
        for value in figures.values():
            assert math.isfinite(value) and value > 0
    # one table: every figure with its floor and the ratio
    assert 'iscsi, CHAP' in proc.stdout and 'ratio' in proc.stdout
    assert 'nbd, TLS-PSK' in proc.stdout
    # nothing of the bench's is left: no tgtd on its portal, no nbdkit
    # serving its volumes' files
    assert util.processes('tgtd', 'portal=127.0.0.1:%d' % port) == []
    assert util.processes('nbdkit', str(tmp_path)) == []
