"""Options every cinder_lite service reads ([DEFAULT]), and the defaults
cinder_lite gives oslo.db's [database] options."""
import os
import socket

from oslo_config import cfg
from oslo_db import options as db_options

core_opts = [
    cfg.StrOpt('state_path',
               default=os.path.expanduser('~/.local/state/cinder-lite'),
               sample_default='~/.local/state/cinder-lite',
               help='Directory where cinder_lite keeps its state: the '
                    'SQLite database of the embedded mode and the files of '
                    'file backends unless volumes_dir says otherwise.'),
    cfg.StrOpt('credential_key_file',
               default='$state_path/credential.key',
               help='File (mode 0600) holding the key every attachment '
                    'credential (CHAP secret, NBD TLS key) is derived '
                    'from; made with a random key when missing. Every API '
                    'and volume node of a deployment needs the same file. '
                    'Replacing it revokes every credential handed out.'),
    cfg.StrOpt('host', default=socket.gethostname(),
               sample_default='<hostname>',
               help='Name of this node. Volume services are known as '
                    'host@backend.'),
    cfg.StrOpt('storage_availability_zone', default='nova',
               help='Availability zone of this node.'),
    cfg.StrOpt('default_availability_zone',
               help='Availability zone given to volumes created without '
                    'one. Defaults to storage_availability_zone.'),
    cfg.IntOpt('report_interval', default=10, min=1,
               help='Seconds between two capability and heartbeat reports '
                    'of a volume service.'),
    cfg.IntOpt('service_down_time', default=20, min=1,
               help='Seconds without a heartbeat after which a service is '
                    'shown down and gets no new work. Keep it at least two '
                    'report intervals.'),
    cfg.StrOpt('default_volume_type', default='__DEFAULT__',
               help='Volume type of volumes created without one.'),
    cfg.StrOpt('default_group_type',
               help='Group type (name) shown by GET /group_types/default; '
                    'unset: there is no default group type (404).'),
    cfg.BoolOpt('allow_multiattach', default=True,
                help='Cloud-wide switch for multi-attach. When false, '
                     'volumes of multiattach types cannot be created (or '
                     'retyped to) and no volume gets a second attachment '
                     'for another instance.'),
]


def register_opts(conf):
    conf.register_opts(core_opts)
    # A pool as large as the threads that use it at once in the busiest
    # process: past the pool, each concurrent transaction opens a
    # connection and closes it again when it ends (SQLAlchemy keeps only
    # pool_size), a TCP handshake, the login and PyMySQL's TLS context
    # (it loads the system's CA certificates for every connection, even
    # to a server without TLS) per transaction.  The API's RPC server and
    # the volume service's run up to executor_thread_pool_size calls at
    # once (64 in oslo.messaging, 16 here: common/rpc.py), beside the
    # API's 16 request threads, and a transaction may open a second one:
    # at 10, a storm of 50 hosts attaching over the bus spent 40-46 % of
    # the API's and the volume service's busy time opening connections
    # (bench/storm.py, doc/performance.rst).  The pool grows only as far
    # as the concurrency reached.
    db_options.set_defaults(
        conf, connection='sqlite:///$state_path/cinder-lite.sqlite',
        max_pool_size=64)


def list_opts():
    return [('DEFAULT', core_opts)]
