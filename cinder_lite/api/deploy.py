"""The WSGI application: middleware from the outside in.

1. SecurityHeaders every response: frame-ancestors 'none', nosniff
   RequestId       every response and log line carries a request id
   ContextScope    no context left over from the thread's last request
   AccessLog       one log line per request ([DEFAULT] access_log)
2. FaultWrapper    renders errors raised below (also auth and version
                   errors) in Cinder's body; anything unexpected is a
                   logged 500
   HostCheck       (noauth only) the Host header names loopback or the
                   API's address, else 400: before anything answers,
                   against DNS rebinding
3. ServiceSetup    hands handlers the config and the service layer
4. Versions        ``/`` and ``/v3/`` answered before auth (tokenless
                   discovery); ``/healthcheck`` and the dashboard's static
                   files (``/dashboard/``) likewise
5. auth_token      (keystone only) validates the token
6. auth context    noauth or keystone headers -> request context
7. Microversion    negotiates the version, 406 outside the range
8. Router          path + method -> handler
"""
from oslo_middleware import request_id

from cinder_lite.api import access_log
from cinder_lite.api import auth
from cinder_lite.api import faults
from cinder_lite.api import health
from cinder_lite.api.handlers import versions
from cinder_lite.api import microversion
from cinder_lite.api import resource_filters
from cinder_lite.api import router
from cinder_lite.api import security_headers
from cinder_lite.api import wsgi
from cinder_lite.backup import api as backup_api
from cinder_lite.common import context as cl_context
from cinder_lite import dashboard
from cinder_lite.volume import actions
from cinder_lite.volume import api as volume_api
from cinder_lite.volume import attachment_api
from cinder_lite.volume import default_type_api
from cinder_lite.volume import fence_api
from cinder_lite.volume import group_api
from cinder_lite.volume import group_snapshot_api
from cinder_lite.volume import group_type_api
from cinder_lite.volume import image_api
from cinder_lite.volume import manage_api
from cinder_lite.volume import metadata_api
from cinder_lite.volume import qos_api
from cinder_lite.volume import quota_api
from cinder_lite.volume import revert_api
from cinder_lite.volume import snapshot_api
from cinder_lite.volume import transfer_api
from cinder_lite.volume import type_api
from cinder_lite.volume import workers_api


class Services:
    """The service layer objects handlers call."""

    def __init__(self, conf):
        self.volumes = volume_api.VolumeService(conf)
        self.types = type_api.TypeService(conf)
        self.default_types = default_type_api.DefaultTypeService(conf)
        self.resource_filters = resource_filters.load(
            conf.resource_query_filters_file)
        self.attachments = attachment_api.AttachmentService(
            conf, self.volumes.volume_rpcapi)
        self.actions = actions.VolumeActions(conf, self.attachments,
                                             self.volumes)
        self.metadata = metadata_api.MetadataService(conf)
        self.reverts = revert_api.RevertService(conf, self.attachments)
        self.images = image_api.ImageService(conf,
                                             self.volumes.volume_rpcapi)
        self.quotas = quota_api.QuotaService(conf)
        self.transfers = transfer_api.TransferService(conf)
        self.qos_specs = qos_api.QosSpecsService(conf)
        self.fences = fence_api.FenceService(conf,
                                             self.volumes.volume_rpcapi)
        self.snapshots = snapshot_api.SnapshotService(
            conf, self.volumes.volume_rpcapi)
        self.backups = backup_api.BackupService(conf, self.volumes)
        self.manage = manage_api.ManageService(conf,
                                               self.volumes.volume_rpcapi)
        self.group_types = group_type_api.GroupTypeService(conf)
        self.groups = group_api.GroupService(
            conf, self.volumes.volume_rpcapi, self.volumes.scheduler_rpcapi)
        self.group_snapshots = group_snapshot_api.GroupSnapshotService(
            conf, self.volumes.volume_rpcapi)
        self.workers = workers_api.WorkersService(
            conf, self.volumes.volume_rpcapi)


class ServiceSetup:
    def __init__(self, app, conf, services):
        self.app = app
        self.conf = conf
        self.services = services

    def __call__(self, environ, start_response):
        environ['cinder_lite.conf'] = self.conf
        environ['cinder_lite.services'] = self.services
        return self.app(environ, start_response)


class ContextScope:
    """A request starts and ends with no current context in its thread:
    the server's threads serve one request after another, and a line
    logged before the auth middleware makes this request's context (or
    for a request that never gets one, such as ``/healthcheck``) must not
    name the thread's previous request."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        cl_context.clear_current()
        try:
            return self.app(environ, start_response)
        finally:
            cl_context.clear_current()


class Versions:
    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO') or '/'
        if environ.get('REQUEST_METHOD') in ('GET', 'HEAD'):
            if path in ('', '/'):
                return versions.root(wsgi.Request(environ))(environ,
                                                            start_response)
            if path in ('/v3', '/v3/'):
                return versions.v3(wsgi.Request(environ))(environ,
                                                          start_response)
        return self.app(environ, start_response)


def make_app(conf, services=None):
    app = router.Router(conf.project_id_regex)
    app = microversion.MicroversionMiddleware(app)
    if conf.auth_strategy == 'keystone':
        from keystonemiddleware import auth_token
        app = auth.KeystoneContextMiddleware(app)
        # auth_token is a webob application: an HTTP error raised through
        # it would come out as webob's HTML page, so errors are rendered
        # below it too
        app = faults.FaultWrapper(app)
        app = auth_token.AuthProtocol(app, {'oslo_config_config': conf})
    else:
        app = auth.NoAuthMiddleware(app)
    app = Versions(app)
    if conf.dashboard.enabled:
        app = dashboard.Dispatch(app)
    app = health.Dispatch(app, conf)
    app = ServiceSetup(app, conf, services or Services(conf))
    if conf.auth_strategy == 'noauth':
        app = auth.HostCheck(app, conf)
    app = faults.FaultWrapper(app)
    if conf.access_log:
        app = access_log.AccessLog(app)
    app = ContextScope(app)
    app = request_id.RequestId(app)
    app = security_headers.SecurityHeaders(app)
    return app
