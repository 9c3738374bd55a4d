"""Handlers for /snapshots, /snapshots/{id}/metadata and
/snapshots/{id}/action.

Success codes (every microversion, as Cinder's): create 202, list/detail/
show 200, update 200, delete 202; metadata: 200 for all of them (delete
included); actions 202.  From 3.66 a snapshot of an in-use volume needs
no ``force`` (``force: false`` is then refused, ``true`` ignored).
"""
import ast

import webob.exc

from cinder_lite.api.schemas import common as schema_common
from cinder_lite.api.schemas import snapshots as schema
from cinder_lite.api import resource_filters
from cinder_lite.api import validation
from cinder_lite.api.views import links
from cinder_lite.api.views import snapshots as views
from cinder_lite.api import wsgi
from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import query
from cinder_lite.db import snapshots as db_snapshots

FILTERS = ('name', 'status', 'volume_id', 'metadata', 'project_id',
           'availability_zone', 'name~')
METADATA_FILTER = (3, 22)
SNAPSHOT_IN_USE = (3, 66)
SORT_ALIASES = {'display_name': 'name', 'display_description':
                'description'}
NOT_FILTERS = ('sort', 'sort_key', 'sort_dir', 'limit', 'marker', 'offset',
               'with_count', 'all_tenants')
IN_USE_FORCE_FALSE = (
    "Since microversion 3.66 the 'force' flag is invalid for this "
    "request.  For backward compatibility, however, when the 'force' "
    "flag is passed with a value evaluating to True, it is silently "
    "ignored.")


def _service(req):
    return req.environ['cinder_lite.services'].snapshots


def _conf(req):
    return req.environ['cinder_lite.conf']


def _strip(value):
    return value.strip() if isinstance(value, str) else value


def _metadata_of(req, snapshot):
    return _service(req).metadata_of([snapshot]).get(snapshot.id, {})


@wsgi.expected_errors(400, 403, 404, 413, 503)
def create_snapshot(req):
    body = req.json_body()
    validation.validate(schema.create, body)
    given = body['snapshot']
    if not given.get('volume_id'):
        # as Cinder: no volume is a volume not found
        raise exception.VolumeNotFound(volume_id=given.get('volume_id'))
    force = False
    if given.get('force') is not None:
        force = schema_common.to_bool(given['force'])
        if req.version >= SNAPSHOT_IN_USE and not force:
            raise webob.exc.HTTPBadRequest(explanation=IN_USE_FORCE_FALSE)
    if req.version >= SNAPSHOT_IN_USE:
        force = True
    name = _strip(given.get('name', given.get('display_name')))
    description = _strip(given.get('description',
                                   given.get('display_description')))
    snapshot = _service(req).create(
        req.context, given['volume_id'], name, description,
        metadata=given.get('metadata'), force=force)
    return wsgi.json_response({'snapshot': views.detail(
        req, snapshot, given.get('metadata') or {}, extended=False)}, 202)


def _list_params(req):
    filters = {}
    resource_filters.check(req, 'snapshot',
                           [k for k in req.GET if k not in NOT_FILTERS])
    for key, value in req.GET.items():
        if key in NOT_FILTERS:
            continue
        if key not in FILTERS or (key == 'metadata'
                                  and req.version < METADATA_FILTER):
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid filters %s are found in query '
                            'options.' % key)
        if key == 'metadata':
            try:
                value = ast.literal_eval(value) if len(value) <= 4096 \
                    else None
            except (ValueError, SyntaxError, TypeError, MemoryError,
                    RecursionError):
                value = None
            if not isinstance(value, dict) or not all(
                    isinstance(k, str) and isinstance(v, str)
                    for k, v in value.items()):
                raise webob.exc.HTTPBadRequest(
                    explanation="metadata must be a dict such as "
                                "{'key': 'value'}")
        filters[key] = value
    sort_keys, sort_dirs = query.parse_sort(
        req.GET.get('sort'), req.GET.get('sort_key'),
        req.GET.get('sort_dir'),
        allowed=db_snapshots.SORT_KEYS + tuple(SORT_ALIASES))
    # Cinder's column names, which clients (Tempest) sort by
    sort_keys = [SORT_ALIASES.get(k, k) for k in sort_keys]
    return (filters, sort_keys, sort_dirs, req.page_limit(_conf(req)),
            req.GET.get('marker'))


def _list(req, detailed):
    filters, keys, dirs, limit, marker = _list_params(req)
    with_count = req.version >= (3, 45) and req.bool_param('with_count')
    rows, total = _service(req).list(
        req.context, filters, keys, dirs, limit, marker,
        all_tenants=req.bool_param('all_tenants'), with_count=with_count,
        offset=req.int_param('offset', 0))
    metadata = _service(req).metadata_of(rows)
    view = views.detail if detailed else views.summary
    items = [view(req, s, metadata.get(s.id)) for s in rows]
    body = links.page(req, _conf(req), 'snapshots', rows, items, limit)
    if with_count:
        body['count'] = total
    return wsgi.json_response(body)


@wsgi.expected_errors(400, 403, 404)
def list_snapshots(req):
    return _list(req, detailed=False)


@wsgi.expected_errors(400, 403, 404)
def list_snapshots_detail(req):
    return _list(req, detailed=True)


@wsgi.expected_errors(403, 404)
def show_snapshot(req):
    snapshot = _service(req).get(req.context, req.urlvars['snapshot_id'])
    return wsgi.json_response({'snapshot': views.detail(
        req, snapshot, _metadata_of(req, snapshot))})


@wsgi.expected_errors(400, 403, 404)
def update_snapshot(req):
    body = req.json_body()
    validation.validate(schema.update, body)
    given = body['snapshot']
    values = {}
    for key, alias in (('name', 'display_name'),
                       ('description', 'display_description')):
        if key in given or alias in given:
            values[key] = _strip(given.get(key, given.get(alias)))
    snapshot = _service(req).update(req.context, req.urlvars['snapshot_id'],
                                    values)
    return wsgi.json_response({'snapshot': views.detail(
        req, snapshot, _metadata_of(req, snapshot), extended=False)})


@wsgi.expected_errors(400, 403, 404, 503)
def delete_snapshot(req):
    _service(req).delete(req.context, req.urlvars['snapshot_id'])
    return wsgi.empty_response(202)


# -- actions ------------------------------------------------------------------
def _reset_status(req, sid, args):
    status = args['status'].lower()
    if status not in states.SNAPSHOT_RESET_STATUSES:
        raise webob.exc.HTTPBadRequest(
            explanation='Snapshot status: %s is invalid, valid statuses '
                        'are: %s.' % (args['status'], ', '.join(
                            states.SNAPSHOT_RESET_STATUSES)))
    _service(req).reset_status(req.context, sid, status)


def _force_delete(req, sid, args):
    _service(req).get(req.context, sid, policy.SNAPSHOT_FORCE_DELETE)
    _service(req).delete(req.context, sid, force=True)


def _update_snapshot_status(req, sid, args):
    progress = args.get('progress')
    if progress:
        try:
            number = int(progress[:-1])
        except ValueError:
            number = -1
        if not progress.endswith('%') or not 0 <= number <= 100:
            raise webob.exc.HTTPBadRequest(
                explanation='progress must be an integer percentage '
                            'between 0 and 100')
    _service(req).update_status(req.context, sid, args['status'],
                                progress)


def _unmanage(req, sid, body):
    req.environ['cinder_lite.services'].manage.unmanage_snapshot(
        req.context, sid)


ACTIONS = {
    'os-reset_status': _reset_status,
    'os-force_delete': _force_delete,
    'os-update_snapshot_status': _update_snapshot_status,
    'os-unmanage': _unmanage,
}


@wsgi.expected_errors(400, 403, 404, 503)
def snapshot_action(req):
    body = req.json_body()
    if isinstance(body, dict) and len(body) == 1:
        name = next(iter(body))
        if name not in ACTIONS:
            raise webob.exc.HTTPBadRequest(
                explanation='There is no such action: %s' % name)
    validation.validate(schema.action, body)
    name, args = next(iter(body.items()))
    ACTIONS[name](req, req.urlvars['snapshot_id'], args)
    return wsgi.empty_response(202)


# -- metadata -----------------------------------------------------------------
@wsgi.expected_errors(403, 404)
def list_metadata(req):
    return wsgi.json_response({'metadata': _service(req).get_metadata(
        req.context, req.urlvars['snapshot_id'])})


@wsgi.expected_errors(400, 403, 404)
def create_metadata(req):
    """Merge the given keys into the metadata."""
    body = req.json_body()
    validation.validate(schema.metadata, body)
    return wsgi.json_response({'metadata': _service(req).update_metadata(
        req.context, req.urlvars['snapshot_id'], body['metadata'])})


@wsgi.expected_errors(400, 403, 404)
def replace_metadata(req):
    body = req.json_body()
    validation.validate(schema.metadata, body)
    return wsgi.json_response({'metadata': _service(req).update_metadata(
        req.context, req.urlvars['snapshot_id'], body['metadata'],
        delete=True)})


@wsgi.expected_errors(403, 404)
def show_metadata_item(req):
    key = req.urlvars['key']
    metadata = _service(req).get_metadata(req.context,
                                          req.urlvars['snapshot_id'])
    if key not in metadata:
        raise exception.SnapshotMetadataNotFound(
            snapshot_id=req.urlvars['snapshot_id'], key=key)
    return wsgi.json_response({'meta': {key: metadata[key]}})


@wsgi.expected_errors(400, 403, 404)
def update_metadata_item(req):
    body = req.json_body()
    validation.validate(schema.meta_item, body)
    if req.urlvars['key'] not in body['meta']:
        raise webob.exc.HTTPBadRequest(
            explanation='Request body and URI mismatch: the body sets %s, '
                        'the URI names %s.' % (
                            next(iter(body['meta'])), req.urlvars['key']))
    _service(req).update_metadata(req.context, req.urlvars['snapshot_id'],
                                  body['meta'])
    return wsgi.json_response({'meta': body['meta']})


@wsgi.expected_errors(400, 403, 404)
def delete_metadata_item(req):
    _service(req).delete_metadata_key(req.context,
                                      req.urlvars['snapshot_id'],
                                      req.urlvars['key'])
    return wsgi.empty_response(200)
