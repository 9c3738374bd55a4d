"""Default quotas of every project ([DEFAULT]); a project's own limits
and the ``default`` quota class's are in the database."""
from oslo_config import cfg

quota_opts = [
    cfg.IntOpt('quota_volumes', default=10, min=-1,
               help='Volumes a project may have; -1 is unlimited.'),
    cfg.IntOpt('quota_snapshots', default=10, min=-1,
               help='Snapshots a project may have.'),
    cfg.IntOpt('quota_gigabytes', default=1000, min=-1,
               help='GiB of volumes a project may have; -1 is unlimited.'),
    cfg.IntOpt('quota_backups', default=10, min=-1,
               help='Backups a project may have; -1 is unlimited.'),
    cfg.IntOpt('quota_backup_gigabytes', default=1000, min=-1,
               help='GiB of backups a project may have (the sizes of '
                    'the volumes they copy); -1 is unlimited.'),
    cfg.IntOpt('quota_groups', default=10, min=-1,
               help='Generic volume groups a project may have; -1 is '
                    'unlimited.'),
    cfg.IntOpt('per_volume_size_limit', default=-1, min=-1,
               help='Largest volume, in GiB, a project may create or '
                    'extend to (the per_volume_gigabytes quota); -1 is '
                    'unlimited.'),
]


def register_opts(conf):
    conf.register_opts(quota_opts)


def list_opts():
    return [('DEFAULT', quota_opts)]
