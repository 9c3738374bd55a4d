"""Handlers for os-hosts (admins) and os-availability-zone (anyone).

Success codes: all 200, every microversion.
"""
import webob.exc

from cinder_lite.api import wsgi
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.db import api as db_api
from cinder_lite.db import services as db_services
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volumes as db_volumes


def _conf(req):
    return req.environ['cinder_lite.conf']


@wsgi.expected_errors(400, 403)
def list_availability_zones(req):
    """The zones of the volume services, each available while one of its
    services is enabled (as Cinder: whether they are up does not
    count)."""
    with db_api.reader() as session:
        zones = db_services.availability_zones(session,
                                               constants.VOLUME_BINARY)
    return wsgi.json_response({'availabilityZoneInfo': [
        {'zoneName': zone, 'zoneState': {'available': available}}
        for zone, available in zones.items()]})


@wsgi.expected_errors(400, 403)
def list_hosts(req):
    """Every enabled service (of ``zone``), as Cinder's host list."""
    policy.authorize(req.context, policy.HOSTS)
    unknown = set(req.GET) - {'zone'}
    if unknown:
        raise webob.exc.HTTPBadRequest(
            explanation='Invalid filters %s are found in query options.'
                        % ','.join(sorted(unknown)))
    conf = _conf(req)
    with db_api.reader() as session:
        rows = db_services.enabled_services(session, req.GET.get('zone'))
    return wsgi.json_response({'hosts': [{
        'host_name': row.host,
        'service': row.binary,
        'zone': row.availability_zone,
        'service-status': ('available' if db_services.is_up(
            row.heartbeat_at, conf.service_down_time) else 'unavailable'),
        'service-state': 'disabled' if row.disabled else 'enabled',
        'last-update': wsgi.isotime(row.heartbeat_at),
    } for row in rows]})


@wsgi.expected_errors(403, 404)
def show_host(req):
    """What the enabled volume service ``host_name`` holds: a total line,
    then one line a project (volumes and snapshots, count and GiB).  The
    volumes of a cluster's member are its cluster's."""
    policy.authorize(req.context, policy.HOSTS)
    host = req.urlvars['host_name']
    with db_api.reader() as session:
        row = db_services.get_by_host(session, host,
                                      constants.VOLUME_BINARY)
        if row.disabled:
            # as Cinder: a disabled service is not a host to show
            raise exception.ServiceNotFound(binary=row.binary, host=host)
        backends = [host] + ([row.cluster_name] if row.cluster_name
                             else [])
        usage = db_volumes.usage_on_backends(session, backends)
        snapshots = db_snapshots.usage_on_backends(session, backends)

    def line(project, count, size, snap_count, snap_size):
        return {'resource': {'host': host, 'project': project,
                             'volume_count': str(count),
                             'total_volume_gb': str(size),
                             'snapshot_count': str(snap_count),
                             'total_snapshot_gb': str(snap_size)}}
    total = line('(total)', sum(c for c, _ in usage.values()),
                 sum(s for _, s in usage.values()),
                 sum(c for c, _ in snapshots.values()),
                 sum(s for _, s in snapshots.values()))
    return wsgi.json_response({'host': [total] + [
        line(project, count, size, *snapshots.get(project, (0, 0)))
        for project, (count, size) in usage.items()]})
