"""``GET /os-attachment-events``: the attachment audit trail, for admins.

Every status change of every attachment, oldest first: who asked (user,
project, request id), the host and mode, the statuses before and after and
the reason.  Filters: ``volume_id``, ``attachment_id``, ``project_id``;
``limit`` (at most ``osapi_max_limit``).  Not part of Cinder's API.
"""
import uuid

import webob.exc

from cinder_lite.api import wsgi
from cinder_lite.common import policy
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments

FILTERS = ('volume_id', 'attachment_id', 'project_id')


def view(event):
    return {
        'id': event.id,
        'attachment_id': event.attachment_id,
        'volume_id': event.volume_id,
        'project_id': event.project_id,
        'user_id': event.user_id,
        'actor_project_id': event.actor_project_id,
        'request_id': event.request_id,
        'instance_uuid': event.instance_uuid,
        'attached_host': event.attached_host,
        'attach_mode': event.attach_mode,
        'from_status': event.from_status,
        'to_status': event.to_status,
        'reason': event.reason,
        'created_at': wsgi.isotime(event.created_at),
    }


@wsgi.expected_errors(400, 403)
def list_events(req):
    policy.authorize(req.context, policy.ATTACHMENT_EVENTS)
    unknown = sorted(set(req.GET) - set(FILTERS) - {'limit'})
    if unknown:
        raise webob.exc.HTTPBadRequest(
            explanation='Invalid filters %s; use %s.' % (
                ', '.join(unknown), ', '.join(FILTERS + ('limit',))))
    filters = {}
    for key in FILTERS:
        value = req.GET.get(key)
        if value is None:
            continue
        if key != 'project_id':
            try:
                value = str(uuid.UUID(value))
            except ValueError:
                raise webob.exc.HTTPBadRequest(
                    explanation='%s must be a UUID, not %r' % (key, value))
        filters[key] = value
    limit = req.page_limit(req.environ['cinder_lite.conf']) or \
        req.environ['cinder_lite.conf'].osapi_max_limit
    with db_api.reader() as session:
        rows = db_attachments.events(session, limit=limit, **filters)
    return wsgi.json_response({'attachment_events': [view(e)
                                                     for e in rows]})
