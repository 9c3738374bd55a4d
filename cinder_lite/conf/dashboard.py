"""Options of the dashboard the API process serves ([dashboard])."""
from oslo_config import cfg

GROUP = 'dashboard'

dashboard_opts = [
    cfg.BoolOpt('enabled', default=True,
                help='Serve the dashboard at /dashboard/ from the API '
                     'process.'),
]


def register_opts(conf):
    conf.register_opts(dashboard_opts, group=GROUP)


def list_opts():
    return [(GROUP, dashboard_opts)]
