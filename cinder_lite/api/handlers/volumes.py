"""Handlers for /volumes.

Success codes: create 202, list/detail/show 200, update 200, delete 202
(all microversions); summary 200 (3.12 and later, 404 before).
"""
import ast

from oslo_utils import timeutils
import webob.exc

from cinder_lite.api import microversion
from cinder_lite.api import resource_filters
from cinder_lite.api.schemas import common as schema_common
from cinder_lite.api.schemas import volumes as schema
from cinder_lite.api import validation
from cinder_lite.api.views import attachments as attachment_views
from cinder_lite.api.views import links
from cinder_lite.api.views import volumes as views
from cinder_lite.api import wsgi
from cinder_lite.common import policy
from cinder_lite.db import models
from cinder_lite.db import query
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import image_api

FILTERS = ('name', 'status', 'metadata', 'bootable', 'availability_zone',
           'size', 'project_id', 'volume_type', 'glance_metadata',
           'created_at', 'updated_at') + tuple(
    # Cinder's filters on columns served once what fills them is (volume
    # migration, groups): until then a volume has no such column
    key for key in ('migration_status', 'group_id')
    if hasattr(models.Volume, key))
TIME_FILTERS = ('created_at', 'updated_at')  # 3.60
TIME_COMPARISON = (3, 60)
TIME_OPERATORS = ('gt', 'gte', 'eq', 'neq', 'lt', 'lte')
GROUP_ID_FILTER = (3, 10)
LIKE_FILTERS = ('name', 'status', 'availability_zone')  # 3.34
SUMMARY = (3, 12)
FORCE_DELETE = (3, 23)
VOLUME_FROM_BACKUP = (3, 47)
NOT_FILTERS = ('sort', 'sort_key', 'sort_dir', 'limit', 'marker', 'offset',
               'with_count', 'all_tenants')


def _service(req):
    return req.environ['cinder_lite.services'].volumes


def _conf(req):
    return req.environ['cinder_lite.conf']


def _detail(req, volume, type_names=None, attached=None, metadata=None,
            extended=True, image_metadata=None):
    svc = _service(req)
    if extended and image_metadata is None:
        image_metadata = image_api.image_metadata_of([volume])
    names = type_names or svc.type_names([volume])
    if attached is None:
        attached = svc.attachments_of([volume])
    if metadata is None:
        metadata = svc.metadata_of([volume])
    return views.detail(req, _conf(req), volume,
                        names.get(volume.volume_type_id),
                        [attachment_views.in_volume(req, a)
                         for a in attached.get(volume.id, [])],
                        metadata.get(volume.id), extended,
                        image_metadata.get(volume.id) if extended else None)


GROUPS = (3, 13)


@wsgi.expected_errors(400, 403, 404, 409, 413, 503)
def create_volume(req):
    body = req.json_body()
    validation.validate(microversion.pick(schema.CREATE, req.version), body)
    request = dict(body['volume'])
    if request.get('backup_id') is not None and \
            req.version < VOLUME_FROM_BACKUP:
        raise webob.exc.HTTPBadRequest(
            explanation='Creating a volume from a backup needs '
                        'microversion 3.47 or later.')
    if request.get('group_id') is not None and req.version < GROUPS:
        raise webob.exc.HTTPBadRequest(
            explanation='Creating a volume in a group (group_id) needs '
                        'microversion 3.13 or later.')
    for unsupported in ('consistencygroup_id',):
        if request.get(unsupported) is not None:
            raise webob.exc.HTTPBadRequest(
                explanation='Creating a volume from %s is not supported.'
                            % unsupported)
    if 'multiattach' in request and schema_common.to_bool(
            request['multiattach']):
        raise webob.exc.HTTPBadRequest(
            explanation='The multiattach flag in the volume body is not '
                        'supported: create the volume with a volume type '
                        'whose extra spec is multiattach="<is> True".')
    if request.get('snapshot_id') and request.get('source_volid'):
        raise webob.exc.HTTPBadRequest(
            explanation='Give one of snapshot_id and source_volid, not '
                        'both.')
    if request.get('size') is None and (request.get('snapshot_id')
                                        or request.get('source_volid')):
        # the source's size, decided by the service layer
        request['size'] = None
        size = None
    else:
        size = request.get('size')
        size = int(size) if size is not None else 0
    if size is not None and not 1 <= size <= schema_common.MAX_INT:
        raise webob.exc.HTTPBadRequest(
            explanation="Invalid input for field/attribute size. Value: "
                        "%s. Volume size '%s' must be an integer and "
                        "greater than 0" % (request.get('size'),
                                            request.get('size')))
    request['size'] = size
    image_ref = request.pop('imageRef', None)
    image_id = request.pop('image_id', None)
    request['image_ref'] = image_ref if image_ref is not None else image_id
    if request['image_ref'] is not None and not request['image_ref'].strip():
        raise webob.exc.HTTPBadRequest(explanation='Invalid imageRef '
                                                   'provided.')
    request['name'] = request.get('name') or request.get('display_name')
    request['description'] = (request.get('description')
                              or request.get('display_description'))
    volume, vtype = _service(req).create(req.context, request)
    return wsgi.json_response({'volume': _detail(
        req, volume, {vtype['id']: vtype['name']}, {},
        {volume.id: request.get('metadata') or {}}, extended=False)}, 202)


def _time_filter(key, value):
    """Cinder's ``created_at=gte:2026-01-01T00:00:00,lt:...`` (3.60):
    operator -> naive UTC time."""
    wanted = {}
    for unit in value.split(','):
        operator, sep, when = unit.partition(':')
        if not sep:
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid %s value' % key)
        if operator not in TIME_OPERATORS:
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid %s operator' % operator)
        try:
            moment = timeutils.parse_isotime(when)
        except ValueError:
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid %s value' % when)
        wanted[operator] = timeutils.normalize_time(moment)
    return wanted


def _list_params(req):
    conf = _conf(req)
    filters = {}
    keys = [k for k in req.GET if k not in NOT_FILTERS]
    resource_filters.check(req, 'volume', keys)
    for key, value in req.GET.items():
        if key in NOT_FILTERS:
            continue
        base = key[:-1] if key.endswith('~') else key
        if key.endswith('~') and base not in LIKE_FILTERS:
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid filters %s are found in query '
                            'options.' % key)
        if base in TIME_FILTERS and req.version < TIME_COMPARISON:
            raise webob.exc.HTTPBadRequest(
                explanation='Filtering by %s needs microversion 3.60 or '
                            'later.' % key)
        if base not in FILTERS or (base == 'group_id'
                                   and req.version < GROUP_ID_FILTER):
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid filters %s are found in query '
                            'options.' % key)
        if key in ('metadata', 'glance_metadata'):
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
                    explanation="%s must be a dict such as "
                                "{'key': 'value'}" % key)
        elif key == 'bootable':
            value = req.bool_param('bootable')
        elif key == 'size':
            value = req.int_param('size', 1)
        elif key in TIME_FILTERS:
            value = _time_filter(key, value)
        elif key == 'volume_type':
            # a type's name or id, as in Cinder
            key, value = 'volume_type_id', _service(req).type_id_of(
                req.context, value)
        filters[key] = value
    sort_keys, sort_dirs = query.parse_sort(
        req.GET.get('sort'), req.GET.get('sort_key'),
        req.GET.get('sort_dir'), allowed=db_volumes.SORT_KEYS)
    limit = req.page_limit(conf)
    return filters, sort_keys, sort_dirs, limit, req.GET.get('marker')


def _list(req, detailed):
    filters, keys, dirs, limit, marker = _list_params(req)
    with_count = req.version >= (3, 45) and req.bool_param('with_count')
    rows, total, shown = _service(req).list(
        req.context, filters, keys, dirs, limit, marker,
        all_tenants=req.bool_param('all_tenants'), with_count=with_count,
        shown=detailed)
    conf = _conf(req)
    if detailed:
        names, attached, metadata, image_metadata = shown
        items = [_detail(req, v, names, attached, metadata,
                         image_metadata=image_metadata) for v in rows]
    else:
        items = [views.summary(req, conf, v) for v in rows]
    body = links.page(req, conf, 'volumes', rows, items, limit)
    if with_count:
        body['count'] = total
    return wsgi.json_response(body)


@wsgi.expected_errors(400, 403)
def list_volumes(req):
    return _list(req, detailed=False)


@wsgi.expected_errors(400, 403)
def list_volumes_detail(req):
    return _list(req, detailed=True)


@wsgi.expected_errors(400, 403, 404)
def volume_summary(req):
    """Count, size and distinct metadata of the caller's volumes (admins:
    every project's with ``all_tenants``)."""
    if req.version < SUMMARY:
        raise webob.exc.HTTPNotFound(
            explanation='The volume summary is served from microversion '
                        '3.12.')
    unknown = set(req.GET) - {'all_tenants'}
    if unknown:
        raise webob.exc.HTTPBadRequest(
            explanation='Invalid filters %s are found in query options.'
                        % ','.join(sorted(unknown)))
    count, size, metadata = _service(req).summary(
        req.context, all_tenants=req.bool_param('all_tenants'))
    return wsgi.json_response(views.summary_of_volumes(req, count, size,
                                                       metadata))


@wsgi.expected_errors(403, 404)
def show_volume(req):
    volume, names, attached, metadata, image_metadata = _service(
        req).show(req.context, req.urlvars['volume_id'])
    return wsgi.json_response({'volume': _detail(
        req, volume, names, attached, metadata,
        image_metadata=image_metadata)})


@wsgi.expected_errors(400, 403, 404)
def update_volume(req):
    body = req.json_body()
    validation.validate(microversion.pick(schema.UPDATE, req.version), body)
    given = body['volume']
    values = {}
    for key, alias in (('name', 'display_name'),
                       ('description', 'display_description')):
        if key in given or alias in given:
            values[key] = given.get(key, given.get(alias))
    if 'metadata' in given:
        values['metadata'] = given['metadata'] or {}
    if not values:
        raise webob.exc.HTTPBadRequest(
            explanation='Nothing to update: give name, description or '
                        'metadata.')
    volume = _service(req).update(req.context, req.urlvars['volume_id'],
                                  values)
    return wsgi.json_response({'volume': _detail(req, volume,
                                                 extended=False)})


@wsgi.expected_errors(400, 403, 404, 409, 503)
def delete_volume(req):
    """``?force=true`` (3.23): an admin's delete whatever the status, as
    os-force_delete; ``cascade=true``: the volume's snapshots are deleted
    with it (every microversion, as in Cinder)."""
    cascade = req.bool_param('cascade')
    if req.version >= FORCE_DELETE and req.bool_param('force'):
        req.environ['cinder_lite.services'].actions.force_delete(
            req.context, req.urlvars['volume_id'],
            rule=policy.VOLUME_FORCE_DELETE, cascade=cascade)
    else:
        _service(req).delete(req.context, req.urlvars['volume_id'],
                             cascade=cascade)
    return wsgi.empty_response(202)
