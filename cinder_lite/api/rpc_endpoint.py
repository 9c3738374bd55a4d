"""Server side of the API service's RPC API (topic ``cinder-lite-api``):
the same service layer, validation and policy as REST, answering with the
REST views as plain dicts."""
import uuid

import oslo_messaging as messaging

from cinder_lite.api import rpcapi
from cinder_lite.api.views import attachments as views
from cinder_lite.common import constants
from cinder_lite.common import credentials
from cinder_lite.common import exception
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


def _as_service(ctxt):
    """Callers on the bus are services acting for the context's project
    (only services hold credentials for the bus)."""
    if 'service' not in ctxt.service_roles:
        ctxt.service_roles.append('service')
    if 'member' not in ctxt.roles:
        ctxt.roles.append('member')
    return ctxt


class AttachmentEndpoint:

    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def __init__(self, attachments):
        self.attachments = attachments

    def _view(self, attachment):
        # (callers on the bus connect: they get the credentials)
        return views.detail(attachment,
                            self.attachments.shared_with(attachment),
                            keyring=credentials.keyring(
                                self.attachments.conf))

    def attachment_create(self, ctxt, volume_id, instance_uuid=None,
                          connector=None, mode=None):
        # (None or {}: reserve without connecting, as over REST)
        if connector:
            rules.check_connector(connector)
        attachment = self.attachments.create(
            _as_service(ctxt), _uuid(volume_id, 'volume_id'),
            instance_uuid=_uuid(instance_uuid, 'instance_uuid', True),
            connector=connector or None, mode=mode, service_owned=True)
        return self._view(attachment)

    def attachment_update(self, ctxt, attachment_id, connector):
        rules.check_connector(connector)
        return self._view(self.attachments.update(
            _as_service(ctxt), _uuid(attachment_id, 'attachment_id'),
            connector))

    def attachment_complete(self, ctxt, attachment_id):
        return self._view(self.attachments.complete(
            _as_service(ctxt), _uuid(attachment_id, 'attachment_id')))

    def attachment_delete(self, ctxt, attachment_id):
        remaining = self.attachments.delete(
            _as_service(ctxt), _uuid(attachment_id, 'attachment_id'))
        return [views.summary(a) for a in remaining]

    def attachment_takeover(self, ctxt, attachment_id):
        return self._view(self.attachments.takeover(
            _as_service(ctxt), _uuid(attachment_id, 'attachment_id')))

    def attachment_get(self, ctxt, attachment_id):
        return self._view(self.attachments.get(
            _as_service(ctxt), _uuid(attachment_id, 'attachment_id')))


def build_service(conf, attachments):
    """The RPC server of this API process on topic ``cinder-lite-api``
    (no services row: it is part of the API service)."""
    return service.RPCService(
        conf, constants.API_BINARY, rpcapi.TOPIC, conf.host,
        [AttachmentEndpoint(attachments)], conf.storage_availability_zone,
        register=False)
