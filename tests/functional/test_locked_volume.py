"""The one lock entry point for a volume's attachments
(``db_attachments.locked_volume``), the one way to record a failure
(``record_failure``), and an attachment's ``operation``, on the real
database of the embedded stack."""
import pytest

from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from tests.harness.attach import connector


class _Boom(Exception):
    pass


def _reserved(api):
    vol = api.create_volume()
    resp = api.post('/attachments', json={'attachment': {
        'volume_uuid': vol['id']}})
    assert resp.status_code == 200, resp.text
    return vol, resp.json()['attachment']


def _status(api, vol):
    return api.get('/volumes/%s' % vol['id']).json()['volume']['status']


def test_the_status_is_derived_when_the_block_ends(api):
    vol, att = _reserved(api)
    assert _status(api, vol) == states.RESERVED
    with db_api.writer() as session:
        with db_attachments.locked_volume(session, vol['id']) as held:
            assert held.volume.id == vol['id'] and held.status is None
            db_attachments.transition(session, att['id'], 'detach')
        assert held.status == states.AVAILABLE
    assert _status(api, vol) == states.AVAILABLE


def test_a_block_that_fails_derives_nothing_and_changes_nothing(api):
    vol, att = _reserved(api)
    with pytest.raises(_Boom):
        with db_api.writer() as session:
            with db_attachments.locked_volume(session, vol['id'],
                                              load=False) as held:
                db_attachments.transition(session, att['id'], 'detach')
                raise _Boom()
    assert held.status is None
    assert _status(api, vol) == states.RESERVED
    shown = api.get('/attachments/%s' % att['id']).json()['attachment']
    assert shown['status'] == states.ATTACH_RESERVED


def test_record_failure_applies_only_where_the_event_does(api):
    vol, att = _reserved(api)
    with db_api.writer() as session:
        # a reservation was never connecting: nothing to record
        assert db_attachments.record_failure(
            session, att['id'], 'connect_lost', 'lost') is None
    with db_api.writer() as session:
        db_attachments.transition(session, att['id'], 'connect')
    with db_api.writer() as session:
        status = db_attachments.record_failure(
            session, att['id'], 'connect_lost', 'x' * 2000)
    # error_attaching alone keeps no volume busy
    assert status == states.AVAILABLE == _status(api, vol)
    shown = api.get('/attachments/%s' % att['id']).json()['attachment']
    assert shown['status'] == states.ERROR_ATTACHING
    assert shown['status_reason'] == 'x' * 1024
    with db_api.writer() as session:
        assert db_attachments.record_failure(
            session, 'no-such-attachment', 'connect_lost', 'lost') is None


def test_an_operation_and_a_reason_end_each_other(api):
    """What a client sees as status_reason is the row's reason, else the
    words of the operation under way; writing one ends the other, as when
    the operation was those words."""
    vol, att = _reserved(api)

    def shown():
        return api.get('/attachments/%s' % att['id']).json()[
            'attachment'].get('status_reason')

    with db_api.writer() as session:
        db_attachments.update(session, att['id'],
                              {'status_reason': 'an old failure'})
        db_attachments.update(session, att['id'],
                              {'operation': states.TAKING_OVER})
        row = db_attachments.get(session, att['id'])
        assert (row.operation, row.status_reason) == (states.TAKING_OVER,
                                                      None)
    assert shown() == 'taking over'
    with db_api.writer() as session:
        db_attachments.transition(session, att['id'], 'connect',
                                  values={'status_reason': 'retried'})
        row = db_attachments.get(session, att['id'])
        assert (row.operation, row.status_reason) == (None, 'retried')
    assert shown() == 'retried'
    with db_api.writer() as session:
        db_attachments.unmark(session, att['id'], states.TAKING_OVER)
        row = db_attachments.get(session, att['id'])
        assert row.status_reason == 'retried'


def test_a_block_that_read_the_others_derives_what_the_probe_would(api):
    """``apply_event`` (``get_with_others`` + ``held.leaves``): the
    volume's status from what the block read under the lock, no probe,
    along a sequence that passes every volume status; after each step
    the probe (``sync_volume_status``) finds nothing to change."""
    vtype = api.create_type(specs={'multiattach': '<is> True'})
    vol = api.create_volume(volume_type=vtype['id'])
    ids = []
    for _ in range(3):
        resp = api.post('/attachments', json={'attachment': {
            'volume_uuid': vol['id']}})
        assert resp.status_code == 200, resp.text
        ids.append(resp.json()['attachment']['id'])
    a, b, c = ids
    steps = [(a, 'connect', states.ATTACHING),
             (b, 'complete', states.IN_USE),
             (a, 'complete', states.IN_USE),
             (b, 'start_disconnect', states.IN_USE),
             (a, 'start_disconnect', states.DETACHING),
             (b, 'disconnected', states.DETACHING),
             (a, 'disconnected', states.RESERVED),
             (c, 'detach', states.AVAILABLE)]
    for attachment_id, event, expected in steps:
        with db_api.writer() as session:
            status = db_attachments.apply_event(session, vol['id'],
                                                attachment_id, event)
        assert status == expected, (event, status)
        assert _status(api, vol) == expected
        with db_api.writer() as session:
            assert db_attachments.sync_volume_status(
                session, vol['id']) == expected


def test_others_leave_out_the_attachment_read(api):
    vol, att = _reserved(api)
    with db_api.reader() as session:
        current, others = db_attachments.get_with_others(session, att['id'])
    assert current.attach_status == states.ATTACH_RESERVED
    assert others == db_attachments.Others(states.RESERVED, frozenset())


def test_what_a_detach_reads_of_the_others_is_what_the_probes_say(api):
    """``others_of`` (one statement under the lock of a DELETE): the
    volume's other live attachments, oldest first, whether one shares the
    host connection (``share_host``) and the statuses they are in
    (``Others.of_rows``), as the statements they replace say.  (Also on
    MariaDB and PostgreSQL: tests/integration/test_detach_reads.py.)"""
    check_what_a_detach_reads(api)


def check_what_a_detach_reads(api):
    vtype = api.create_type(specs={'multiattach': '<is> True'})
    vol = api.create_volume(volume_type=vtype['id'])
    ids = []
    for host in ('h1', 'h1', 'h2', None):
        body = {'volume_uuid': vol['id']}
        if host:
            body['connector'] = connector(host)
        resp = api.post('/attachments', json={'attachment': body})
        assert resp.status_code == 200, resp.text
        ids.append(resp.json()['attachment']['id'])
    with db_api.reader() as session:
        for attachment_id in ids:
            current = db_attachments.get(session, attachment_id)
            rows = db_attachments.others_of(session, current)
            assert [r.id for r in rows] == [i for i in ids
                                            if i != attachment_id]
            export_host = current.export_host
            assert db_attachments.share_host(rows, current, export_host) \
                == db_attachments.shares_host_connection(
                    session, current, export_host)
            assert db_attachments.Others.of_rows(_status(api, vol), rows) \
                == db_attachments.get_with_others(session,
                                                  attachment_id)[1]
        # the two on h1 share it, the others do not
        shared = [db_attachments.share_host(
            db_attachments.others_of(session, a), a, a.export_host)
            for a in (db_attachments.get(session, i) for i in ids)]
    assert shared == [True, True, False, False]
