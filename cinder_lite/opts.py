"""Every option of cinder_lite, for registration and for
oslo-config-generator (entry point ``oslo.config.opts``)."""
from cinder_lite.api import conf as api_conf
from cinder_lite.api import rpcapi as api_rpcapi
from cinder_lite.common import config
from cinder_lite import dashboard
from cinder_lite.scheduler import rpcapi as scheduler_rpcapi
from cinder_lite.volume import conf as volume_conf
from cinder_lite.volume import quota
from cinder_lite.volume import rpcapi as volume_rpcapi

_MODULES = (config, api_conf, dashboard, volume_conf, quota,
            scheduler_rpcapi, volume_rpcapi, api_rpcapi)


def register_all(conf):
    for module in _MODULES:
        module.register_opts(conf)


def _library_opts():
    """The few library options every deployment sets, so the sample names
    them; the libraries document the rest."""
    from oslo_db import options as db_options
    from oslo_messaging import opts as messaging_opts
    bus = [o for group, opts in messaging_opts.list_opts() if group is None
           for o in opts if o.name in ('transport_url', 'control_exchange')]
    db = [o for o in db_options.database_opts
          if o.name in ('connection', 'max_pool_size', 'max_overflow')]
    return [('DEFAULT', bus), ('database', db)]


def list_opts():
    merged = {}
    for group, opts in _library_opts():
        merged.setdefault(group, []).extend(opts)
    for module in _MODULES:
        for group, opts in module.list_opts():
            merged.setdefault(group, []).extend(opts)
    return sorted(merged.items())
