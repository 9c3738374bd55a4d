"""Who is calling: builds the request context.

``noauth`` follows Cinder: ``X-Auth-Token: user:project`` (no colon means
project = user), and the caller is an administrator.  cinder_lite also
reads ``X-Roles`` (comma separated) when present, so a deployment without
Keystone can still act as a plain member; ``X-Service-Roles`` marks a
service caller.  ``keystone`` trusts the headers keystonemiddleware's
auth_token sets after validating the token.

noauth is for a laptop: ``check_start`` refuses it on an address that is
not loopback (unless ``allow_noauth_off_loopback``) and says at start
what it trusts, and ``HostCheck`` answers only requests whose Host header
names a loopback address or the API's own address.  A page a browser on
this machine loaded from elsewhere cannot send X-Auth-Token to the API
(cross-origin, no CORS), except through DNS rebinding: its own name made
to resolve to 127.0.0.1, which the Host header still says.
"""
import ipaddress
import json
import logging
import socket
import urllib.parse

import webob.exc

from cinder_lite.api import wsgi
from cinder_lite.common import context as cl_context
from cinder_lite.common import exception


LOG = logging.getLogger(__name__)

LOCALHOST = 'localhost'


def _address(host):
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def is_loopback(host):
    """Whether ``host`` (an address or a name) is this machine's loopback
    only: 127.0.0.0/8, ::1, ``localhost``, or a name that resolves to
    loopback addresses only."""
    host = (host or '').strip().strip('[]').rstrip('.').lower()
    if not host:
        return False
    if host == LOCALHOST:
        return True
    address = _address(host)
    if address is not None:
        return address.is_loopback
    try:
        found = {info[4][0] for info in socket.getaddrinfo(
            host, None, type=socket.SOCK_STREAM)}
    except (socket.gaierror, UnicodeError):
        return False
    return bool(found) and all(_address(a.split('%')[0]) is not None and
                               _address(a.split('%')[0]).is_loopback
                               for a in found)


def check_start(conf):
    """Before a server of the API starts: in noauth mode, refuse an
    address that is not loopback (NoauthOffLoopback) unless
    ``allow_noauth_off_loopback``."""
    if conf.auth_strategy != 'noauth':
        return
    if not is_loopback(conf.osapi_volume_listen) and \
            not conf.allow_noauth_off_loopback:
        raise exception.NoauthOffLoopback(address=conf.osapi_volume_listen)


def warn_at_start(conf):
    """As a server of the API starts in noauth mode: say what it trusts
    (a WARNING), and that it serves more than loopback when it does."""
    if conf.auth_strategy != 'noauth':
        return
    if not is_loopback(conf.osapi_volume_listen):
        LOG.warning('auth_strategy = noauth on %s, not loopback '
                    '(allow_noauth_off_loopback = true): every host that '
                    'reaches it is trusted as whoever it says it is',
                    conf.osapi_volume_listen)
    warn_noauth()


def warn_noauth():
    LOG.warning('auth_strategy = noauth: the API trusts X-Auth-Token '
                '(user:project) and X-Roles as sent, without checking '
                'them (no X-Roles means admin), and trusts the requests '
                'on the message bus likewise; it is for a laptop. Use '
                'auth_strategy = keystone anywhere else.')


def _host_of(value):
    """The host part of a Host header (``name``, ``name:port``,
    ``[v6]``, ``[v6]:port``), lower case; None when it is not one."""
    value = value.strip().lower()
    if value.startswith('['):
        host, sep, rest = value[1:].partition(']')
        if not sep or (rest and not (rest.startswith(':') and
                                     rest[1:].isdigit())):
            return None
        return host
    if value.count(':') > 1:
        # a bare IPv6 address (no port can be told from it)
        return value
    host, sep, port = value.partition(':')
    if sep and not port.isdigit():
        return None
    return host.rstrip('.')


def _same_host(a, b):
    address_a, address_b = _address(a), _address(b)
    if address_a is not None or address_b is not None:
        return address_a == address_b
    return a == b


class HostCheck:
    """noauth only: a request whose Host header names neither a loopback
    address (127.0.0.0/8, ::1, localhost) nor the API's own address
    (``osapi_volume_listen``, the host of ``public_endpoint``) is refused
    with 400, before anything else looks at it.  This defeats DNS
    rebinding: a page whose name was made to resolve to this machine
    still sends that name."""

    def __init__(self, app, conf):
        self.app = app
        own = [conf.osapi_volume_listen]
        if conf.public_endpoint:
            own.append(urllib.parse.urlsplit(conf.public_endpoint).hostname)
        unspecified = ('0.0.0.0', '::')
        self.own = [h.strip('[]').rstrip('.').lower() for h in own
                    if h and h not in unspecified]

    def allowed(self, host):
        if not host:
            return False
        if host == LOCALHOST:
            return True
        address = _address(host)
        if address is not None and address.is_loopback:
            return True
        return any(_same_host(host, own) for own in self.own)

    def __call__(self, environ, start_response):
        value = environ.get('HTTP_HOST')
        if value is None or not self.allowed(_host_of(value)):
            from cinder_lite.api import faults
            return faults.render(webob.exc.HTTPBadRequest(
                explanation='In noauth mode the API answers only requests '
                            'whose Host header names a loopback address '
                            '(127.0.0.1, ::1, localhost) or its own '
                            'address (%s); got %s.' % (
                                ', '.join(self.own) or 'loopback only',
                                'none' if value is None
                                else repr(value[:100]))))(
                environ, start_response)
        return self.app(environ, start_response)


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
