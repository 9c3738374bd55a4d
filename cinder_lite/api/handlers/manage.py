"""Handlers for manage and unmanage: ``/os-volume-manage``,
``/os-snapshot-manage``, ``/manageable_volumes(/detail)`` and
``/manageable_snapshots(/detail)`` (the ``os-unmanage`` actions are
among the volume and snapshot actions).

Success codes: manage 202 with the new volume (snapshot), lists 200
(all microversions; ``cluster`` instead of ``host`` from 3.16 for a
manage, 3.17 for a list).
"""
from cinder_lite.api.handlers import volumes as volume_handlers
from cinder_lite.api.schemas import common as schema_common
from cinder_lite.api.schemas import manage as schema
from cinder_lite.api import validation
from cinder_lite.api.views import manageable as views
from cinder_lite.api.views import snapshots as snapshot_views
from cinder_lite.api import wsgi
from cinder_lite.common import exception
from cinder_lite.db import query
from cinder_lite.volume import manageable

MANAGE_CLUSTER = (3, 16)
LIST_CLUSTER = (3, 17)


def _service(req):
    return req.environ['cinder_lite.services'].manage


def _host_or_cluster(req, given, since):
    host = given.get('host')
    cluster = given.get('cluster') if req.version >= since else None
    if bool(host) == bool(cluster):
        raise exception.InvalidInput(
            reason='One and only one of cluster and host must be set.'
            if req.version >= since else
            'The following elements are required: host')
    return host, cluster


@wsgi.expected_errors(400, 403, 404, 413, 503)
def manage_volume(req):
    body = req.json_body()
    validation.validate(schema.manage_volume, body)
    given = dict(body['volume'])
    host, cluster = _host_or_cluster(req, given, MANAGE_CLUSTER)
    request = {
        'ref': given['ref'], 'host': host, 'cluster': cluster,
        'name': given.get('name'), 'description': given.get('description'),
        'volume_type': given.get('volume_type'),
        'availability_zone': given.get('availability_zone'),
        'bootable': schema_common.to_bool(given.get('bootable') or False),
        'metadata': given.get('metadata'),
    }
    volume, vtype = _service(req).manage(req.context, request)
    return wsgi.json_response({'volume': volume_handlers._detail(
        req, volume, {vtype['id']: vtype['name']}, {},
        {volume.id: given.get('metadata') or {}}, extended=False)}, 202)


@wsgi.expected_errors(400, 403, 404, 413, 503)
def manage_snapshot(req):
    body = req.json_body()
    validation.validate(schema.manage_snapshot, body)
    given = body['snapshot']
    snapshot = _service(req).manage_snapshot(req.context, {
        'volume_id': given['volume_id'], 'ref': given['ref'],
        'name': given.get('name'), 'description': given.get('description'),
        'metadata': given.get('metadata')})
    return wsgi.json_response({'snapshot': snapshot_views.detail(
        req, snapshot, given.get('metadata') or {}, extended=False)}, 202)


def _list_params(req):
    host, cluster = _host_or_cluster(req, req.GET, LIST_CLUSTER)
    sort, sort_key = req.GET.get('sort'), req.GET.get('sort_key')
    keys, dirs = query.parse_sort(
        sort, sort_key or (None if sort else 'reference'),
        req.GET.get('sort_dir'), allowed=manageable.SORT_KEYS)
    limit = req.page_limit(req.environ['cinder_lite.conf'])
    return (host, cluster, req.GET.get('marker'), limit,
            req.int_param('offset', 0), keys, dirs)


def _list(req, kind, detailed):
    method = (_service(req).list_manageable_volumes if kind == 'volumes'
              else _service(req).list_manageable_snapshots)
    found = method(req.context, *_list_params(req))
    return wsgi.json_response(views.entries(found, kind, detailed))


@wsgi.expected_errors(400, 403, 404, 503)
def list_manageable_volumes(req):
    return _list(req, 'volumes', False)


@wsgi.expected_errors(400, 403, 404, 503)
def list_manageable_volumes_detail(req):
    return _list(req, 'volumes', True)


@wsgi.expected_errors(400, 403, 404, 503)
def list_manageable_snapshots(req):
    return _list(req, 'snapshots', False)


@wsgi.expected_errors(400, 403, 404, 503)
def list_manageable_snapshots_detail(req):
    return _list(req, 'snapshots', True)
