"""Tempest, the suite OpenStack clouds are judged by, against cinder_lite
with a real Keystone, Glance and Nova (the session's deployment,
tests/harness/openstack.py, shared with test_nova.py).

Four selections must pass on every run: the volume tests of the
interop guideline 2020.06 (tools/tempest-interop-volume.txt, the bar for
"OpenStack Powered"), Nova's volume attach tests
(tempest.api.compute.volumes.test_attach_volume), the backup tests
(``tools/tempest --backup``: backups, their quotas and limits, against
the deployment's backup service and its POSIX store) and, in a run of
their own after the others, six tests of a volume's maintenance
(``tools/tempest --maintenance``: a retype with migration to another
backend, a retype in place, manage and unmanage of a volume and of a
snapshot, a group, a group snapshot).  A test may be skipped
only by the options tempest.conf sets for features cinder_lite does not
offer (tests/harness/tempest_conf.py) or by the commented exclude list
(tools/tempest-exclude.txt); doc/source/tempest.rst lists both.  The whole
tempest.api.volume tree is ``tools/tempest --volume`` (counts in
doc/source/tempest.rst).

Tempest's volumes are made on the deployment's RBD backend (a volume
type naming it, tempest_conf.RBD_TYPE, is Tempest's ``volume_type``, and
the multi-attach type names it too), on the run's Ceph cluster;
test_nova.py and test_images.py keep the file backends ``ma`` and
``mb``.  ``test_tempest_volumes_were_on_rbd`` checks from cinder_lite's
database and the RBD volume service's log that every volume of the run
was an RBD image and that Nova's attachments were exported as Ceph users.
The exception: a volume a restore makes (Tempest restores without a
target volume) has the default type, as in Cinder, and lands wherever
the scheduler sends that type; it is counted apart.  The maintenance
tests make types of their own (the retypes name Tempest's
``backend_names``, the groups' types name no backend), so their run
comes after the check's.

Needs the pinned Tempest of tools/tempest-venv: skipped without it,
failed instead under CINDER_LITE_REQUIRE_SERVICES=1, as in CI.
"""
import collections
import io
import os
import re
import time

import pytest
import sqlalchemy as sa

from cinder_lite.db import api as db_api
from tests.harness import openstack
from tests.harness import tempest_conf
from tests.harness import tempest_run
from tests.harness import util


@pytest.fixture(scope='module')
def workspace(openstack_cloud, tmp_path_factory):
    """A Tempest workspace whose tempest.conf describes the deployment,
    with the flavors, images and volume types Tempest expects."""
    if not os.access(tempest_run.venv_bin('tempest'), os.X_OK):
        util.skip_or_fail('no Tempest in %s (run tools/tempest-venv)'
                          % tempest_run.VENV)
    if openstack_cloud.cinder.rbd_backend is None:
        util.skip_or_fail('no RBD backend in the deployment (no Ceph)')
    ws = tempest_run.Workspace(str(tmp_path_factory.mktemp('tempest')))
    made = tempest_conf.prepare(openstack_cloud)
    ws.write_conf(tempest_conf.sections(openstack_cloud, made, ws.path))
    return ws


# Tempest's workers: most of a Tempest test is waiting (its waiters poll
# once a second), so two workers take about half the time on the 2-core
# machine; Tempest makes its own projects and users per test class
CONCURRENCY = 2


def database_now(cloud):
    engine = db_api.create_engine(cloud.cinder.db_url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text('SELECT UTC_TIMESTAMP()')).scalar()
    finally:
        engine.dispose()


def volumes_made_since(cloud, since):
    """{volume id: (host, backup id)} of the volumes made since
    ``since`` (the database's clock), deleted ones too (they are kept,
    marked); the backup id of a volume a restore made, else None."""
    engine = db_api.create_engine(cloud.cinder.db_url)
    try:
        with engine.connect() as conn:
            return {row[0]: (row[1], row[2]) for row in conn.execute(
                sa.text('SELECT id, host, backup_id FROM volumes '
                        'WHERE created_at >= :since'),
                {'since': since}).all()}
    finally:
        engine.dispose()


def run_selections(workspace, cloud, names):
    """The selections ``names`` (tools/tempest's options) in one
    ``tempest run`` (one start of Tempest and one discovery)."""
    chosen = tempest_run.selections(tempest_run.parse_args(names))
    selected, excluded, missing = tempest_run.select(
        workspace, chosen, tempest_run.EXCLUDE_LIST)
    assert selected, chosen
    assert missing == [], 'interop tests this Tempest lacks: %s' % missing
    # (the deployment's other users, test_nova.py and test_images.py,
    # run before or after this module, never during it)
    since = database_now(cloud)
    progress = io.StringIO()
    started = time.monotonic()
    workspace.run(selected, concurrency=CONCURRENCY, out=progress)
    print('tempest run %s: %d tests in %.0f s' % (
        ' '.join(names), len(selected), time.monotonic() - started))
    cloud.check_alive()
    return {'chosen': chosen, 'selected': selected, 'excluded': excluded,
            'missing': missing,
            'results': tempest_run.outcomes(selected, workspace.results()),
            'volumes': volumes_made_since(cloud, since)}


@pytest.fixture(scope='module')
def tempest_done(workspace, openstack_cloud):
    """The interop, compute attach and backup selections: what their
    tests and the RBD check read."""
    done = run_selections(workspace, openstack_cloud,
                          ['--interop', '--compute-attach', '--backup'])
    done['rbd_log'] = openstack_cloud.cinder.processes['rbd'].read_log()
    return done


@pytest.fixture(scope='module')
def maintenance_done(tempest_done, workspace, openstack_cloud):
    """The maintenance selection, after the others."""
    return run_selections(workspace, openstack_cloud, ['--maintenance'])


def outcomes_of(done):
    """A function: selection name -> (report, {failed test id: reason},
    [passed test ids]) of the run ``done``."""
    chosen, selected, excluded, missing = (done[k] for k in (
        'chosen', 'selected', 'excluded', 'missing'))
    outcome, broken = done['results']

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


@pytest.fixture(scope='module')
def results(tempest_done):
    return outcomes_of(tempest_done)


def test_interop_volume_tests_pass(results):
    report, failed, passed = results('interop')
    assert failed == {}, report
    assert passed, report


def test_nova_volume_attach_tests_pass(results):
    report, failed, passed = results('compute-attach')
    assert failed == {}, report
    assert passed, report


def test_backup_tests_pass(results):
    report, failed, passed = results('backup')
    assert failed == {}, report
    assert passed, report


def test_maintenance_tests_pass(maintenance_done):
    """Migration, retype, manage and unmanage, groups (issue 47): the
    six tests run and pass (none skipped: the options they need are on,
    tests/harness/tempest_conf.py)."""
    report, failed, passed = outcomes_of(maintenance_done)('maintenance')
    assert failed == {}, report
    assert len(passed) == len(tempest_run.SELECTIONS['maintenance']), \
        report
    # the retype with migration moved a volume between backends
    hosts = {(host or 'none').split('#')[0]
             for host, _ in maintenance_done['volumes'].values()}
    print('backends of the maintenance tests\' volumes: %s'
          % sorted(hosts))
    assert len(hosts) > 1, hosts


def test_tempest_volumes_were_on_rbd(tempest_done):
    """Every volume the run made was placed on the RBD backend and made
    there as an RBD image (created, or cloned copy-on-write), and the
    attachments of the compute tests were exported as Ceph users.  The
    volumes restores made (default type: no backend named) are left
    out, and must be there: the backup tests restore."""
    made_by = tempest_done['volumes']
    restored = {v: host for v, (host, backup) in made_by.items() if backup}
    print('volumes restores made, by backend: %s' % dict(
        collections.Counter((host or 'none').split('#')[0]
                            for host in restored.values())))
    assert restored, 'no volume was made by a restore'
    volumes = {v: host for v, (host, backup) in made_by.items()
               if not backup}
    log = tempest_done['rbd_log']
    by_backend = collections.Counter(
        (host or 'none').split('#')[0] for host in volumes.values())
    print('volumes Tempest made, by backend: %s' % dict(by_backend))
    assert volumes, 'Tempest made no volumes'
    assert set(by_backend) == {'%s@%s' % (openstack.RBD_HOST,
                                          openstack.RBD_BACKEND)}, by_backend
    made = set(re.findall(
        r'(?:created volume-|made volume )([0-9a-f-]{36})', log))
    assert set(volumes) - made == set(), 'not made as RBD images'
    exports = set(re.findall(
        r'attachment ([0-9a-f-]{36}): Ceph user ', log))
    print('attachments exported as Ceph users: %d' % len(exports))
    assert exports, 'no attachment was exported on the RBD backend'
