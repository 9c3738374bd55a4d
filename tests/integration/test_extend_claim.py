"""An extend's claim on its volume holds against an attachment change
committed while it claims, on the database servers (where writers do not
queue as on SQLite).  The stateful fuzzer once left a volume ``extending``
for good: a detach's lock, committed between the volume service's read of
the volume and its claim, moved the row's ``updated_at``, so the claim
found the row changed and the extend was dropped."""
import threading

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import migration
from cinder_lite.db import models
from cinder_lite.db import volumes as db_volumes
from tests.harness import cluster as cluster_mod
from tests.integration.test_attach_read_plan import typed_volume


@pytest.mark.parametrize('kind', cluster_mod.KINDS)
def test_an_attachment_change_during_the_claim_does_not_drop_the_extend(
        kind):
    with cluster_mod.scratch_database(kind, 'cl_claim') as url:
        _claim_while_attachments_change(url)


def _claim_while_attachments_change(url):
    engine = db_api.create_engine(url)
    other = db_api.create_engine(url)
    try:
        migration.upgrade(engine=engine)
        with orm.Session(engine) as session, session.begin():
            volume_id = typed_volume(session, pending_size=2,
                                     status='extending',
                                     updated_at=models.utcnow())

        def attachment_change():
            # what every change to the volume's attachments starts with
            with orm.Session(other) as session, session.begin():
                db_attachments.lock_volume(session, volume_id, load=False)

        changer = []

        def between(conn, cursor, statement, *args):
            # right before the claim: another transaction changes the
            # volume's attachments and commits, if it can (1 s)
            if statement.startswith('UPDATE volumes SET updated_at') \
                    and not changer:
                changer.append(threading.Thread(target=attachment_change))
                changer[0].start()
                changer[0].join(1.0)
        sa.event.listen(engine, 'before_cursor_execute', between)
        with orm.Session(engine, expire_on_commit=False) as session, \
                session.begin():
            row, claimed = db_volumes.claim_extend(session, volume_id, 2)
        assert changer, 'the claim ran no UPDATE'
        assert claimed and row.status == 'extending'
        # the change went ahead once the claim committed
        changer[0].join(30)
        assert not changer[0].is_alive()
        with orm.Session(engine) as session:
            assert session.get(models.Volume, volume_id).attach_seq == 1
    finally:
        engine.dispose()
        other.dispose()
