"""cinder-lite-volume: one manager per enabled backend on this node."""
import sys

from cinder_lite.cmd import config
from cinder_lite.conf import volume as volume_conf
from cinder_lite.db import api as db_api
from cinder_lite import service
from cinder_lite.volume import service as volume_service

DESCRIPTION = """\
Serves this node's volume backends, one for each section named in
[DEFAULT] enabled_backends (driver, volumes_dir, target_protocol ...):
creates and deletes volumes, exports them to hosts (NBD, iSCSI) and
reports capacity and capabilities.  Reads the config files given with
--config-file: transport_url and [database] connection name the message
bus and the database it shares with cinder-lite-api and
cinder-lite-scheduler; [DEFAULT] host names this node.  Every option is
described in etc/cinder-lite/cinder-lite.conf.sample."""

NO_BACKENDS = (
    'cinder-lite-volume: [DEFAULT] enabled_backends is not set in the '
    'configuration. A volume service serves the backend sections it '
    'names (e.g. enabled_backends = lvm-1, with a [lvm-1] section); it '
    'does not start a file backend of its own (cinder-lite-all does, in '
    'the embedded mode).')


def main():
    conf = config.parse_args(sys.argv[1:], description=DESCRIPTION)
    if not volume_conf.backends_configured(conf):
        print(NO_BACKENDS, file=sys.stderr)
        return 2
    db_api.configure(conf)
    service.run(conf, volume_service.build(conf))


if __name__ == '__main__':
    sys.exit(main())
