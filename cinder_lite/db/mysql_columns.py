"""Column descriptions of PyMySQL results, parsed once per process.

A MySQL result set starts with one packet per column that describes it
(its table, name, type, character set, length, flags), and PyMySQL, in
pure Python, parses each of them on every execution: seven
length-prefixed strings and a struct each.  For the wide reads of the
attach path (the attachment with its volume, 46 to 49 columns) that
parsing is about two fifths of the statement's client CPU, and it is
the same every time: a statement built once (``query.built``) gets the
same column packets, byte for byte, on every run.

``remember()`` makes PyMySQL take the parsed description of a column
packet it has seen before from a table kept per process, keyed by the
packet's bytes, instead of parsing it again.  A packet is only ever
mapped to what parsing those bytes gives, so a hit is what a parse
would have produced; the descriptions are only read after parsing
(PyMySQL and SQLAlchemy read their attributes and ``description()``),
so sharing one between connections and threads changes nothing.  The
table holds at most ``LIMIT`` descriptions (the application's
statements have a few hundred distinct columns); past it, new ones are
parsed as before.

PyMySQL has no option for this: ``MySQLResult._get_descriptions`` reads
each column with ``_read_packet(FieldDescriptorPacket)``, the class
named in ``pymysql.connections``, which ``_read_packet`` calls with the
packet's bytes and the connection's encoding.  ``remember`` replaces
that name with a function of the same signature;
``tests/unit/test_mysql_columns.py`` checks that PyMySQL still reads
columns that way, so an upgrade that changes it fails a test instead
of silently parsing again.
"""
import threading

LIMIT = 4096

_lock = threading.Lock()
_known = {}
_installed = False


def _remembering(parse, packet):
    """The stand-in for PyMySQL's column packet class ``parse``: a
    function of (bytes, encoding) that gives the parsed column, from
    ``_known`` when it was parsed before; ``packet``: PyMySQL's plain
    packet class, for an error sent in place of a column."""

    class Remembered(parse):
        """A column's parsed description, with its PEP 249 tuple made
        once."""

        def __init__(self, data, encoding):
            super().__init__(data, encoding)
            self._described = super().description()

        def description(self):
            return self._described

    def column(data, encoding):
        key = (data, encoding)
        field = _known.get(key)
        if field is not None:
            return field
        if data[:1] == b'\xff':
            # the server's error in place of a column: as a plain packet,
            # which _read_packet raises as that error (parsed as a
            # column it would fail on an assertion first)
            return packet(data, encoding)
        field = Remembered(data, encoding)
        if len(_known) < LIMIT:
            _known[key] = field
        return field

    return column


def remember():
    """Install the table in PyMySQL (once per process; idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        from pymysql import connections
        from pymysql import protocol
        connections.FieldDescriptorPacket = _remembering(
            connections.FieldDescriptorPacket, protocol.MysqlPacket)
        _installed = True
