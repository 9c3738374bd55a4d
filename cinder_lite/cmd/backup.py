"""cinder-lite-backup: backs volumes up to, and restores them from, the
store of backup_driver."""
import sys

from cinder_lite.backup import service as backup_service
from cinder_lite.cmd import config
from cinder_lite.db import api as db_api
from cinder_lite import service

DESCRIPTION = """\
Backs volumes up and restores them: takes its share of the backups
cinder-lite-api records (several backup services share the work), asks
the volume's service for an export of the volume (of a temporary
snapshot of it when it is in use), copies it into the store backup_driver
names (a POSIX directory under backup_posix_path, or a Ceph pool), and
writes backups back into volumes.  Reads the config files given with
--config-file: transport_url and [database] connection name the message
bus and the database it shares with the other services; credential_key_file
must be the same file as theirs.  Every option is described in
etc/cinder-lite/cinder-lite.conf.sample."""


def main():
    conf = config.parse_args(sys.argv[1:], description=DESCRIPTION)
    db_api.configure(conf)
    service.run(conf, backup_service.build(conf))


if __name__ == '__main__':
    main()
