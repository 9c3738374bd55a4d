"""Schema migrations (alembic), run by ``cinder-lite-manage db sync`` and at
the start of the embedded service."""
import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration
from alembic import script

from cinder_lite.db import api as db_api

_MIGRATIONS = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(connection=None):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', _MIGRATIONS)
    cfg.attributes['connection'] = connection
    return cfg


def upgrade(revision='head', engine=None):
    engine = engine or db_api.get_engine()
    with engine.begin() as conn:
        command.upgrade(_config(conn), revision)


def downgrade(revision, engine=None):
    """Undo migrations down to ``revision`` ('base': all of them)."""
    engine = engine or db_api.get_engine()
    with engine.begin() as conn:
        command.downgrade(_config(conn), revision)


def current_revision(engine=None):
    engine = engine or db_api.get_engine()
    with engine.connect() as conn:
        return migration.MigrationContext.configure(conn).get_current_revision()


def head_revision():
    return script.ScriptDirectory.from_config(_config()).get_current_head()
