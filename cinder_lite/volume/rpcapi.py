"""Client side of the volume RPC API; the server is ``host@backend``.

History:
    1.0 - create_volume, delete_volume, get_capabilities
    1.1 - connect, disconnect (calls), extend_volume (cast),
          extend_attached_volume (call)
    1.2 - create_volume carries the volume (the manager need not read it)
    1.3 - reconcile (call)
    1.4 - disconnect takes the reason to record; promote (call)
    1.5 - create_snapshot, delete_snapshot (casts, carrying the
          snapshot); create_volume of a volume with ``snapshot_id`` or
          ``source_volid`` copies it; delete_volume first deletes the
          volume's snapshots marked ``deleting`` (cascade)
    1.6 - cut_host, restore_host, host_reach (calls; host fences)
    1.7 - create_volume writes the image named by the volume's image_id
          (from Glance); copy_volume_to_image (cast)
    1.8 - connect answers with what it recorded on the attachment and
          the attachments sharing its host connection (the API need not
          read it again)
    1.9 - connect carries the volume and its type's QoS specs as the
          API read them, disconnect the volume, the connector and
          whether the host connection is shared (the volume service
          reads nothing before the export or the disconnect)
    1.10 - backup_export, backup_unexport (calls: a backup service reads
          or writes a volume, or a temporary snapshot of it);
          create_volume of a volume with ``backup_id`` hands it to a
          backup service to restore into once its storage exists
    1.11 - revert_to_snapshot (cast, carrying the volume and its latest
          snapshot); reimage (cast: an image over a ``downloading``
          volume)
    1.12 - manage_existing, unmanage_volume, manage_existing_snapshot,
          unmanage_snapshot (casts); get_manageable_volumes,
          get_manageable_snapshots (calls)
    1.13 - migrate_volume (cast, to the source's service: the volume
          moves to another backend), migrate_finish (call, to the
          destination's: the new storage takes the volume's id)
    1.14 - delete_group, create_group_snapshot, delete_group_snapshot,
          create_group_from_src (casts; generic volume groups)
    1.15 - backup_export takes ``source_snapshot`` (an RBD snapshot of
          the volume made for a differential backup and kept after it),
          backup_unexport ``keep_source_snapshots`` (the backup
          snapshots of the volume that stay; the others are removed)
    1.16 - work_cleanup (cast): settle the transitional rows of a volume
          service (this one, or a member of its cluster that is down),
          as POST /workers/cleanup asks
"""
from oslo_config import cfg

from cinder_lite.common import exception
from cinder_lite.common import rpc

TOPIC = 'cinder-lite-volume'
RPC_API_VERSION = '1.16'
BACKUP_RPC = '1.10'
MANAGE_RPC = '1.12'
MIGRATION_RPC = '1.13'
# backup_export / backup_unexport with the source snapshots of
# differential backups
BACKUP_SNAPSHOT_RPC = '1.15'
CLEANUP_RPC = '1.16'

# seconds past its timeout a caller waits for a call that could not be
# sent (``rpc.bounded``)
CALL_SEND_GRACE = rpc.SEND_GRACE


def backend_host(host):
    """``node@backend#pool`` -> ``node@backend``, the RPC server name."""
    return host.partition('#')[0]


class VolumeAPI:

    def __init__(self, conf=None):
        conf = conf or cfg.CONF
        self.timeout = conf.volume_rpc_timeout
        self.client = rpc.get_client(
            TOPIC, RPC_API_VERSION,
            version_cap=conf.upgrade_levels.volume_version_cap,
            timeout=conf.volume_rpc_timeout)

    def _prepare(self, host, version='1.0'):
        self.require(version, 'this request', backend_host(host))
        return self.client.prepare(server=backend_host(host), version=version)

    def require(self, version, what, host='volume services'):
        """ServiceUnavailable (naming ``host``) unless calls of
        ``version`` may be sent."""
        if not self.client.can_send_version(version):
            raise exception.ServiceUnavailable(
                host=host,
                reason='%s needs volume RPC API %s, and [upgrade_levels] '
                       'volume_version_cap is %s; finish the upgrade first'
                       % (what, version, self.client.version_cap))

    def create_volume(self, ctxt, host, volume_id, volume=None):
        if volume is not None and self.client.can_send_version('1.2'):
            self._prepare(host, '1.2').cast(ctxt, 'create_volume',
                                            volume_id=volume_id,
                                            volume=volume)
        else:
            self._prepare(host).cast(ctxt, 'create_volume',
                                     volume_id=volume_id)

    def create_snapshot(self, ctxt, host, snapshot):
        self._prepare(host, '1.5').cast(ctxt, 'create_snapshot',
                                        snapshot=snapshot)

    def delete_snapshot(self, ctxt, host, snapshot):
        self._prepare(host, '1.5').cast(ctxt, 'delete_snapshot',
                                        snapshot=snapshot)

    def delete_group(self, ctxt, host, group_id):
        self._prepare(host, '1.14').cast(ctxt, 'delete_group',
                                         group_id=group_id)

    def create_group_from_src(self, ctxt, host, group_id, volumes):
        self._prepare(host, '1.14').cast(ctxt, 'create_group_from_src',
                                         group_id=group_id, volumes=volumes)

    def create_group_snapshot(self, ctxt, host, group_snapshot):
        self._prepare(host, '1.14').cast(ctxt, 'create_group_snapshot',
                                         group_snapshot=group_snapshot)

    def delete_group_snapshot(self, ctxt, host, group_snapshot):
        self._prepare(host, '1.14').cast(ctxt, 'delete_group_snapshot',
                                         group_snapshot=group_snapshot)

    def delete_volume(self, ctxt, host, volume_id):
        self._prepare(host).cast(ctxt, 'delete_volume', volume_id=volume_id)

    def _call(self, ctxt, host, method, version='1.0', timeout=None,
              **kwargs):
        """A call that answers, or raises ServiceUnavailable, within
        about its timeout plus CALL_SEND_GRACE whatever the bus does
        (``rpc.bounded``).  An API node cut off the broker (its database
        still answering) held an attach for as long as the cut lasted,
        past any client's patience, instead of answering 503; a send
        that goes out later finds the attachment settled: the volume
        service refuses it and removes what it made."""
        return rpc.bounded(self._prepare(host, version), ctxt, method,
                           backend_host(host),
                           timeout=timeout or self.timeout, **kwargs)

    def get_capabilities(self, ctxt, host):
        return self._call(ctxt, host, 'get_capabilities')

    def connect(self, ctxt, host, attachment_id, connector, mode,
                volume=None, type_qos=None):
        """The volume service's answer of 1.8 (what it recorded and the
        sharing attachments, see the manager's ``connect``), or None
        from a service capped below it.  ``volume``: the attachment's
        volume (``volumes.summary``) with ``type_qos``, the (id, consumer)
        of its type's QoS specs, as the caller read them under the
        volume's lock; carried from 1.9 on."""
        if volume is not None and self.client.can_send_version('1.9'):
            return self._call(ctxt, host, 'connect', version='1.9',
                              attachment_id=attachment_id,
                              connector=connector, mode=mode, answer=True,
                              volume=volume, type_qos=type_qos)
        if self.client.can_send_version('1.8'):
            return self._call(ctxt, host, 'connect', version='1.8',
                              attachment_id=attachment_id,
                              connector=connector, mode=mode, answer=True)
        self._call(ctxt, host, 'connect', version='1.1',
                   attachment_id=attachment_id, connector=connector,
                   mode=mode)
        return None

    def disconnect(self, ctxt, host, attachment_id, reason=None,
                   volume=None, connector=None, shared=None):
        """``volume`` (``volumes.summary``), ``connector`` and ``shared``
        (whether another attachment holds the host connection through
        this export; None: not known): as the caller read them under the
        volume's lock; carried from 1.9 on."""
        if volume is not None and self.client.can_send_version('1.9'):
            return self._call(ctxt, host, 'disconnect', version='1.9',
                              attachment_id=attachment_id, reason=reason,
                              volume=volume, connector=connector,
                              shared=shared)
        if reason is not None:
            return self._call(ctxt, host, 'disconnect', version='1.4',
                              attachment_id=attachment_id, reason=reason)
        return self._call(ctxt, host, 'disconnect', version='1.1',
                          attachment_id=attachment_id)

    def promote(self, ctxt, host, attachment_id):
        return self._call(ctxt, host, 'promote', version='1.4',
                          attachment_id=attachment_id)

    def extend_volume(self, ctxt, host, volume_id, new_size):
        self._prepare(host, '1.1').cast(ctxt, 'extend_volume',
                                        volume_id=volume_id,
                                        new_size=new_size)

    def revert_to_snapshot(self, ctxt, host, volume, snapshot):
        """``volume`` (``reverting``) and ``snapshot`` (``restoring``):
        the summaries the API recorded them with."""
        self._prepare(host, '1.11').cast(ctxt, 'revert_to_snapshot',
                                         volume=volume, snapshot=snapshot)

    def reimage(self, ctxt, host, volume_id, image_id):
        self._prepare(host, '1.11').cast(ctxt, 'reimage',
                                         volume_id=volume_id,
                                         image_id=image_id)

    def extend_attached_volume(self, ctxt, host, volume_id, old_size,
                               new_size):
        return self._call(ctxt, host, 'extend_attached_volume',
                          version='1.1', volume_id=volume_id,
                          old_size=old_size, new_size=new_size)

    def copy_volume_to_image(self, ctxt, host, volume_id, image):
        """``image``: id, disk_format, container_format of the Glance
        image (queued) to fill; ``ctxt`` carries the token and catalog
        to reach Glance with."""
        self._prepare(host, '1.7').cast(ctxt, 'copy_volume_to_image',
                                        volume_id=volume_id, image=image)

    def reconcile(self, ctxt, host, max_age=None):
        return self._call(ctxt, host, 'reconcile', version='1.3',
                          max_age=max_age)

    def work_cleanup(self, ctxt, host, service_host, until,
                     resource_id=None):
        """Ask volume service ``host`` to settle what volume service
        ``service_host`` left in a transition before ``until`` (ISO
        8601, UTC)."""
        self._prepare(host, CLEANUP_RPC).cast(
            ctxt, 'work_cleanup', service_host=service_host, until=until,
            resource_id=resource_id)

    def cut_host(self, ctxt, host, volume_id, attachment_ids):
        return self._call(ctxt, host, 'cut_host', version='1.6',
                          volume_id=volume_id,
                          attachment_ids=attachment_ids)

    def restore_host(self, ctxt, host, volume_id, attachment_ids):
        return self._call(ctxt, host, 'restore_host', version='1.6',
                          volume_id=volume_id,
                          attachment_ids=attachment_ids)

    def host_reach(self, ctxt, host, volume_id, attachment_ids, initiators):
        return self._call(ctxt, host, 'host_reach', version='1.6',
                          volume_id=volume_id,
                          attachment_ids=attachment_ids,
                          initiators=initiators)

    def backup_export(self, ctxt, host, backup_id, volume_id, snapshot_id,
                      temporary, mode, connector, timeout=None,
                      source_snapshot=None):
        """connection_info (secrets masked) of an export of the volume,
        or of its snapshot ``snapshot_id`` (made now when ``temporary``),
        for the backup service of ``connector``.  ``source_snapshot``:
        the name of a backup snapshot of the volume to make now and read
        instead (when its backend has them: the answer's
        ``data.source_snapshot`` says so)."""
        kwargs = {}
        version = BACKUP_RPC
        if source_snapshot and self.client.can_send_version(
                BACKUP_SNAPSHOT_RPC):
            kwargs['source_snapshot'] = source_snapshot
            version = BACKUP_SNAPSHOT_RPC
        return self._call(ctxt, host, 'backup_export', version=version,
                          timeout=timeout, backup_id=backup_id,
                          volume_id=volume_id, snapshot_id=snapshot_id,
                          temporary=temporary, mode=mode,
                          connector=connector, **kwargs)

    def backup_unexport(self, ctxt, host, backup_id, volume_id, snapshot_id,
                        temporary, timeout=None, keep_source_snapshots=None):
        """Undo backup_export; ``keep_source_snapshots`` (a list): the
        backup snapshots of the volume to keep, the others are removed
        (None: they are not looked at)."""
        kwargs = {}
        version = BACKUP_RPC
        if keep_source_snapshots is not None and \
                self.client.can_send_version(BACKUP_SNAPSHOT_RPC):
            kwargs['keep_source_snapshots'] = list(keep_source_snapshots)
            version = BACKUP_SNAPSHOT_RPC
        return self._call(ctxt, host, 'backup_unexport',
                          version=version, timeout=timeout,
                          backup_id=backup_id, volume_id=volume_id,
                          snapshot_id=snapshot_id, temporary=temporary,
                          **kwargs)

    # -- manage and unmanage (1.12) --------------------------------------
    def manage_existing(self, ctxt, host, volume, ref):
        self._prepare(host, MANAGE_RPC).cast(ctxt, 'manage_existing',
                                             volume=volume, ref=ref)

    def unmanage_volume(self, ctxt, host, volume_id):
        self._prepare(host, MANAGE_RPC).cast(ctxt, 'unmanage_volume',
                                             volume_id=volume_id)

    def get_manageable_volumes(self, ctxt, host, marker, limit, offset,
                               sort_keys, sort_dirs):
        return self._call(ctxt, host, 'get_manageable_volumes',
                          version=MANAGE_RPC, marker=marker, limit=limit,
                          offset=offset, sort_keys=sort_keys,
                          sort_dirs=sort_dirs)

    def manage_existing_snapshot(self, ctxt, host, snapshot, ref):
        self._prepare(host, MANAGE_RPC).cast(
            ctxt, 'manage_existing_snapshot', snapshot=snapshot, ref=ref)

    def unmanage_snapshot(self, ctxt, host, snapshot):
        self._prepare(host, MANAGE_RPC).cast(ctxt, 'unmanage_snapshot',
                                             snapshot=snapshot)

    def get_manageable_snapshots(self, ctxt, host, marker, limit, offset,
                                 sort_keys, sort_dirs):
        return self._call(ctxt, host, 'get_manageable_snapshots',
                          version=MANAGE_RPC, marker=marker, limit=limit,
                          offset=offset, sort_keys=sort_keys,
                          sort_dirs=sort_dirs)

    # -- migration (1.13) ------------------------------------------------
    def migrate_volume(self, ctxt, host, volume_id, dest_host, dest_cluster,
                       new_type_id=None):
        self._prepare(host, MIGRATION_RPC).cast(
            ctxt, 'migrate_volume', volume_id=volume_id,
            dest_host=dest_host, dest_cluster=dest_cluster,
            new_type_id=new_type_id)

    def migrate_finish(self, ctxt, host, target_id, volume_id):
        return self._call(ctxt, host, 'migrate_finish',
                          version=MIGRATION_RPC, target_id=target_id,
                          volume_id=volume_id)
