"""``db.services.backend_of``, the SQL of ``volume.rpcapi.backend_host``
that the create's read under the lock joins the backend's services on
(``db_attachments.volume_to_attach``): each database spells it its own
way, so each is asked."""
import pytest
import sqlalchemy as sa

from cinder_lite.db import services as db_services
from cinder_lite.volume import rpcapi as volume_rpcapi
from tests.harness import cluster as cluster_mod

HOSTS = ['node@file#pool', 'node@file', 'cluster@file#ma',
         'node_1@back-end#pool_a', '']


def _answers(url):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            answers = [conn.execute(sa.select(db_services.backend_of(
                sa.literal(host, sa.String)))).scalar_one()
                for host in HOSTS]
            answers.append(conn.execute(sa.select(db_services.backend_of(
                sa.null()))).scalar_one())
        return answers
    finally:
        engine.dispose()


@pytest.mark.parametrize('kind', cluster_mod.ALL_KINDS)
def test_backend_of_is_backend_host_on_every_database(kind):
    expected = [volume_rpcapi.backend_host(host) for host in HOSTS] + [None]
    if kind == cluster_mod.SQLITE:
        assert _answers('sqlite://') == expected
        return
    with cluster_mod.scratch_database(kind, 'cl_backend_of') as url:
        assert _answers(url) == expected
