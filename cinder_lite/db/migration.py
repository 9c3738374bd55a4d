"""Schema migrations (alembic), run by ``cinder-lite-manage db sync`` and at
the start of the embedded service."""
import contextlib
import os

import sqlalchemy as sa
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


@contextlib.contextmanager
def _migrating(engine):
    """A connection in a transaction for the migrations.  On SQLite the
    migrations that change a column rebuild the table (copy, drop,
    rename), and dropping a table that other rows refer to fails while
    foreign keys are enforced: they are off while the migrations run
    (set outside the transaction, where SQLite takes the pragma), checked
    before the commit, and on again after."""
    with engine.connect() as conn:
        sqlite = conn.dialect.name == 'sqlite'
        raw = conn.connection.dbapi_connection
        if sqlite:
            raw.execute('PRAGMA foreign_keys=OFF')
        try:
            with conn.begin():
                yield conn
                if sqlite:
                    broken = conn.exec_driver_sql(
                        'PRAGMA foreign_key_check').all()
                    if broken:
                        raise RuntimeError(
                            'the migration broke foreign keys: %s'
                            % broken[:5])
        finally:
            if sqlite:
                raw.execute('PRAGMA foreign_keys=ON')


def upgrade(revision='head', engine=None):
    engine = engine or db_api.get_engine()
    with _migrating(engine) as conn:
        command.upgrade(_config(conn), revision)


def downgrade(revision, engine=None):
    """Undo migrations down to ``revision`` ('base': all of them)."""
    engine = engine or db_api.get_engine()
    with _migrating(engine) as conn:
        command.downgrade(_config(conn), revision)


def current_revision(engine=None):
    engine = engine or db_api.get_engine()
    with engine.connect() as conn:
        return migration.MigrationContext.configure(conn).get_current_revision()


def head_revision():
    return script.ScriptDirectory.from_config(_config()).get_current_head()


def missing_schema(url):
    """Why the database at ``url`` cannot be used yet (it has no schema),
    in words that name the fix; None when it has one.  Creates nothing: a
    SQLite file that does not exist is not made."""
    url = sa.engine.make_url(url)
    shown = url.render_as_string(hide_password=True)
    fix = ('run "cinder-lite-manage db sync" (with the --config-file of '
           'the services that use it), or pass the --config-file that '
           'names the database you meant')
    if url.get_backend_name() == 'sqlite' and url.database not in (
            None, '', ':memory:') and not os.path.exists(url.database):
        return 'The database at %s does not exist: %s.' % (shown, fix)
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            # (read directly: alembic's MigrationContext logs two INFO
            # lines for every command)
            revision = sa.inspect(conn).has_table('alembic_version') and \
                conn.execute(sa.text(
                    'SELECT version_num FROM alembic_version')).scalar()
    finally:
        engine.dispose()
    if not revision:
        return 'The database at %s has no schema: %s.' % (shown, fix)
    return None
