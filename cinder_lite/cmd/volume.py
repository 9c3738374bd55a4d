"""cinder-lite-volume: one manager per enabled backend on this node."""
import sys

from cinder_lite.common import config
from cinder_lite.common import service
from cinder_lite.db import api as db_api
from cinder_lite.volume import service as volume_service


def main():
    conf = config.parse_args(sys.argv[1:])
    db_api.configure(conf)
    service.run(conf, volume_service.build(conf))


if __name__ == '__main__':
    main()
