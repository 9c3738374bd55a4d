"""Handlers for /messages (3.3): what went wrong with asynchronous work.

Success codes: list/show 200, delete 204.
"""
import webob.exc

from cinder_lite.api import resource_filters
from cinder_lite.api.views import links
from cinder_lite.api import wsgi
from cinder_lite.common import policy
from cinder_lite.db import api as db_api
from cinder_lite.db import messages as db_messages
from cinder_lite.db import query


FILTERS = ('resource_uuid', 'resource_type', 'event_id', 'request_id',
           'message_level')
# paging and sorting words, not filters (messages come oldest first)
NOT_FILTERS = ('sort', 'sort_key', 'sort_dir', 'limit', 'marker', 'offset')


def _check_version(req):
    if req.version < (3, 3):
        raise webob.exc.HTTPNotFound(
            explanation='The messages API needs microversion 3.3 or later.')


def _scope(req):
    return None if req.context.is_admin else req.context.project_id


def _view(req, msg):
    conf = req.environ['cinder_lite.conf']
    return {
        'id': msg.id,
        'resource_type': msg.resource_type,
        'resource_uuid': msg.resource_uuid,
        'request_id': msg.request_id,
        'message_level': msg.message_level,
        'event_id': msg.event_id,
        'created_at': wsgi.isotime(msg.created_at),
        'guaranteed_until': wsgi.isotime(msg.expires_at),
        'user_message': msg.detail,
        'links': links.resource_links(req, conf, 'messages', msg.id,
                                      msg.project_id),
    }


@wsgi.expected_errors(400, 403, 404)
def list_messages(req):
    _check_version(req)
    policy.authorize(req.context, policy.MESSAGES)
    keys = [k for k in req.GET if k not in NOT_FILTERS]
    resource_filters.check(req, 'message', keys)
    unknown = [k for k in keys if k not in FILTERS]
    if unknown:
        raise webob.exc.HTTPBadRequest(
            explanation='Invalid filters %s are found in query options.'
                        % ','.join(unknown))
    conf = req.environ['cinder_lite.conf']
    paging = {}
    if req.version >= (3, 5):
        # 3.5: paging and sorting, newest first unless asked otherwise
        sort_keys, sort_dirs = query.parse_sort(
            req.GET.get('sort'), req.GET.get('sort_key'),
            req.GET.get('sort_dir'), allowed=db_messages.SORT_KEYS)
        paging = dict(sort_keys=sort_keys, sort_dirs=sort_dirs,
                      limit=req.page_limit(conf),
                      marker=req.GET.get('marker'),
                      offset=req.int_param('offset', 0))
    with db_api.reader() as session:
        rows = db_messages.list_messages(
            session, _scope(req), {k: req.GET[k] for k in keys}, **paging)
    items = [_view(req, m) for m in rows]
    if not paging:
        return wsgi.json_response({'messages': items})
    return wsgi.json_response(links.page(req, conf, 'messages', rows, items,
                                         paging['limit']))


@wsgi.expected_errors(403, 404)
def show_message(req):
    _check_version(req)
    policy.authorize(req.context, policy.MESSAGES)
    with db_api.reader() as session:
        msg = db_messages.get(session, req.urlvars['message_id'],
                              _scope(req))
    return wsgi.json_response({'message': _view(req, msg)})


@wsgi.expected_errors(403, 404)
def delete_message(req):
    _check_version(req)
    policy.authorize(req.context, policy.MESSAGE_DELETE)
    db_api.run_writer(db_messages.delete, req.urlvars['message_id'],
                      _scope(req))
    return wsgi.empty_response(204)
