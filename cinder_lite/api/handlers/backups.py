"""Handlers for /backups, /backups/detail, /backups/{id}, its restore,
export_record and action, and /backups/import_record.

Success codes (Cinder's): create 202, list/detail/show 200, update (3.9)
200, delete 202, restore 202, export_record 200, import_record 201,
actions 202.  The list filters of a non-admin caller are Cinder's
(name, status, volume_id); an admin may filter by any column it shows.
"""
import webob.exc

from cinder_lite.api.schemas import backups as schema
from cinder_lite.api.schemas import common as schema_common
from cinder_lite.api import resource_filters
from cinder_lite.api import validation
from cinder_lite.api.views import backups as views
from cinder_lite.api.views import links
from cinder_lite.api import wsgi
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import backups as db_backups
from cinder_lite.db import query

UPDATE = (3, 9)
METADATA = (3, 43)
COUNT = (3, 45)
AVAILABILITY_ZONE = (3, 51)
# before 3.31 the filters of a non-admin; from 3.31 the filters file
# says (cinder_lite.api.resource_filters) among those served
USER_FILTERS = ('name', 'status', 'volume_id')
SERVED_FILTERS = USER_FILTERS + ('project_id', 'availability_zone',
                                 'container', 'snapshot_id', 'parent_id',
                                 'user_id', 'host', 'size', 'id', 'name~')
NOT_FILTERS = ('sort', 'sort_key', 'sort_dir', 'limit', 'marker', 'offset',
               'with_count', 'all_tenants')
SORT_ALIASES = {'display_name': 'name', 'display_description':
                'description'}


def _service(req):
    return req.environ['cinder_lite.services'].backups


def _conf(req):
    return req.environ['cinder_lite.conf']


def _strip(value):
    return value.strip() if isinstance(value, str) else value


@wsgi.expected_errors(400, 403, 404, 413, 503)
def create_backup(req):
    body = req.json_body()
    if req.version >= AVAILABILITY_ZONE:
        validation.validate(schema.create_v351, body)
    elif req.version >= METADATA:
        validation.validate(schema.create_v343, body)
    else:
        validation.validate(schema.create, body)
    given = body['backup']
    backup = _service(req).create(
        req.context, given['volume_id'], name=_strip(given.get('name')),
        description=_strip(given.get('description')),
        container=_strip(given.get('container')) or None,
        incremental=schema_common.to_bool(given.get('incremental') or
                                          False),
        force=schema_common.to_bool(given.get('force') or False),
        snapshot_id=given.get('snapshot_id'),
        metadata=given.get('metadata'),
        availability_zone=given.get('availability_zone'))
    view = views.summary(req, backup)
    if req.version >= METADATA:
        view['metadata'] = given.get('metadata') or {}
    return wsgi.json_response({'backup': view}, 202)


def _list_params(req):
    allowed = SERVED_FILTERS
    if not req.context.is_admin and \
            req.version < resource_filters.RESOURCE_FILTER:
        allowed = USER_FILTERS
    resource_filters.check(req, 'backup',
                           [k for k in req.GET if k not in NOT_FILTERS])
    filters = {}
    for key, value in req.GET.items():
        if key in NOT_FILTERS:
            continue
        if key not in allowed:
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid filters %s are found in query '
                            'options.' % key)
        if key == 'size':
            try:
                value = int(value)
            except ValueError:
                raise webob.exc.HTTPBadRequest(
                    explanation='size must be an integer, got %r.' % value)
        filters[key] = value
    sort_keys, sort_dirs = query.parse_sort(
        req.GET.get('sort'), req.GET.get('sort_key'),
        req.GET.get('sort_dir'),
        allowed=db_backups.SORT_KEYS + tuple(SORT_ALIASES))
    sort_keys = [SORT_ALIASES.get(k, k) for k in sort_keys]
    return (filters, sort_keys, sort_dirs, req.page_limit(_conf(req)),
            req.GET.get('marker'))


def _list(req, detailed):
    filters, keys, dirs, limit, marker = _list_params(req)
    with_count = req.version >= COUNT and req.bool_param('with_count')
    # as Cinder: all_tenants from a caller who may not list every
    # project is ignored (cinderclient always sends it)
    all_tenants = req.bool_param('all_tenants') and policy.check(
        req.context, policy.BACKUP_ALL_TENANTS)
    rows, total = _service(req).list(
        req.context, filters, keys, dirs, limit, marker,
        all_tenants=all_tenants, with_count=with_count,
        offset=req.int_param('offset', 0))
    if detailed:
        metadata = _service(req).metadata_of(rows)
        items = [views.detail(req, b, metadata.get(b.id)) for b in rows]
    else:
        items = [views.summary(req, b) for b in rows]
    body = links.page(req, _conf(req), 'backups', rows, items, limit)
    if with_count:
        body['count'] = total
    return wsgi.json_response(body)


@wsgi.expected_errors(400, 403, 404)
def list_backups(req):
    return _list(req, detailed=False)


@wsgi.expected_errors(400, 403, 404)
def list_backups_detail(req):
    return _list(req, detailed=True)


@wsgi.expected_errors(403, 404)
def show_backup(req):
    backup = _service(req).get(req.context, req.urlvars['backup_id'])
    metadata = _service(req).metadata_of([backup]).get(backup.id)
    return wsgi.json_response({'backup': views.detail(req, backup,
                                                      metadata)})


@wsgi.expected_errors(403, 404)
def show_progress(req):
    """cinder_lite's own: how far a backup or a restore of it has come
    (the bytes of the volume read or written), for a person watching."""
    backup = _service(req).get(req.context, req.urlvars['backup_id'])
    total = (backup.size or 0) * 1024 ** 3
    done = min(backup.progress_bytes or 0, total)
    if backup.status == states.AVAILABLE and not backup.restore_volume_id:
        done = total
    return wsgi.json_response({'progress': {
        'backup_id': backup.id, 'status': backup.status,
        'restore_volume_id': backup.restore_volume_id,
        'object_count': backup.object_count or 0,
        'bytes_done': done, 'bytes_total': total,
        'percent': round(100.0 * done / total, 1) if total else 0.0}})


@wsgi.expected_errors(400, 403, 404)
def update_backup(req):
    if req.version < UPDATE:
        raise webob.exc.HTTPNotFound(
            explanation='Updating a backup needs microversion 3.9 or '
                        'later.')
    body = req.json_body()
    validation.validate(schema.update_v343 if req.version >= METADATA
                        else schema.update, body)
    given = body['backup'] or {}
    values = {k: _strip(given[k]) for k in ('name', 'description')
              if k in given}
    backup = _service(req).update(req.context, req.urlvars['backup_id'],
                                  values, metadata=given.get('metadata'))
    view = views.summary(req, backup)
    if req.version >= METADATA:
        view['metadata'] = _service(req).metadata_of([backup]).get(
            backup.id) or {}
    return wsgi.json_response({'backup': view})


@wsgi.expected_errors(400, 403, 404, 503)
def delete_backup(req):
    _service(req).delete(req.context, req.urlvars['backup_id'])
    return wsgi.empty_response(202)


@wsgi.expected_errors(400, 403, 404, 413, 503)
def restore_backup(req):
    body = req.json_body()
    validation.validate(schema.restore, body)
    given = body['restore'] or {}
    backup, volume = _service(req).restore(
        req.context, req.urlvars['backup_id'],
        volume_id=given.get('volume_id'), name=_strip(given.get('name')))
    return wsgi.json_response({'restore': {
        'backup_id': backup.id, 'volume_id': volume.id,
        'volume_name': volume.name or ''}}, 202)


@wsgi.expected_errors(400, 403, 404)
def export_record(req):
    record = _service(req).export_record(req.context,
                                         req.urlvars['backup_id'])
    return wsgi.json_response({'backup-record': record})


@wsgi.expected_errors(400, 403, 404, 413, 503)
def import_record(req):
    body = req.json_body()
    validation.validate(schema.import_record, body)
    given = body['backup-record']
    backup = _service(req).import_record(req.context,
                                         given['backup_service'],
                                         given['backup_url'])
    return wsgi.json_response({'backup': views.summary(req, backup)}, 201)


# -- actions ------------------------------------------------------------------
def _reset_status(req, bid, args):
    status = args['status'].lower()
    if status not in states.BACKUP_RESET_STATUSES:
        raise webob.exc.HTTPBadRequest(
            explanation='Backup status: %s is invalid, valid statuses are: '
                        '%s.' % (args['status'],
                                 list(states.BACKUP_RESET_STATUSES)))
    _service(req).reset_status(req.context, bid, status)


def _force_delete(req, bid, args):
    _service(req).get(req.context, bid, policy.BACKUP_FORCE_DELETE)
    _service(req).delete(req.context, bid, force=True)


ACTIONS = {
    'os-reset_status': _reset_status,
    'os-force_delete': _force_delete,
}


@wsgi.expected_errors(400, 403, 404, 503)
def backup_action(req):
    body = req.json_body()
    if isinstance(body, dict) and len(body) == 1:
        name = next(iter(body))
        if name not in ACTIONS:
            raise webob.exc.HTTPBadRequest(
                explanation='There is no such action: %s' % name)
    validation.validate(schema.action, body)
    name, args = next(iter(body.items()))
    ACTIONS[name](req, req.urlvars['backup_id'], args)
    return wsgi.empty_response(202)
