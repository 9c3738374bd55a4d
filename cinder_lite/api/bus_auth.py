"""Who speaks on the bus: the caller of the API's RPC endpoint (topic
``cinder-lite-api``).

``keystone``: a message carries its caller's Keystone token
(``auth_token`` of the context it sends; a service acting for a user adds
its own as ``service_token``, as over REST with ``X-Service-Token``).  The
token goes through the very middleware REST requests go through
(keystonemiddleware's auth_token, configured by ``[keystone_authtoken]``,
then ``auth.KeystoneContextMiddleware``), and the request context is the
one it makes: user, project, roles, ``is_admin`` and service roles come
from Keystone, nothing but the request id from the message.  A message
without a token, or with one Keystone refuses, is refused
(``NotAuthorized``, which the caller gets back as itself).

``noauth``: the bus is trusted.  Every context on it is taken as sent,
as a service's acting for the context's project (``service`` and
``member`` roles added): whoever can publish on the bus can do anything
an attach client can.  The API says so at start.
"""
import logging
import re

import webob

from cinder_lite.api import auth
from cinder_lite.api import wsgi
from cinder_lite.common import context as cl_context
from cinder_lite.common import exception

LOG = logging.getLogger(__name__)

# a request id as oslo.context makes them: anything else the message
# says is not logged as the request's id
_REQUEST_ID = re.compile(r'^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-'
                         r'[0-9a-f]{4}-[0-9a-f]{12}$')
# where the validation pretends the request goes (keystonemiddleware
# looks at no path; the log lines it writes name it)
_PATH = '/rpc/cinder-lite-api'


def _contexts_found(environ, start_response):
    """The application behind the middleware: the context is in
    ``environ`` already, nothing to answer."""
    start_response('204 No Content', [])
    return []


class NoAuthBus:
    """noauth: the context as sent, acting as a service for its project
    (only services are meant to hold credentials for the bus)."""

    def __init__(self, conf):
        LOG.warning(
            'auth_strategy = noauth: the API\'s RPC endpoint (topic '
            'cinder-lite-api) trusts every context on the bus, as sent: '
            'anyone who can publish on the message bus can attach, read '
            'and detach any project\'s volumes, as an administrator if '
            'the message says so. Use auth_strategy = keystone where '
            'anyone but this deployment\'s services can reach the bus.')

    def context(self, ctxt):
        if 'service' not in ctxt.service_roles:
            ctxt.service_roles.append('service')
        if 'member' not in ctxt.roles:
            ctxt.roles.append('member')
        return ctxt


class KeystoneBus:
    """keystone: the context Keystone gives the message's token."""

    def __init__(self, conf):
        from keystonemiddleware import auth_token
        self._app = auth_token.AuthProtocol(
            auth.KeystoneContextMiddleware(_contexts_found),
            {'oslo_config_config': conf})

    def context(self, ctxt):
        token = getattr(ctxt, 'auth_token', None)
        if not token or not isinstance(token, str):
            raise exception.NotAuthorized(
                'Authentication required: a request on topic '
                'cinder-lite-api must carry its caller\'s Keystone token '
                '(auth_token of its context, a string); this one has none.')
        headers = {'X-Auth-Token': token}
        service_token = getattr(ctxt, 'service_token', None)
        if service_token:
            if not isinstance(service_token, str):
                raise exception.NotAuthorized(
                    'Authentication required: the service token of a '
                    'request on topic cinder-lite-api must be a string.')
            headers['X-Service-Token'] = service_token
        request = webob.Request.blank(_PATH, headers=headers)
        request_id = getattr(ctxt, 'request_id', None)
        if isinstance(request_id, str) and _REQUEST_ID.match(request_id):
            request.environ['openstack.request_id'] = request_id
        # the context of the message is no one's: this thread's current
        # context is the one Keystone's answer makes, or none
        cl_context.clear_current()
        response = request.get_response(self._app)
        found = request.environ.get(wsgi.CONTEXT_KEY)
        if found is None:
            LOG.info('Request on topic cinder-lite-api refused: its token '
                     'was not accepted (%s)', response.status)
            raise exception.NotAuthorized(
                'Authentication required: Keystone did not accept the '
                'token of this request on topic cinder-lite-api '
                '(invalid, expired or revoked; a service token must '
                'carry a service role).')
        return found


def for_conf(conf):
    """What checks the callers of the API's RPC endpoint under ``conf``'s
    ``auth_strategy``."""
    if conf.auth_strategy == 'keystone':
        return KeystoneBus(conf)
    return NoAuthBus(conf)
