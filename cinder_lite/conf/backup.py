"""Options of the backup service and its drivers ([DEFAULT], Cinder's
names): which driver keeps the backups, how the chunked drivers cut and
compress a volume, and where the POSIX and Ceph drivers put it."""
from oslo_config import cfg

backup_opts = [
    cfg.StrOpt('backup_driver',
               default='cinder_lite.backup.drivers.posix.PosixBackupDriver',
               help='Driver class of the backup service: '
                    'cinder_lite.backup.drivers.posix.PosixBackupDriver '
                    '(a directory, in production an NFS mount) or '
                    'cinder_lite.backup.drivers.ceph.CephBackupDriver (a '
                    'pool of a Ceph cluster). Every backup service of a '
                    'cloud must use the same driver and store: any of '
                    'them may restore or delete any backup.'),
    cfg.StrOpt('backup_my_ip', default='127.0.0.1',
               help='Address of this backup service on the storage '
                    'network: what it tells a volume service it connects '
                    'from (NBD and iSCSI exports for backups) and the '
                    'address it connects from.'),
    cfg.IntOpt('backup_rpc_timeout', default=60, min=1,
               help='Seconds the backup service waits for a volume '
                    'service to answer when it asks for an export of the '
                    'volume it copies.'),
    cfg.IntOpt('backup_max_operations', default=15, min=0,
               help='Backups and restores one backup service runs at '
                    'once; more wait in its queue. 0 is unlimited.'),
    cfg.BoolOpt('backup_enable_progress_timer', default=True,
                help='Send backup.createprogress notifications every '
                     'backup_timer_interval seconds while a backup runs '
                     '(besides every backup_object_number_per_notification '
                     'objects).'),
    cfg.IntOpt('backup_timer_interval', default=120, min=1,
               help='Seconds between two backup.createprogress '
                    'notifications of a running backup.'),
    cfg.IntOpt('backup_object_number_per_notification', default=10, min=1,
               help='Objects written between two backup.createprogress '
                    'notifications.'),
]

chunked_opts = [
    cfg.StrOpt('backup_compression_algorithm', default='zlib',
               ignore_case=True,
               choices=['none', 'off', 'no', 'zlib', 'gzip', 'bz2',
                        'bzip2', 'zstd'],
               help='Compression of the objects the chunked drivers '
                    '(POSIX) write.'),
    cfg.IntOpt('backup_sha_block_size_bytes', default=32768, min=512,
               help='Size of the blocks whose SHA-256 an incremental '
                    'backup compares with its parent\'s: only changed '
                    'blocks are written. Must divide backup_file_size.'),
]

posix_opts = [
    cfg.StrOpt('backup_posix_path', default='$state_path/backup',
               help='Directory the POSIX driver keeps backups in (in '
                    'production an NFS or other shared mount, the same on '
                    'every backup service).'),
    cfg.IntOpt('backup_file_size', default=1999994880, min=1048576,
               help='Largest object, in bytes, the POSIX driver writes: '
                    'a volume is cut into chunks of this size. A multiple '
                    'of backup_sha_block_size_bytes.'),
    cfg.StrOpt('backup_container', default=None,
               help='Container (sub-directory) a backup goes to when its '
                    'request names none.'),
]

ceph_opts = [
    cfg.StrOpt('backup_ceph_conf', default='/etc/ceph/ceph.conf',
               help='Ceph configuration file of the cluster backups go '
                    'to (its monitors, and the keyring of '
                    'backup_ceph_user through its "keyring" setting).'),
    cfg.StrOpt('backup_ceph_user', default='cinder-backup',
               help='Ceph user the backup service connects as; it needs '
                    'the monitor cap "allow r" and the OSD cap "allow rw '
                    'pool=<backup_ceph_pool>" only (doc/source/rbd.rst).'),
    cfg.StrOpt('backup_ceph_pool', default='backups',
               help='Pool backups are kept in (RADOS objects; a backup\'s '
                    'container is a namespace of this pool, by default '
                    'the namespace named as the pool).'),
    cfg.IntOpt('backup_ceph_chunk_size', default=128 * 1024 * 1024,
               min=4096,
               help='Largest object, in bytes before compression, the Ceph '
                    'driver cuts a volume into (the unit a restore reads '
                    'and checks); each is kept as RADOS objects of at most '
                    '4 MiB. A multiple of backup_sha_block_size_bytes.'),
    cfg.IntOpt('backup_ceph_stripe_unit', default=0, min=0,
               help='Accepted so that Cinder\'s configuration files load: '
                    'Cinder stripes the RBD images its Ceph driver makes; '
                    'this driver makes no images, and ignores it.'),
    cfg.IntOpt('backup_ceph_stripe_count', default=0, min=0,
               help='Accepted so that Cinder\'s configuration files load; '
                    'ignored (see backup_ceph_stripe_unit).'),
    cfg.BoolOpt('restore_discard_excess_bytes', default=True,
                help='When a restore goes to a volume larger than the '
                     'backup, make the bytes past the backup read as '
                     'zeros.'),
]


def register_opts(conf):
    for opts in (backup_opts, chunked_opts, posix_opts, ceph_opts):
        conf.register_opts(opts)


def list_opts():
    return [('DEFAULT', backup_opts + chunked_opts + posix_opts
             + ceph_opts)]
