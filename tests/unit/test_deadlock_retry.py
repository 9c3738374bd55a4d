"""``db.api.run_writer``: a transaction the database refuses as a deadlock
(MariaDB/Galera 1213, PostgreSQL 40P01/40001) runs again from its start
in a new transaction, what the refused attempts wrote is gone, retries are
bounded, and a transaction inside another is not retried on its own.

On a real SQLite file; the refusal is raised by the transaction's body as
SQLAlchemy wraps the driver's error.  The refusal by a real Galera
cluster is tests/integration/test_galera.py's."""
import types

import pymysql
import pytest
import sqlalchemy as sa

from cinder_lite.db import api as db_api


def _conf(path, retries):
    return types.SimpleNamespace(database=types.SimpleNamespace(
        connection='sqlite:///%s' % path, db_max_retries=retries))


@pytest.fixture
def database(tmp_path, monkeypatch):
    for name in ('_engine', '_writer_maker', '_reader_maker',
                 '_serialise_writers', '_deadlock_retries'):
        monkeypatch.setattr(db_api, name, getattr(db_api, name))
    monkeypatch.setattr(db_api, 'DEADLOCK_PAUSE_BASE_S', 0.001)
    engine = db_api.configure(_conf(tmp_path / 'db.sqlite', 3))
    with db_api.writer() as session:
        session.execute(sa.text('CREATE TABLE t (n INTEGER)'))
    yield engine
    engine.dispose()


def _deadlock(code=1213):
    return sa.exc.OperationalError(
        'COMMIT', {}, pymysql.err.OperationalError(
            code, 'Deadlock found when trying to get lock; try restarting '
                  'transaction'))


def _rows():
    with db_api.reader() as session:
        return [n for (n,) in session.execute(sa.text('SELECT n FROM t'))]


def test_refused_attempts_leave_nothing_and_the_last_commits(database):
    attempts = []
    before = db_api.deadlock_retries()

    def txn(session, value):
        attempts.append(value)
        session.execute(sa.text('INSERT INTO t VALUES (:n)'),
                        {'n': len(attempts)})
        if len(attempts) < 3:
            raise _deadlock()
        return 'done'

    assert db_api.run_writer(txn, 7) == 'done'
    assert attempts == [7, 7, 7]
    assert _rows() == [3]
    assert db_api.deadlock_retries() - before == 2


def test_retries_are_bounded(database):
    attempts = []

    def txn(session):
        attempts.append(1)
        raise _deadlock()

    with pytest.raises(sa.exc.OperationalError):
        db_api.run_writer(txn)
    # the first attempt and db_max_retries (3) more
    assert len(attempts) == 4


def test_other_errors_are_not_retried(database):
    attempts = []

    def txn(session):
        attempts.append(1)
        raise _deadlock(code=1205)   # a lock wait timeout: not a deadlock

    with pytest.raises(sa.exc.OperationalError):
        db_api.run_writer(txn)
    assert attempts == [1]


def test_inside_a_transaction_the_outer_one_decides(database):
    inner = []

    def txn(session):
        inner.append(1)
        raise _deadlock()

    with pytest.raises(sa.exc.OperationalError):
        with db_api.writer():
            db_api.run_writer(txn)
    assert inner == [1]


def test_deadlock_codes():
    assert db_api.is_deadlock(_deadlock())
    assert not db_api.is_deadlock(_deadlock(1205))
    assert not db_api.is_deadlock(ValueError('1213'))

    class PgError(Exception):
        sqlstate = '40P01'
    assert db_api.is_deadlock(sa.exc.OperationalError('x', {}, PgError()))


def _lost(at='SELECT 1'):
    # as SQLAlchemy raises a disconnect: the connection invalidated
    return sa.exc.OperationalError(
        at, {}, pymysql.err.OperationalError(
            2013, 'Lost connection to MySQL server during query'),
        connection_invalidated=True)


def test_a_connection_lost_before_the_commit_runs_it_again(database):
    attempts = []

    def txn(session):
        attempts.append(1)
        session.execute(sa.text('INSERT INTO t VALUES (:n)'),
                        {'n': len(attempts)})
        if len(attempts) == 1:
            raise _lost()
        return 'done'

    assert db_api.run_writer(txn) == 'done'
    assert attempts == [1, 1]
    assert _rows() == [2]


def test_a_connection_lost_at_the_commit_is_not_run_again(database):
    """The COMMIT may have been applied: running the transaction again
    could do it twice."""
    attempts = []

    @sa.event.listens_for(database, 'commit')
    def _commit(conn):
        raise _lost('COMMIT')

    def txn(session):
        attempts.append(1)
        session.execute(sa.text('INSERT INTO t VALUES (1)'))

    try:
        with pytest.raises(sa.exc.OperationalError):
            db_api.run_writer(txn)
    finally:
        sa.event.remove(database, 'commit', _commit)
    assert attempts == [1]


def test_an_error_that_lost_no_connection_is_not_run_again(database):
    attempts = []

    def txn(session):
        attempts.append(1)
        raise sa.exc.OperationalError(
            'SELECT 1', {}, pymysql.err.OperationalError(2013, 'lost'))

    with pytest.raises(sa.exc.OperationalError):
        db_api.run_writer(txn)
    assert attempts == [1]


def test_a_request_whose_transaction_is_always_refused_answers_503(
        database):
    """The API's fault wrapper names the deadlock once run_writer gave up
    (the database is up: it is the change that keeps conflicting)."""
    import webob

    from cinder_lite.api import faults

    attempts = []

    def txn(session):
        attempts.append(1)
        raise _deadlock()

    def app(environ, start_response):
        db_api.run_writer(txn)
        start_response('200 OK', [])
        return [b'']

    resp = webob.Request.blank('/v3/x/volumes', method='POST').get_response(
        faults.FaultWrapper(app))
    assert resp.status_int == 503
    assert resp.headers['Retry-After']
    body = resp.json['serviceUnavailable']
    assert body['code'] == 503
    assert 'refused the change 4 times' in body['message'], body
    assert len(attempts) == 4
