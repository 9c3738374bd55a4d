"""Handlers for what operators look at: os-services (list, enable,
disable, freeze, thaw), pools and backend capabilities.

Success codes: all 200 (freeze and thaw with an empty body, as Cinder).
"""
import datetime
import logging

import webob.exc

from cinder_lite.api import resource_filters
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

LOG = logging.getLogger(__name__)

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


# PUT /os-services/freeze and /thaw: a volume backend by ``host``, or
# from 3.26 by ``cluster`` (one of the two)
_freeze_and_thaw = {
    'type': 'object',
    'properties': {
        'cluster': {'type': ['string', 'null'], 'maxLength': 255},
        'host': {'type': ['string', 'null'], 'minLength': 1,
                 'maxLength': 255,
                 'pattern': r'^[a-zA-Z0-9-._#@:/+\[\]]*$'},
    },
    'additionalProperties': False,
}
REPLICATION_CLUSTER = (3, 26)


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
    if row.binary == constants.VOLUME_BINARY:
        # Cinder's extended services fields of volume services
        # (cinder_lite does not replicate)
        view['replication_status'] = 'disabled'
        view['active_backend_id'] = None
        view['frozen'] = bool(row.frozen)
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


def _freeze_or_thaw(req, action):
    """Freeze (thaw) a volume backend: no volume there is created or
    deleted until it is thawed.  The backend is recorded frozen and
    disabled (reason ``frozen``) in one transaction; cinder_lite's
    drivers have nothing to do, so no volume service is asked (Cinder
    calls the driver's freeze_backend, then disables the service)."""
    policy.authorize(req.context, policy.FREEZE if action == 'freeze'
                     else policy.THAW)
    body = req.json_body()
    validation.validate(_freeze_and_thaw, body)
    host = body.get('host')
    cluster = (body.get('cluster') if req.version >= REPLICATION_CLUSTER
               else None)
    if bool(host) == bool(cluster):
        raise webob.exc.HTTPBadRequest(
            explanation='One and only one of cluster and host must be set.'
            if req.version >= REPLICATION_CLUSTER
            else 'Host field is missing.')
    hosts = db_api.run_writer(db_services.set_frozen, host, cluster,
                              action == 'freeze', constants.VOLUME_BINARY)
    LOG.warning('volume backend %s %s by os-services/%s',
                ', '.join(hosts), 'frozen' if action == 'freeze'
                else 'thawed', action)
    return wsgi.empty_response(200)


@wsgi.expected_errors(400, 403, 404)
def update_service(req):
    policy.authorize(req.context, policy.SERVICES_UPDATE)
    action = req.urlvars['action']
    if action in ('freeze', 'thaw'):
        return _freeze_or_thaw(req, action)
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
    row = db_api.run_writer(db_services.set_disabled, body['host'], binary,
                            disabled, reason)
    # Cinder's keys: ``service`` repeats the binary (its older name), and
    # the reason is there unless the call was a plain disable
    view = {'host': row.host, 'binary': row.binary, 'service': row.binary,
            'status': 'disabled' if row.disabled else 'enabled',
            'disabled': row.disabled}
    if action != 'disable':
        view['disabled_reason'] = reason
    return wsgi.json_response(view)


@wsgi.expected_errors(400, 403, 404)
def get_pools(req):
    """Pools of the live volume services, from their last reports."""
    policy.authorize(req.context, policy.POOLS)
    params = {k: v for k, v in req.GET.items() if k != 'detail'}
    resource_filters.check(req, 'pool', params, admins_too=True)
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
