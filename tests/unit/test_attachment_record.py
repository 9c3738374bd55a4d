"""``db.attachments.new``: a new attachment as a ``Record`` before it is
written; the statements PostgreSQL and MariaDB record a transition
with, and MariaDB's read that takes the volume's lock first."""
import datetime

import pytest
from sqlalchemy.dialects import postgresql

from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import models
from cinder_lite.db import query


def test_a_new_attachment_has_every_column_and_only_those():
    new = db_attachments.new({'id': 'a1', 'attach_status': 'reserved'})
    assert (new.id, new.attach_status, new.connector) == (
        'a1', 'reserved', None)
    with pytest.raises(TypeError, match='no attachment column bogus'):
        db_attachments.new({'id': 'a2', 'bogus': 1})


def test_the_recorded_transition_inserts_every_column_of_an_event():
    # (PostgreSQL's transition writes the event from EVENT_COLUMNS: an
    # event column added to _event and not there would go unwritten)
    event = db_attachments._event('a1', 'v1', 'p1', 'attaching', 'attached',
                                  'i1', 'h1', 'rw', 'why')
    assert sorted(db_attachments.EVENT_COLUMNS) == sorted(event)
    stmt = db_attachments._recorded_transition_statement(
        ('attaching',), ('attach_status', 'updated_at'))
    sql = str(stmt.compile(dialect=postgresql.dialect()))
    assert sql.startswith('WITH moved AS \n(UPDATE volume_attachments')
    assert 'RETURNING volume_attachments.id)' in sql
    assert sql.rstrip().endswith('FROM moved')
    assert stmt.get_execution_options()['preserve_rowcount']


def test_the_recorded_insert_writes_the_row_then_two_events():
    sql = str(db_attachments._recorded_insert_statement(2).compile(
        dialect=postgresql.psycopg.dialect()))
    assert sql.startswith('WITH inserted AS \n(INSERT INTO volume_attachments')
    assert '%(a_id)s' in sql and '%(e1_created_at)s' in sql
    # the events' ids are given in the order of their position
    assert sql.rstrip().endswith('ORDER BY rows.position')


def test_a_compound_statement_computes_the_defaults_of_its_parts():
    # (an UPDATE's updated_at is a Python-side default, which SQLAlchemy
    # computes when it executes the UPDATE itself; in a textual compound
    # statement the parameter has to compute it, or it would be NULL)
    lock = db_attachments.volume_lock('v1', becomes=db_attachments.ATTACHED)
    stmt = query.compound_read(lock.make(),
                               db_attachments._to_attach_statement())
    sql = stmt.element.text
    assert sql.startswith('BEGIN NOT ATOMIC UPDATE volumes SET ')
    assert 'IF ROW_COUNT() = 1 THEN SELECT ' in sql
    assert sql.endswith('; END IF; END')
    updated = stmt.element._bindparams['updated_at']
    assert isinstance(updated.effective_value, datetime.datetime)
    # the read's columns type its rows (JSON, datetimes, booleans): a
    # textual statement's rows are otherwise what the driver gives
    capabilities = models.Service.__table__.c.capabilities
    assert stmt.selected_columns['member__capabilities'].type is \
        capabilities.type


def test_a_compound_transition_records_only_what_it_found():
    stmt = db_attachments._compound_transition_statement(
        ('attaching',), ('attach_status', 'updated_at'))
    sql = stmt.text
    assert sql.startswith('BEGIN NOT ATOMIC UPDATE volume_attachments SET ')
    assert sql.endswith('WHERE row_count() = 1; END')
    assert stmt.get_execution_options()['preserve_rowcount']
    assert sorted(db_attachments.EVENT_COLUMNS) == sorted(
        k[2:] for k in stmt._bindparams if k.startswith('e_'))
