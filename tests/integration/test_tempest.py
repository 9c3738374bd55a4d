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
import re

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


# Tempest's workers: most of a Tempest test is waiting (its waiters poll
# once a second), so two workers take about half the time on the 2-core
# machine; Tempest makes its own projects and users per test class
CONCURRENCY = 2


@pytest.fixture(scope='module')
def results(workspace, openstack_cloud):
    """Both selections in one ``tempest run`` (one start of Tempest and
    one discovery); returns a function: selection name -> (report,
    {failed test id: reason}, [passed test ids])."""
    chosen = tempest_run.selections(tempest_run.parse_args(
        ['--interop', '--compute-attach']))
    selected, excluded, missing = tempest_run.select(
        workspace, chosen, tempest_run.EXCLUDE_LIST)
    assert selected, chosen
    assert missing == [], 'interop tests this Tempest lacks: %s' % missing
    progress = io.StringIO()
    workspace.run(selected, concurrency=CONCURRENCY, out=progress)
    openstack_cloud.check_alive()
    outcome, broken = tempest_run.outcomes(selected, workspace.results())

    def of(name):
        mine = {name: chosen[name]}
        ids = [t for t in selected
               if any(re.search(r, t) for r in chosen[name])]
        report = io.StringIO()
        tempest_run.summarize(mine, ids, excluded, outcome, broken,
                              missing, report)
        failed = {t: outcome[t][1] for t in ids
                  if outcome[t][0] == 'failed'}
        # a class fixture that failed belongs to the selection of its
        # class's tests
        classes = {tempest_run.class_of(t) for t in ids}
        failed.update((fixture, reason) for fixture, reason in broken
                      if fixture.rsplit('(', 1)[-1].rstrip(')') in classes)
        passed = [t for t in ids if outcome[t][0] == 'passed']
        return report.getvalue(), failed, passed
    return of


def test_interop_volume_tests_pass(results):
    report, failed, passed = results('interop')
    assert failed == {}, report
    assert passed, report


def test_nova_volume_attach_tests_pass(results):
    report, failed, passed = results('compute-attach')
    assert failed == {}, report
    assert passed, report
