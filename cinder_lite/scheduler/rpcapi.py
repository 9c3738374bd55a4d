"""Client side of the scheduler RPC API.

Every send is bounded (``rpc.bounded``): with the broker out of reach a
create answers 503 within ``rpc.SEND_GRACE`` seconds instead of waiting
for the broker.

History:
    1.0 - create_volume, update_backend_capabilities (fanout)
    1.1 - create_group (cast): place a generic volume group
"""
from oslo_config import cfg

from cinder_lite.common import rpc

TOPIC = 'cinder-lite-scheduler'
RPC_API_VERSION = '1.1'
SERVICE = 'cinder-lite-scheduler'


class SchedulerAPI:

    def __init__(self, conf=None):
        conf = conf or cfg.CONF
        cap = conf.upgrade_levels.scheduler_version_cap
        self.client = rpc.get_client(TOPIC, RPC_API_VERSION, version_cap=cap)
        self.fanout_client = rpc.get_client(TOPIC, RPC_API_VERSION,
                                            version_cap=cap, fanout=True)

    def create_volume(self, ctxt, volume_id, request_spec):
        rpc.bounded(self.client.prepare(version='1.0'), ctxt,
                    'create_volume', SERVICE, volume_id=volume_id,
                    request_spec=request_spec)

    def create_group(self, ctxt, group_id, request_spec):
        rpc.bounded(self.client.prepare(version='1.1'), ctxt,
                    'create_group', SERVICE, group_id=group_id,
                    request_spec=request_spec)

    def update_backend_capabilities(self, ctxt, host, availability_zone,
                                    capabilities, reported_at):
        # (a report that cannot go out is the next one's to make: the
        # reporting thread must not wait for the broker)
        rpc.bounded(self.fanout_client.prepare(version='1.0'), ctxt,
                    'update_backend_capabilities', SERVICE, host=host,
                    availability_zone=availability_zone,
                    capabilities=capabilities, reported_at=reported_at)
