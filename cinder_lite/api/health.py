"""``GET /healthcheck`` (oslo.middleware's healthcheck) with a check of
its own: the API is healthy when its database answers.  Other checks
(``disable_by_file`` …) are added with ``[healthcheck] backends``."""
from oslo_middleware.healthcheck import opts as healthcheck_opts
from oslo_middleware.healthcheck import pluginbase

from cinder_lite.db import api as db_api

PATH = '/healthcheck'
DATABASE_CHECK = 'cinder_lite_database'


def register_opts(conf):
    conf.register_opts(healthcheck_opts.HEALTHCHECK_OPTS, group='healthcheck')
    conf.set_default('backends', [DATABASE_CHECK], group='healthcheck')


class DatabaseCheck(pluginbase.HealthcheckBaseExtension):
    """Healthy when ``SELECT 1`` succeeds on the database."""

    def healthcheck(self, server_port):
        try:
            with db_api.reader() as session:
                db_api.ping(session)
        except Exception as e:
            return pluginbase.HealthcheckResult(
                available=False, reason='database unreachable: %s'
                % type(e).__name__, details=str(e))
        return pluginbase.HealthcheckResult(available=True,
                                            reason='database reachable')


class Dispatch:
    """Sends ``/healthcheck`` to the healthcheck application (before
    authentication), everything else on."""

    def __init__(self, app, conf):
        from oslo_middleware import healthcheck
        register_opts(conf)
        self.app = app
        self.health = healthcheck.Healthcheck(None, conf)

    def __call__(self, environ, start_response):
        if (environ.get('PATH_INFO') or '').rstrip('/') == PATH:
            return self.health(environ, start_response)
        return self.app(environ, start_response)
