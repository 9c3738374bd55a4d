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
