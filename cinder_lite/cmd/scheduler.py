"""cinder-lite-scheduler: places new volumes on backends."""
import sys

from cinder_lite.cmd import config
from cinder_lite.db import api as db_api
from cinder_lite.scheduler import service as scheduler_service
from cinder_lite import service

DESCRIPTION = """\
Places new volumes on backends: keeps what each volume service reports
(capacity, capabilities) and filters and weighs the backends for each
request.  Reads the config files given with --config-file (e.g.
/etc/cinder-lite/cinder-lite.conf): transport_url and [database]
connection name the message bus and the database it shares with
cinder-lite-api and cinder-lite-volume.  Every option is described in
etc/cinder-lite/cinder-lite.conf.sample."""

def main():
    conf = config.parse_args(sys.argv[1:], description=DESCRIPTION)
    db_api.configure(conf)
    service.run(conf, scheduler_service.build(conf))


if __name__ == '__main__':
    main()
