"""Attach and detach from a compute node: reserve → connect → complete,
and delete, over REST (Cinder's attachments API) or over the bus (topic
``cinder-lite-api``).  Both return the attachment as the API shows it."""
import requests

from cinder_lite.api import rpcapi
from cinder_lite.common import context as cl_context
from cinder_lite.common import exception
from cinder_lite.connector import devices


class RestTransport:
    """The attachments API at ``endpoint`` (``http://host:8776/v3``)."""

    VERSION = '3.54'

    def __init__(self, endpoint, project_id, user_id='compute',
                 roles=None, service=True, timeout=60):
        self.base = '%s/%s' % (endpoint.rstrip('/'), project_id)
        self.session = requests.Session()
        self.session.headers.update({
            'X-Auth-Token': '%s:%s' % (user_id, project_id),
            'OpenStack-API-Version': 'volume %s' % self.VERSION,
        })
        if roles:
            self.session.headers['X-Roles'] = roles
        if service:
            self.session.headers['X-Service-Roles'] = 'service'
        self.timeout = timeout

    def _do(self, method, path, body=None, expect=(200,)):
        resp = self.session.request(method, self.base + path, json=body,
                                    timeout=self.timeout)
        if resp.status_code not in expect:
            try:
                message = next(iter(resp.json().values()))['message']
            except (ValueError, StopIteration, KeyError, TypeError,
                    AttributeError):
                message = resp.text
            raise exception.CinderLiteError(
                '%s %s: HTTP %d: %s' % (method, path, resp.status_code,
                                        message))
        return resp.json() if resp.content else None

    def create(self, volume_id, instance_uuid, connector, mode):
        body = {'volume_uuid': volume_id, 'instance_uuid': instance_uuid}
        if connector is not None:
            body['connector'] = connector
        if mode is not None:
            body['mode'] = mode
        return self._do('POST', '/attachments',
                        {'attachment': body})['attachment']

    def update(self, attachment_id, connector):
        return self._do('PUT', '/attachments/%s' % attachment_id,
                        {'attachment': {'connector': connector}}
                        )['attachment']

    def complete(self, attachment_id):
        self._do('POST', '/attachments/%s/action' % attachment_id,
                 {'os-complete': None}, expect=(204,))
        return self.get(attachment_id)

    def delete(self, attachment_id):
        return self._do('DELETE', '/attachments/%s' % attachment_id
                        )['attachments']

    def takeover(self, attachment_id):
        return self._do('POST', '/attachments/%s/action' % attachment_id,
                        {'os-takeover': {}})['attachment']

    def get(self, attachment_id):
        return self._do('GET', '/attachments/%s' % attachment_id
                        )['attachment']


class BusTransport:
    """The API service's RPC endpoint; needs the bus configured in this
    process (``[DEFAULT] transport_url``).

    With the API in keystone mode every call carries ``token``, a Keystone
    token scoped to ``project_id`` (the user's the attachment is for), and
    ``service_token``, this compute node's own (a token with the service
    role: the attachment is then guarded as a service's); the API takes
    who is calling from Keystone alone.  With the API in noauth mode the
    context is taken as sent, the tokens are not needed."""

    def __init__(self, project_id, user_id='compute', conf=None,
                 token=None, service_token=None):
        self.api = rpcapi.AttachmentAPI(conf)
        self.context = cl_context.RequestContext(
            user_id=user_id, project_id=project_id, roles=['member'],
            service_roles=['service'], auth_token=token,
            service_token=service_token, current=False)

    def create(self, volume_id, instance_uuid, connector, mode):
        return self.api.attachment_create(self.context, volume_id,
                                          instance_uuid, connector, mode)

    def update(self, attachment_id, connector):
        return self.api.attachment_update(self.context, attachment_id,
                                          connector)

    def complete(self, attachment_id):
        return self.api.attachment_complete(self.context, attachment_id)

    def delete(self, attachment_id):
        return self.api.attachment_delete(self.context, attachment_id)

    def takeover(self, attachment_id):
        return self.api.attachment_takeover(self.context, attachment_id)

    def get(self, attachment_id):
        return self.api.attachment_get(self.context, attachment_id)


class AttachClient:
    """``attach`` reserves, connects with this host's connector and
    completes; if connecting fails the reservation is deleted again, so a
    failed attach leaves nothing behind."""

    def __init__(self, transport, connector):
        self.transport = transport
        self.connector = connector

    def attach(self, volume_id, instance_uuid=None, mode=None):
        attachment = self.transport.create(volume_id, instance_uuid, None,
                                           mode)
        try:
            self.transport.update(attachment['id'], self.connector)
            return self.transport.complete(attachment['id'])
        except Exception:
            self._forget(attachment['id'])
            raise

    def _forget(self, attachment_id):
        """Delete an attachment after a failure, which is what the caller
        hears about (a second error here is not)."""
        try:
            self.transport.delete(attachment_id)
        except Exception:
            pass

    def detach(self, attachment_id, device=None):
        """Delete the attachment, closing ``device`` first."""
        if device is not None:
            device.close()
        return self.transport.delete(attachment_id)

    def takeover(self, attachment_id, device=None):
        """Make this host's read-only attachment of a single-writer volume
        the writer (the old writer is cut off at the target first);
        closes ``device``, the read-only one, and returns (attachment,
        read-write device).  If the new device cannot be opened the
        attachment stays, read-write, for the caller to retry ``open`` or
        detach."""
        attachment = self.transport.takeover(attachment_id)
        if device is not None:
            device.close()
        return attachment, self.open(attachment)

    def open(self, attachment):
        """The block device of a connected ``attachment``, reached from
        this host's address as this host's initiator."""
        return devices.connect(attachment['connection_info'],
                               source_address=self.connector.get('ip'),
                               initiator=self.connector.get('initiator'))

    def attach_device(self, volume_id, instance_uuid=None, mode=None):
        """``attach`` and ``open``: (attachment, device).  If the device
        cannot be opened the attachment is deleted again."""
        attachment = self.attach(volume_id, instance_uuid, mode)
        try:
            return attachment, self.open(attachment)
        except Exception:
            self._forget(attachment['id'])
            raise
