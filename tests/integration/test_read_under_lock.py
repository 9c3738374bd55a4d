"""A read that takes its volume's row lock first
(``db_attachments.read_under``) on the database servers: on MariaDB the
lock and the read are one compound statement, the read run only when the
lock took the row; elsewhere two statements.  Either way a lock that
takes nothing refuses as ``lock_volume`` does, runs no read, writes
nothing and leaves the transaction usable; a lock that takes the row
writes what ``lock_volume`` writes and the read sees it."""
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from cinder_lite.common import exception
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import models
from tests.harness import cluster as cluster_mod
from tests.integration.test_attach_read_plan import HOSTS
from tests.integration.test_attach_read_plan import migrated
from tests.integration.test_attach_read_plan import volume_with_members

V = models.Volume


def _to_attach(session, volume_id, project_id=None):
    return db_attachments.volume_to_attach(
        session, volume_id, 'consumer', 'mode', 'cinder-volume',
        lock=db_attachments.volume_lock(
            volume_id, db_attachments.ATTACHABLE, project_id=project_id,
            becomes=db_attachments.CONNECTING))


def _volume(engine, volume_id):
    with orm.Session(engine) as session:
        return session.execute(sa.select(
            V.status, V.attach_seq, V.updated_at).where(
            V.id == volume_id)).one()


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_a_read_that_takes_the_lock(kind):
    with migrated(kind, 'cl_under') as engine:
        volume_id = volume_with_members(engine)
        before = _volume(engine, volume_id)
        with orm.Session(engine) as session, session.begin():
            volume, others, spec, fenced, qos, members = _to_attach(
                session, volume_id, project_id='p')
            # the read ran after the lock: it shows what the lock wrote
            assert (volume.status, volume.attach_seq) == (
                'attaching', before.attach_seq + 1)
            assert [m.host for m in members] == sorted(HOSTS)
            assert members[0].capabilities == {'pools': [{'name': 'pool'}]}
            assert (others.statuses, fenced) == (frozenset(), False)
        after = _volume(engine, volume_id)
        assert (after.status, after.attach_seq) == (
            'attaching', before.attach_seq + 1)
        # the lock's updated_at is computed at each execution
        assert after.updated_at is not None
        assert before.updated_at is None or after.updated_at > \
            before.updated_at


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_a_lock_that_takes_nothing_refuses_and_reads_nothing(kind):
    with migrated(kind, 'cl_under') as engine:
        volume_id = volume_with_members(engine)
        with orm.Session(engine) as session, session.begin():
            session.execute(sa.update(V).where(V.id == volume_id).values(
                status='error'))
        with orm.Session(engine) as session, session.begin():
            with pytest.raises(exception.InvalidVolume,
                               match='current status is error'):
                _to_attach(session, volume_id)
            # another project's volume is unknown to it
            with pytest.raises(exception.VolumeNotFound):
                _to_attach(session, volume_id, project_id='other')
            with pytest.raises(exception.VolumeNotFound):
                _to_attach(session, str(uuid.uuid4()))
            # through an attachment that is not there
            with pytest.raises(db_attachments.NotLocked):
                db_attachments.get_with_volume(
                    session, str(uuid.uuid4()),
                    lock=db_attachments.attachment_lock(str(uuid.uuid4())))
            # the transaction goes on
            assert session.execute(sa.select(V.status).where(
                V.id == volume_id)).scalar_one() == 'error'
        assert tuple(_volume(engine, volume_id))[:2] == ('error', 0)


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_a_change_that_reads_after_it(kind):
    # (a DELETE's: the detach, then the volume's other attachments, in
    # one round trip on MariaDB)
    with migrated(kind, 'cl_under') as engine:
        volume_id = volume_with_members(engine)
        ids = [str(uuid.uuid4()) for _ in range(3)]
        with orm.Session(engine) as session, session.begin():
            for n, (attachment_id, host) in enumerate(
                    zip(ids, ('h1', 'h1', 'h2'))):
                session.add(models.VolumeAttachment(
                    id=attachment_id, volume_id=volume_id, project_id='p',
                    instance_uuid=str(uuid.uuid4()), attached_host=host,
                    attach_mode='rw', attach_status='attached',
                    connection_info={'n': n}, deleted=False,
                    created_at=models.utcnow()))
        with orm.Session(engine) as session, session.begin():
            current = db_attachments.get(session, ids[0])
            expected = db_attachments.others_of(session, current)
            left, rows = db_attachments.transition_and_read(
                session, ids[0], 'detach',
                db_attachments.others_read(current), current=current)
            assert left == 'detached'
            assert [tuple(r) for r in rows] == [tuple(r) for r in expected]
            # the others, oldest first, the connection info of those on
            # its host only
            assert [(r.id, r.connection_info) for r in rows] == [
                (ids[1], {'n': 1}), (ids[2], None)]
            # a change that finds the attachment in another status reads
            # nothing and records nothing
            other = db_attachments.get(session, ids[1])
            with pytest.raises(exception.InvalidTransition):
                db_attachments.transition_and_read(
                    session, ids[1], 'connected',
                    db_attachments.others_read(other))
            # a read that names another attachment is refused
            with pytest.raises(ValueError):
                db_attachments.transition_and_read(
                    session, ids[1], 'detach',
                    db_attachments.others_read(current), current=other)
        with orm.Session(engine) as session:
            events = session.execute(sa.select(
                models.AttachmentEvent.attachment_id,
                models.AttachmentEvent.to_status)).all()
            assert [tuple(e) for e in events] == [(ids[0], 'detached')]
