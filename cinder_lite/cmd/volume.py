"""cinder-lite-volume: one manager per enabled backend on this node."""
import sys

from cinder_lite.common import config
from cinder_lite.common import service
from cinder_lite.db import api as db_api
from cinder_lite.volume import conf as volume_conf
from cinder_lite.volume import service as volume_service


NO_BACKENDS = (
    'cinder-lite-volume: [DEFAULT] enabled_backends is not set in the '
    'configuration. A volume service serves the backend sections it '
    'names (e.g. enabled_backends = lvm-1, with a [lvm-1] section); it '
    'does not start a file backend of its own (cinder-lite-all does, in '
    'the embedded mode).')


def main():
    conf = config.parse_args(sys.argv[1:])
    if not volume_conf.backends_configured(conf):
        print(NO_BACKENDS, file=sys.stderr)
        return 2
    db_api.configure(conf)
    service.run(conf, volume_service.build(conf))


if __name__ == '__main__':
    sys.exit(main())
