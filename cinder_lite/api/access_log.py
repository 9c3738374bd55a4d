"""One log line per request, as operators expect of an OpenStack API:
method, path, status, time, request id, project and the microversion the
request was served at (``[DEFAULT] access_log``).  Refusals (4xx) are
then in the log too, with the request id their body's client saw."""
import logging
import time

from cinder_lite.api import microversion

LOG = logging.getLogger('cinder_lite.api.access')


class AccessLog:

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        started = time.monotonic()
        seen = {}

        def _start(status, headers, exc_info=None):
            seen['status'] = status.split(' ', 1)[0]
            return start_response(status, headers, exc_info)
        try:
            return self.app(environ, _start)
        finally:
            context = environ.get('cinder_lite.context')
            path = environ.get('PATH_INFO') or '/'
            if environ.get('QUERY_STRING'):
                path += '?' + environ['QUERY_STRING']
            version = environ.get(microversion.ENV_KEY)
            LOG.info('%s %s %s %.1f ms (request %s, project %s, version %s)',
                     environ.get('REQUEST_METHOD'), path[:512],
                     seen.get('status', '-'),
                     (time.monotonic() - started) * 1000,
                     environ.get('openstack.request_id', '-'),
                     getattr(context, 'project_id', None) or '-',
                     microversion.to_str(version) if version else '-')
