"""Handlers for /qos-specs: QoS specs, their keys and their association
with volume types (admins, by default).

Success codes (all versions, as Cinder): create, list, show, set keys,
associations 200; delete, unset keys, associate, disassociate,
disassociate_all 202.  Associations are changed with GET requests and a
``vol_type_id`` query parameter, as in Cinder.
"""
import webob.exc

from cinder_lite.api.schemas import qos_specs as schema
from cinder_lite.api import validation
from cinder_lite.api.views import links
from cinder_lite.api.views import qos_specs as views
from cinder_lite.api import wsgi
from cinder_lite.db import qos_specs as db_qos
from cinder_lite.db import query

NOT_FILTERS = ('sort', 'sort_key', 'sort_dir', 'limit', 'marker')


def _service(req):
    return req.environ['cinder_lite.services'].qos_specs


def _conf(req):
    return req.environ['cinder_lite.conf']


@wsgi.expected_errors(400, 403, 409)
def create_qos_specs(req):
    body = req.json_body()
    validation.validate(schema.create, body)
    specs = dict(body['qos_specs'])
    name = specs.pop('name').strip()
    if not name:
        raise webob.exc.HTTPBadRequest(
            explanation="Invalid input for field/attribute name. The "
                        "'name' can not be empty.")
    created = _service(req).create(req.context, name, specs)
    return wsgi.json_response(views.show(req, _conf(req), created))


@wsgi.expected_errors(400, 403)
def list_qos_specs(req):
    filters = {}
    for key, value in req.GET.items():
        if key in NOT_FILTERS:
            continue
        if key not in db_qos.FILTERS:
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid filters %s are found in query '
                            'options.' % key)
        filters[key] = value
    sort_keys, sort_dirs = query.parse_sort(
        req.GET.get('sort'), req.GET.get('sort_key'),
        req.GET.get('sort_dir'), allowed=db_qos.SORT_KEYS)
    conf = _conf(req)
    limit = req.page_limit(conf)
    rows = _service(req).list(req.context, filters, sort_keys, sort_dirs,
                              limit, req.GET.get('marker'))
    return wsgi.json_response(links.page(
        req, conf, 'qos_specs', [_Row(r) for r in rows],
        [views.detail(r) for r in rows], limit))


class _Row:
    """What links.page reads of a row (its id, for the next marker)."""

    def __init__(self, specs):
        self.id = specs['id']


@wsgi.expected_errors(403, 404)
def show_qos_specs(req):
    specs = _service(req).get(req.context, req.urlvars['qos_id'])
    return wsgi.json_response(views.show(req, _conf(req), specs))


@wsgi.expected_errors(400, 403, 404)
def set_keys(req):
    """200 with the body as sent, as Cinder."""
    body = req.json_body()
    validation.validate(schema.set_keys, body)
    _service(req).set_keys(req.context, req.urlvars['qos_id'],
                           body['qos_specs'])
    return wsgi.json_response(body)


@wsgi.expected_errors(400, 403, 404)
def unset_keys(req):
    body = req.json_body()
    validation.validate(schema.unset_keys, body)
    _service(req).delete_keys(req.context, req.urlvars['qos_id'],
                              body['keys'])
    return wsgi.empty_response(202)


@wsgi.expected_errors(400, 403, 404)
def delete_qos_specs(req):
    _service(req).delete(req.context, req.urlvars['qos_id'],
                         force=req.bool_param('force'))
    return wsgi.empty_response(202)


@wsgi.expected_errors(403, 404)
def list_associations(req):
    return wsgi.json_response({'qos_associations': _service(
        req).associations(req.context, req.urlvars['qos_id'])})


def _type_id(req):
    type_id = req.GET.get('vol_type_id')
    if not type_id:
        # Cinder's words
        raise webob.exc.HTTPBadRequest(
            explanation='Volume Type id must not be None.')
    return type_id


@wsgi.expected_errors(400, 403, 404)
def associate(req):
    _service(req).associate(req.context, req.urlvars['qos_id'],
                            _type_id(req))
    return wsgi.empty_response(202)


@wsgi.expected_errors(400, 403, 404)
def disassociate(req):
    _service(req).disassociate(req.context, req.urlvars['qos_id'],
                               _type_id(req))
    return wsgi.empty_response(202)


@wsgi.expected_errors(403, 404)
def disassociate_all(req):
    _service(req).disassociate_all(req.context, req.urlvars['qos_id'])
    return wsgi.empty_response(202)
