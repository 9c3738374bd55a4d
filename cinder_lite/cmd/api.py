"""cinder-lite-api: the REST API."""
import sys

from oslo_config import cfg

from cinder_lite.api import auth
from cinder_lite.api import server
from cinder_lite.cmd import config
from cinder_lite.common import exception
from cinder_lite import service

DESCRIPTION = """\
Serves the Block Storage v3 REST API (and the dashboard at /dashboard/)
on osapi_volume_listen:osapi_volume_listen_port (--listen, --port), with
osapi_volume_workers processes.  Reads the config files given with
--config-file (e.g. /etc/cinder-lite/cinder-lite.conf): transport_url and
[database] connection name the message bus and the database it shares
with cinder-lite-scheduler and cinder-lite-volume; auth_strategy chooses
noauth or keystone ([keystone_authtoken]).  Every option is described in
etc/cinder-lite/cinder-lite.conf.sample."""


def main():
    conf = cfg.CONF
    conf.register_cli_opts(server.cli_opts)
    config.parse_args(sys.argv[1:], conf, description=DESCRIPTION)
    server.apply_cli(conf)
    try:
        auth.check_start(conf)
        server.check_listen(conf, reuse_port=conf.osapi_volume_workers > 1)
        auth.warn_at_start(conf)
        if conf.osapi_volume_workers > 1:
            sys.exit(server.run_workers(conf,
                                        lambda: server.worker_main(conf)))
        server.worker_main(conf)
        return
    except (exception.CannotListen, exception.NoauthOffLoopback) as e:
        error = e
    # (outside the except block: oslo.log would add the exception again)
    service.exit_on_start_error(conf, error)


if __name__ == '__main__':
    main()
