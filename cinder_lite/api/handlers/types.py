"""Handlers for /types, their extra specs and type access.

Success codes: create/update/show/list 200, delete 202; extra specs
list/show/create/update 200, delete 202; access list 200, actions 202.
"""
import ast

import webob.exc

from cinder_lite.api.schemas import common as schema_common
from cinder_lite.api.schemas import types as schema
from cinder_lite.api import validation
from cinder_lite.api.views import types as views
from cinder_lite.api import wsgi


TYPE_FILTER = (3, 52)


def _service(req):
    return req.environ['cinder_lite.services'].types


def _is_public_param(req):
    """``is_public``: true (default for admins), false, or none/None for
    both."""
    value = req.GET.get('is_public')
    if value is None:
        return True
    if value.lower() == 'none':
        return None
    return req.bool_param('is_public')


@wsgi.expected_errors(400, 403, 409)
def create_type(req):
    body = req.json_body()
    validation.validate(schema.create, body)
    given = body['volume_type']
    vtype = _service(req).create(
        req.context, given['name'].strip(), given.get('description'),
        schema_common.to_bool(given.get('os-volume-type-access:is_public',
                                        True)),
        given.get('extra_specs') or {})
    return wsgi.json_response({'volume_type': views.show(req, vtype)})


def _extra_specs_param(req):
    """``extra_specs={'key': 'value'}`` (3.52), as Cinder takes it."""
    value = req.GET.get('extra_specs')
    if value is None or req.version < TYPE_FILTER:
        return None
    try:
        specs = ast.literal_eval(value) if len(value) <= 4096 else None
    except (ValueError, SyntaxError, TypeError, MemoryError,
            RecursionError):
        specs = None
    if not isinstance(specs, dict) or not all(
            isinstance(k, str) and isinstance(v, str)
            for k, v in specs.items()):
        raise webob.exc.HTTPBadRequest(
            explanation="extra_specs must be a dict such as "
                        "{'key': 'value'}")
    return specs


@wsgi.expected_errors(400, 403)
def list_types(req):
    types = _service(req).list(req.context, _is_public_param(req),
                               req.GET.get('name'), _extra_specs_param(req))
    return wsgi.json_response(
        {'volume_types': [views.shown(req, t) for t in types]})


@wsgi.expected_errors(403, 404)
def show_type(req):
    vtype = _service(req).get(req.context, req.urlvars['type_id'])
    return wsgi.json_response({'volume_type': views.shown(req, vtype)})


@wsgi.expected_errors(400, 403, 404, 409)
def update_type(req):
    body = req.json_body()
    validation.validate(schema.update, body)
    values = dict(body['volume_type'])
    if 'is_public' in values:
        values['is_public'] = schema_common.to_bool(values['is_public'])
    if values.get('name') is not None:
        values['name'] = values['name'].strip()
    vtype = _service(req).update(req.context, req.urlvars['type_id'],
                                 values)
    return wsgi.json_response({'volume_type': views.updated(req, vtype)})


@wsgi.expected_errors(400, 403, 404)
def delete_type(req):
    _service(req).delete(req.context, req.urlvars['type_id'])
    return wsgi.empty_response(202)


@wsgi.expected_errors(403, 404)
def list_extra_specs(req):
    specs = _service(req).get_extra_specs(req.context,
                                          req.urlvars['type_id'])
    return wsgi.json_response({'extra_specs': specs})


@wsgi.expected_errors(400, 403, 404)
def create_extra_specs(req):
    body = req.json_body()
    validation.validate(schema.set_extra_specs, body)
    _service(req).set_extra_specs(req.context, req.urlvars['type_id'],
                                  body['extra_specs'])
    return wsgi.json_response({'extra_specs': body['extra_specs']})


@wsgi.expected_errors(403, 404)
def show_extra_spec(req):
    key = req.urlvars['key']
    specs = _service(req).get_extra_specs(req.context,
                                          req.urlvars['type_id'])
    if key not in specs:
        raise webob.exc.HTTPNotFound(
            explanation='Volume type %s has no extra specs with key %s.'
                        % (req.urlvars['type_id'], key))
    return wsgi.json_response({key: specs[key]})


@wsgi.expected_errors(400, 403, 404)
def update_extra_spec(req):
    key = req.urlvars['key']
    body = req.json_body()
    validation.validate(schema.update_extra_spec, body)
    if key not in body:
        raise webob.exc.HTTPBadRequest(
            explanation='Request body and URI mismatch: the body must hold '
                        'exactly the key %s.' % key)
    _service(req).set_extra_specs(req.context, req.urlvars['type_id'],
                                  body)
    return wsgi.json_response(body)


@wsgi.expected_errors(403, 404)
def delete_extra_spec(req):
    _service(req).delete_extra_spec(req.context, req.urlvars['type_id'],
                                    req.urlvars['key'])
    return wsgi.empty_response(202)


@wsgi.expected_errors(400, 403, 404)
def list_type_access(req):
    type_id = req.urlvars['type_id']
    projects = _service(req).list_access(req.context, type_id)
    return wsgi.json_response({'volume_type_access': [
        {'volume_type_id': type_id, 'project_id': p} for p in projects]})


@wsgi.expected_errors(400, 403, 404, 409)
def type_action(req):
    body = req.json_body()
    validation.validate(schema.type_access_action, body)
    type_id = req.urlvars['type_id']
    if 'addProjectAccess' in body:
        _service(req).add_access(req.context, type_id,
                                 body['addProjectAccess']['project'])
    else:
        _service(req).remove_access(req.context, type_id,
                                    body['removeProjectAccess']['project'])
    return wsgi.empty_response(202)
