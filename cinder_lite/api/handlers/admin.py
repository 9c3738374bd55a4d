"""Handlers for what operators look at: os-services, pools and backend
capabilities.

Success codes: all 200.
"""
import datetime

import webob.exc

from cinder_lite.api import validation
from cinder_lite.api import wsgi
from cinder_lite.common import capabilities
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import models
from cinder_lite.db import services as db_services
from cinder_lite.db import volume_types as db_types

POOL_FILTERS = ('name', 'volume_type')

_service_update = {
    'type': 'object',
    'properties': {
        'host': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'binary': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'disabled_reason': {'type': ['string', 'null'], 'maxLength': 255},
    },
    'required': ['host'],
    'additionalProperties': False,
}


def _conf(req):
    return req.environ['cinder_lite.conf']


def _service_view(req, row, conf):
    up = db_services.is_up(row.heartbeat_at, conf.service_down_time)
    view = {
        'binary': row.binary,
        'host': row.host,
        'zone': row.availability_zone,
        'status': (states.SERVICE_DISABLED if row.disabled
                   else states.SERVICE_ENABLED),
        'state': states.SERVICE_UP if up else states.SERVICE_DOWN,
        'updated_at': wsgi.isotime(row.heartbeat_at),
        'disabled_reason': row.disabled_reason,
    }
    if req.version >= (3, 7):
        view['cluster'] = row.cluster_name
    if req.version >= (3, 49) and row.binary == constants.VOLUME_BINARY:
        view['backend_state'] = 'up' if up else 'down'
    return view


@wsgi.expected_errors(400, 403)
def list_services(req):
    policy.authorize(req.context, policy.SERVICES)
    unknown = set(req.GET) - {'host', 'binary'}
    if unknown:
        raise webob.exc.HTTPBadRequest(
            explanation='Invalid filters %s are found in query options.'
                        % ','.join(sorted(unknown)))
    with db_api.reader() as session:
        rows = db_services.list_services(session, req.GET.get('host'),
                                         req.GET.get('binary'))
    conf = _conf(req)
    return wsgi.json_response(
        {'services': [_service_view(req, r, conf) for r in rows]})


@wsgi.expected_errors(400, 403, 404)
def update_service(req):
    policy.authorize(req.context, policy.SERVICES_UPDATE)
    action = req.urlvars['action']
    if action not in ('enable', 'disable', 'disable-log-reason'):
        raise webob.exc.HTTPNotFound(
            explanation='Unknown os-services action: %s' % action)
    body = req.json_body()
    validation.validate(_service_update, body)
    binary = body.get('binary', constants.VOLUME_BINARY)
    disabled = action != 'enable'
    reason = body.get('disabled_reason') if action == \
        'disable-log-reason' else None
    if action == 'disable-log-reason' and not reason:
        raise webob.exc.HTTPBadRequest(
            explanation='disabled_reason is required for '
                        'disable-log-reason.')
    with db_api.writer() as session:
        row = db_services.set_disabled(session, body['host'], binary,
                                       disabled, reason)
    view = {'host': row.host, 'binary': row.binary,
            'status': 'disabled' if row.disabled else 'enabled',
            'disabled': row.disabled}
    if reason:
        view['disabled_reason'] = reason
    return wsgi.json_response(view)


@wsgi.expected_errors(400, 403, 404)
def get_pools(req):
    """Pools of the live volume services, from their last reports."""
    policy.authorize(req.context, policy.POOLS)
    params = {k: v for k, v in req.GET.items() if k != 'detail'}
    unknown = set(params) - set(POOL_FILTERS)
    if unknown:
        raise webob.exc.HTTPBadRequest(
            explanation='Invalid filters %s are found in query options.'
                        % ','.join(sorted(unknown)))
    detail = req.bool_param('detail')
    conf = _conf(req)
    with db_api.reader() as session:
        rows = db_services.list_services(session,
                                         binary=constants.VOLUME_BINARY)
        specs = None
        if 'volume_type' in params:
            specs = db_types.get_by_name_or_id(
                session, params['volume_type'])['extra_specs']
    pools, seen = [], set()
    # newest heartbeat first: a cluster's pool is shown once, as its
    # freshest member reported it
    rows = sorted(rows, key=lambda r: r.heartbeat_at or datetime.datetime.min,
                  reverse=True)
    for row in rows:
        if not db_services.is_up(row.heartbeat_at, conf.service_down_time):
            continue
        caps = dict(row.capabilities or {})
        name = '%s#%s' % (row.cluster_name or row.host,
                          caps.get('volume_backend_name') or row.backend)
        if name in seen:
            continue
        seen.add(name)
        if params.get('name') and params['name'] != name:
            continue
        if specs is not None and not capabilities.satisfies(caps, specs):
            continue
        pool = {'name': name}
        if detail:
            caps['timestamp'] = wsgi.isotime(row.heartbeat_at)
            pool['capabilities'] = caps
        pools.append(pool)
    return wsgi.json_response({'pools': pools})


@wsgi.expected_errors(403, 404, 503)
def show_capabilities(req):
    """Asks the volume service itself, as Cinder does."""
    policy.authorize(req.context, policy.CAPABILITIES)
    host = req.urlvars['host']
    conf = _conf(req)
    with db_api.reader() as session:
        # a volume service, or a cluster (asked through a live member)
        members = db_services.backend_members(
            session, host.partition('#')[0], constants.VOLUME_BINARY)
    if not members:
        raise exception.HostNotFound(host=host)
    row = db_services.freshest(members)
    if not db_services.is_up(row.heartbeat_at, conf.service_down_time):
        if row.heartbeat_at is None:
            # it stopped cleanly (or never beat)
            reason = 'no heartbeat since it stopped'
        else:
            reason = 'no heartbeat for %d s' % (
                models.utcnow() - row.heartbeat_at).total_seconds()
        raise exception.ServiceUnavailable(host=row.host, reason=reason)
    rpcapi = req.environ['cinder_lite.services'].volumes.volume_rpcapi
    caps = rpcapi.get_capabilities(req.context, row.host)
    return wsgi.json_response({
        'namespace': 'OS::Storage::Capabilities::%s' % host.partition('#')[0],
        'vendor_name': caps.get('vendor_name'),
        'volume_backend_name': caps.get('volume_backend_name'),
        'pool_name': None,
        'driver_version': caps.get('driver_version'),
        'storage_protocol': caps.get('storage_protocol'),
        'display_name': None,
        'description': None,
        'visibility': None,
        'replication_targets': [],
        'properties': {
            key: {'title': key, 'description': key,
                  'type': type(value).__name__.replace('str', 'string')
                  .replace('bool', 'boolean').replace('float', 'number')
                  .replace('int', 'integer')}
            for key, value in caps.items()
            if key in ('multiattach', 'shared_targets',
                       'thin_provisioning_support',
                       'thick_provisioning_support')},
    })
