"""Server side of the API service's RPC API (topic ``cinder-lite-api``):
the same service layer, validation and policy as REST, answering with the
REST views as plain dicts.  Who the caller is comes from
``bus_auth``: Keystone in keystone mode, the message in noauth mode."""
import uuid

import oslo_messaging as messaging

from cinder_lite.api import bus_auth
from cinder_lite.api import rpcapi
from cinder_lite.api.views import attachments as views
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite import service
from cinder_lite.volume import rules


def _uuid(value, name, nullable=False):
    if value is None and nullable:
        return None
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise exception.InvalidInput(reason='%s must be a UUID, not %r'
                                     % (name, value))


class AttachmentEndpoint:

    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def __init__(self, attachments, callers):
        self.attachments = attachments
        # bus_auth.KeystoneBus or NoAuthBus: the caller's context
        self.callers = callers

    def _view(self, ctxt, attachment):
        # the credentials for the callers policy lets see them (a
        # service acting for the owner, the owner's member, an admin)
        return views.detail(attachment,
                            self.attachments.shared_with(attachment),
                            keyring=views.keyring_for(
                                ctxt, self.attachments.conf, attachment))

    def attachment_create(self, ctxt, volume_id, instance_uuid=None,
                          connector=None, mode=None):
        ctxt = self.callers.context(ctxt)
        # (None or {}: reserve without connecting, as over REST)
        if connector:
            rules.check_connector(connector)
        attachment = self.attachments.create(
            ctxt, _uuid(volume_id, 'volume_id'),
            instance_uuid=_uuid(instance_uuid, 'instance_uuid', True),
            connector=connector or None, mode=mode,
            service_owned=policy.is_service(ctxt))
        return self._view(ctxt, attachment)

    def attachment_update(self, ctxt, attachment_id, connector):
        ctxt = self.callers.context(ctxt)
        rules.check_connector(connector)
        return self._view(ctxt, self.attachments.update(
            ctxt, _uuid(attachment_id, 'attachment_id'), connector))

    def attachment_complete(self, ctxt, attachment_id):
        ctxt = self.callers.context(ctxt)
        return self._view(ctxt, self.attachments.complete(
            ctxt, _uuid(attachment_id, 'attachment_id')))

    def attachment_delete(self, ctxt, attachment_id):
        ctxt = self.callers.context(ctxt)
        remaining = self.attachments.delete(
            ctxt, _uuid(attachment_id, 'attachment_id'))
        return [views.summary(a) for a in remaining]

    def attachment_takeover(self, ctxt, attachment_id):
        ctxt = self.callers.context(ctxt)
        return self._view(ctxt, self.attachments.takeover(
            ctxt, _uuid(attachment_id, 'attachment_id')))

    def attachment_get(self, ctxt, attachment_id):
        ctxt = self.callers.context(ctxt)
        return self._view(ctxt, self.attachments.get(
            ctxt, _uuid(attachment_id, 'attachment_id')))


def build_service(conf, attachments):
    """The RPC server of this API process on topic ``cinder-lite-api``
    (no services row: it is part of the API service)."""
    return service.RPCService(
        conf, constants.API_BINARY, rpcapi.TOPIC, conf.host,
        [AttachmentEndpoint(attachments, bus_auth.for_conf(conf))],
        conf.storage_availability_zone,
        register=False)
