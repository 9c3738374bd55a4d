"""Handlers for /groups (3.13+; below, 404) and their actions.

Success codes, as Cinder's: create 202, list/detail/show 200, update
202, actions (``delete`` 3.13, ``reset_status`` 3.20) 202,
``POST /groups/action`` (``create-from-src``, 3.14) 202.  From 3.25
``list_volume=True`` on show and detail lists the group's volumes.
"""
import webob.exc

from cinder_lite.api.handlers import group_types
from cinder_lite.api.schemas import common as schema_common
from cinder_lite.api.schemas import groups as schema
from cinder_lite.api import validation
from cinder_lite.api.views import groups as views
from cinder_lite.api.views import links
from cinder_lite.api import wsgi
from cinder_lite.db import groups as db_groups
from cinder_lite.db import query

GROUPS = (3, 13)
GROUP_FROM_SRC = (3, 14)
GROUP_RESET_STATUS = (3, 20)
NOT_FILTERS = ('sort', 'sort_key', 'sort_dir', 'limit', 'marker', 'offset',
               'with_count', 'all_tenants', 'list_volume')


def _service(req):
    return req.environ['cinder_lite.services'].groups


def _conf(req):
    return req.environ['cinder_lite.conf']


def _list_volume(req):
    return req.version >= views.GROUP_VOLUMES and \
        req.bool_param('list_volume')


def _details(req, groups):
    types, volumes = _service(req).details_of(groups)
    listed = _list_volume(req)
    return [views.group_detail(req, g, types[g.id],
                               volumes[g.id] if listed else None)
            for g in groups]


@wsgi.expected_errors(400, 403, 404, 413, 503)
def create_group(req):
    group_types.require(req, GROUPS)
    body = req.json_body()
    validation.validate(schema.create_group, body)
    given = body['group']
    group = _service(req).create(
        req.context, given.get('name'), given.get('description'),
        given['group_type'], given['volume_types'],
        availability_zone=given.get('availability_zone'))
    return wsgi.json_response({'group': views.group_summary(req, group)},
                              202)


@wsgi.expected_errors(400, 403, 404, 413, 503)
def create_group_from_src(req):
    group_types.require(req, GROUP_FROM_SRC)
    body = req.json_body()
    validation.validate(schema.create_group_from_src, body)
    given = body['create-from-src']
    sources = [k for k in ('group_snapshot_id', 'source_group_id')
               if given.get(k)]
    if len(sources) != 1:
        raise webob.exc.HTTPBadRequest(
            explanation='Either group_snapshot_id or source_group_id must '
                        'be provided, but not both.')
    group = _service(req).create_from_src(
        req.context, given.get('name'), given.get('description'),
        group_snapshot_id=given.get('group_snapshot_id'),
        source_group_id=given.get('source_group_id'))
    return wsgi.json_response({'group': views.group_summary(req, group)},
                              202)


def _list_params(req):
    filters = {}
    for key, value in req.GET.items():
        if key in NOT_FILTERS:
            continue
        if key not in db_groups.FILTERS:
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid filters %s are found in query '
                            'options.' % key)
        filters[key] = value
    sort_keys, sort_dirs = query.parse_sort(
        req.GET.get('sort'), req.GET.get('sort_key'),
        req.GET.get('sort_dir'), allowed=db_groups.SORT_KEYS)
    return (filters, sort_keys, sort_dirs, req.page_limit(_conf(req)),
            req.GET.get('marker'))


def _list(req, detailed):
    group_types.require(req, GROUPS)
    filters, keys, dirs, limit, marker = _list_params(req)
    with_count = req.version >= (3, 45) and req.bool_param('with_count')
    rows, total = _service(req).list(
        req.context, filters, keys, dirs, limit, marker,
        all_tenants=req.bool_param('all_tenants'), with_count=with_count,
        offset=req.int_param('offset', 0))
    items = (_details(req, rows) if detailed
             else [views.group_summary(req, g) for g in rows])
    body = links.page(req, _conf(req), 'groups', rows, items, limit)
    if 'groups_links' in body:
        # Cinder's key
        body['group_links'] = body.pop('groups_links')
    if with_count:
        body['count'] = total
    return wsgi.json_response(body)


@wsgi.expected_errors(400, 403, 404)
def list_groups(req):
    return _list(req, detailed=False)


@wsgi.expected_errors(400, 403, 404)
def list_groups_detail(req):
    return _list(req, detailed=True)


@wsgi.expected_errors(403, 404)
def show_group(req):
    group_types.require(req, GROUPS)
    group = _service(req).get(req.context, req.urlvars['group_id'])
    return wsgi.json_response({'group': _details(req, [group])[0]})


def _id_list(value):
    return [v.strip() for v in (value or '').split(',') if v.strip()]


@wsgi.expected_errors(400, 403, 404)
def update_group(req):
    group_types.require(req, GROUPS)
    body = req.json_body()
    validation.validate(schema.update_group, body)
    given = body['group']
    fields = [k for k in ('name', 'description') if k in given]
    _service(req).update(
        req.context, req.urlvars['group_id'], name=given.get('name'),
        description=given.get('description'),
        add_volumes=_id_list(given.get('add_volumes')),
        remove_volumes=_id_list(given.get('remove_volumes')),
        fields=fields)
    return wsgi.empty_response(202)


# -- actions ------------------------------------------------------------------
def _delete(req, group_id, body):
    validation.validate(schema.delete_group, body)
    args = body['delete'] or {}
    _service(req).delete(req.context, group_id, schema_common.to_bool(
        args.get('delete-volumes', False)))


def _reset_status(req, group_id, body):
    group_types.require(req, GROUP_RESET_STATUS)
    validation.validate(schema.reset_status, body)
    _service(req).reset_status(req.context, group_id,
                               body['reset_status']['status'].lower())


ACTIONS = {'delete': _delete, 'reset_status': _reset_status}


@wsgi.expected_errors(400, 403, 404, 503)
def group_action(req):
    group_types.require(req, GROUPS)
    body = req.json_body()
    names = [k for k in body if k in ACTIONS] if isinstance(body, dict) \
        else []
    if len(names) != 1 or len(body) != 1:
        raise webob.exc.HTTPBadRequest(
            explanation='There is no such action: %s' % (
                ', '.join(sorted(body)) if isinstance(body, dict)
                else body))
    ACTIONS[names[0]](req, req.urlvars['group_id'], body)
    return wsgi.empty_response(202)
