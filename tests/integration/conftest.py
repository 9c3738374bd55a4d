"""pytest glue for the distributed tests: one cluster per database kind per
module, skipped with the reason when RabbitMQ or the database is missing
(failed instead when CINDER_LITE_REQUIRE_SERVICES=1, as in CI)."""
import contextlib
import os
import shutil
import tempfile

import pytest

from tests.conftest import rbd_backend
from tests.harness import cluster as cluster_mod
from tests.harness import clustered
from tests.harness import netns_cluster
from tests.harness import openstack
from tests.harness import servers
from tests.harness import stack
from tests.harness import util


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the tails of the service logs to a failed test's report."""
    outcome = yield
    report = outcome.get_result()
    cluster = getattr(item, 'funcargs', {}).get('cluster')
    if report.failed and isinstance(cluster, cluster_mod.Cluster) and \
            os.path.isdir(cluster.workdir):
        report.sections.append(
            ('cinder_lite %s cluster logs (%s)' % (cluster.kind,
                                                   cluster.workdir),
             cluster.logs()))
    deployment = getattr(item, 'funcargs', {}).get('deployment')
    if report.failed and isinstance(deployment, netns_cluster.Deployment) \
            and os.path.isdir(deployment.workdir):
        report.sections.append(
            ('cinder_lite namespace deployment logs (%s)'
             % deployment.workdir, deployment.logs()))
    if report.failed and isinstance(deployment, clustered.Deployment) and \
            os.path.isdir(deployment.workdir):
        report.sections.append(
            ('cinder_lite clustered deployment logs (%s)'
             % deployment.workdir, deployment.logs()))
    cloud = _openstack.get('cloud')
    if report.failed and cloud is not None and \
            'openstack_cloud' in getattr(item, 'fixturenames', ()):
        # a Tempest failure reads "server ... in ERROR status, fault
        # RemoteError": why is only in Nova's logs, so they stay (the
        # work directory is not removed at stop) and their errors come
        # with the report
        cloud.keep_workdir = True
        report.sections.append(
            ('OpenStack errors (logs kept in %s)' % cloud.workdir,
             cloud.errors()))


def pytest_generate_tests(metafunc):
    """One ``cluster`` per database kind per module.  A test module may
    set ``CLUSTER_KINDS`` (default: cluster.KINDS, the database servers)
    and ``CLUSTER_OPTIONS`` (keyword arguments of ``Cluster``, e.g.
    ``{'api_workers': 2}``)."""
    if 'cluster' in metafunc.fixturenames:
        kinds = getattr(metafunc.module, 'CLUSTER_KINDS', cluster_mod.KINDS)
        metafunc.parametrize('cluster', kinds, indirect=True, scope='module')


@pytest.fixture(scope='module')
def cluster(request):
    """A running distributed cinder_lite (api, scheduler, volume nodes ma
    and noma) on a fresh database of the parameter's kind.  A module that
    takes its database server or broker away sets ``PRIVATE_SERVERS``
    (``'database'``, ``'broker'``, or ``'broker-cluster'``: three
    RabbitMQ nodes of one cluster with quorum queues): the cluster then
    runs on servers of its own (tests/harness/servers.py),
    ``cluster.db_server`` and ``cluster.broker``, and the machine's stay
    up for everyone else.  A
    module that needs something made before the cluster starts (a
    filesystem its volumes live on) sets ``CLUSTER_CONTEXT``: a callable
    returning a context manager, entered before the cluster is made and
    left once it is stopped, that yields more ``Cluster`` keyword
    arguments (merged over ``CLUSTER_OPTIONS``, a dict one level
    deep)."""
    kind = request.param
    cluster_mod.require_services(kind)
    keep = os.environ.get('CINDER_LITE_KEEP_WORKDIR') == '1'
    options = dict(getattr(request.module, 'CLUSTER_OPTIONS', {}))
    private = getattr(request.module, 'PRIVATE_SERVERS', ())
    with contextlib.ExitStack() as own:
        db_server = broker = None
        if private:
            where = tempfile.mkdtemp(prefix='cinder-lite-servers-')
            own.callback(shutil.rmtree, where, ignore_errors=True)
        if 'database' in private:
            db_server = servers.DATABASES[kind](where)
            own.callback(db_server.destroy)
            options['server_url'] = db_server.start().url
        if 'broker' in private:
            broker = servers.RabbitMQ(where)
            own.callback(broker.destroy)
            options['rabbit_url'] = broker.start().url
        elif 'broker-cluster' in private:
            # three nodes of one RabbitMQ cluster, the RPC queues quorum
            # queues on them (as clouds run the bus)
            broker = servers.RabbitCluster(where)
            own.callback(broker.destroy)
            options['rabbit_url'] = broker.start().url
            sections = dict(options.get('extra_sections') or {})
            sections['oslo_messaging_rabbit'] = dict(
                sections.get('oslo_messaging_rabbit') or {},
                rabbit_quorum_queue='true')
            options['extra_sections'] = sections
        context = getattr(request.module, 'CLUSTER_CONTEXT', None)
        if context is not None:
            for key, value in own.enter_context(context()).items():
                options[key] = dict(options.get(key) or {}, **value) \
                    if isinstance(value, dict) else value
        c = cluster_mod.Cluster(kind, keep_workdir=keep, **options)
        c.db_server, c.broker = db_server, broker
        try:
            c.start()
        except cluster_mod.ClusterError as e:
            pytest.fail('cluster on %s did not start: %s' % (kind, e),
                        pytrace=False)
        yield c
        try:
            codes = c.stop_processes()
            bad = c.unclean_exits(codes)
            logs = c.logs() if bad else ''
        finally:
            c.cleanup()
        assert not bad, 'services did not stop cleanly on SIGTERM: ' \
            '%r\n%s' % (bad, logs)


@pytest.fixture
def api(cluster):
    """A client of the cluster's API (project PROJECT, admin)."""
    cluster.check_alive()
    client = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    yield client
    client.session.close()


# the running OpenStack deployment, the last test that uses it, and its
# exit codes once stopped
_openstack = {}


def _last_openstack_item(session):
    users = [item for item in session.items
             if 'openstack_cloud' in getattr(item, 'fixturenames', ())]
    return users[-1] if users else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Stop the OpenStack deployment as soon as the last test that uses it
    (and its module's fixtures) are done, rather than at the end of the
    session: idle, its dozen processes still take some 5 % of a core.
    The tests run in the order of ``session.items`` (one worker runs the
    modules that share it, in that order: tests/conftest.py)."""
    yield
    cloud = _openstack.get('cloud')
    if cloud is not None and 'codes' not in _openstack and \
            item is _openstack['last']:
        _openstack['codes'] = cloud.stop()


@pytest.fixture(scope='session')
def openstack_cloud(request):
    """Keystone, Glance, Placement, Nova and cinder_lite in keystone mode
    (tests/harness/openstack.py), started once for the modules that need
    them (test_nova.py, test_images.py, test_tempest.py: tests/conftest.py
    gives them to one pytest-xdist worker), and stopped after the last test
    that uses it.  Skipped without the OpenStack virtualenv
    (tools/openstack-venv), failed instead under
    CINDER_LITE_REQUIRE_SERVICES=1.  With Ceph installed, cinder_lite
    also has an RBD backend on the run's cluster (the ``ceph`` fixture),
    where Tempest's volumes go (test_tempest.py checks that they did)."""
    try:
        openstack.check_available()
    except cluster_mod.ServiceUnavailable as e:
        util.skip_or_fail('Nova and Keystone: %s' % e)
    try:
        rbd = rbd_backend(request.getfixturevalue('ceph'))
    except pytest.skip.Exception:
        # no Ceph, and not required (else the fixture failed):
        # test_nova.py and test_images.py run as well without it
        rbd = None
    cloud = openstack.NovaStack(
        keep_workdir=os.environ.get('CINDER_LITE_KEEP_WORKDIR') == '1',
        rbd_backend=rbd)
    try:
        cloud.start()
    except cluster_mod.ClusterError as e:
        pytest.fail('the OpenStack deployment did not start: %s' % e,
                    pytrace=False)
    _openstack.update(cloud=cloud,
                      last=_last_openstack_item(request.session))
    try:
        yield cloud
    finally:
        codes = _openstack.pop('codes', None)
        if codes is None:
            codes = cloud.stop()
        _openstack.clear()
    bad = {name: rc for name, rc in codes.items()
           if rc not in (0, -15, None)}
    assert not bad, 'processes that did not stop cleanly: %r' % bad


@pytest.fixture(scope='session')
def galera():
    """A three-node MariaDB Galera cluster of the run's own
    (tests/harness/galera.py), started once per test session (per xdist
    worker) by the first test that asks for it and stopped by pid at the
    end; skipped with the reason (failed under
    CINDER_LITE_REQUIRE_SERVICES=1) when Galera cannot run here."""
    from tests.harness import galera as galera_mod
    why = galera_mod.available()
    if why:
        util.skip_or_fail('Galera: %s' % why)
    where = tempfile.mkdtemp(prefix='cinder-lite-galera-')
    servers._owned_dir(where, 'mysql')
    cluster = galera_mod.GaleraCluster(where)
    try:
        try:
            cluster.start()
        except RuntimeError as e:
            pytest.fail('the Galera cluster did not start: %s' % e,
                        pytrace=False)
        yield cluster
    finally:
        cluster.destroy()
        shutil.rmtree(where, ignore_errors=True)
