"""Rolling-upgrade caps and timeouts of the RPC clients
([upgrade_levels]): what each service's rpcapi sends and how long it
waits."""
from oslo_config import cfg

GROUP = 'upgrade_levels'

rpcapi_opts = [
    # cinder_lite.scheduler.rpcapi
    cfg.StrOpt('scheduler_version_cap',
               help='Highest scheduler RPC API version clients send, for '
                    'rolling upgrades. Unset means the newest this code '
                    'knows.'),
    # cinder_lite.volume.rpcapi
    cfg.StrOpt('volume_version_cap',
               help='Highest volume RPC API version clients send, for '
                    'rolling upgrades. Unset means the newest this code '
                    'knows.'),
    # cinder_lite.backup.rpcapi
    cfg.StrOpt('backup_version_cap',
               help='Highest backup RPC API version clients send, for '
                    'rolling upgrades. Unset means the newest this code '
                    'knows.'),
    # cinder_lite.api.rpcapi
    cfg.StrOpt('api_version_cap',
               help='Highest API-service RPC version clients send, for '
                    'rolling upgrades.'),
    cfg.IntOpt('api_rpc_timeout', default=60, min=1,
               help='Seconds a compute node waits for the API service to '
                    'answer an attach request on the bus; while the '
                    'message bus is out of reach it gives up (Service '
                    'cinder-lite-api is down: ...) at most 10 s later.'),
]


def register_opts(conf):
    conf.register_opts(rpcapi_opts, group=GROUP)


def list_opts():
    return [(GROUP, rpcapi_opts)]
