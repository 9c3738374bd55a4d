"""How an attachment looks on the wire.

Cinder's names: requests say ``volume_uuid``/``instance_uuid``, responses
``volume_id``/``instance``; unset timestamps are ``""``.  Unlike Cinder,
``attach_mode`` is always ``rw`` or ``ro`` and responses show the state
after the call.
"""
from cinder_lite.api import wsgi
from cinder_lite.common import credentials
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.volume import rules


def _time(value):
    return wsgi.isotime(value) or ''


def mode(attachment):
    return attachment.attach_mode or rules.DEFAULT_MODE


def summary(attachment):
    return {'id': attachment.id, 'status': attachment.attach_status,
            'instance': attachment.instance_uuid,
            'volume_id': attachment.volume_id}


def detail(attachment, shared_connections=None, see_host=False,
           keyring=None):
    """``see_host`` (admins and services, as the volume view's
    ``host_name``): also the host it is attached to and the volume
    service that holds its export.  ``keyring`` (for the callers that
    connect: ``keyring_for``): the credentials in its connection_info
    shown, masked otherwise."""
    view = summary(attachment)
    if see_host:
        view.update(attached_host=attachment.attached_host,
                    export_host=attachment.export_host)
    view.update(attached_at=_time(attachment.attach_time),
                detached_at=_time(attachment.detach_time),
                attach_mode=mode(attachment),
                connection_info=connection_info(attachment, keyring))
    if shared_connections is not None:
        view['shared_connections'] = shared_connections
    reason = states.shown_reason(attachment.status_reason,
                                 attachment.operation)
    if reason:
        view['status_reason'] = reason
    return view


def connection_info(attachment, keyring=None):
    info = attachment.connection_info or {}
    return keyring.reveal(info, attachment.id) if keyring else info


def sees_secrets(context, attachment):
    """Whether ``context`` may see the credentials of ``attachment``
    (policy ``volume:attachment_secrets``: an admin, a service acting
    for its owner, or a member of its project; a reader sees them
    masked)."""
    return policy.check(context, policy.ATTACHMENT_SECRETS,
                        {'project_id': attachment.project_id})


def keyring_for(context, conf, attachment):
    """The keyring that shows ``attachment``'s credentials to
    ``context``, or None when it may not see them."""
    if sees_secrets(context, attachment):
        return credentials.keyring(conf)
    return None


def sees_host(context):
    return context.is_admin or 'service' in (context.service_roles or [])


def in_volume(req, attachment):
    """An entry of a volume's ``attachments`` list (attached only),
    with Cinder's keys and no others: its mode is in the attachments
    API."""
    see_host = sees_host(req.context)
    return {'id': attachment.volume_id,
            'attachment_id': attachment.id,
            'volume_id': attachment.volume_id,
            'server_id': attachment.instance_uuid,
            'host_name': attachment.attached_host if see_host else None,
            'device': attachment.mountpoint,
            'attached_at': wsgi.isotime(attachment.attach_time)}
