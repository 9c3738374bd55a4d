"""cinder-lite-all: API, scheduler and the enabled backends in one process.

With no config file it runs on SQLite under ``state_path`` and the
in-process bus, and migrates the database itself.
"""
import os
import sys

from oslo_config import cfg

from cinder_lite.api import auth
from cinder_lite.backup import service as backup_service
from cinder_lite.api import server
from cinder_lite.cmd import config
from cinder_lite.common import exception
from cinder_lite.common import inproc_bus
from cinder_lite.db import api as db_api
from cinder_lite.db import migration
from cinder_lite.scheduler import service as scheduler_service
from cinder_lite import service
from cinder_lite.volume import service as volume_service

EMBEDDED_TRANSPORT = inproc_bus.URL
DESCRIPTION = """\
Runs cinder_lite in one process: the Block Storage v3 API, the
scheduler, the volume backends and a backup service (the embedded mode).
Without a config file it keeps its SQLite database and the files of its
one "file" backend under state_path (~/.local/state/cinder-lite), uses
an in-process message bus, migrates the database itself, and listens on
127.0.0.1:8776 (--listen and --port, or osapi_volume_listen and
osapi_volume_listen_port); the dashboard is at /dashboard/; backups go
to state_path/backup. To add backends, name their config sections in
[DEFAULT] enabled_backends in a file given with --config-file (see
etc/cinder-lite/cinder-lite.conf.sample); transport_url and [database]
connection make it use RabbitMQ and MariaDB or PostgreSQL instead."""


def build(conf):
    """The services of the embedded mode, in start order."""
    return (scheduler_service.build(conf) + volume_service.build(conf)
            + backup_service.build(conf) + server.build(conf))


def main():
    conf = cfg.CONF
    conf.register_cli_opts(server.cli_opts)
    config.parse_args(sys.argv[1:], conf,
                      default_transport_url=EMBEDDED_TRANSPORT,
                      description=DESCRIPTION)
    server.apply_cli(conf)
    try:
        # before anything starts: noauth off loopback and a port in use
        # are said in one line
        auth.check_start(conf)
        server.check_listen(conf)
        auth.warn_at_start(conf)
        os.makedirs(conf.state_path, mode=0o700, exist_ok=True)
        db_api.configure(conf)
        migration.upgrade()
        service.run(conf, build(conf))
        return
    except (exception.CannotListen, exception.NoauthOffLoopback) as e:
        error = e
    # (outside the except block: oslo.log would add the exception again)
    service.exit_on_start_error(conf, error)


if __name__ == '__main__':
    main()
