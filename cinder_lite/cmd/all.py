"""cinder-lite-all: API, scheduler and the enabled backends in one process.

With no config file it runs on SQLite under ``state_path`` and the
in-process bus, and migrates the database itself.
"""
import os
import sys

from cinder_lite.api import server
from cinder_lite.common import config
from cinder_lite.common import inproc_bus
from cinder_lite.common import service
from cinder_lite.db import api as db_api
from cinder_lite.db import migration
from cinder_lite.scheduler import service as scheduler_service
from cinder_lite.volume import service as volume_service

EMBEDDED_TRANSPORT = inproc_bus.URL


def build(conf):
    """The services of the embedded mode, in start order."""
    return (scheduler_service.build(conf) + volume_service.build(conf)
            + server.build(conf))


def main():
    conf = config.parse_args(sys.argv[1:],
                             default_transport_url=EMBEDDED_TRANSPORT)
    os.makedirs(conf.state_path, exist_ok=True)
    db_api.configure(conf)
    migration.upgrade()
    service.run(conf, build(conf))


if __name__ == '__main__':
    main()
