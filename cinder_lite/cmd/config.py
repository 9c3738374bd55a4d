"""The one place that parses the global configuration: the console
scripts, the WSGI application script and a compute node's own program
call ``parse_args``; everything else is handed the ConfigOpts."""
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from cinder_lite.common import inproc_bus
from cinder_lite import conf as cl_conf
from cinder_lite import version


def parse_args(argv, conf=None, default_transport_url=None,
               description=None):
    """Register every option, parse the command line and config files and
    set up logging."""
    conf = conf or cfg.CONF
    logging.register_options(conf)
    cl_conf.register_opts(conf)
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
    if conf.transport_url == inproc_bus.URL:
        inproc_bus.quiet(conf)
    logging.setup(conf, 'cinder-lite')
    return conf


def embedded(conf):
    """Whether ``conf`` describes the embedded mode (cinder-lite-all on its
    in-process bus): the in-process transport, or no transport_url set at
    all next to a SQLite database (cinder-lite-all's defaults)."""
    if conf.transport_url == inproc_bus.URL:
        return True
    location = conf.get_location('transport_url')
    unset = location is None or location.location in (
        cfg.Locations.opt_default, cfg.Locations.set_default)
    return unset and conf.database.connection.startswith('sqlite')
