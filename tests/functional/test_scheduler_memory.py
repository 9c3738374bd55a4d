"""The scheduler's in-memory view of the backends against the services
table (real SQLite database, the scheduler's own classes): what memory
lacks or holds stale never turns into a wrong refusal or a placement on
a disabled backend."""
import datetime

from oslo_config import cfg
import pytest
import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.db import api as db_api
from cinder_lite.db import migration
from cinder_lite.db import models
from cinder_lite import conf as cl_conf
from cinder_lite.scheduler import host_state
from cinder_lite.scheduler import manager

CAPS = {'volume_backend_name': 'b', 'total_capacity_gb': 100.0,
        'free_capacity_gb': 50.0, 'thin_provisioning_support': True,
        'provisioned_capacity_gb': 0.0,
        'max_over_subscription_ratio': 2.0, 'multiattach': True}
SPEC = {'size': 1, 'availability_zone': None, 'extra_specs': {}}


@pytest.fixture
def hosts(tmp_path):
    conf = cfg.ConfigOpts()
    cl_conf.register_opts(conf)
    conf([], project='cinder-lite', default_config_files=[])
    conf.set_override('connection', 'sqlite:///%s' % (tmp_path / 'db'),
                      'database')
    db_api.configure(conf)
    migration.upgrade()
    yield host_state.HostManager(conf)
    db_api.dispose()


def register(host, disabled=False, age=0):
    beat = models.utcnow() - datetime.timedelta(seconds=age)
    with db_api.writer() as session:
        session.execute(sa.insert(models.Service.__table__).values(
            uuid=host, host=host, binary='cinder-volume',
            topic='cinder-lite-volume', report_count=1, disabled=disabled,
            availability_zone='nova', heartbeat_at=beat, created_at=beat,
            capabilities=dict(CAPS, volume_backend_name=host)))


def set_disabled(host, disabled):
    with db_api.writer() as session:
        session.execute(sa.update(models.Service.__table__)
                        .where(models.Service.host == host)
                        .values(disabled=disabled))


def choose(hosts):
    with db_api.writer() as session:
        return hosts.choose(session, SPEC, manager.choose_backend).host


def test_backend_whose_report_never_came_is_found(hosts):
    # the scheduler read the table before the service registered, and the
    # service's first report went out before the scheduler listened
    with db_api.reader() as session:
        hosts.refresh(session)
    register('late@b')
    assert choose(hosts) == 'late@b'


def test_disabled_backend_is_set_aside_and_comes_back(hosts):
    register('a@b')
    register('z@b')
    assert choose(hosts) == 'z@b'         # equal room: the larger name
    set_disabled('z@b', True)             # memory still has it enabled
    assert choose(hosts) == 'a@b'
    set_disabled('a@b', True)
    with pytest.raises(exception.NoValidBackend):
        choose(hosts)
    set_disabled('z@b', False)            # enabled again: found at once
    assert choose(hosts) == 'z@b'


def test_down_backend_is_not_chosen(hosts):
    register('old@b', age=3600)
    register('new@b')
    hosts.update_from_report('old@b', 'nova', dict(CAPS, free_capacity_gb=99),
                             models.utcnow().isoformat())
    # its report is fresh, its heartbeat is not: the table decides
    assert choose(hosts) == 'new@b'


def test_api_check_reads_the_database_it_is_given(tmp_path, hosts):
    """The API's copy of the services table belongs to one database: a
    process that configured another one does not answer from it."""
    from cinder_lite.volume import admission
    register('a@b')
    vtype = {'name': 't', 'extra_specs': {}}
    conf = hosts.conf
    with db_api.reader() as session:
        assert admission.check_backends(session, {'size': 1}, vtype,
                                        conf) == 'nova'
    conf.set_override('connection', 'sqlite:///%s' % (tmp_path / 'other'),
                      'database')
    db_api.configure(conf)
    migration.upgrade()
    with db_api.reader() as session, pytest.raises(
            exception.ServiceUnavailable):
        admission.check_backends(session, {'size': 1}, vtype, conf)


def test_api_check_does_not_accept_on_a_stale_copy(hosts):
    """The copy says the backend is enabled; the table, a moment later,
    says it is not: the create is refused at once, not recorded to fail
    in the scheduler."""
    from cinder_lite.volume import admission
    register('a@b')
    vtype = {'name': 't', 'extra_specs': {}}
    with db_api.reader() as session:
        assert admission.check_backends(session, {'size': 1}, vtype,
                                        hosts.conf) == 'nova'
    set_disabled('a@b', True)
    with db_api.reader() as session, pytest.raises(
            exception.ServiceUnavailable):
        admission.check_backends(session, {'size': 1}, vtype, hosts.conf)
    set_disabled('a@b', False)
    with db_api.reader() as session:
        assert admission.check_backends(session, {'size': 1}, vtype,
                                        hosts.conf) == 'nova'
