"""Handlers for volume transfers: ``/os-volume-transfer`` (every
version) and ``/volume-transfers`` (Cinder's path for 3.55 and later,
served at every version as Cinder does).

Success codes (both paths, all versions): create 202 (with the auth
key), accept 202, list/detail/show 200, delete 202.  The two paths differ
in two things, as in Cinder: a create on ``/volume-transfers`` takes
``no_snapshots`` from 3.55, and lists there are newest first from 3.59
(oldest first otherwise).
"""
import webob.exc

from cinder_lite.api import microversion
from cinder_lite.api.schemas import common as schema_common
from cinder_lite.api.schemas import transfers as schema
from cinder_lite.api import validation
from cinder_lite.api.views import links
from cinder_lite.api.views import transfers as views
from cinder_lite.api import wsgi
from cinder_lite.db import query
from cinder_lite.db import transfers as db_transfers

NOT_FILTERS = ('sort', 'sort_key', 'sort_dir', 'limit', 'marker',
               'all_tenants')
# /volume-transfers pages newest first from this version on
NEWEST_FIRST = (3, 59)


def _service(req):
    return req.environ['cinder_lite.services'].transfers


def _conf(req):
    return req.environ['cinder_lite.conf']


def _create(req, schemas):
    body = req.json_body()
    validation.validate(microversion.pick(schemas, req.version), body)
    given = body['transfer']
    name = given.get('name')
    if name is not None:
        name = name.strip()
        if not name:
            raise webob.exc.HTTPBadRequest(
                explanation="Invalid input for field/attribute name. The "
                            "'name' can not be empty.")
    transfer = _service(req).create(
        req.context, given['volume_id'], name,
        schema_common.to_bool(given.get('no_snapshots', False)))
    return wsgi.json_response(
        {'transfer': views.created(req, _conf(req), transfer)}, 202)


@wsgi.expected_errors(400, 403, 404)
def create_transfer_legacy(req):
    """POST /os-volume-transfer."""
    return _create(req, schema.CREATE_LEGACY)


@wsgi.expected_errors(400, 403, 404)
def create_transfer(req):
    """POST /volume-transfers."""
    return _create(req, schema.CREATE)


def _list(req, detailed, default_dir):
    filters = {}
    for key, value in req.GET.items():
        if key in NOT_FILTERS:
            continue
        if key not in db_transfers.FILTERS:
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid filters %s are found in query '
                            'options.' % key)
        filters[key] = value
    sort_keys, sort_dirs = query.parse_sort(
        req.GET.get('sort'), req.GET.get('sort_key'),
        req.GET.get('sort_dir') or (None if req.GET.get('sort')
                                    else default_dir),
        allowed=db_transfers.SORT_KEYS)
    conf = _conf(req)
    limit = req.page_limit(conf)
    rows = _service(req).list(req.context, filters, sort_keys, sort_dirs,
                              limit, req.GET.get('marker'),
                              all_tenants=req.bool_param('all_tenants'))
    view = views.detail if detailed else views.summary
    items = [view(req, conf, t) for t in rows]
    return wsgi.json_response(links.page(
        req, conf, 'transfers', [_Row(t) for t in rows], items, limit))


class _Row:
    """What links.page reads of a row (its id, for the next marker)."""

    def __init__(self, transfer):
        self.id = transfer['id']


def _newest_first(req):
    return 'desc' if req.version >= NEWEST_FIRST else 'asc'


@wsgi.expected_errors(400, 403)
def list_transfers_legacy(req):
    return _list(req, False, 'asc')


@wsgi.expected_errors(400, 403)
def list_transfers_detail_legacy(req):
    return _list(req, True, 'asc')


@wsgi.expected_errors(400, 403)
def list_transfers(req):
    return _list(req, False, _newest_first(req))


@wsgi.expected_errors(400, 403)
def list_transfers_detail(req):
    return _list(req, True, _newest_first(req))


@wsgi.expected_errors(403, 404)
def show_transfer(req):
    transfer = _service(req).get(req.context, req.urlvars['transfer_id'])
    return wsgi.json_response(
        {'transfer': views.detail(req, _conf(req), transfer)})


@wsgi.expected_errors(400, 403, 404, 413)
def accept_transfer(req):
    body = req.json_body()
    validation.validate(schema.accept, body)
    accepted = _service(req).accept(req.context, req.urlvars['transfer_id'],
                                    body['accept']['auth_key'])
    return wsgi.json_response(
        {'transfer': views.summary(req, _conf(req), accepted)}, 202)


@wsgi.expected_errors(403, 404)
def delete_transfer(req):
    _service(req).delete(req.context, req.urlvars['transfer_id'])
    return wsgi.empty_response(202)
