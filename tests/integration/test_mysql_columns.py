"""``db.mysql_columns`` on a real MariaDB: the engine cinder_lite makes
remembers column descriptions, and results read through remembered ones
are what they are without."""
import datetime

import sqlalchemy as sa

from cinder_lite.db import api as db_api
from cinder_lite.db import mysql_columns
from tests.harness import cluster as cluster_mod

T = sa.Table('columns_probe', sa.MetaData(),
             sa.Column('id', sa.Integer, primary_key=True),
             sa.Column('name', sa.String(255)),
             sa.Column('seen', sa.DateTime),
             sa.Column('flag', sa.Boolean),
             sa.Column('doc', sa.JSON))


def test_results_read_through_remembered_columns(monkeypatch):
    with cluster_mod.scratch_database('mysql', 'cl_columns') as url:
        engine = db_api.create_engine(url)
        try:
            T.metadata.create_all(engine)
            when = datetime.datetime(2026, 11, 26, 18, 0, 1)
            with engine.begin() as conn:
                conn.execute(sa.insert(T), [
                    {'id': 1, 'name': 'a', 'seen': when, 'flag': True,
                     'doc': {'k': [1, 2]}},
                    {'id': 2, 'name': None, 'seen': None, 'flag': False,
                     'doc': None}])
            monkeypatch.setattr(mysql_columns, '_known', {})
            stmt = sa.select(T).order_by(T.c.id)
            labelled = sa.select(T.c.name.label('other_name'),
                                 T.c.id).order_by(T.c.id)
            with engine.connect() as conn:
                first = conn.execute(stmt).all()
                kept = dict(mysql_columns._known)
                again = conn.execute(stmt).all()
                other = conn.execute(labelled)
                other_keys, other_rows = list(other.keys()), other.all()
            # the first read parsed and kept its five columns; the second
            # found them all
            assert len(kept) == 5
            assert all(mysql_columns._known[k] is v for k, v in kept.items())
            assert first == again == [
                (1, 'a', when, True, {'k': [1, 2]}),
                (2, None, None, False, None)]
            # a column under another label is another description
            assert other_keys == ['other_name', 'id']
            assert other_rows == [('a', 1), (None, 2)]
            assert len(mysql_columns._known) == 6
        finally:
            engine.dispose()
