"""Tempest, the suite OpenStack clouds are judged by, against cinder_lite
with a real Keystone, Glance and Nova (the session's deployment,
tests/harness/openstack.py, shared with test_nova.py).

Two selections must pass on every run: the volume tests of the interop
guideline 2020.06 (tools/tempest-interop-volume.txt, the bar for
"OpenStack Powered") and Nova's volume attach tests
(tempest.api.compute.volumes.test_attach_volume).  A test may be skipped
only by the options tempest.conf sets for features cinder_lite does not
offer (tests/harness/tempest_conf.py) or by the commented exclude list
(tools/tempest-exclude.txt); doc/tempest.rst lists both.  The whole
tempest.api.volume tree is ``tools/tempest --volume`` (counts in
doc/tempest.rst).

Needs the pinned Tempest of tools/tempest-venv: skipped without it,
failed instead under CINDER_LITE_REQUIRE_SERVICES=1, as in CI.
"""
import io
import os

import pytest

from tests.harness import tempest_conf
from tests.harness import tempest_run
from tests.harness import util


@pytest.fixture(scope='module')
def workspace(openstack_cloud, tmp_path_factory):
    """A Tempest workspace whose tempest.conf describes the deployment,
    with the flavors, images and shareable type Tempest expects."""
    if not os.access(tempest_run.venv_bin('tempest'), os.X_OK):
        util.skip_or_fail('no Tempest in %s (run tools/tempest-venv)'
                          % tempest_run.VENV)
    ws = tempest_run.Workspace(str(tmp_path_factory.mktemp('tempest')))
    made = tempest_conf.prepare(openstack_cloud)
    ws.write_conf(tempest_conf.sections(openstack_cloud, made, ws.path))
    return ws


def run(ws, cloud, **selection):
    """Run a selection (tempest_run's options); returns the report and
    {test id: reason} of every failure, class fixtures included."""
    chosen = tempest_run.selections(tempest_run.parse_args(
        ['--%s' % name.replace('_', '-') for name in selection]))
    selected, excluded, missing = tempest_run.select(
        ws, chosen, tempest_run.EXCLUDE_LIST)
    assert selected, chosen
    assert missing == [], 'interop tests this Tempest lacks: %s' % missing
    progress = io.StringIO()
    ws.run(selected, concurrency=1, out=progress)
    cloud.check_alive()
    outcome, broken = tempest_run.outcomes(selected, ws.results())
    report = io.StringIO()
    tempest_run.summarize(chosen, selected, excluded, outcome, broken,
                          missing, report)
    failed = {t: r for t, (o, r) in outcome.items() if o == 'failed'}
    failed.update(broken)
    passed = [t for t, (o, _) in outcome.items() if o == 'passed']
    return report.getvalue(), failed, passed


def test_interop_volume_tests_pass(workspace, openstack_cloud):
    report, failed, passed = run(workspace, openstack_cloud, interop=True)
    assert failed == {}, report
    assert passed, report


def test_nova_volume_attach_tests_pass(workspace, openstack_cloud):
    report, failed, passed = run(workspace, openstack_cloud,
                                 compute_attach=True)
    assert failed == {}, report
    assert passed, report
