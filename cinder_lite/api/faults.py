"""Cinder's error bodies, and the outermost guard that turns anything
unexpected into a logged 500.

A client error looks like ``{"badRequest": {"code": 400, "message":
"..."}}``; the key depends on the status code as in Cinder.
"""
import json
import logging

import webob
import webob.exc

from cinder_lite.common import exception
from cinder_lite.db import api as db_api

LOG = logging.getLogger(__name__)

FAULT_NAMES = {400: 'badRequest', 401: 'unauthorized', 403: 'forbidden',
               404: 'itemNotFound', 405: 'badMethod',
               409: 'conflictingRequest', 413: 'overLimit',
               415: 'badMediaType', 501: 'notImplemented',
               503: 'serviceUnavailable'}

# The database could not be reached, or gave up on a lock: the request
# may be retried, so these answer 503 instead of 500.
DATABASE_UNAVAILABLE = db_api.UNAVAILABLE
RETRY_AFTER_S = '2'

# Domain errors and the status each maps to when a handler expects it.
STATUS_OF = ((exception.NotFound, 404),
             (exception.PolicyNotAuthorized, 403),
             (exception.NotAuthorized, 403),
             (exception.ServiceUnavailable, 503),
             (exception.ConnectFailed, 503),
             (exception.BackendError, 503),
             (exception.Conflict, 409),
             (exception.OverQuota, 413),
             (exception.Invalid, 400))


def render(http_error):
    """A webob response with Cinder's body for an HTTP error."""
    code = http_error.code
    name = FAULT_NAMES.get(code, 'computeFault')
    message = http_error.explanation or http_error.title
    if getattr(http_error, 'detail', None):
        message = http_error.detail
    body = {name: {'code': code, 'message': message}}
    if code == 413 and 'Retry-After' in http_error.headers:
        body[name]['retryAfter'] = http_error.headers['Retry-After']
    resp = webob.Response(status=code, content_type='application/json',
                          charset='utf-8')
    resp.body = json.dumps(body).encode()
    for key, value in http_error.headers.items():
        if key.lower() in ('allow', 'www-authenticate', 'retry-after'):
            resp.headers[key] = value
    return resp


def http_error(exc):
    """The HTTP error for a domain error, None if it is not mapped."""
    for cls, code in STATUS_OF:
        if isinstance(exc, cls):
            if code == 413:
                return _over_limit(exc)
            return webob.exc.status_map[code](explanation=exc.message)
    return None


def _over_limit(exc):
    """Cinder's 413: the message names the error class, and the client
    may retry at once (``retryAfter`` 0) once it freed something."""
    # (an error raised by a volume service arrives as a subclass made
    # by oslo.messaging)
    name = next(c.__name__ for c in type(exc).__mro__
                if c.__module__ == exception.__name__)
    return webob.exc.HTTPRequestEntityTooLarge(
        explanation='%s: %s' % (name, exc.message),
        headers={'Retry-After': '0'})


class FaultWrapper:
    """Renders HTTP errors raised below, and answers 500 (logged with the
    request id) for everything else."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        try:
            return self.app(environ, start_response)
        except webob.exc.HTTPException as e:
            return render(e)(environ, start_response)
        except DATABASE_UNAVAILABLE as e:
            LOG.warning('database unavailable in %s %s (request %s): %s',
                        environ.get('REQUEST_METHOD'),
                        environ.get('PATH_INFO'),
                        environ.get('openstack.request_id'),
                        str(e).splitlines()[0][:300])
            if db_api.is_deadlock(e):
                # run_writer gave up: the change met concurrent ones of
                # the same rows at every attempt
                why = ('The database refused the change %d times as '
                       'conflicting with concurrent changes of the same '
                       'objects (a deadlock, or a certification failure '
                       'of a multi-writer Galera cluster); retry later.'
                       % db_api.deadlock_attempts())
            else:
                why = 'The database is unavailable; retry later.'
            answer = render(webob.exc.HTTPServiceUnavailable(
                explanation=why, headers={'Retry-After': RETRY_AFTER_S}))
            return answer(environ, start_response)
        except Exception:
            LOG.exception('unexpected error in %s %s (request %s)',
                          environ.get('REQUEST_METHOD'),
                          environ.get('PATH_INFO'),
                          environ.get('openstack.request_id'))
            return render(webob.exc.HTTPInternalServerError(
                explanation='The server has either erred or is incapable '
                            'of performing the requested operation.'))(
                environ, start_response)
