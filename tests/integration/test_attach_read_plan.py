"""The reads under the volume's lock of a create
(``db_attachments.volume_to_attach``) and of a DELETE
(``db_attachments.get_to_detach``) on the database servers: the first
answers the backend's services in the order of their hosts, and MariaDB
runs both without a temporary table or a sort.  Sorting the statement by
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
    vtype = models.VolumeType(id=str(uuid.uuid4()), name='t')
    session.add(vtype)
    session.flush()
    volume = models.Volume(**dict(dict(
        id=str(uuid.uuid4()), project_id='p', size=1,
        volume_type_id=vtype.id), **fields))
    session.add(volume)
    return volume.id


def _volume_with_members(engine):
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
        volume_id = _volume_with_members(engine)
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
            or 'Using filesort' in (row['Extra'] or '')
            or (row['table'] or '').startswith('<union')]


def test_mariadb_reads_the_volume_to_attach_without_temporary_table():
    with migrated('mysql', 'cl_plan') as engine:
        volume_id = _volume_with_members(engine)
        plan = _plan(engine, db_attachments._to_attach_statement(),
                     {'volume_id': volume_id, 'host': 'consumer',
                      'spec_key': 'mode', 'binary': 'cinder-volume'})
        assert len(plan) > 3, plan       # the joins and subqueries
        assert not _sorted_or_materialized(plan), plan


def test_mariadb_reads_what_a_detach_needs_without_temporary_table():
    with migrated('mysql', 'cl_plan') as engine:
        volume_id = _volume_with_members(engine)
        ids = [str(uuid.uuid4()) for _ in range(3)]
        with orm.Session(engine) as session, session.begin():
            type_id = session.get(models.Volume,
                                  volume_id).volume_type_id
            for n, attachment_id in enumerate(ids):
                session.add(models.VolumeAttachment(
                    id=attachment_id, volume_id=volume_id,
                    project_id='p', attach_status='attached',
                    attached_host='h%d' % n, attach_mode='rw',
                    export_host=HOSTS[0], deleted=False,
                    created_at=models.utcnow()))
            # a cloud's worth of other volumes' attachments, detached
            # and live: the others are found by an index, not a scan
            for _ in range(40):
                other = models.Volume(
                    id=str(uuid.uuid4()), project_id='q', size=1,
                    status='in-use', multiattach=True,
                    volume_type_id=type_id)
                session.add(other)
                session.flush()
                for n in range(10):
                    session.add(models.VolumeAttachment(
                        id=str(uuid.uuid4()), volume_id=other.id,
                        project_id='q', attach_status='attached',
                        deleted=bool(n % 2),
                        created_at=models.utcnow()))
        with engine.connect() as conn:
            conn.exec_driver_sql('ANALYZE TABLE volume_attachments')
        for scoped in (False, True):
            plan = _plan(engine,
                         db_attachments._to_detach_statement(scoped),
                         {'attachment_id': ids[1], 'project_id': 'p',
                          'binary': 'cinder-volume'})
            # both parts of the UNION ALL, each with its joins
            assert len(plan) >= 4, plan
            assert not _sorted_or_materialized(plan), plan
            assert all(row['key'] for row in plan), plan
        with orm.Session(engine) as session:
            attachment, volume, service, others = \
                db_attachments.get_to_detach(session, ids[1], 'p',
                                             'cinder-volume')
        assert (attachment.id, volume.id, service.host) == (
            ids[1], volume_id, HOSTS[0])
        assert [o.id for o in others] == [ids[0], ids[2]]
