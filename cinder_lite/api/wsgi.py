"""Small helpers handlers share: the request context and version, the
JSON body, JSON responses, query parameters, expected errors."""
import functools
import json

import webob
import webob.exc

from cinder_lite.api import faults
from cinder_lite.api import microversion

CONTEXT_KEY = 'cinder_lite.context'
MAX_BODY_BYTES = 1024 * 1024


class Request(webob.Request):

    @property
    def context(self):
        return self.environ[CONTEXT_KEY]

    @property
    def version(self):
        return self.environ.get(microversion.ENV_KEY, microversion.MIN)

    @property
    def urlvars(self):
        return self.environ['wsgiorg.routing_args'][1]

    def json_body(self):
        """The parsed body; 400 when it is missing, too large or not
        JSON."""
        if self.content_length and self.content_length > MAX_BODY_BYTES:
            raise webob.exc.HTTPRequestEntityTooLarge(
                explanation='Request body is larger than %d bytes.'
                            % MAX_BODY_BYTES)
        raw = self.body_file.read(MAX_BODY_BYTES + 1) \
            if self.content_length is None else self.body
        if len(raw) > MAX_BODY_BYTES:
            raise webob.exc.HTTPRequestEntityTooLarge(
                explanation='Request body is larger than %d bytes.'
                            % MAX_BODY_BYTES)
        if not raw:
            raise webob.exc.HTTPBadRequest(
                explanation='Malformed request body: the body is empty.')
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise webob.exc.HTTPBadRequest(
                explanation='Malformed request body: it is not JSON.')

    def bool_param(self, name, default=False):
        value = self.GET.get(name)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered in ('1', 'true', 't', 'yes', 'y', 'on'):
            return True
        if lowered in ('0', 'false', 'f', 'no', 'n', 'off', ''):
            return False
        raise webob.exc.HTTPBadRequest(
            explanation="Invalid value '%s' for %s: expected a boolean."
                        % (value, name))

    def page_limit(self, conf):
        """``limit``, capped by ``osapi_max_limit``."""
        limit = self.int_param('limit', 0)
        return conf.osapi_max_limit if limit is None else min(
            limit, conf.osapi_max_limit)

    def int_param(self, name, minimum=0):
        value = self.GET.get(name)
        if value is None:
            return None
        try:
            number = int(value)
        except ValueError:
            raise webob.exc.HTTPBadRequest(
                explanation='%s param must be an integer' % name)
        if number < minimum:
            raise webob.exc.HTTPBadRequest(
                explanation='%s param must be at least %d' % (name, minimum))
        return number


def json_response(body, status=200):
    resp = webob.Response(status=status, content_type='application/json',
                          charset='utf-8')
    resp.body = json.dumps(body, default=_default).encode()
    return resp


def empty_response(status):
    resp = webob.Response(status=status)
    resp.content_type = None
    return resp


def _default(value):
    if hasattr(value, 'isoformat'):
        return value.isoformat()
    raise TypeError(repr(value))


def isotime(value):
    return value.isoformat(timespec='microseconds') if value else None


def expected_errors(*codes):
    """Turn the domain errors a handler expects into HTTP errors.

    404 (not found) and 403 (policy) are always expected; a domain error
    mapped to another code the handler did not declare is a bug and
    surfaces as 500.
    """
    allowed = set(codes) | {403, 404}

    def decorator(handler):
        @functools.wraps(handler)
        def wrapper(req):
            try:
                return handler(req)
            except webob.exc.HTTPException:
                raise
            except Exception as e:
                error = faults.http_error(e)
                if error is None or error.code not in allowed:
                    raise
                raise error
        return wrapper
    return decorator
