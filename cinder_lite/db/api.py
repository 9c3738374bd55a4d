"""Engine and transaction scopes.

``writer()`` and ``reader()`` open one transaction each; every SQL function
in the db package runs inside one of them, so its transaction scope is
visible at the call.  On SQLite the writer begins with ``BEGIN IMMEDIATE``
(a deferred BEGIN that later writes fails with "database is locked" under
concurrency, busy timeout or not), the database runs in WAL mode and waits
on locks for ``busy_timeout``.  MySQL/MariaDB runs at READ COMMITTED, as
PostgreSQL does by default, so a compare-and-swap that waited on a row lock
re-reads the committed row.

Deadlocks, and Galera's certification failures: on a multi-writer Galera
cluster row locks are not replicated, so two transactions on two nodes
that lock the same row both get their lock, and the one that commits
second is refused with error 1213 (the deadlock error; InnoDB and
PostgreSQL raise it, or 40P01 / 40001, for ordinary deadlocks too).  The
transaction is gone as a whole, and the answer is to run it again from
its start: ``run_writer(fn)`` runs ``fn(session)`` in one writer
transaction and, when the database refuses it as a deadlock, rolls back
and runs ``fn`` again in a new transaction, up to ``[database]
db_max_retries`` times, waiting a jittered, growing pause between
attempts (each retry logged at WARNING and counted in
``deadlock_retries()``).  ``fn`` must therefore do nothing outside the
database (no RPC, no driver call, no notification): whatever it decides
is recorded or rolled back with the transaction, and the caller acts on
what it returns once it committed.  Inside an open transaction of the
same thread ``run_writer`` does not retry: the outer one is refused, and
its own retry (if it has one) starts everything again.  A connection
lost before the COMMIT was sent is retried the same way (the server
rolled the transaction back; behind HAProxy, the pooled connections to
a Galera node that died fail so once, and the new ones reach another
node); one lost during the COMMIT is not, as the transaction may have
committed.

A refusal may also come in the middle of a statement's answer: on a
Galera node, a transaction aborted by another node's commit while a
compound statement of ours runs gets the statement's rows and then the
deadlock.  PyMySQL's connections use ``mysql_cursor.Cursor``, which reads
that last part at once and raises it as the statement's error; without
it SQLAlchemy dropped it when it closed the cursor, and the rest of the
transaction committed on its own in a new one.
"""
import contextlib
import logging
import os
import random
import threading
import time

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import orm

from cinder_lite.db import mysql_columns
from cinder_lite.db import mysql_cursor

# What a statement raises when the database is out of reach (down,
# restarting, the connection lost), not because the statement is wrong:
# the request may be retried (the API answers 503).
UNAVAILABLE = (sa.exc.OperationalError, sa.exc.InterfaceError,
               sa.exc.DisconnectionError, sa.exc.TimeoutError)

LOG = logging.getLogger(__name__)

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

# Deadlock retries: attempts after the first (``[database] db_max_retries``
# once configured; -1 there, unbounded in oslo.db, is capped here), and the
# pause before retry n: uniform in [0, min(cap, base * 2**n)] ("full
# jitter": writers refused together do not come back together).
DEADLOCK_RETRIES = 20
DEADLOCK_RETRIES_CAP = 100
DEADLOCK_PAUSE_BASE_S = 0.01
DEADLOCK_PAUSE_CAP_S = 0.5
# MySQL/MariaDB: ER_LOCK_DEADLOCK (also Galera's certification failure and
# brute-force abort); PostgreSQL: deadlock_detected, serialization_failure
MYSQL_DEADLOCK_ERRORS = (1213,)
PG_DEADLOCK_STATES = ('40P01', '40001')
_deadlock_retries = DEADLOCK_RETRIES
_retried = 0
_retried_lock = threading.Lock()
_local = threading.local()


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
            # an error the server sends after a statement's rows (a
            # Galera abort) is raised, not dropped at the cursor's close
            kwargs['connect_args'] = {'cursorclass': mysql_cursor.Cursor}
    engine = sa.create_engine(url, **kwargs)
    if url.get_backend_name() == 'sqlite':
        _sqlite_setup(engine)
    else:
        _ping_idle_connections(engine)
        if url.get_backend_name() in ('mysql', 'mariadb'):
            _galera_causal_reads(engine)
    return engine


# wsrep_sync_wait on a Galera node: reads (1) and UPDATE/DELETE (2) first
# wait until the node applied every write the cluster committed before
# them.  Without it a node may still show a row as it was before a commit
# made through another node a moment ago (Galera certifies synchronously
# and applies asynchronously): a volume service told by an API on node 2
# to disconnect an attachment it just marked detaching reads it on node 1
# as still attached.
GALERA_SYNC_WAIT = 3


def _galera_causal_reads(engine):
    """On a connection to a Galera node (``wsrep_on``), set
    ``wsrep_sync_wait`` for the session; nothing on other servers."""

    @event.listens_for(engine, 'connect')
    def _on_connect(dbapi_conn, _record):
        cur = dbapi_conn.cursor()
        try:
            try:
                cur.execute('SELECT @@global.wsrep_on')
                galera = bool(cur.fetchone()[0])
            except Exception:
                # (MySQL, or MariaDB built without wsrep)
                galera = False
            if galera:
                cur.execute('SET SESSION wsrep_sync_wait = %d'
                            % GALERA_SYNC_WAIT)
        finally:
            cur.close()
        dbapi_conn.commit()


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
        _set_deadlock_retries(conf.database.db_max_retries)
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
    """One read-write transaction, committed on success.  Not retried by
    itself: see ``run_writer``."""
    # bounded like the busy handler: past it, SQLite's own lock decides
    queued = _serialise_writers and _sqlite_writers.acquire(
        timeout=SQLITE_BUSY_TIMEOUT_S)
    _local.depth = getattr(_local, 'depth', 0) + 1
    try:
        with _writer_maker() as session, session.begin():
            yield session
    finally:
        _local.depth -= 1
        if queued:
            _sqlite_writers.release()


def _set_deadlock_retries(value):
    global _deadlock_retries
    if value is None:
        value = DEADLOCK_RETRIES
    _deadlock_retries = DEADLOCK_RETRIES_CAP if value < 0 else \
        min(value, DEADLOCK_RETRIES_CAP)


def is_deadlock(exc):
    """Whether ``exc`` (from SQLAlchemy) is the database refusing the
    transaction as a deadlock: the transaction was rolled back as a
    whole and may be run again."""
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    orig = exc.orig
    code = getattr(orig, 'args', (None,))[0] if getattr(
        orig, 'args', None) else None
    if code in MYSQL_DEADLOCK_ERRORS:
        return True
    return getattr(orig, 'sqlstate', None) in PG_DEADLOCK_STATES


def deadlock_attempts():
    """How many times ``run_writer`` runs a transaction the database
    refuses as a deadlock before it gives up (the first included)."""
    return _deadlock_retries + 1


def deadlock_retries():
    """Transactions this process ran again after a deadlock."""
    return _retried


def in_transaction():
    """Whether this thread has a writer transaction open."""
    return getattr(_local, 'depth', 0) > 0


def run_writer(fn, *args, **kwargs):
    """``fn(session, *args, **kwargs)`` in one writer transaction, run
    again from its start in a new one when the database refuses it as a
    deadlock (see the module's docstring); returns what ``fn`` returns
    once committed.  ``fn`` must have no effect outside the database."""
    if in_transaction():
        # the outer transaction is the unit: it is refused as a whole
        with writer() as session:
            return fn(session, *args, **kwargs)
    attempt = 0
    while True:
        ran = []
        try:
            with writer() as session:
                result = fn(session, *args, **kwargs)
                # (from here on the COMMIT)
                ran.append(True)
            return result
        except sa.exc.DBAPIError as e:
            why = _why_again(e, committing=bool(ran))
            if why is None or attempt >= _deadlock_retries:
                if attempt and why is not None:
                    LOG.error('database %s in %s: still refused after %d '
                              'attempts; giving up', why, _name(fn),
                              attempt + 1)
                raise
            attempt += 1
            pause = random.uniform(0, min(
                DEADLOCK_PAUSE_CAP_S,
                DEADLOCK_PAUSE_BASE_S * 2 ** attempt))
            global _retried
            with _retried_lock:
                _retried += 1
            LOG.warning('database %s (attempt %d of %d) in %s: the '
                        'transaction is run again in %.3f s (%s)', why,
                        attempt, _deadlock_retries + 1, _name(fn), pause,
                        getattr(e.orig, 'args', e.orig))
            time.sleep(pause)


def _why_again(exc, committing):
    """Why the transaction that failed with ``exc`` may run again
    (words for the log), or None.  A deadlock: the database rolled it
    back.  A connection lost (SQLAlchemy invalidated it) before the
    COMMIT was sent: the server rolled back what it had, as a server
    does with the transaction of a connection that goes (the pooled
    connections to a Galera node that died, behind HAProxy now routing
    to another).  Lost during the COMMIT, the transaction may have
    committed: not run again (a reservation made twice, a delete
    answered 404), the caller answers as for any database error."""
    if is_deadlock(exc):
        return 'deadlock'
    if getattr(exc, 'connection_invalidated', False) and not committing:
        return 'connection lost before the commit'
    return None


def _name(fn):
    return getattr(fn, '__qualname__', None) or repr(fn)


@contextlib.contextmanager
def reader():
    """One read-only transaction."""
    with _reader_maker() as session, session.begin():
        yield session
