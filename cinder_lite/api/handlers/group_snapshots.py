"""Handlers for /group_snapshots (3.14+; below, 404) and their actions.

Success codes, as Cinder's: create 202, list/detail/show 200, delete
202, ``reset_status`` (3.19) 202.
"""
import webob.exc

from cinder_lite.api.handlers import group_types
from cinder_lite.api.schemas import groups as schema
from cinder_lite.api import validation
from cinder_lite.api.views import groups as views
from cinder_lite.api.views import links
from cinder_lite.api import wsgi
from cinder_lite.db import group_snapshots as db_group_snapshots
from cinder_lite.db import query

GROUP_SNAPSHOTS = (3, 14)
GROUP_SNAPSHOT_RESET_STATUS = (3, 19)
NOT_FILTERS = ('sort', 'sort_key', 'sort_dir', 'limit', 'marker', 'offset',
               'with_count', 'all_tenants')


def _service(req):
    return req.environ['cinder_lite.services'].group_snapshots


def _conf(req):
    return req.environ['cinder_lite.conf']


@wsgi.expected_errors(400, 403, 404, 413, 503)
def create_group_snapshot(req):
    group_types.require(req, GROUP_SNAPSHOTS)
    body = req.json_body()
    validation.validate(schema.create_group_snapshot, body)
    given = body['group_snapshot']
    found = _service(req).create(req.context, given['group_id'],
                                 given.get('name'),
                                 given.get('description'))
    return wsgi.json_response(
        {'group_snapshot': views.group_snapshot_summary(req, found)}, 202)


def _list(req, detailed):
    group_types.require(req, GROUP_SNAPSHOTS)
    filters = {}
    for key, value in req.GET.items():
        if key in NOT_FILTERS:
            continue
        if key not in db_group_snapshots.FILTERS:
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid filters %s are found in query '
                            'options.' % key)
        filters[key] = value
    keys, dirs = query.parse_sort(
        req.GET.get('sort'), req.GET.get('sort_key'),
        req.GET.get('sort_dir'), allowed=db_group_snapshots.SORT_KEYS)
    limit = req.page_limit(_conf(req))
    with_count = req.version >= (3, 45) and req.bool_param('with_count')
    rows, total = _service(req).list(
        req.context, filters, keys, dirs, limit, req.GET.get('marker'),
        all_tenants=req.bool_param('all_tenants'), with_count=with_count,
        offset=req.int_param('offset', 0))
    view = (views.group_snapshot_detail if detailed
            else views.group_snapshot_summary)
    body = links.page(req, _conf(req), 'group_snapshots', rows,
                      [view(req, g) for g in rows], limit)
    if with_count:
        body['count'] = total
    return wsgi.json_response(body)


@wsgi.expected_errors(400, 403, 404)
def list_group_snapshots(req):
    return _list(req, detailed=False)


@wsgi.expected_errors(400, 403, 404)
def list_group_snapshots_detail(req):
    return _list(req, detailed=True)


@wsgi.expected_errors(403, 404)
def show_group_snapshot(req):
    group_types.require(req, GROUP_SNAPSHOTS)
    found = _service(req).get(req.context, req.urlvars['group_snapshot_id'])
    return wsgi.json_response(
        {'group_snapshot': views.group_snapshot_detail(req, found)})


@wsgi.expected_errors(400, 403, 404, 503)
def delete_group_snapshot(req):
    group_types.require(req, GROUP_SNAPSHOTS)
    _service(req).delete(req.context, req.urlvars['group_snapshot_id'])
    return wsgi.empty_response(202)


@wsgi.expected_errors(400, 403, 404)
def group_snapshot_action(req):
    group_types.require(req, GROUP_SNAPSHOT_RESET_STATUS)
    body = req.json_body()
    if not isinstance(body, dict) or list(body) != ['reset_status']:
        raise webob.exc.HTTPBadRequest(
            explanation='There is no such action: %s' % (
                ', '.join(sorted(body)) if isinstance(body, dict)
                else body))
    validation.validate(schema.reset_status, body)
    _service(req).reset_status(req.context,
                               req.urlvars['group_snapshot_id'],
                               body['reset_status']['status'].lower())
    return wsgi.empty_response(202)
