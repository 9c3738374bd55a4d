"""cinder-lite-scheduler: places new volumes on backends."""
import sys

from cinder_lite.common import config
from cinder_lite.common import service
from cinder_lite.db import api as db_api
from cinder_lite.scheduler import service as scheduler_service


def main():
    conf = config.parse_args(sys.argv[1:])
    db_api.configure(conf)
    service.run(conf, scheduler_service.build(conf))


if __name__ == '__main__':
    main()
