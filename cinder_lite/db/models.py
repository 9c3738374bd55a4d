"""SQLAlchemy models.  The schema itself is owned by the alembic migrations
in ``cinder_lite/db/migrations``; a test checks the two agree."""
import datetime

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy import orm

# MySQL/MariaDB DATETIME drops fractions of a second unless asked.
DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')
# Compared exactly on every database (MySQL's default collation would make
# "Type" and "type" one key).
Text255 = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset='utf8mb4', collation='utf8mb4_bin'),
    'mysql', 'mariadb')


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class Base(orm.DeclarativeBase):
    pass


class TimestampMixin:
    created_at = sa.Column(DateTime, nullable=False, default=utcnow)
    updated_at = sa.Column(DateTime, onupdate=utcnow)


class VolumeType(TimestampMixin, Base):
    __tablename__ = 'volume_types'
    # the types associated with one QoS specs (migration 0011)
    __table_args__ = (sa.Index('ix_volume_types_qos_specs',
                               'qos_specs_id'),)
    id = sa.Column(sa.String(36), primary_key=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    description = sa.Column(sa.String(255))
    is_public = sa.Column(sa.Boolean, nullable=False, default=True)
    # the QoS specs of its volumes (``qos_specs.id``), or None
    qos_specs_id = sa.Column(sa.String(36))
    # Soft delete: deleted volumes keep their type.  A deleted type's name
    # becomes '#deleted:<id>' (db.volume_types.deleted_name), so the name
    # is free for a new type.
    deleted = sa.Column(sa.Boolean, nullable=False, default=False,
                        server_default=sa.false())
    deleted_at = sa.Column(DateTime)


class VolumeTypeExtraSpec(Base):
    __tablename__ = 'volume_type_extra_specs'
    __table_args__ = (sa.UniqueConstraint('volume_type_id', 'key',
                                          name='uniq_type_spec_key'),)
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    volume_type_id = sa.Column(
        sa.String(36), sa.ForeignKey('volume_types.id', ondelete='CASCADE'),
        nullable=False)
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.String(255), nullable=False)


class VolumeTypeProject(Base):
    __tablename__ = 'volume_type_projects'
    __table_args__ = (sa.UniqueConstraint('volume_type_id', 'project_id',
                                          name='uniq_type_project'),)
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    volume_type_id = sa.Column(
        sa.String(36), sa.ForeignKey('volume_types.id', ondelete='CASCADE'),
        nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)


class ProjectDefaultType(TimestampMixin, Base):
    """The type a project's volumes take when their create names none
    (3.62; migration 0019)."""
    __tablename__ = 'project_default_types'
    __table_args__ = (sa.Index('ix_project_default_types_type',
                               'volume_type_id'),)
    project_id = sa.Column(sa.String(255), primary_key=True)
    volume_type_id = sa.Column(sa.String(36),
                               sa.ForeignKey('volume_types.id'),
                               nullable=False)


class Volume(TimestampMixin, Base):
    __tablename__ = 'volumes'
    __table_args__ = (
        sa.Index('ix_volumes_project_status', 'project_id', 'status'),
        # list pages in the default order (migration 0006)
        sa.Index('ix_volumes_live_created', 'deleted', 'created_at', 'id'),
        sa.Index('ix_volumes_project_created', 'project_id', 'deleted',
                 'created_at', 'id'),
        # volumes made from a snapshot or a volume (migration 0012)
        sa.Index('ix_volumes_snapshot', 'snapshot_id'),
        sa.Index('ix_volumes_source_volid', 'source_volid'),
        sa.Index('ix_volumes_group', 'group_id', 'deleted'),
    )
    id = sa.Column(sa.String(36), primary_key=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255))
    name = sa.Column(sa.String(255))
    description = sa.Column(sa.String(255))
    size = sa.Column(sa.Integer, nullable=False)
    status = sa.Column(sa.String(32), nullable=False)
    volume_type_id = sa.Column(sa.String(36),
                               sa.ForeignKey('volume_types.id'),
                               nullable=False)
    host = sa.Column(sa.String(255))
    # ``cluster@backend#pool`` when the backend is served active-active by
    # a cluster of volume services (then ``host`` is the same)
    cluster_name = sa.Column(sa.String(255))
    availability_zone = sa.Column(sa.String(255))
    multiattach = sa.Column(sa.Boolean, nullable=False, default=False)
    bootable = sa.Column(sa.Boolean, nullable=False, default=False)
    shared_targets = sa.Column(sa.Boolean)
    # the backend keeps SCSI persistent reservations for every host of the
    # volume (null: made before cinder_lite recorded it)
    persistent_reservations = sa.Column(sa.Boolean)
    service_uuid = sa.Column(sa.String(36))
    # Bumped by every attachment change: the UPDATE takes the volume's row
    # lock, so changes to one volume's attachments happen one at a time.
    attach_seq = sa.Column(sa.Integer, nullable=False, default=0,
                           server_default='0')
    # os-update_readonly_flag; None while it was never set (the view then
    # shows no ``readonly`` metadata, as Cinder's admin metadata)
    readonly = sa.Column(sa.Boolean)
    # The size an extend under way grows the volume to (only while it is
    # ``extending``): the growth counts as reserved quota until then.
    pending_size = sa.Column(sa.Integer)
    # what the volume was made from (migration 0012), kept after the
    # source is gone, as in Cinder
    snapshot_id = sa.Column(sa.String(36))
    source_volid = sa.Column(sa.String(36))
    # the Glance image whose data the volume is made from (migration
    # 0015); null for any other volume, whatever image metadata it
    # carries (a clone of a volume from an image carries the image's)
    image_id = sa.Column(sa.String(36))
    # the backup a volume made for a restore is written from once it
    # exists (migration 0017); null for any other volume
    backup_id = sa.Column(sa.String(36))
    # where a migration to another backend is (migration 0021;
    # ``states.MIGRATION``), ``target:<volume id>`` on the temporary
    # volume a migration makes; null when it never migrated
    migration_status = sa.Column(sa.String(255))
    # the generic volume group it is in (migration 0022)
    group_id = sa.Column(sa.String(36))
    # Written by the row lock (``query.lock_row``, migration 0025): a
    # lock that writes the row is certified by a Galera cluster, a
    # SELECT ... FOR UPDATE is not.
    lock_seq = sa.Column(sa.Integer, nullable=False, default=0,
                         server_default='0')
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    deleted_at = sa.Column(DateTime)


class VolumeMetadata(TimestampMixin, Base):
    """One key of a volume's (user) metadata (migration 0010)."""
    __tablename__ = 'volume_metadata'
    __table_args__ = (
        sa.UniqueConstraint('volume_id', 'key',
                            name='uniq_volume_metadata_key'),
        # the ``metadata`` list filter
        sa.Index('ix_volume_metadata_key_value', 'key', 'value'),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    volume_id = sa.Column(sa.String(36), sa.ForeignKey('volumes.id'),
                          nullable=False)
    key = sa.Column(Text255, nullable=False)
    value = sa.Column(Text255, nullable=False)


class Snapshot(TimestampMixin, Base):
    """A point-in-time copy of a volume, kept by the volume's backend
    (migration 0012).  Live while ``deleted`` is false; it counts what
    ``db.snapshots.footprint`` says against its project's quota."""
    __tablename__ = 'snapshots'
    __table_args__ = (
        sa.Index('ix_snapshots_project_created', 'project_id', 'deleted',
                 'created_at', 'id'),
        sa.Index('ix_snapshots_live_created', 'deleted', 'created_at',
                 'id'),
        sa.Index('ix_snapshots_volume', 'volume_id', 'deleted'),
        sa.Index('ix_snapshots_group_snapshot', 'group_snapshot_id',
                 'deleted'),
    )
    id = sa.Column(sa.String(36), primary_key=True)
    volume_id = sa.Column(sa.String(36), sa.ForeignKey('volumes.id'),
                          nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255))
    name = sa.Column(sa.String(255))
    description = sa.Column(sa.String(255))
    status = sa.Column(sa.String(32), nullable=False)
    # Cinder's "0%".."100%"
    progress = sa.Column(sa.String(8))
    # the volume's size and type when the snapshot was taken
    volume_size = sa.Column(sa.Integer, nullable=False)
    volume_type_id = sa.Column(sa.String(36), nullable=False)
    # the group snapshot that took it (migration 0022)
    group_snapshot_id = sa.Column(sa.String(36))
    # Written by the row lock (``query.lock_row``, migration 0025): a
    # lock that writes the row is certified by a Galera cluster, a
    # SELECT ... FOR UPDATE is not.
    lock_seq = sa.Column(sa.Integer, nullable=False, default=0,
                         server_default='0')
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    deleted_at = sa.Column(DateTime)


class SnapshotMetadata(TimestampMixin, Base):
    """One key of a snapshot's metadata (migration 0012)."""
    __tablename__ = 'snapshot_metadata'
    __table_args__ = (
        sa.UniqueConstraint('snapshot_id', 'key',
                            name='uniq_snapshot_metadata_key'),
        sa.Index('ix_snapshot_metadata_key_value', 'key', 'value'),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    snapshot_id = sa.Column(sa.String(36), sa.ForeignKey('snapshots.id'),
                            nullable=False)
    key = sa.Column(Text255, nullable=False)
    value = sa.Column(Text255, nullable=False)


class Backup(TimestampMixin, Base):
    """A copy of a volume kept by a backup service's store (migration
    0017).  Live while ``deleted`` is false; it counts one ``backups`` and
    its ``size`` in ``backup_gigabytes`` against its project's quota."""
    __tablename__ = 'backups'
    __table_args__ = (
        sa.Index('ix_backups_project_created', 'project_id', 'deleted',
                 'created_at', 'id'),
        sa.Index('ix_backups_live_created', 'deleted', 'created_at', 'id'),
        sa.Index('ix_backups_volume', 'volume_id', 'deleted'),
        sa.Index('ix_backups_parent', 'parent_id', 'deleted'),
    )
    id = sa.Column(sa.String(36), primary_key=True)
    # no foreign key: a backup outlives its volume
    volume_id = sa.Column(sa.String(36), nullable=False)
    snapshot_id = sa.Column(sa.String(36))
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255))
    name = sa.Column(sa.String(255))
    description = sa.Column(sa.String(255))
    availability_zone = sa.Column(sa.String(255))
    status = sa.Column(sa.String(32), nullable=False)
    fail_reason = sa.Column(sa.String(255))
    # the backup service that made it (restores and deletes go there
    # while it is up, else to any)
    host = sa.Column(sa.String(255))
    service = sa.Column(sa.String(255))
    container = sa.Column(sa.String(255))
    # what the driver needs to find it again (JSON)
    service_metadata = sa.Column(sa.Text)
    size = sa.Column(sa.Integer, nullable=False)
    object_count = sa.Column(sa.Integer, nullable=False, default=0)
    # bytes of the volume read (or written, while restoring) so far
    progress_bytes = sa.Column(sa.BigInteger, nullable=False, default=0)
    parent_id = sa.Column(sa.String(36))
    num_dependent_backups = sa.Column(sa.Integer, nullable=False,
                                      default=0)
    # the volume's status before the backup moved it to backing-up
    volume_status = sa.Column(sa.String(32))
    # what a restore gives the volume besides its data (JSON: metadata,
    # image metadata, bootable), as the volume had it at the backup
    volume_meta = sa.Column(sa.Text)
    # the point in time it holds
    data_timestamp = sa.Column(DateTime)
    restore_volume_id = sa.Column(sa.String(36))
    # Written by the row lock (``query.lock_row``, migration 0025): a
    # lock that writes the row is certified by a Galera cluster, a
    # SELECT ... FOR UPDATE is not.
    lock_seq = sa.Column(sa.Integer, nullable=False, default=0,
                         server_default='0')
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    deleted_at = sa.Column(DateTime)


class BackupMetadata(TimestampMixin, Base):
    """One key of a backup's metadata (3.43; migration 0017)."""
    __tablename__ = 'backup_metadata'
    __table_args__ = (
        sa.UniqueConstraint('backup_id', 'key',
                            name='uniq_backup_metadata_key'),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    backup_id = sa.Column(sa.String(36), sa.ForeignKey('backups.id'),
                          nullable=False)
    key = sa.Column(Text255, nullable=False)
    value = sa.Column(Text255, nullable=False)


class VolumeImageMetadata(TimestampMixin, Base):
    """One key of what a volume made from an image carries of it
    (migration 0013)."""
    __tablename__ = 'volume_image_metadata'
    __table_args__ = (
        sa.UniqueConstraint('volume_id', 'key',
                            name='uniq_volume_image_metadata_key'),
        # the ``glance_metadata`` list filter
        sa.Index('ix_volume_image_metadata_key', 'key'),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    volume_id = sa.Column(sa.String(36), sa.ForeignKey('volumes.id'),
                          nullable=False)
    key = sa.Column(Text255, nullable=False)
    value = sa.Column(sa.Text, nullable=False)


class SnapshotImageMetadata(TimestampMixin, Base):
    """One key of the image metadata a snapshot keeps of its volume as
    it was when the snapshot was taken, for the volumes made from the
    snapshot (migration 0015; Cinder keeps these rows in
    ``volume_glance_metadata`` with a ``snapshot_id``)."""
    __tablename__ = 'snapshot_image_metadata'
    __table_args__ = (
        sa.UniqueConstraint('snapshot_id', 'key',
                            name='uniq_snapshot_image_metadata_key'),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    snapshot_id = sa.Column(sa.String(36), sa.ForeignKey('snapshots.id'),
                            nullable=False)
    key = sa.Column(Text255, nullable=False)
    value = sa.Column(sa.Text, nullable=False)


class VolumeAttachment(TimestampMixin, Base):
    __tablename__ = 'volume_attachments'
    __table_args__ = (
        # list pages in the default order (migration 0006)
        sa.Index('ix_attachments_live_created', 'deleted', 'created_at',
                 'id'),
        sa.Index('ix_attachments_project_created', 'project_id', 'deleted',
                 'created_at', 'id'),
        sa.Index('ix_attachments_volume_created', 'volume_id', 'deleted',
                 'created_at', 'id'),
        sa.Index('ix_attachments_instance', 'instance_uuid', 'deleted',
                 'created_at', 'id'),
        sa.Index('ix_attachments_volume_host', 'volume_id', 'attached_host',
                 'deleted'),
        sa.Index('ix_attachments_export_host', 'export_host', 'deleted'),
        # which statuses a volume's live attachments are in (0007)
        sa.Index('ix_attachments_volume_status', 'volume_id', 'deleted',
                 'attach_status'),
    )
    id = sa.Column(sa.String(36), primary_key=True)
    volume_id = sa.Column(sa.String(36), sa.ForeignKey('volumes.id'),
                          nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)
    instance_uuid = sa.Column(sa.String(36))
    attached_host = sa.Column(sa.String(255))
    mountpoint = sa.Column(sa.String(255))
    attach_status = sa.Column(sa.String(32), nullable=False)
    # None until decided; shown as the default ('rw') it will get.
    attach_mode = sa.Column(sa.String(2))
    connector = sa.Column(sa.JSON)
    connection_info = sa.Column(sa.JSON)
    # The volume service (``node@backend``) that holds the export: the
    # one connect and disconnect go to.  None on rows from before 0004
    # (their backend's host).
    export_host = sa.Column(sa.String(255))
    # Made by a compute service: only a service or an admin may delete it
    # while it is connected.
    service_owned = sa.Column(sa.Boolean, nullable=False, default=False)
    status_reason = sa.Column(sa.String(1024))
    # what is under way on it besides its status (states.TAKING_OVER,
    # DISCONNECTING, LEGACY_RESERVE), null when nothing is (migration 0016)
    operation = sa.Column(sa.String(32))
    attach_time = sa.Column(DateTime)
    detach_time = sa.Column(DateTime)
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    deleted_at = sa.Column(DateTime)


class Service(TimestampMixin, Base):
    __tablename__ = 'services'
    __table_args__ = (sa.UniqueConstraint('host', 'binary',
                                          name='uniq_service_host_binary'),
                      sa.Index('ix_services_cluster', 'cluster_name'))
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    host = sa.Column(sa.String(255), nullable=False)
    binary = sa.Column(sa.String(255), nullable=False)
    topic = sa.Column(sa.String(255), nullable=False)
    backend = sa.Column(sa.String(255))
    # ``cluster@backend`` of a volume service that serves its backend
    # active-active with the other members of that cluster
    cluster_name = sa.Column(sa.String(255))
    availability_zone = sa.Column(sa.String(255), nullable=False)
    disabled = sa.Column(sa.Boolean, nullable=False, default=False)
    disabled_reason = sa.Column(sa.String(255))
    # os-services/freeze: no volume of this backend is created or deleted
    # until os-services/thaw (a frozen service is disabled too)
    frozen = sa.Column(sa.Boolean, nullable=False, default=False,
                       server_default=sa.false())
    report_count = sa.Column(sa.Integer, nullable=False, default=0)
    heartbeat_at = sa.Column(DateTime)
    capabilities = sa.Column(sa.JSON)
    rpc_version = sa.Column(sa.String(16))


class Message(Base):
    """A message for the user about an asynchronous failure (Cinder's
    /messages API)."""
    __tablename__ = 'messages'
    id = sa.Column(sa.String(36), primary_key=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    request_id = sa.Column(sa.String(255))
    resource_type = sa.Column(sa.String(255))
    resource_uuid = sa.Column(sa.String(36))
    event_id = sa.Column(sa.String(255), nullable=False)
    message_level = sa.Column(sa.String(255), nullable=False)
    detail = sa.Column(sa.String(1024), nullable=False)
    created_at = sa.Column(DateTime, nullable=False, default=utcnow)
    expires_at = sa.Column(DateTime)


class AttachmentEvent(Base):
    """One attachment status change; rows are only ever added."""
    __tablename__ = 'attachment_events'

    id = sa.Column(sa.BigInteger().with_variant(sa.Integer, 'sqlite'),
                   primary_key=True, autoincrement=True)
    attachment_id = sa.Column(sa.String(36), nullable=False)
    volume_id = sa.Column(sa.String(36), nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255))
    actor_project_id = sa.Column(sa.String(255))
    request_id = sa.Column(sa.String(255))
    instance_uuid = sa.Column(sa.String(36))
    attached_host = sa.Column(sa.String(255))
    attach_mode = sa.Column(sa.String(2))
    from_status = sa.Column(sa.String(32))
    to_status = sa.Column(sa.String(32), nullable=False)
    reason = sa.Column(sa.String(1024))
    created_at = sa.Column(DateTime, nullable=False, default=utcnow)
    __table_args__ = (
        sa.Index('ix_attachment_events_volume', 'volume_id', 'id'),
        sa.Index('ix_attachment_events_attachment', 'attachment_id', 'id'),
    )


class Quota(TimestampMixin, Base):
    """A project's limit of one resource (``volumes``, ``gigabytes``,
    ``volumes:<type id>``, ...), where it differs from its class."""
    __tablename__ = 'quotas'
    __table_args__ = (sa.UniqueConstraint('project_id', 'resource',
                                          name='uniq_quota_project_resource'),)
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    resource = sa.Column(sa.String(255), nullable=False)
    hard_limit = sa.Column(sa.Integer, nullable=False)


class QuotaClass(TimestampMixin, Base):
    """A quota class's limit of one resource; the ``default`` class
    overrides the configured defaults of every project."""
    __tablename__ = 'quota_classes'
    __table_args__ = (sa.UniqueConstraint('class_name', 'resource',
                                          name='uniq_quota_class_resource'),)
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    class_name = sa.Column(sa.String(255), nullable=False)
    resource = sa.Column(sa.String(255), nullable=False)
    hard_limit = sa.Column(sa.Integer, nullable=False)


class QuotaUsage(TimestampMixin, Base):
    """What a project uses of one resource: changed in the transaction
    that changes the volumes it counts, under this row's lock."""
    __tablename__ = 'quota_usages'
    __table_args__ = (sa.UniqueConstraint(
        'project_id', 'resource', name='uniq_quota_usage_project_resource'),)
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    resource = sa.Column(sa.String(255), nullable=False)
    in_use = sa.Column(sa.BigInteger, nullable=False, default=0)
    reserved = sa.Column(sa.BigInteger, nullable=False, default=0)


class Transfer(TimestampMixin, Base):
    """A volume offered to another project (Cinder's volume transfer).
    Live while ``deleted`` is false; accepting it or deleting it ends it
    (``accepted`` says which).  The auth key is never stored: only an
    HMAC of it keyed by ``salt``."""
    __tablename__ = 'transfers'
    __table_args__ = (
        # list pages in the default order, per project and overall
        sa.Index('ix_transfers_project_created', 'source_project_id',
                 'deleted', 'created_at', 'id'),
        sa.Index('ix_transfers_live_created', 'deleted', 'created_at',
                 'id'),
        sa.Index('ix_transfers_volume', 'volume_id', 'deleted'),
    )
    id = sa.Column(sa.String(36), primary_key=True)
    volume_id = sa.Column(sa.String(36), sa.ForeignKey('volumes.id'),
                          nullable=False)
    name = sa.Column(sa.String(255))
    salt = sa.Column(sa.String(255), nullable=False)
    crypt_hash = sa.Column(sa.String(255), nullable=False)
    no_snapshots = sa.Column(sa.Boolean, nullable=False, default=False)
    source_project_id = sa.Column(sa.String(255), nullable=False)
    destination_project_id = sa.Column(sa.String(255))
    accepted = sa.Column(sa.Boolean, nullable=False, default=False)
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    deleted_at = sa.Column(DateTime)


class QosSpecs(TimestampMixin, Base):
    """Named QoS specs (Cinder's ``qos-specs``): who applies them
    (``consumer``) and the key/value pairs in ``qos_specs_keys``.  Volume
    types point at them (``volume_types.qos_specs_id``)."""
    __tablename__ = 'qos_specs'
    id = sa.Column(sa.String(36), primary_key=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    # front-end (the consumer host throttles), back-end (the storage
    # target does) or both
    consumer = sa.Column(sa.String(16), nullable=False)


class QosSpecsKey(Base):
    __tablename__ = 'qos_specs_keys'
    __table_args__ = (sa.UniqueConstraint('qos_specs_id', 'key',
                                          name='uniq_qos_specs_key'),)
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    qos_specs_id = sa.Column(
        sa.String(36), sa.ForeignKey('qos_specs.id', ondelete='CASCADE'),
        nullable=False)
    key = sa.Column(sa.String(255), nullable=False)
    # may be null, as in Cinder (a key set to null)
    value = sa.Column(sa.String(255))


class HostFence(TimestampMixin, Base):
    """A consumer host fenced off a volume (migration 0014); live while
    ``deleted`` is false.  Unfencing ends the row (``deleted``,
    ``unfenced_by``, ``unfence_reason``); rows are never removed."""
    __tablename__ = 'host_fences'
    __table_args__ = (
        sa.Index('ix_host_fences_volume_host', 'volume_id', 'host',
                 'deleted'),
        sa.Index('ix_host_fences_host', 'host', 'deleted'),
    )
    id = sa.Column(sa.BigInteger().with_variant(sa.Integer, 'sqlite'),
                   primary_key=True, autoincrement=True)
    host = sa.Column(Text255, nullable=False)
    volume_id = sa.Column(sa.String(36), sa.ForeignKey('volumes.id'),
                          nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)
    reason = sa.Column(sa.String(1024))
    fenced_by = sa.Column(sa.String(255))
    request_id = sa.Column(sa.String(255))
    unfenced_by = sa.Column(sa.String(255))
    unfence_reason = sa.Column(sa.String(1024))
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    deleted_at = sa.Column(DateTime)


# -- generic volume groups (migration 0022) ---------------------------------
class GroupType(TimestampMixin, Base):
    """A kind of group (Cinder's group type); soft-deleted as volume types
    are (the name of a deleted one becomes '#deleted:<id>')."""
    __tablename__ = 'group_types'
    id = sa.Column(sa.String(36), primary_key=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    description = sa.Column(sa.String(255))
    is_public = sa.Column(sa.Boolean, nullable=False, default=True)
    deleted = sa.Column(sa.Boolean, nullable=False, default=False,
                        server_default=sa.false())
    deleted_at = sa.Column(DateTime)


class GroupTypeSpec(Base):
    __tablename__ = 'group_type_specs'
    __table_args__ = (sa.UniqueConstraint('group_type_id', 'key',
                                          name='uniq_group_type_spec_key'),)
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    group_type_id = sa.Column(
        sa.String(36), sa.ForeignKey('group_types.id', ondelete='CASCADE'),
        nullable=False)
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.String(255), nullable=False)


class GroupTypeProject(Base):
    __tablename__ = 'group_type_projects'
    __table_args__ = (sa.UniqueConstraint('group_type_id', 'project_id',
                                          name='uniq_group_type_project'),)
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    group_type_id = sa.Column(
        sa.String(36), sa.ForeignKey('group_types.id', ondelete='CASCADE'),
        nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)


class Group(TimestampMixin, Base):
    """A generic volume group: volumes of some volume types on one
    backend (``host``, ``cluster_name``), snapshotted together."""
    __tablename__ = 'groups'
    __table_args__ = (
        sa.Index('ix_groups_project_created', 'project_id', 'deleted',
                 'created_at', 'id'),
        sa.Index('ix_groups_live_created', 'deleted', 'created_at', 'id'),
        sa.Index('ix_groups_group_type', 'group_type_id', 'deleted'),
    )
    id = sa.Column(sa.String(36), primary_key=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255))
    name = sa.Column(sa.String(255))
    description = sa.Column(sa.String(255))
    status = sa.Column(sa.String(32), nullable=False)
    group_type_id = sa.Column(sa.String(36), nullable=False)
    host = sa.Column(sa.String(255))
    cluster_name = sa.Column(sa.String(255))
    availability_zone = sa.Column(sa.String(255))
    group_snapshot_id = sa.Column(sa.String(36))
    source_group_id = sa.Column(sa.String(36))
    # Written by the row lock (``query.lock_row``, migration 0025): a
    # lock that writes the row is certified by a Galera cluster, a
    # SELECT ... FOR UPDATE is not.
    lock_seq = sa.Column(sa.Integer, nullable=False, default=0,
                         server_default='0')
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    deleted_at = sa.Column(DateTime)


class GroupVolumeTypeMapping(Base):
    __tablename__ = 'group_volume_type_mapping'
    __table_args__ = (
        sa.UniqueConstraint('group_id', 'volume_type_id',
                            name='uniq_group_volume_type'),
        sa.Index('ix_group_volume_type_type', 'volume_type_id'),
    )
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    group_id = sa.Column(sa.String(36), sa.ForeignKey('groups.id'),
                         nullable=False)
    volume_type_id = sa.Column(sa.String(36),
                               sa.ForeignKey('volume_types.id'),
                               nullable=False)


class GroupSnapshot(TimestampMixin, Base):
    """Snapshots of every volume of a group, taken at one moment."""
    __tablename__ = 'group_snapshots'
    __table_args__ = (
        sa.Index('ix_group_snapshots_project_created', 'project_id',
                 'deleted', 'created_at', 'id'),
        sa.Index('ix_group_snapshots_live_created', 'deleted',
                 'created_at', 'id'),
        sa.Index('ix_group_snapshots_group', 'group_id', 'deleted'),
    )
    id = sa.Column(sa.String(36), primary_key=True)
    group_id = sa.Column(sa.String(36), sa.ForeignKey('groups.id'),
                         nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255))
    name = sa.Column(sa.String(255))
    description = sa.Column(sa.String(255))
    status = sa.Column(sa.String(32), nullable=False)
    group_type_id = sa.Column(sa.String(36), nullable=False)
    # Written by the row lock (``query.lock_row``, migration 0025): a
    # lock that writes the row is certified by a Galera cluster, a
    # SELECT ... FOR UPDATE is not.
    lock_seq = sa.Column(sa.Integer, nullable=False, default=0,
                         server_default='0')
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    deleted_at = sa.Column(DateTime)
