"""``db.query.one_of``: an IN of values fixed in a statement built once,
which SQLAlchemy does not write again at each execution, and which
matches what ``in_`` matches; ``query.fixed``, the constants written
into the SQL."""
import contextlib

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


@contextlib.contextmanager
def _rows_of(statuses):
    """(An SQLite connection in a transaction, a table of rows ``id``,
    ``status`` holding ``statuses`` in order)."""
    engine = sa.create_engine('sqlite://')
    metadata = sa.MetaData()
    rows = sa.Table('rows', metadata, sa.Column('id', sa.Integer),
                    sa.Column('status', sa.String(32)))
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(rows.insert(), [{'id': i, 'status': s}
                                     for i, s in enumerate(statuses)])
        yield conn, rows


def test_it_matches_what_in_matches():
    with _rows_of(['a', 'b', 'c', 'a', None]) as (conn, rows):
        for values in (['a'], ['a', 'c'], ['x'], ['a', 'b', 'c']):
            def ids(condition):
                return sorted(conn.execute(
                    sa.select(rows.c.id).where(condition)).scalars())
            assert ids(query.one_of(rows.c.status, values)) == \
                ids(rows.c.status.in_(values)), values


@pytest.mark.parametrize('dialect', [mysql.dialect(), postgresql.dialect(),
                                     sqlite.dialect()],
                         ids=['mysql', 'postgresql', 'sqlite'])
def test_plain_words_and_ints_are_written_into_the_sql(dialect):
    stmt = sa.select(_ROWS.c.id).where(
        query.one_of(_ROWS.c.status, ['in-use', 'error_attaching']),
        _ROWS.c.id > query.fixed(7))
    compiled = stmt.compile(dialect=dialect)
    assert not compiled.params
    assert "'in-use', 'error_attaching'" in str(compiled)
    # the attach path's locks and probes carry no constant as a parameter
    lock = db_attachments._lock_statement(
        db_attachments.ATTACHABLE, False, db_attachments.CONNECTING)
    assert set(lock.compile(dialect=dialect).params) == {'volume_id',
                                                         'updated_at'}
    probes = sa.select(*db_attachments._status_columns(
        sa.bindparam('volume_id')))
    assert set(probes.compile(dialect=dialect).params) == {'volume_id'}


@pytest.mark.parametrize('value', ["it's", 'a\\b', 'two words', 'é', True,
                                   None, 1.5])
def test_anything_else_stays_a_parameter(value):
    compiled = sa.select(query.fixed(value)).compile(
        dialect=mysql.dialect())
    assert list(compiled.params.values()) == [value]


def test_fixed_values_match_what_parameters_match():
    with _rows_of(['in-use', "it's", 'a_b', '', None]) as (conn, rows):
        for value in ('in-use', "it's", 'a_b', '', 'missing'):
            assert conn.execute(sa.select(rows.c.id).where(
                rows.c.status == query.fixed(value))).scalars().all() == \
                conn.execute(sa.select(rows.c.id).where(
                    rows.c.status == value)).scalars().all(), value
        assert conn.execute(sa.select(rows.c.id).where(
            rows.c.id >= query.fixed(3))).scalars().all() == [3, 4]
