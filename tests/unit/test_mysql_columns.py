"""``db.mysql_columns``: a column packet seen before is not parsed
again, what comes back is what parsing gives, and PyMySQL still reads
columns the way the table relies on."""
import dis
import struct

import pymysql
from pymysql import connections
from pymysql import protocol
import pytest

from cinder_lite.db import mysql_columns


def _string(value):
    data = value.encode()
    return bytes([len(data)]) + data


def _column(name, table='volumes', type_code=253, length=144):
    """A column definition packet as a MySQL server sends it."""
    return (_string('def') + _string('cinder') + _string(table)
            + _string(table) + _string(name) + _string(name)
            + bytes([0x0c]) + struct.pack('<HIBHB', 45, length, type_code,
                                          0, 0) + b'\x00\x00')


def _fresh(monkeypatch):
    monkeypatch.setattr(mysql_columns, '_known', {})
    return mysql_columns._remembering(protocol.FieldDescriptorPacket,
                                      protocol.MysqlPacket)


def test_a_column_seen_before_is_not_parsed_again(monkeypatch):
    column = _fresh(monkeypatch)
    first = column(_column('status'), 'utf8')
    again = column(_column('status'), 'utf8')
    assert again is first
    other = column(_column('host'), 'utf8')
    assert other is not first and other.name == 'host'


def test_what_comes_back_is_what_parsing_gives(monkeypatch):
    column = _fresh(monkeypatch)
    data = _column('attach_seq', type_code=3, length=11)
    parsed = protocol.FieldDescriptorPacket(data, 'utf8')
    for field in (column(data, 'utf8'), column(data, 'utf8')):
        assert field.description() == parsed.description()
        for attr in ('name', 'table_name', 'org_table', 'org_name',
                     'type_code', 'charsetnr', 'length', 'flags',
                     'scale'):
            assert getattr(field, attr) == getattr(parsed, attr)
        assert isinstance(field, protocol.FieldDescriptorPacket)


def test_the_table_stops_growing_at_its_limit(monkeypatch):
    column = _fresh(monkeypatch)
    monkeypatch.setattr(mysql_columns, 'LIMIT', 2)
    for name in ('a', 'b', 'c'):
        column(_column(name), 'utf8')
    assert len(mysql_columns._known) == 2
    # past the limit a column is still parsed right, just not kept
    late = column(_column('c'), 'utf8')
    assert late.name == 'c'
    assert column(_column('c'), 'utf8') is not late


def test_an_error_in_place_of_a_column_is_raised_as_the_servers(
        monkeypatch):
    column = _fresh(monkeypatch)
    error = b'\xff' + struct.pack('<H', 1054) + b'#42S22Unknown column'
    packet = column(error, 'utf8')
    # what _read_packet raises, and never kept
    assert not isinstance(packet, protocol.FieldDescriptorPacket)
    with pytest.raises(pymysql.err.OperationalError, match='Unknown column'):
        packet.raise_for_error()
    assert mysql_columns._known == {}


def test_pymysql_still_reads_columns_through_the_name_replaced():
    # MySQLResult._get_descriptions looks FieldDescriptorPacket up in
    # pymysql.connections at run time and hands it to _read_packet,
    # which calls it with the packet's bytes and the encoding
    loaded = {(i.opname, i.argval) for i in dis.get_instructions(
        connections.MySQLResult._get_descriptions)}
    assert ('LOAD_GLOBAL', 'FieldDescriptorPacket') in loaded
    assert ('LOAD_ATTR', '_read_packet') in loaded or \
        ('LOAD_METHOD', '_read_packet') in loaded
    read = connections.Connection._read_packet.__code__
    assert read.co_varnames[:2] == ('self', 'packet_type')


def test_remember_replaces_the_name_once(monkeypatch):
    monkeypatch.setattr(mysql_columns, '_installed', False)
    monkeypatch.setattr(connections, 'FieldDescriptorPacket',
                        protocol.FieldDescriptorPacket)
    mysql_columns.remember()
    installed = connections.FieldDescriptorPacket
    assert installed is not protocol.FieldDescriptorPacket
    mysql_columns.remember()
    assert connections.FieldDescriptorPacket is installed
