"""A pooled connection the server dropped while it sat idle is replaced
before use (cinder_lite pings idle connections instead of every one)."""
import pytest

from cinder_lite.db import api as db_api
from tests.harness import cluster as cluster_mod

QUERIES = {'mysql': ('SELECT CONNECTION_ID()', 'KILL %d'),
           'postgresql': ('SELECT pg_backend_pid()',
                          'SELECT pg_terminate_backend(%d)')}


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_idle_connection_killed_by_the_server_is_replaced(kind,
                                                          monkeypatch):
    with cluster_mod.scratch_database(kind, 'cl_reconnect') as url:
        engine = db_api.create_engine(url)
        killer = db_api.create_engine(url)
        try:
            who, kill = QUERIES[kind]
            with engine.connect() as conn:
                victim = conn.exec_driver_sql(who).scalar()
            with killer.connect() as conn:
                conn.exec_driver_sql(kill % victim)
                conn.commit()
            monkeypatch.setattr(db_api, 'IDLE_PING_AFTER_S', 0.0)
            with engine.connect() as conn:
                assert conn.exec_driver_sql(who).scalar() != victim
        finally:
            engine.dispose()
            killer.dispose()
