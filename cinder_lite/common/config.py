"""Options every cinder_lite service reads, and the one place that parses
the global configuration (entry points only)."""
import os
import socket

from oslo_config import cfg
from oslo_db import options as db_options
from oslo_log import log as logging
import oslo_messaging

from cinder_lite import version

core_opts = [
    cfg.StrOpt('state_path',
               default=os.path.expanduser('~/.local/state/cinder-lite'),
               sample_default='~/.local/state/cinder-lite',
               help='Directory where cinder_lite keeps its state: the '
                    'SQLite database of the embedded mode and the files of '
                    'file backends unless volumes_dir says otherwise.'),
    cfg.StrOpt('host', default=socket.gethostname(),
               sample_default='<hostname>',
               help='Name of this node. Volume services are known as '
                    'host@backend.'),
    cfg.StrOpt('storage_availability_zone', default='nova',
               help='Availability zone of this node.'),
    cfg.StrOpt('default_availability_zone',
               help='Availability zone given to volumes created without '
                    'one. Defaults to storage_availability_zone.'),
    cfg.IntOpt('report_interval', default=10, min=1,
               help='Seconds between two capability and heartbeat reports '
                    'of a volume service.'),
    cfg.IntOpt('service_down_time', default=20, min=1,
               help='Seconds without a heartbeat after which a service is '
                    'shown down and gets no new work. Keep it at most two '
                    'report intervals.'),
    cfg.StrOpt('default_volume_type', default='__DEFAULT__',
               help='Volume type of volumes created without one.'),
    cfg.BoolOpt('allow_multiattach', default=True,
                help='Cloud-wide switch for multi-attach. When false, '
                     'volumes of multiattach types cannot be created (or '
                     'retyped to) and no volume gets a second attachment '
                     'for another instance.'),
]


def register_opts(conf):
    conf.register_opts(core_opts)
    # A pool as large as the threads that use it at once in the busiest
    # process (the API's 16 request threads, the volume service's
    # connects): oslo.db's 5 makes the sixth concurrent transaction open
    # a connection and close it again afterwards, a new TCP (and TLS)
    # handshake per request under load.
    db_options.set_defaults(
        conf, connection='sqlite:///$state_path/cinder-lite.sqlite',
        max_pool_size=10)


def list_opts():
    return [('DEFAULT', core_opts)]


def parse_args(argv, conf=None, default_transport_url=None,
               description=None):
    """Register every option, parse the command line and config files and
    set up logging.  Called by the console scripts only."""
    from cinder_lite import opts
    conf = conf or cfg.CONF
    logging.register_options(conf)
    opts.register_all(conf)
    oslo_messaging.set_transport_defaults('cinder-lite')
    conf(argv, project='cinder-lite', version=version.VERSION,
         description=description)
    # Parsing a URL registers oslo.messaging's [DEFAULT] options here.
    oslo_messaging.TransportURL.parse(conf)
    if default_transport_url:
        location = conf.get_location('transport_url')
        if location is None or location.location in (
                cfg.Locations.opt_default, cfg.Locations.set_default):
            conf.set_default('transport_url', default_transport_url)
    from cinder_lite.common import inproc_bus
    if conf.transport_url == inproc_bus.URL:
        inproc_bus.quiet(conf)
    logging.setup(conf, 'cinder-lite')
    return conf


def embedded(conf):
    """Whether ``conf`` describes the embedded mode (cinder-lite-all on its
    in-process bus): the in-process transport, or no transport_url set at
    all next to a SQLite database (cinder-lite-all's defaults)."""
    from cinder_lite.common import inproc_bus
    if conf.transport_url == inproc_bus.URL:
        return True
    location = conf.get_location('transport_url')
    unset = location is None or location.location in (
        cfg.Locations.opt_default, cfg.Locations.set_default)
    return unset and conf.database.connection.startswith('sqlite')
