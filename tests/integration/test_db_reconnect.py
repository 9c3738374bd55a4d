"""A pooled connection the server dropped while it sat idle is replaced
before use (cinder_lite pings idle connections instead of every one)."""
import uuid

import pytest

from cinder_lite.db import api as db_api
from tests.harness import cluster as cluster_mod

QUERIES = {'mysql': ('SELECT CONNECTION_ID()', 'KILL %d'),
           'postgresql': ('SELECT pg_backend_pid()',
                          'SELECT pg_terminate_backend(%d)')}


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_idle_connection_killed_by_the_server_is_replaced(kind,
                                                          monkeypatch):
    cluster_mod.require_services(kind)
    name = 'cl_reconnect_%s' % uuid.uuid4().hex[:8]
    url = cluster_mod.create_database(kind, name)
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
        cluster_mod.drop_database(kind, name)
