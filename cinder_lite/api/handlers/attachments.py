"""Handlers for /attachments (3.27; os-complete 3.44; mode 3.54;
cinder_lite's os-takeover from 3.44).

Success codes: create 200, update 200, complete 204, takeover 200 (the
attachment with its new connection info), delete 200 (the volume's
remaining attachments), show/list/detail 200.
"""
import webob.exc

from cinder_lite.api import microversion
from cinder_lite.api.schemas import attachments as schema
from cinder_lite.api import validation
from cinder_lite.api.views import attachments as views
from cinder_lite.api.views import links
from cinder_lite.api import resource_filters
from cinder_lite.api import wsgi
from cinder_lite.common import policy
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import query

FILTERS = {'volume_id': 'volume_id', 'instance_id': 'instance_uuid',
           'attach_status': 'attach_status', 'status': 'attach_status',
           'project_id': 'project_id'}
NOT_FILTERS = ('sort', 'sort_key', 'sort_dir', 'limit', 'marker',
               'all_tenants', 'offset')


def _service(req):
    return req.environ['cinder_lite.services'].attachments


def _require(req, version):
    if req.version < version:
        raise webob.exc.HTTPNotFound(
            explanation='This API needs microversion %s or later.'
                        % microversion.to_str(version))


def _detail(req, attachment):
    return views.detail(attachment,
                        _service(req).shared_with(attachment),
                        views.sees_host(req.context),
                        _keyring(req, attachment))


def _keyring(req, attachment):
    return views.keyring_for(req.context, req.environ['cinder_lite.conf'],
                             attachment)


@wsgi.expected_errors(400, 403, 404, 409, 503)
def create_attachment(req):
    _require(req, (3, 27))
    body = req.json_body()
    validation.validate(microversion.pick(schema.CREATE, req.version), body)
    given = body['attachment']
    attachment = _service(req).create(
        req.context, given['volume_uuid'],
        instance_uuid=given.get('instance_uuid'),
        connector=given.get('connector') or None,
        mode=given.get('mode'),
        service_owned=policy.is_service(req.context))
    return wsgi.json_response({'attachment': _detail(req, attachment)})


@wsgi.expected_errors(400, 403, 404, 409, 503)
def update_attachment(req):
    _require(req, (3, 27))
    body = req.json_body()
    validation.validate(schema.update, body)
    attachment = _service(req).update(
        req.context, req.urlvars['attachment_id'],
        body['attachment']['connector'])
    return wsgi.json_response({'attachment': _detail(req, attachment)})


@wsgi.expected_errors(400, 403, 404, 409, 503)
def attachment_action(req):
    _require(req, (3, 44))
    body = req.json_body()
    if isinstance(body, dict) and 'os-takeover' in body:
        validation.validate(schema.takeover, body)
        attachment = _service(req).takeover(req.context,
                                            req.urlvars['attachment_id'])
        return wsgi.json_response({'attachment': _detail(req, attachment)})
    validation.validate(schema.complete, body)
    _service(req).complete(req.context, req.urlvars['attachment_id'])
    return wsgi.empty_response(204)


@wsgi.expected_errors(400, 403, 404, 409, 503)
def delete_attachment(req):
    _require(req, (3, 27))
    remaining = _service(req).delete(req.context,
                                     req.urlvars['attachment_id'])
    return wsgi.json_response(
        {'attachments': [views.summary(a) for a in remaining]})


@wsgi.expected_errors(403, 404)
def show_attachment(req):
    _require(req, (3, 27))
    attachment = _service(req).get(req.context,
                                   req.urlvars['attachment_id'])
    return wsgi.json_response({'attachment': _detail(req, attachment)})


def _list(req, detailed):
    _require(req, (3, 27))
    filters = {}
    resource_filters.check(req, 'attachment',
                           [k for k in req.GET if k not in NOT_FILTERS])
    for key, value in req.GET.items():
        if key in NOT_FILTERS:
            continue
        if key not in FILTERS:
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid filters %s are found in query '
                            'options.' % key)
        filters[FILTERS[key]] = value
    sort_keys, sort_dirs = query.parse_sort(
        req.GET.get('sort'), req.GET.get('sort_key'),
        req.GET.get('sort_dir'), allowed=db_attachments.SORT_KEYS)
    conf = req.environ['cinder_lite.conf']
    limit = req.page_limit(conf)
    rows = _service(req).list(req.context, filters, sort_keys, sort_dirs,
                              limit, req.GET.get('marker'),
                              all_tenants=req.bool_param('all_tenants'))
    if detailed:
        shared = _service(req).shared_for(rows)
        see_host = views.sees_host(req.context)
        items = [views.detail(a, shared.get(a.id, []), see_host,
                              _keyring(req, a))
                 for a in rows]
    else:
        items = [views.summary(a) for a in rows]
    return wsgi.json_response(
        links.page(req, conf, 'attachments', rows, items, limit))


@wsgi.expected_errors(400, 403)
def list_attachments(req):
    return _list(req, detailed=False)


@wsgi.expected_errors(400, 403)
def list_attachments_detail(req):
    return _list(req, detailed=True)
