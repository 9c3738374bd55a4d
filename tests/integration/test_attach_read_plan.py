"""The create's read under the volume's lock
(``db_attachments.volume_to_attach``) on the database servers: it
answers the backend's services in the order of their hosts, and MariaDB
runs it without a temporary table or a sort.  Sorting the statement by
a joined table's column (the services' host) made MariaDB write a
temporary table to disk on every attach (the services' capabilities are
TEXT): the costliest statement of the attach cycle on the server, about
twice the next."""
import uuid

import pytest
from sqlalchemy import orm

from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import migration
from cinder_lite.db import models
from cinder_lite.db import query
from tests.harness import cluster as cluster_mod

# members of one cluster, added out of order
HOSTS = ('node-c@ma', 'node-a@ma', 'node-b@ma')


def _volume_with_members(engine):
    volume_id = str(uuid.uuid4())
    with orm.Session(engine) as session, session.begin():
        vtype = models.VolumeType(id=str(uuid.uuid4()), name='t')
        session.add(vtype)
        session.flush()
        session.add(models.Volume(
            id=volume_id, project_id='p', size=1, status='available',
            volume_type_id=vtype.id, host='cluster@ma#pool',
            multiattach=True))
        for host in HOSTS:
            session.add(models.Service(
                uuid=str(uuid.uuid4()), host=host, binary='cinder-volume',
                topic='cinder-volume', cluster_name='cluster@ma',
                availability_zone='nova', heartbeat_at=models.utcnow(),
                capabilities={'pools': [{'name': 'pool'}]}))
    return volume_id


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_the_backends_services_come_in_the_order_of_their_hosts(kind):
    with cluster_mod.scratch_database(kind, 'cl_plan') as url:
        engine = db_api.create_engine(url)
        try:
            migration.upgrade(engine=engine)
            volume_id = _volume_with_members(engine)
            with orm.Session(engine) as session, session.begin():
                volume, others, spec, fenced, qos, members = \
                    db_attachments.volume_to_attach(
                        session, volume_id, 'consumer', 'mode',
                        'cinder-volume')
            assert volume.id == volume_id
            assert [m.host for m in members] == sorted(HOSTS)
            assert members[0].capabilities == {'pools': [{'name': 'pool'}]}
            assert (others.statuses, spec, fenced, qos) == \
                (frozenset(), None, False, None)
        finally:
            engine.dispose()


def test_mariadb_reads_the_volume_to_attach_without_temporary_table():
    with cluster_mod.scratch_database('mysql', 'cl_plan') as url:
        engine = db_api.create_engine(url)
        try:
            migration.upgrade(engine=engine)
            volume_id = _volume_with_members(engine)
            stmt = query.built('volume_to_attach',
                               db_attachments._to_attach_statement)
            compiled = stmt.compile(dialect=engine.dialect)
            params = compiled.construct_params(
                {'volume_id': volume_id, 'host': 'consumer',
                 'spec_key': 'mode', 'binary': 'cinder-volume'})
            with engine.connect() as conn:
                plan = conn.exec_driver_sql(
                    'EXPLAIN ' + str(compiled), params).mappings().all()
            extras = [row['Extra'] or '' for row in plan]
            assert len(plan) > 3, plan       # the joins and subqueries
            assert not [e for e in extras if 'Using temporary' in e
                        or 'Using filesort' in e], plan
        finally:
            engine.dispose()
