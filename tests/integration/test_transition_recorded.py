"""``db_attachments.transition`` on the database servers: the
compare-and-swap of an attachment's status and its event.  They are
one statement: on PostgreSQL the UPDATE in a data-modifying WITH, the
event inserted from what it returned; on MariaDB a compound statement,
the event inserted when ROW_COUNT() says the UPDATE found the row
(SQLite and MySQL proper take two).  Either way a change is
recorded exactly once with what it changed, and a compare-and-swap that
finds the attachment in another status changes nothing and records
nothing."""
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from cinder_lite.common import exception
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import models
from tests.harness import cluster as cluster_mod
from tests.integration.test_attach_read_plan import volume_with_members
from tests.integration.test_attach_read_plan import migrated

E = models.AttachmentEvent


def _attachment(engine, status):
    """(A multiattach volume, an attachment of it in ``status`` on
    host h1, read-only)."""
    volume_id, attachment_id = volume_with_members(engine), \
        str(uuid.uuid4())
    with orm.Session(engine) as session, session.begin():
        session.add(models.VolumeAttachment(
            id=attachment_id, volume_id=volume_id, project_id='p',
            instance_uuid=str(uuid.uuid4()), attached_host='h1',
            attach_mode='ro', attach_status=status, deleted=False,
            created_at=models.utcnow()))
    return volume_id, attachment_id


def _statements(engine, work):
    seen = []

    def count(conn, cursor, statement, *args):
        seen.append(statement)
    sa.event.listen(engine, 'before_cursor_execute', count)
    try:
        with orm.Session(engine) as session, session.begin():
            answer = work(session)
    finally:
        sa.event.remove(engine, 'before_cursor_execute', count)
    return answer, seen


def _one(engine):
    """How many statements a change and its events take on ``engine``."""
    return 1 if engine.dialect.name == 'postgresql' or getattr(
        engine.dialect, 'is_mariadb', False) else 2


def _events(engine, attachment_id):
    with orm.Session(engine) as session:
        return session.execute(sa.select(
            E.from_status, E.to_status, E.attached_host, E.attach_mode,
            E.reason, E.project_id, E.volume_id).where(
            E.attachment_id == attachment_id).order_by(E.id)).all()


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_a_transition_and_its_event(kind):
    with migrated(kind, 'cl_transition') as engine:
        volume_id, attachment_id = _attachment(engine, 'attaching')

        def complete(session):
            current = db_attachments.get(session, attachment_id)
            return db_attachments.transition(
                session, attachment_id, 'complete',
                values={'attach_time': models.utcnow()},
                reason='completed', current=current), current
        (target, current), seen = _statements(engine, complete)
        assert target == 'attached'
        # the caller's record shows the change
        assert current.attach_status == 'attached'
        writes = [s for s in seen if not s.startswith('SELECT')]
        assert len(writes) == _one(engine), seen
        assert _events(engine, attachment_id) == [
            ('attaching', 'attached', 'h1', 'ro', 'completed', 'p',
             volume_id)]

        # the attachment is attached now: 'connected' leaves only from
        # attaching; the refusal is caught inside the transaction, which
        # then commits whatever the statement wrote
        def connected(session):
            current = db_attachments.get(session, attachment_id)
            with pytest.raises(exception.InvalidTransition):
                db_attachments.transition(
                    session, attachment_id, 'connected', current=current)
            return current
        current, seen = _statements(engine, connected)
        assert current.attach_status == 'attached'
        assert any(s.startswith(('UPDATE', 'WITH', 'BEGIN NOT ATOMIC'))
                   for s in seen), seen
        with orm.Session(engine) as session:
            row = session.get(models.VolumeAttachment, attachment_id)
            assert row.attach_status == 'attached'
        assert len(_events(engine, attachment_id)) == 1

        # without the caller's record it reads the attachment first
        def detach(session):
            return db_attachments.transition(
                session, attachment_id, 'begin_detaching')
        target, seen = _statements(engine, detach)
        assert target == 'detaching'
        assert [e[:2] for e in _events(engine, attachment_id)] == [
            ('attaching', 'attached'), ('attached', 'detaching')]


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_a_new_attachment_written_as_its_connect_leaves_it(kind):
    with migrated(kind, 'cl_transition') as engine:
        volume_id, _ = _attachment(engine, 'attached')
        new = db_attachments.new({
            'id': str(uuid.uuid4()), 'volume_id': volume_id,
            'project_id': 'p', 'instance_uuid': str(uuid.uuid4()),
            'attach_status': 'reserved', 'attach_mode': 'rw',
            'service_owned': False, 'deleted': False,
            'created_at': models.utcnow()})

        def connect(session):
            return db_attachments.create_moved(
                session, new, 'connect', {
                    'attached_host': 'h2', 'export_host': 'node@ma',
                    'connector': {'host': 'h2', 'mode': 'rw'},
                    'status_reason': None, 'operation': None})
        written, seen = _statements(engine, connect)
        assert written.attach_status == 'attaching'
        assert len(seen) == _one(engine), seen
        with orm.Session(engine) as session:
            row = session.get(models.VolumeAttachment, new.id)
            assert (row.attach_status, row.attached_host,
                    row.export_host, row.connector) == (
                'attaching', 'h2', 'node@ma',
                {'host': 'h2', 'mode': 'rw'})
        # its creation, then the connect, in that order
        assert _events(engine, new.id) == [
            (None, 'reserved', None, 'rw', None, 'p', volume_id),
            ('reserved', 'attaching', 'h2', 'rw', None, 'p', volume_id)]


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_a_new_reservation_and_its_event(kind):
    with migrated(kind, 'cl_transition') as engine:
        volume_id, _ = _attachment(engine, 'attached')
        attachment_id = str(uuid.uuid4())

        def reserve(session):
            return db_attachments.create(session, {
                'id': attachment_id, 'volume_id': volume_id,
                'project_id': 'p', 'attach_status': 'reserved',
                'service_owned': True, 'deleted': False,
                'created_at': models.utcnow()})
        written, seen = _statements(engine, reserve)
        assert written.attach_status == 'reserved'
        assert len(seen) == _one(engine), seen
        with orm.Session(engine) as session:
            row = session.get(models.VolumeAttachment, attachment_id)
            assert (row.attach_status, row.service_owned) == (
                'reserved', True)
        assert _events(engine, attachment_id) == [
            (None, 'reserved', None, None, None, 'p', volume_id)]
