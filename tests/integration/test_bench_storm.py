"""bench/storm.py with three hosts, cinder_lite's side only (REST and the
bus), so the bench cannot rot: it runs as its docstring says, every host
attaches and detaches, the volume is checked in between, the takeover
during a storm leaves one writer and the readers, and the floor's parts
are measured."""
import json
import math
import os
import subprocess
import sys

from tests.harness import cluster as cluster_mod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
HOSTS = 3


def test_storm_of_three_hosts(tmp_path):
    cluster_mod.require_services('mysql')
    out = tmp_path / 'storm.json'
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'bench', 'storm.py'),
         '--hosts', str(HOSTS), '--targets', 'lite,lite-bus',
         '--floor-repeats', '1', '--takeover', '--json', str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert 'no errors' in proc.stdout
    result = json.loads(out.read_text())
    runs = {r['target']: r for r in result['runs']}
    assert sorted(runs) == ['lite', 'lite-bus']
    for run in runs.values():
        assert run['hosts'] == HOSTS
        for phase in ('attach', 'detach'):
            storm = run[phase]
            assert storm['errors'] == []
            assert len(storm['lat']) == HOSTS
            assert 0 < max(storm['lat']) <= storm['wall'] + 1e-6
            assert 'api' in storm['cpu']
        takeover = run['takeover']
        assert takeover['errors'] == [] and takeover['done'] == HOSTS
        assert 0 < takeover['quiet'] and 0 < takeover['storm'] \
            <= takeover['wall'] + 1e-6
    parts = result['floors'][str(HOSTS)]
    assert sorted(parts) == ['db-attach', 'db-detach', 'http1', 'http3',
                             'rpc1', 'rpc2', 'rpc4']
    for part in parts.values():
        assert part['errors'] == [] and len(part['lat']) == HOSTS
        assert math.isfinite(part['wall']) and part['wall'] > 0
    # the table names both targets and the floor beside them
    assert 'lite-bus' in proc.stdout and 'x floor' in proc.stdout
    assert 'takeover during the attach storm' in proc.stdout
