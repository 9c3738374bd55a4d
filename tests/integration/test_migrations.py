"""The migrations on MariaDB and PostgreSQL: they build the schema the
models describe (indexes included), and the ones that can be undone go
down and up again (a migration that only works on SQLite, or whose
downgrade breaks a foreign key's index on MySQL, fails here)."""
import uuid

from alembic import autogenerate
from alembic import migration as alembic_migration
import pytest

from cinder_lite.db import api as db_api
from cinder_lite.db import migration
from cinder_lite.db import models
from tests.harness import cluster as cluster_mod
from tests.harness import util


@pytest.fixture(params=cluster_mod.KINDS)
def engine(request):
    kind = request.param
    try:
        cluster_mod.check_database(kind)
    except cluster_mod.ServiceUnavailable as e:
        util.skip_or_fail(str(e))
    name = 'cl_migrations_%s' % uuid.uuid4().hex[:12]
    url = cluster_mod.create_database(kind, name)
    engine = db_api.create_engine(url)
    yield engine
    engine.dispose()
    cluster_mod.drop_database(kind, name)


def _diff(engine):
    with engine.connect() as conn:
        ctx = alembic_migration.MigrationContext.configure(
            conn, opts={'compare_type': False})
        return autogenerate.compare_metadata(ctx, models.Base.metadata)


def test_migrations_match_models_and_go_down(engine):
    migration.upgrade(engine=engine)
    assert migration.current_revision(engine) == migration.head_revision()
    assert _diff(engine) == []
    # 0001 and 0002 have no downgrade
    migration.downgrade('0004', engine=engine)
    assert migration.current_revision(engine) == '0004'
    migration.upgrade(engine=engine)
    assert _diff(engine) == []


def test_0010_moves_metadata(engine):
    from tests.functional import test_database
    test_database.check_0010_moves_metadata(engine)


def test_0015_records_image_sources(engine):
    from tests.functional import test_database
    test_database.check_0015_records_image_sources(engine)


def test_0016_moves_attachment_marks(engine):
    from tests.functional import test_database
    test_database.check_0016_moves_attachment_marks(engine)
