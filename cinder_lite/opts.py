"""Every option of cinder_lite, for registration and for
oslo-config-generator (entry point ``oslo.config.opts``)."""
from cinder_lite.api import conf as api_conf
from cinder_lite.common import config
from cinder_lite.scheduler import rpcapi as scheduler_rpcapi
from cinder_lite.volume import conf as volume_conf
from cinder_lite.volume import rpcapi as volume_rpcapi

_MODULES = (config, api_conf, volume_conf, scheduler_rpcapi, volume_rpcapi)


def register_all(conf):
    for module in _MODULES:
        module.register_opts(conf)


def list_opts():
    merged = {}
    for module in _MODULES:
        for group, opts in module.list_opts():
            merged.setdefault(group, []).extend(opts)
    return sorted(merged.items())
