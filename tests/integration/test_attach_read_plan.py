"""The create's read under the volume's lock
(``db_attachments.volume_to_attach``) on the database servers: it
answers the backend's services in the order of their hosts, and MariaDB
runs it without a temporary table or a sort.  Sorting the statement by
a joined table's column (the services' host) made MariaDB write a
temporary table to disk on every attach (the services' capabilities are
TEXT): the costliest statement of the attach cycle on the server, about
twice the next."""
import contextlib
import uuid

import pytest
from sqlalchemy import orm

from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import migration
from cinder_lite.db import models
from tests.harness import cluster as cluster_mod

# members of one cluster, added out of order
HOSTS = ('node-c@ma', 'node-a@ma', 'node-b@ma')


@contextlib.contextmanager
def migrated(kind, prefix):
    """cinder_lite's engine on a fresh database of ``kind`` at the newest
    schema (``cluster.scratch_database``)."""
    with cluster_mod.scratch_database(kind, prefix) as url:
        engine = db_api.create_engine(url)
        try:
            migration.upgrade(engine=engine)
            yield engine
        finally:
            engine.dispose()


def typed_volume(session, **fields):
    """Add a volume of project p, size 1, with ``fields``, of a new
    volume type; returns its id."""
    type_id = str(uuid.uuid4())
    vtype = models.VolumeType(id=type_id, name=type_id)
    session.add(vtype)
    session.flush()
    volume = models.Volume(**dict(dict(
        id=str(uuid.uuid4()), project_id='p', size=1,
        volume_type_id=vtype.id), **fields))
    session.add(volume)
    return volume.id


def volume_with_members(engine):
    """A multiattach volume on backend cluster@ma, whose three services
    (``HOSTS``) are up; its id."""
    with orm.Session(engine) as session, session.begin():
        volume_id = typed_volume(session, status='available',
                                 host='cluster@ma#pool', multiattach=True)
        for host in HOSTS:
            session.add(models.Service(
                uuid=str(uuid.uuid4()), host=host, binary='cinder-volume',
                topic='cinder-volume', cluster_name='cluster@ma',
                availability_zone='nova', heartbeat_at=models.utcnow(),
                capabilities={'pools': [{'name': 'pool'}]}))
    return volume_id


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_the_backends_services_come_in_the_order_of_their_hosts(kind):
    with migrated(kind, 'cl_plan') as engine:
        volume_id = volume_with_members(engine)
        with orm.Session(engine) as session, session.begin():
            volume, others, spec, fenced, qos, members = \
                db_attachments.volume_to_attach(
                    session, volume_id, 'consumer', 'mode', 'cinder-volume')
        assert volume.id == volume_id
        assert [m.host for m in members] == sorted(HOSTS)
        assert members[0].capabilities == {'pools': [{'name': 'pool'}]}
        assert (others.statuses, spec, fenced, qos) == \
            (frozenset(), None, False, None)


def _plan(engine, stmt, params):
    compiled = stmt.compile(dialect=engine.dialect)
    with engine.connect() as conn:
        return conn.exec_driver_sql(
            'EXPLAIN ' + str(compiled),
            compiled.construct_params(params)).mappings().all()


def _sorted_or_materialized(plan):
    return [row for row in plan
            if 'Using temporary' in (row['Extra'] or '')
            or 'Using filesort' in (row['Extra'] or '')]


def test_mariadb_reads_the_volume_to_attach_without_temporary_table():
    with migrated('mysql', 'cl_plan') as engine:
        volume_id = volume_with_members(engine)
        plan = _plan(engine, db_attachments._to_attach_statement(),
                     {'volume_id': volume_id, 'host': 'consumer',
                      'spec_key': 'mode', 'binary': 'cinder-volume'})
        assert len(plan) > 3, plan       # the joins and subqueries
        assert not _sorted_or_materialized(plan), plan
