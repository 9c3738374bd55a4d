"""Handlers for /group_types and their group specs (3.11+; below, 404).

Success codes, as Cinder's: create 202, list/show/default 200, update
200, delete 202; group specs: create 202, list/show/update 200, delete
202.
"""
import webob.exc

from cinder_lite.api import microversion
from cinder_lite.api.schemas import common as schema_common
from cinder_lite.api.schemas import groups as schema
from cinder_lite.api import validation
from cinder_lite.api.views import groups as views
from cinder_lite.api import wsgi
from cinder_lite.db import group_types as db_group_types
from cinder_lite.db import query

GROUP_TYPES = (3, 11)


def _service(req):
    return req.environ['cinder_lite.services'].group_types


def require(req, version):
    if req.version < version:
        raise webob.exc.HTTPNotFound(
            explanation='This API needs microversion %s or later.'
                        % microversion.to_str(version))


def _is_public_param(req):
    value = req.GET.get('is_public')
    if value is None:
        return True
    if value.lower() == 'none':
        return None
    return req.bool_param('is_public')


@wsgi.expected_errors(400, 403, 409)
def create_group_type(req):
    require(req, GROUP_TYPES)
    body = req.json_body()
    validation.validate(schema.create_group_type, body)
    given = body['group_type']
    gtype = _service(req).create(
        req.context, given['name'].strip(), given.get('description'),
        schema_common.to_bool(given.get('is_public', True)),
        given.get('group_specs') or {})
    return wsgi.json_response({'group_type': views.group_type(req, gtype)},
                              202)


@wsgi.expected_errors(400, 403)
def list_group_types(req):
    require(req, GROUP_TYPES)
    keys, dirs = query.parse_sort(
        req.GET.get('sort'), req.GET.get('sort_key'),
        req.GET.get('sort_dir'), allowed=db_group_types.SORT_KEYS)
    types = _service(req).list(req.context, _is_public_param(req), keys,
                               dirs)
    return wsgi.json_response(
        {'group_types': [views.group_type(req, t) for t in types]})


@wsgi.expected_errors(403, 404)
def show_group_type(req):
    require(req, GROUP_TYPES)
    gtype = _service(req).get(req.context, req.urlvars['group_type_id'])
    return wsgi.json_response({'group_type': views.group_type(req, gtype)})


@wsgi.expected_errors(400, 403, 404, 409)
def update_group_type(req):
    require(req, GROUP_TYPES)
    body = req.json_body()
    validation.validate(schema.update_group_type, body)
    given = dict(body['group_type'])
    if 'name' in given:
        given['name'] = given['name'].strip()
    if 'is_public' in given:
        given['is_public'] = schema_common.to_bool(given['is_public'])
    gtype = _service(req).update(req.context, req.urlvars['group_type_id'],
                                 given)
    return wsgi.json_response({'group_type': views.group_type(req, gtype)})


@wsgi.expected_errors(400, 403, 404)
def delete_group_type(req):
    require(req, GROUP_TYPES)
    _service(req).delete(req.context, req.urlvars['group_type_id'])
    return wsgi.empty_response(202)


# -- group specs ------------------------------------------------------------
@wsgi.expected_errors(403, 404)
def list_group_specs(req):
    require(req, GROUP_TYPES)
    specs = _service(req).list_specs(req.context,
                                     req.urlvars['group_type_id'])
    return wsgi.json_response({'group_specs': specs})


@wsgi.expected_errors(400, 403, 404)
def create_group_specs(req):
    require(req, GROUP_TYPES)
    body = req.json_body()
    validation.validate(schema.set_group_specs, body)
    _service(req).set_specs(req.context, req.urlvars['group_type_id'],
                            body['group_specs'])
    # as Cinder: the specs that were sent
    return wsgi.json_response({'group_specs': body['group_specs']}, 202)


@wsgi.expected_errors(403, 404)
def show_group_spec(req):
    require(req, GROUP_TYPES)
    return wsgi.json_response(_service(req).show_spec(
        req.context, req.urlvars['group_type_id'], req.urlvars['key']))


@wsgi.expected_errors(400, 403, 404)
def update_group_spec(req):
    require(req, GROUP_TYPES)
    body = req.json_body()
    key = req.urlvars['key']
    if isinstance(body, dict) and len(body) > 1:
        raise webob.exc.HTTPBadRequest(
            explanation='Request body contains too many items.')
    if isinstance(body, dict) and body and key not in body:
        raise webob.exc.HTTPBadRequest(
            explanation='Request body and URI mismatch')
    validation.validate(schema.update_group_spec, body)
    _service(req).set_specs(req.context, req.urlvars['group_type_id'],
                            body)
    return wsgi.json_response(body)


@wsgi.expected_errors(403, 404)
def delete_group_spec(req):
    require(req, GROUP_TYPES)
    _service(req).delete_spec(req.context, req.urlvars['group_type_id'],
                              req.urlvars['key'])
    return wsgi.empty_response(202)
