"""Client side of the API service's RPC API, for compute nodes that send
attach requests over the bus instead of REST.

Callers on the bus are services: the attachments they make are guarded
like those a compute service makes over REST with the service role.
Every call is bounded (``rpc.bounded``): with the broker out of reach
it raises ServiceUnavailable within ``[upgrade_levels] api_rpc_timeout``
plus ``rpc.SEND_GRACE`` seconds instead of waiting for the broker.

History:
    1.0 - attachment_create, attachment_update, attachment_complete,
          attachment_delete, attachment_get
    1.1 - attachment_takeover
"""
from oslo_config import cfg

from cinder_lite.common import rpc

TOPIC = 'cinder-lite-api'
RPC_API_VERSION = '1.1'
SERVICE = 'cinder-lite-api'


class AttachmentAPI:

    def __init__(self, conf=None):
        conf = conf or cfg.CONF
        self.timeout = conf.upgrade_levels.api_rpc_timeout
        self.client = rpc.get_client(
            TOPIC, RPC_API_VERSION,
            version_cap=conf.upgrade_levels.api_version_cap,
            timeout=self.timeout)

    def _call(self, ctxt, method, version='1.0', **kwargs):
        return rpc.bounded(self.client.prepare(version=version), ctxt,
                           method, SERVICE, timeout=self.timeout, **kwargs)

    def attachment_create(self, ctxt, volume_id, instance_uuid=None,
                          connector=None, mode=None):
        return self._call(ctxt, 'attachment_create', volume_id=volume_id,
                          instance_uuid=instance_uuid, connector=connector,
                          mode=mode)

    def attachment_update(self, ctxt, attachment_id, connector):
        return self._call(ctxt, 'attachment_update',
                          attachment_id=attachment_id, connector=connector)

    def attachment_complete(self, ctxt, attachment_id):
        return self._call(ctxt, 'attachment_complete',
                          attachment_id=attachment_id)

    def attachment_delete(self, ctxt, attachment_id):
        return self._call(ctxt, 'attachment_delete',
                          attachment_id=attachment_id)

    def attachment_get(self, ctxt, attachment_id):
        return self._call(ctxt, 'attachment_get',
                          attachment_id=attachment_id)

    def attachment_takeover(self, ctxt, attachment_id):
        return self._call(ctxt, 'attachment_takeover', version='1.1',
                          attachment_id=attachment_id)
