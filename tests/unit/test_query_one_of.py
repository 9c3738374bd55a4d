"""``db.query.one_of``: an IN of values fixed in a statement built once,
which SQLAlchemy does not write again at each execution, and which
matches what ``in_`` matches."""
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import query

_ROWS = sa.table('rows', sa.column('id', sa.Integer),
                 sa.column('status', sa.String(32)))


@pytest.mark.parametrize('dialect', [mysql.dialect(), postgresql.dialect(),
                                     sqlite.dialect()],
                         ids=['mysql', 'postgresql', 'sqlite'])
def test_nothing_is_left_to_expand_at_execution(dialect):
    expanding = sa.select(_ROWS.c.id).where(_ROWS.c.status.in_(['a', 'b']))
    assert expanding.compile(dialect=dialect).post_compile_params
    fixed = sa.select(_ROWS.c.id).where(query.one_of(_ROWS.c.status,
                                                     ['a', 'b']))
    assert not fixed.compile(dialect=dialect).post_compile_params
    # the statements of the attach path that use it
    allowed = db_attachments.ATTACHABLE
    for stmt in (db_attachments._lock_statement(allowed, False),
                 db_attachments._lock_statement(
                     allowed, False, db_attachments.CONNECTING),
                 db_attachments._lock_statement(
                     allowed, False, db_attachments.DISCONNECTED),
                 db_attachments._lock_for_attachment_statement(
                     allowed, db_attachments.ATTACHED),
                 db_attachments._lock_for_attachment_statement(
                     allowed, db_attachments.STARTS_DETACHING),
                 db_attachments._transition_statement(
                     ('attaching', 'attached'), ('attach_status',))):
        assert not stmt.compile(dialect=dialect).post_compile_params


def test_it_matches_what_in_matches():
    engine = sa.create_engine('sqlite://')
    metadata = sa.MetaData()
    rows = sa.Table('rows', metadata, sa.Column('id', sa.Integer),
                    sa.Column('status', sa.String(32)))
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(rows.insert(), [
            {'id': i, 'status': s}
            for i, s in enumerate(['a', 'b', 'c', 'a', None])])
        for values in (['a'], ['a', 'c'], ['x'], ['a', 'b', 'c']):
            def ids(condition):
                return sorted(conn.execute(
                    sa.select(rows.c.id).where(condition)).scalars())
            assert ids(query.one_of(rows.c.status, values)) == \
                ids(rows.c.status.in_(values)), values
