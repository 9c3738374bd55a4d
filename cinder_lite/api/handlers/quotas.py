"""Handlers for /os-quota-sets, /os-quota-class-sets and /limits.

Success codes: show, defaults, update 200; delete 200 with no body (as
Cinder); quota class show and update 200; limits 200.
"""
from cinder_lite.api.schemas import quotas as schema
from cinder_lite.api import validation
from cinder_lite.api import wsgi

# /limits takes another project's id from an admin from this version on
LIMITS_PROJECT_FILTER = (3, 39)


def _service(req):
    return req.environ['cinder_lite.services'].quotas


def _with_id(values, ident):
    return dict(values, id=ident)


@wsgi.expected_errors(400)
def show_quota_set(req):
    project_id = req.urlvars['target_project_id']
    values = _service(req).show(req.context, project_id,
                                usage=req.bool_param('usage'))
    return wsgi.json_response({'quota_set': _with_id(values, project_id)})


@wsgi.expected_errors(400)
def show_quota_defaults(req):
    project_id = req.urlvars['target_project_id']
    values = _service(req).defaults(req.context, project_id)
    return wsgi.json_response({'quota_set': _with_id(values, project_id)})


def _update(req, key, schema_body, change):
    """PUT of a quota set or class set: the body's ``key`` object to
    ``change(context, owner, given)``, the result under ``key``."""
    body = req.json_body()
    validation.validate(schema_body, body)
    return wsgi.json_response({key: change(req.context, body[key])})


@wsgi.expected_errors(400)
def update_quota_set(req):
    project_id = req.urlvars['target_project_id']
    return _update(req, 'quota_set', schema.update_quota_set,
                   lambda ctx, given: _service(req).update(
                       ctx, project_id, given))


@wsgi.expected_errors(400)
def delete_quota_set(req):
    _service(req).revert(req.context, req.urlvars['target_project_id'])
    return wsgi.empty_response(200)


@wsgi.expected_errors(400)
def show_quota_class_set(req):
    class_name = req.urlvars['class_name']
    values = _service(req).show_class(req.context, class_name)
    return wsgi.json_response(
        {'quota_class_set': _with_id(values, class_name)})


@wsgi.expected_errors(400)
def update_quota_class_set(req):
    class_name = req.urlvars['class_name']
    return _update(req, 'quota_class_set', schema.update_quota_class_set,
                   lambda ctx, given: _service(req).update_class(
                       ctx, class_name, given))


@wsgi.expected_errors(400)
def show_limits(req):
    """An admin names another project with ``project_id`` (or
    ``tenant_id``) from 3.39 on; before, and for anyone else, the
    parameter is ignored, as in Cinder."""
    project_id = req.context.project_id
    if req.context.is_admin and req.version >= LIMITS_PROJECT_FILTER:
        project_id = (req.GET.get('project_id') or req.GET.get('tenant_id')
                      or project_id)
    absolute = _service(req).absolute_limits(req.context, project_id)
    return wsgi.json_response({'limits': {'rate': [],
                                          'absolute': absolute}})
