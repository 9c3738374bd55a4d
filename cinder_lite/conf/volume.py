"""Options of the volume service ([DEFAULT]) and of a volume backend
section, and how a backend section is read.

Each name in ``[DEFAULT] enabled_backends`` is a config section holding
these options; a value missing there falls back to ``[backend_defaults]``.
"""
from oslo_config import cfg

volume_opts = [
    cfg.StrOpt('cluster', regex=r'^[^@#\s]+$',
               help='Name of the cluster this volume service belongs to. '
                    'Volume services of one cluster run the same backend '
                    'sections on shared storage and serve them '
                    'active-active: volumes live on ``cluster@backend``, '
                    'any member creates, deletes and extends them, and '
                    'each attachment is exported by one member, the one '
                    'its disconnect goes to. Unset: the backends are this '
                    'host\'s alone.'),
    cfg.ListOpt('enabled_backends', default=['file'],
                help='Config sections, one per backend this volume service '
                     'runs. A section that does not exist uses the '
                     'defaults of [backend_defaults].'),
    cfg.IntOpt('volume_rpc_timeout', default=30, min=1,
               help='Seconds the API waits for a volume service to answer '
                    'a call before it gives up (503); while the message '
                    'bus is out of reach, at most 10 s more.'),
    cfg.IntOpt('reconcile_interval', default=60, min=0,
               help='Seconds between two runs of the reconciliation of '
                    'volumes and attachments left in a transitional state '
                    '(also run at start). 0 runs it at start only.'),
    cfg.IntOpt('reconcile_after', default=120, min=0,
               help='Seconds a volume or attachment must have stayed in a '
                    'transitional state before reconciliation resolves it. '
                    'Keep it above volume_rpc_timeout plus 10 s (the '
                    'longest an API call waits for a volume service, the '
                    'bus out of reach included) so that requests still '
                    'queued on the bus are not overtaken.'),
    cfg.IntOpt('volume_copy_bps_limit', default=0, min=0,
               help='Bytes per second a migration of a volume to another '
                    'backend copies at most (0: as fast as the storage '
                    'goes), so that a migration leaves the backends\' '
                    'bandwidth to the volumes in use.'),
    cfg.IntOpt('migration_create_timeout', default=300, min=1,
               help='Seconds a migration waits for the destination '
                    'backend to make the new volume before it gives up '
                    '(the migration is then error, the volume stays '
                    'where it is).'),
    cfg.StrOpt('migration_my_ip', default='127.0.0.1',
               help='Address this volume service reaches the targets of '
                    'other backends from when it copies a volume to them '
                    '(migration).'),
]

backend_opts = [
    cfg.StrOpt('volume_driver',
               default='cinder_lite.volume.drivers.file.FileDriver',
               help='Driver class of this backend.'),
    cfg.StrOpt('volume_backend_name',
               help='Name types use to pin this backend '
                    '(volume_backend_name extra spec). Defaults to the '
                    'section name.'),
    cfg.StrOpt('volumes_dir',
               help='Directory of the file driver. Defaults to '
                    '$state_path/volumes/<section>.'),
    cfg.BoolOpt('multiattach', default=True,
                help='Report the multiattach capability. Set false to keep '
                     'shareable volume types off this backend.'),
    cfg.IntOpt('reserved_percentage', default=0, min=0, max=100,
               help='Percentage of the capacity kept free.'),
    cfg.StrOpt('target_protocol', default='local',
               choices=[('local', 'the file itself, for consumers on this '
                                  'host'),
                        ('nbd', 'one nbdkit export per attachment'),
                        ('iscsi', 'tgt: a read-write and a read-only '
                                  'target per volume, each attachment an '
                                  'ACL entry for its initiator')],
               help='How attachments reach the volume.'),
    cfg.HostAddressOpt('target_ip_address', default='127.0.0.1',
                       help='Address network targets listen on.'),
    cfg.StrOpt('target_port_range', default='10809-10999',
               help='Ports NBD exports may use, as LOW-HIGH.'),
    cfg.PortOpt('target_port', default=3260,
                help='Port of the iSCSI portal. The backend runs its own '
                     'tgtd there, so each iSCSI backend needs a port of '
                     'its own.'),
    cfg.IntOpt('target_control_port', min=0, max=32767,
               help='Number of the control socket of the backend\'s tgtd '
                    '(/var/run/tgtd/socket.N, tgtadm -C N). Defaults to '
                    'target_port, which must then be at most 32767.'),
    cfg.StrOpt('target_prefix', default='iqn.2026-11.org.cinder-lite:',
               help='Prefix of the IQNs of iSCSI targets; the volume id '
                    'follows.'),
    cfg.FloatOpt('target_drain_timeout', default=10.0, min=0.1,
                 help='Seconds a cut-off (detach, takeover, fence) waits '
                      'for the target to drain what the host had in '
                      'flight: tgt to show no I_T nexus of its initiator, '
                      'the nbdkit of its export to have exited; also the '
                      'most a fence report (GET /os-host-fences/{host}) '
                      'waits for the target. Past it the cut-off fails '
                      'with 503 instead of reporting a host cut that may '
                      'still write: a detach leaves the attachment '
                      'error_detaching (reconciliation retries it), a '
                      'fence keeps its mark but is not reported done, a '
                      'takeover does not promote, and a fence report '
                      'says reachable null. Keep it below '
                      'volume_rpc_timeout.'),
    cfg.FloatOpt('max_over_subscription_ratio', default=20.0, min=1.0,
                 help='For thin backends: how many times the capacity may '
                      'be provisioned.'),
]

# The RBD driver's (drivers/rbd.py): Cinder's names where Cinder has the
# option, so a Cinder RBD backend section reads the same here.
rbd_opts = [
    cfg.StrOpt('rbd_pool', default='rbd',
               help='Ceph pool the volumes of this backend live in.'),
    cfg.StrOpt('rbd_user',
               help='Ceph user (without "client.") the volume service '
                    'connects as. Its caps are in doc/source/rbd.rst: it '
                    'creates and removes the keys of attachments and '
                    'blocklists their clients.'),
    cfg.StrOpt('rbd_ceph_conf', default='',
               help='Path to the ceph.conf of the cluster ("" reads '
                    'Ceph\'s default locations).'),
    cfg.StrOpt('rbd_cluster_name', default='ceph',
               help='Name of the Ceph cluster.'),
    cfg.StrOpt('rbd_secret_uuid',
               help='UUID of the libvirt secret holding a key of this '
                    'cluster, passed to compute nodes in connection_info '
                    '(secret_uuid) as Cinder does.'),
    cfg.StrOpt('rbd_keyring_conf',
               help='Path to the keyring of rbd_user (by default Ceph looks '
                    'where ceph.conf says).'),
    cfg.BoolOpt('rbd_flatten_volume_from_snapshot', default=False,
                help='Flatten volumes made from snapshots: they then no '
                     'longer depend on the snapshot.'),
    cfg.IntOpt('rbd_max_clone_depth', default=5, min=0,
               help='Longest chain of copy-on-write clones; a clone that '
                    'would be deeper is flattened. 0 flattens every '
                    'clone.'),
    cfg.IntOpt('rbd_store_chunk_size', default=4, min=1,
               help='Size of the objects a volume is striped over, in MiB '
                    '(a power of two).'),
    cfg.IntOpt('rados_connect_timeout', default=10, min=1,
               help='Seconds a connection to the cluster may take.'),
    cfg.BoolOpt('report_discard_supported', default=True,
                help='Tell consumers they may discard (connection_info '
                     '"discard").'),
    cfg.StrOpt('rbd_attachment_user_prefix', default='cinder-lite',
               regex=r'^[A-Za-z0-9_-]+$',
               help='Each attachment connects as the Ceph user '
                    '"client.<prefix>.<attachment id>", made at connect and '
                    'removed at detach, takeover and fence. rbd_user must '
                    'be allowed to manage keys of that prefix only.'),
    cfg.BoolOpt('rbd_read_only_keys_watch', default=False,
                help='Let the key of a read-only attachment register a '
                     'watch on the image header. QEMU (Nova\'s libvirt '
                     'driver) always opens RBD images read-write and '
                     'cannot open one without it; the volume\'s data '
                     'objects stay read-only at the OSDs either way, but '
                     'with a watch the key may also write the header '
                     'object (doc/source/rbd.rst, "Read-only attachments").'),
    cfg.IntOpt('rbd_blocklist_expire', default=86400, min=3600,
               help='Seconds a fenced or detached client stays blocklisted. '
                    'Its key is removed at once, so it cannot connect '
                    'again; the entry only has to outlive its tickets.'),
]

backend_opts += rbd_opts

BACKEND_DEFAULTS = 'backend_defaults'


def register_opts(conf):
    conf.register_opts(volume_opts)
    conf.register_opts(backend_opts, group=BACKEND_DEFAULTS)


def list_opts():
    return [('DEFAULT', volume_opts), (BACKEND_DEFAULTS, backend_opts)]


class BackendConf:
    """Read-only view of one backend section with [backend_defaults] as
    fallback."""

    def __init__(self, conf, section):
        self._conf = conf
        self.section = section
        conf.register_opts(backend_opts, group=section)

    def __getattr__(self, name):
        if name.startswith('_'):
            raise AttributeError(name)
        location = self._conf.get_location(name, self.section)
        if location is not None and location.location not in (
                cfg.Locations.opt_default, cfg.Locations.set_default):
            return self._conf[self.section][name]
        return self._conf[BACKEND_DEFAULTS][name]

    @property
    def state_path(self):
        return self._conf.state_path

    @property
    def credential_key_file(self):
        return self._conf.credential_key_file


def backends_configured(conf):
    """Whether the configuration names its backends: the implicit
    ``file`` backend of ``enabled_backends``'s default is the embedded
    mode's, never a separate volume service's."""
    location = conf.get_location('enabled_backends')
    return location is not None and location.location not in (
        cfg.Locations.opt_default, cfg.Locations.set_default)
