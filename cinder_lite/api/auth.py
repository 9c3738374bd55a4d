"""Who is calling: builds the request context.

``noauth`` follows Cinder: ``X-Auth-Token: user:project`` (no colon means
project = user), and the caller is an administrator.  cinder_lite also
reads ``X-Roles`` (comma separated) when present, so a deployment without
Keystone can still act as a plain member; ``X-Service-Roles`` marks a
service caller.  ``keystone`` trusts the headers keystonemiddleware's
auth_token sets after validating the token.
"""
import json

import webob.exc

from cinder_lite.api import wsgi
from cinder_lite.common import context as cl_context


def _roles(value):
    return [r.strip() for r in (value or '').split(',') if r.strip()]


class NoAuthMiddleware:

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        token = environ.get('HTTP_X_AUTH_TOKEN')
        if not token:
            from cinder_lite.api import faults
            return faults.render(webob.exc.HTTPUnauthorized(
                explanation='Authentication required: send X-Auth-Token: '
                            'user:project.'))(environ, start_response)
        user_id, sep, project_id = token.partition(':')
        if not sep:
            project_id = user_id
        if not user_id or not project_id:
            from cinder_lite.api import faults
            return faults.render(webob.exc.HTTPUnauthorized(
                explanation='Authentication required: X-Auth-Token must '
                            'be user:project with neither part empty '
                            '(got %r).' % token[:64]))(environ,
                                                       start_response)
        roles = _roles(environ.get('HTTP_X_ROLES'))
        if not roles:
            roles = ['admin', 'member', 'reader']
        environ[wsgi.CONTEXT_KEY] = cl_context.RequestContext(
            user_id=user_id, project_id=project_id, roles=roles,
            is_admin='admin' in roles,
            service_roles=_roles(environ.get('HTTP_X_SERVICE_ROLES')),
            auth_token=token,
            request_id=environ.get('openstack.request_id'))
        return self.app(environ, start_response)


def _catalog(value):
    """The service catalog keystonemiddleware hands on (JSON), [] when
    absent or unreadable."""
    try:
        catalog = json.loads(value) if value else []
    except ValueError:
        return []
    return catalog if isinstance(catalog, list) else []


class KeystoneContextMiddleware:

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if environ.get('HTTP_X_IDENTITY_STATUS') != 'Confirmed':
            from cinder_lite.api import faults
            return faults.render(webob.exc.HTTPUnauthorized(
                explanation='Authentication required.'))(environ,
                                                          start_response)
        roles = _roles(environ.get('HTTP_X_ROLES'))
        environ[wsgi.CONTEXT_KEY] = cl_context.RequestContext(
            user_id=environ.get('HTTP_X_USER_ID'),
            project_id=environ.get('HTTP_X_PROJECT_ID'),
            roles=roles, is_admin='admin' in roles,
            service_roles=_roles(environ.get('HTTP_X_SERVICE_ROLES')),
            auth_token=environ.get('HTTP_X_AUTH_TOKEN'),
            service_catalog=_catalog(environ.get('HTTP_X_SERVICE_CATALOG')),
            request_id=environ.get('openstack.request_id'))
        return self.app(environ, start_response)
