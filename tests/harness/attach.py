"""Attachments as the functional tests make them: instance ids, connectors
of named hosts, and the create request with its expected answer."""
import threading
import uuid

from cinder_lite.connector import host as host_connector
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments

I1 = '11111111-1111-4111-8111-111111111111'
I2 = '22222222-2222-4222-8222-222222222222'
I3 = '33333333-3333-4333-8333-333333333333'


def connector(host='compute-1', ip='127.0.0.2', **extra):
    """The connector of host ``host`` (os-brick's keys; its initiator is
    named after the host)."""
    conn = host_connector.get_connector(
        host=host, ip=ip, initiator='iqn.2026-11.org.example:%s' % host)
    conn.update(extra)
    return conn


def create(api, volume_id, instance=None, conn=None, mode=None,
           expect=200, **headers):
    """POST /attachments; the attachment (or the error body) once the
    status is ``expect``."""
    body = {'volume_uuid': volume_id}
    if instance:
        body['instance_uuid'] = instance
    if conn is not None:
        body['connector'] = conn
    if mode is not None:
        body['mode'] = mode
    resp = api.post('/attachments', json={'attachment': body},
                    headers=headers or None)
    assert resp.status_code == expect, resp.text
    return resp.json().get('attachment', resp.json())


def attach(api, volume_id, conn=None, mode=None, complete=True):
    """An attachment for a new instance, completed when it has a
    connector and ``complete``."""
    att = create(api, volume_id, str(uuid.uuid4()), conn, mode)
    if conn is not None and complete:
        resp = api.post('/attachments/%s/action' % att['id'],
                        json={'os-complete': None})
        assert resp.status_code == 204, resp.text
    return att


def volume(api, vid):
    return api.get('/volumes/%s' % vid).json()['volume']


def behind_the_lock(api, volume_id, change, body):
    """POST ``body`` to the volume's action URL while this thread holds
    the volume's row lock and makes ``change(session)`` under it: the
    request reads what it reads before the lock meanwhile, waits for
    the lock, and then finds what ``change`` committed (the race of two
    requests on one volume, in this order every time).  Its reply."""
    replies = []
    with db_api.writer() as session:
        db_attachments.lock_volume(session, volume_id)
        change(session)
        request = threading.Thread(target=lambda: replies.append(api.post(
            '/volumes/%s/action' % volume_id, json=body)))
        request.start()
        request.join(0.5)
    request.join(30)
    (reply,) = replies
    return reply
