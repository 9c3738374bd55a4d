"""Notifications: oslo.messaging's notifier, configured in
``[oslo_messaging_notifications]`` (``driver = messagingv2`` and ``topics``
turn them on; without a driver nothing is sent and nothing is built).

Event types and who sends them:

==========================  =============  ================================
event type                  sent by        when
==========================  =============  ================================
``volume.create.start``     API            the volume is recorded, before
                                           it is scheduled
``volume.create.end``       volume         the backend created it
``volume.delete.start``     API            the volume went ``deleting``
``volume.delete.end``       volume         the backend removed it
``volume.attach.start``     API            an attachment starts connecting
``volume.attach.end``       API            the attachment is ``attached``
``volume.detach.start``     API            a connected attachment starts
                                           disconnecting
``volume.detach.end``       API            it is disconnected and deleted
``snapshot.create.start``   API            the snapshot is recorded
``snapshot.create.end``     volume         the backend made the copy
``snapshot.delete.start``   API            the snapshot went ``deleting``
``snapshot.delete.end``     volume         the backend removed the copy
``snapshot.update.start``,  API            around a name or description
``snapshot.update.end``                    change
==========================  =============  ================================

The publisher id is ``volume.<host>``.  Every payload has the volume's
``tenant_id``, ``user_id``, ``volume_id``, ``display_name``, ``size``,
``status``, ``host``, ``availability_zone``, ``volume_type`` (its id),
``multiattach`` and ``created_at``; attach and detach payloads add
``attachment_id``, ``instance_uuid``, ``attached_host``, ``attach_mode``
(``rw`` or ``ro``) and ``attach_status``.

A notification that cannot be sent is logged and dropped: it never fails
or blocks the operation it reports (the notifier retries the broker a few
times, not forever).
"""
import logging
import threading

from oslo_config import cfg
import oslo_messaging as messaging

from cinder_lite.common import rpc

LOG = logging.getLogger(__name__)

BROKER_RETRIES = 2

_lock = threading.Lock()
_notifiers = {}
_transport = None


def _notifier(host):
    global _transport
    with _lock:
        if host not in _notifiers:
            if _transport is None:
                _transport = messaging.get_notification_transport(cfg.CONF)
                rpc.rabbit_defaults(cfg.CONF)
            _notifiers[host] = messaging.Notifier(
                _transport, publisher_id='volume.%s' % host,
                serializer=rpc.NotificationSerializer(), retry=BROKER_RETRIES)
        return _notifiers[host]


def cleanup():
    global _transport
    with _lock:
        if _transport is not None:
            _transport.cleanup()
        _transport = None
        _notifiers.clear()


def _get(item, key):
    if isinstance(item, dict):
        return item.get(key)
    return getattr(item, key, None)


def volume_payload(volume):
    """The common payload of ``volume`` (a row or a dict)."""
    created = _get(volume, 'created_at')
    return {
        'tenant_id': _get(volume, 'project_id'),
        'user_id': _get(volume, 'user_id'),
        'volume_id': _get(volume, 'id'),
        'display_name': _get(volume, 'name'),
        'size': _get(volume, 'size'),
        'status': _get(volume, 'status'),
        'host': _get(volume, 'host'),
        'availability_zone': _get(volume, 'availability_zone'),
        'volume_type': _get(volume, 'volume_type_id'),
        'multiattach': bool(_get(volume, 'multiattach')),
        'created_at': created.isoformat() if hasattr(created, 'isoformat')
        else created,
    }


def attachment_payload(volume, attachment):
    payload = volume_payload(volume)
    payload.update(
        attachment_id=_get(attachment, 'id'),
        instance_uuid=_get(attachment, 'instance_uuid'),
        attached_host=_get(attachment, 'attached_host'),
        attach_mode=_get(attachment, 'attach_mode'),
        attach_status=_get(attachment, 'attach_status'))
    return payload


def enabled(host):
    """Whether notifications are sent (a driver is configured): callers
    build no payload otherwise."""
    try:
        return _notifier(host).is_enabled()
    except Exception:
        LOG.exception('notifications of %s: no notifier', host)
        return False


def info(context, host, event_type, payload):
    """Send ``event_type`` at INFO priority as ``volume.<host>``."""
    try:
        notifier = _notifier(host)
        if notifier.is_enabled():
            notifier.info(context, event_type, payload)
    except Exception:
        LOG.exception('notification %s about %s was not sent', event_type,
                      payload.get('volume_id'))
