"""``db.mysql_cursor``: what the cursor relies on in PyMySQL, so that an
upgrade that changes it fails here instead of the cursor silently
dropping an error again.  Its behaviour against a server (a Galera
abort sent after a statement's rows, raised and retried) is
tests/integration/test_galera.py's ``test_an_abort_sent_after_the_rows_
is_raised``."""
from pymysql import connections
from pymysql import cursors
import sqlalchemy as sa

from cinder_lite.db import api as db_api
from cinder_lite.db import mysql_cursor


class _Connection:
    """As much of a PyMySQL connection as ``Cursor`` touches: one result
    per ``query``, the results of a statement in order."""

    def __init__(self, results):
        self.results = list(results)
        self._result = None

    def query(self, q):
        self._result = self.results.pop(0)

    def next_result(self, unbuffered=False):
        self._result = self.results.pop(0)
        if isinstance(self._result, Exception):
            raise self._result


def _result(rows, has_next):
    result = connections.MySQLResult(None)
    result.rows, result.has_next = rows, has_next
    result.affected_rows, result.warning_count = len(rows), 0
    result.description, result.insert_id = (('n', 3),), 0
    return result


def test_pymysql_results_still_say_more_follows():
    assert connections.MySQLResult(None).has_next is None
    cursor = cursors.Cursor(_Connection([]))
    cursor._clear_result()
    # the attributes a result sets on the cursor are the ones restored
    assert set(mysql_cursor.Cursor._SHOWN) <= set(vars(cursor))
    assert callable(cursors.Cursor._query)


def test_the_rest_of_the_answer_is_read_and_its_error_raised():
    error = connections.err.OperationalError(1213, 'Deadlock found')
    first = _result(((10,),), True)
    conn = _Connection([first, _result((), True), error])
    cursor = mysql_cursor.Cursor(conn)
    try:
        cursor.execute('SELECT ...')
    except connections.err.OperationalError as e:
        assert e is error
    else:
        raise AssertionError('the error after the rows was not raised')


def test_the_first_result_is_the_one_shown():
    first = _result(((10,), (11,)), True)
    conn = _Connection([first, _result((), False)])
    cursor = mysql_cursor.Cursor(conn)
    assert cursor.execute('SELECT ...') == 2
    assert cursor.fetchall() == ((10,), (11,))
    assert cursor.rowcount == 2
    # nothing left to read: close reads nothing more
    assert cursor.nextset() is None
    assert conn.results == []


class _Stop(Exception):
    pass


def test_the_engine_connects_with_it():
    engine = db_api.create_engine('mysql+pymysql://u:p@127.0.0.1:1/db')
    seen = {}

    @sa.event.listens_for(engine, 'do_connect')
    def _connect(dialect, record, cargs, cparams):
        seen.update(cparams)
        raise _Stop()

    try:
        try:
            engine.connect()
        except _Stop:
            pass
        assert seen['cursorclass'] is mysql_cursor.Cursor
    finally:
        engine.dispose()
