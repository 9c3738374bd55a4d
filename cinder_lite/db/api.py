"""Engine and transaction scopes.

``writer()`` and ``reader()`` open one transaction each; every SQL function
in the db package runs inside one of them, so its transaction scope is
visible at the call.  On SQLite the writer begins with ``BEGIN IMMEDIATE``
(a deferred BEGIN that later writes fails with "database is locked" under
concurrency, busy timeout or not), the database runs in WAL mode and waits
on locks for ``busy_timeout``.  MySQL/MariaDB runs at READ COMMITTED, as
PostgreSQL does by default, so a compare-and-swap that waited on a row lock
re-reads the committed row.
"""
import contextlib
import os
import threading
import time

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import orm

from cinder_lite.db import mysql_columns

SQLITE_BUSY_TIMEOUT_S = 30
# Pooled connections idle longer than this are pinged before use.
IDLE_PING_AFTER_S = 5.0

_lock = threading.Lock()
# SQLite: writers of this process queue here rather than in SQLite's busy
# handler, which polls with sleeps of up to 100 ms (a p99 of a second and
# more with 8 concurrent writers).  Other processes on the same file still
# meet the busy handler.
_sqlite_writers = threading.RLock()
_serialise_writers = False
_engine = None
_writer_maker = None
_reader_maker = None


def _sqlite_setup(engine):
    @event.listens_for(engine, 'connect')
    def _on_connect(dbapi_conn, _record):
        # Take over transaction control from pysqlite so BEGIN is ours.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute('PRAGMA journal_mode=WAL')
        cur.execute('PRAGMA busy_timeout=%d' % (SQLITE_BUSY_TIMEOUT_S * 1000))
        cur.execute('PRAGMA foreign_keys=ON')
        cur.execute('PRAGMA synchronous=NORMAL')
        cur.close()

    @event.listens_for(engine, 'begin')
    def _on_begin(conn):
        if conn.get_execution_options().get('cl_read_only'):
            conn.exec_driver_sql('BEGIN')
        else:
            conn.exec_driver_sql('BEGIN IMMEDIATE')


def create_engine(url, conf=None):
    url = sa.engine.make_url(url)
    kwargs = {'future': True}
    if url.get_backend_name() == 'sqlite':
        kwargs['connect_args'] = {'timeout': SQLITE_BUSY_TIMEOUT_S,
                                  'check_same_thread': False}
        if url.database and url.database != ':memory:':
            # the default file lives under state_path, which a fresh node
            # has not made yet
            os.makedirs(os.path.dirname(os.path.abspath(url.database)),
                        exist_ok=True)
    else:
        if conf is not None:
            kwargs['pool_size'] = conf.database.max_pool_size or 5
            kwargs['max_overflow'] = conf.database.max_overflow or 10
            kwargs['pool_timeout'] = conf.database.pool_timeout or 30
            kwargs['pool_recycle'] = conf.database.connection_recycle_time
        if url.get_backend_name() in ('mysql', 'mariadb'):
            kwargs['isolation_level'] = 'READ COMMITTED'
        # Every transaction here ends with its COMMIT or ROLLBACK before
        # the connection goes back (a Session or Connection closed with
        # its transaction open rolls it back itself), so the pool's own
        # ROLLBACK on check-in is a second round trip for nothing: on
        # MariaDB one per transaction, a seventh of an attach cycle's
        # statements.
        kwargs['pool_reset_on_return'] = None
        if url.get_driver_name() == 'pymysql':
            mysql_columns.remember()
    engine = sa.create_engine(url, **kwargs)
    if url.get_backend_name() == 'sqlite':
        _sqlite_setup(engine)
    else:
        _ping_idle_connections(engine)
    return engine


def _ping_idle_connections(engine):
    """Check a pooled connection before use when it sat idle for a while
    (the server may have closed it or restarted meanwhile).  A busy
    connection is not pinged: SQLAlchemy's pre-ping would add a round trip
    to every transaction, about 1 ms of each few on MariaDB.  A connection
    that fails anyway is invalidated by SQLAlchemy and replaced."""

    @event.listens_for(engine, 'checkin')
    def _on_checkin(_dbapi_conn, record):
        record.info['cl_idle_since'] = time.monotonic()

    @event.listens_for(engine, 'checkout')
    def _on_checkout(dbapi_conn, record, proxy):
        idle_since = record.info.get('cl_idle_since')
        if idle_since is None or \
                time.monotonic() - idle_since < IDLE_PING_AFTER_S:
            return
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute('SELECT 1')
        except Exception:
            # tell the pool to reconnect and retry the checkout
            raise sa.exc.DisconnectionError()
        finally:
            try:
                cursor.close()
            except Exception:
                pass


def configure(conf):
    """Create the process-wide engine from ``[database] connection``."""
    global _engine, _writer_maker, _reader_maker, _serialise_writers
    with _lock:
        if _engine is not None:
            _engine.dispose()
        _engine = create_engine(conf.database.connection, conf)
        _serialise_writers = _engine.dialect.name == 'sqlite'
        _writer_maker = orm.sessionmaker(bind=_engine,
                                         expire_on_commit=False)
        _reader_maker = orm.sessionmaker(
            bind=_engine.execution_options(cl_read_only=True),
            expire_on_commit=False)
    return _engine


def get_engine():
    if _engine is None:
        raise RuntimeError('database not configured')
    return _engine


def dispose():
    global _engine
    with _lock:
        if _engine is not None:
            _engine.dispose()
        _engine = None


def ping(session):
    """Whether the database answers: ``SELECT 1`` (raises if not)."""
    session.execute(sa.text('SELECT 1'))


@contextlib.contextmanager
def writer():
    """One read-write transaction, committed on success."""
    # bounded like the busy handler: past it, SQLite's own lock decides
    queued = _serialise_writers and _sqlite_writers.acquire(
        timeout=SQLITE_BUSY_TIMEOUT_S)
    try:
        with _writer_maker() as session, session.begin():
            yield session
    finally:
        if queued:
            _sqlite_writers.release()


@contextlib.contextmanager
def reader():
    """One read-only transaction."""
    with _reader_maker() as session, session.begin():
        yield session
