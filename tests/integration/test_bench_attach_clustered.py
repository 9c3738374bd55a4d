"""bench/attach.py's clustered mode in a tiny run, so the bench cannot
rot: three Galera nodes of its own with writes on all three, three
RabbitMQ nodes with quorum queues, two API processes behind HAProxy, two
clients for 2 s per cell; the side-by-side table must list both layouts
with cycles done, no errors, and the retry and certification columns
counted (a number, not "-")."""
import os
import subprocess
import sys

from tests.harness import cluster as cluster_mod
from tests.harness import galera as galera_mod
from tests.harness import haproxy as haproxy_mod
from tests.harness import util

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MODE = 'clustered/w3-rabbit3q'
COLUMNS = ('mode', 'cycle', 'layout', 'clients', 'cycles', 'cycles/s',
           'p50', 'p99', 'errors', 'services', 'floor cycles/s', 'retried',
           'cert fail', 'bf abort')


def side_by_side(stdout):
    """The rows of the "side by side" table, as dicts of COLUMNS."""
    lines = stdout.splitlines()
    starts = [i for i, line in enumerate(lines)
              if line.startswith('side by side')]
    assert len(starts) == 1, stdout[-3000:]
    start = starts[0]
    header = [c.strip() for c in lines[start + 1].split('|')]
    assert tuple(header) == COLUMNS, header
    rows = []
    for line in lines[start + 3:]:
        if '|' not in line:
            break
        rows.append(dict(zip(COLUMNS, (c.strip()
                                       for c in line.split('|')))))
    return rows


def test_clustered_attach_bench():
    # (RabbitMQ installed: the bench starts three nodes of its own)
    cluster_mod.require_services('mysql')
    for why in (galera_mod.available(), haproxy_mod.available()):
        if why:
            util.skip_or_fail(why)
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'bench', 'attach.py'),
         '--modes', 'clustered', '--writers', 'all', '--broker', 'cluster',
         '--cycles', 'one-step', '--layouts', 'one,distinct',
         '--clients', '2', '--seconds', '2', '--floor-seconds', '0.5',
         '--idle-seconds', '0.5', '--race-rounds', '1', '--race-clients',
         '4'],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert 'no errors' in proc.stdout
    assert 'skipped' not in proc.stdout, proc.stdout[-3000:]
    rows = side_by_side(proc.stdout)
    assert sorted(r['layout'] for r in rows) == ['distinct', 'one'], rows
    for row in rows:
        assert row['mode'] == MODE and row['clients'] == '2', row
        assert int(row['cycles']) > 0 and float(row['cycles/s']) > 0, row
        assert row['errors'] == '0', row
        for column in ('services', 'floor cycles/s', 'retried',
                       'cert fail', 'bf abort'):
            assert float(row[column]) >= 0, (column, row)
    # the floor's parts were measured through the deployment's servers
    assert 'DB cycle, 4 tx (one)' in proc.stdout
    assert 'galera x3*' in proc.stdout and 'rabbitmq x3*' in proc.stdout
