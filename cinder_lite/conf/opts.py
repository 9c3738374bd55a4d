"""Every option of cinder_lite, for oslo-config-generator (entry point
``oslo.config.opts``): the option modules of this package plus the few
library options every deployment sets."""
from oslo_db import options as db_options
from oslo_messaging import opts as messaging_opts

from cinder_lite import conf


def _library_opts():
    """The few library options every deployment sets, so the sample names
    them; the libraries document the rest."""
    bus = [o for group, opts in messaging_opts.list_opts() if group is None
           for o in opts if o.name in ('transport_url', 'control_exchange')]
    db = [o for o in db_options.database_opts
          if o.name in ('connection', 'max_pool_size', 'max_overflow')]
    return [('DEFAULT', bus), ('database', db)]


def list_opts():
    merged = {}
    for group, opts in _library_opts():
        merged.setdefault(group, []).extend(opts)
    for module in conf.MODULES:
        for group, opts in module.list_opts():
            merged.setdefault(group, []).extend(opts)
    return sorted(merged.items())
