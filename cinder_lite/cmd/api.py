"""cinder-lite-api: the REST API."""
import sys

from cinder_lite.api import server
from cinder_lite.common import config


def main():
    conf = config.parse_args(sys.argv[1:])
    if conf.osapi_volume_workers > 1:
        sys.exit(server.run_workers(conf, lambda: server.worker_main(conf)))
    server.worker_main(conf)


if __name__ == '__main__':
    main()
