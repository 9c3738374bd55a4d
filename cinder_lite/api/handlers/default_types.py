"""Handlers for /default-types: the default volume type of each project.

Success codes (3.62 and later; 404 before): set 200, show 200, list 200,
unset 204.
"""
import webob.exc

from cinder_lite.api.schemas import default_types as schema
from cinder_lite.api import validation
from cinder_lite.api import wsgi
from cinder_lite.common import exception

DEFAULT_TYPES = (3, 62)


def _service(req):
    return req.environ['cinder_lite.services'].default_types


def _check_version(req):
    if req.version < DEFAULT_TYPES:
        raise webob.exc.HTTPNotFound(
            explanation='Default volume types are served from '
                        'microversion 3.62.')


@wsgi.expected_errors(400, 403, 404)
def set_default_type(req):
    _check_version(req)
    body = req.json_body()
    validation.validate(schema.create_or_update, body)
    try:
        default = _service(req).set_default(
            req.context, req.urlvars['target_project_id'],
            body['default_type']['volume_type'])
    except exception.VolumeTypeNotFound as e:
        # Cinder: a type it cannot find is a bad request here, not 404
        raise webob.exc.HTTPBadRequest(explanation=str(e))
    return wsgi.json_response({'default_type': default})


@wsgi.expected_errors(400, 403, 404)
def show_default_type(req):
    _check_version(req)
    default = _service(req).get(req.context,
                                req.urlvars['target_project_id'])
    return wsgi.json_response({'default_type': default})


@wsgi.expected_errors(403, 404)
def list_default_types(req):
    _check_version(req)
    return wsgi.json_response(
        {'default_types': _service(req).list(req.context)})


@wsgi.expected_errors(400, 403, 404)
def unset_default_type(req):
    _check_version(req)
    _service(req).unset(req.context, req.urlvars['target_project_id'])
    return wsgi.empty_response(204)
