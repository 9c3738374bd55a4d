"""A PyMySQL cursor that reads the server's whole answer to a statement.

A compound statement that ends in a read (``query.compound_read``: a
lock or a change, then a SELECT) is answered with the SELECT's rows and
then a last packet: OK, or an error that came after the rows.  On a
Galera node that error is how a transaction that another node's commit
aborted (a brute-force abort, error 1213) learns of it when the abort
lands while its statement runs: the rows are sent, then the deadlock.
The transaction is rolled back by then, on the server.

PyMySQL reads the first result at ``execute`` and leaves the rest on the
connection until the cursor is closed, and SQLAlchemy closes a cursor
once its rows are fetched, logging and dropping what ``close`` raises
("Error closing cursor").  So the deadlock was lost: the caller went on
with the rows, its next statements ran in a new transaction the server
began for them, and the commit committed only those.  That is how a
DELETE of an attachment through one Galera node answered 200 with its
attachment still there (its change was in the aborted part), and how a
connected delete reached the volume service with the attachment not
marked detaching.

``Cursor`` reads the rest of the answer at ``execute``, right after the
first result, keeping that result as the one the cursor shows: an error
in it is raised by ``execute`` as the server's error, which SQLAlchemy
wraps as for any statement (``db.api.run_writer`` then runs the
transaction again).  No statement of ours reads a second result set;
one that came would be read and dropped, as ``close`` drops it.
``tests/unit/test_mysql_cursor.py`` checks that PyMySQL still keeps
results as this class expects.
"""
from pymysql import cursors


class Cursor(cursors.Cursor):
    """PyMySQL's buffered cursor, reading each statement's answer to its
    end (see the module's docstring)."""

    # what _do_get_result sets from a result, restored after the rest
    _SHOWN = ('_result', 'rowcount', 'warning_count', 'description',
              'lastrowid', '_rows', 'rownumber')

    def _query(self, q):
        rowcount = super()._query(q)
        if self._result is not None and self._result.has_next:
            shown = [getattr(self, name) for name in self._SHOWN]
            # raises the error the server sent after the first result
            while self.nextset():
                pass
            for name, value in zip(self._SHOWN, shown):
                setattr(self, name, value)
        return rowcount
