"""Backups and their metadata.

``backups``: a copy of a volume kept by a backup service's store (a
directory, a Ceph pool); ``service_metadata`` is what the store's driver
needs to find it again, ``parent_id`` the backup an incremental one
builds on.  No foreign key to ``volumes``: a backup outlives its volume.
``backup_metadata``: one row a key.  ``volumes.backup_id``: the backup a
volume made for a restore is written from once the volume exists.

Revision ID: 0017
Revises: 0016
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0017'
down_revision = '0016'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')
Text255 = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset='utf8mb4', collation='utf8mb4_bin'),
    'mysql', 'mariadb')
PAGE_KEYS = ['deleted', 'created_at', 'id']


def upgrade():
    op.create_table(
        'backups',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('volume_id', sa.String(36), nullable=False),
        sa.Column('snapshot_id', sa.String(36)),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255)),
        sa.Column('name', sa.String(255)),
        sa.Column('description', sa.String(255)),
        sa.Column('availability_zone', sa.String(255)),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('fail_reason', sa.String(255)),
        sa.Column('host', sa.String(255)),
        sa.Column('service', sa.String(255)),
        sa.Column('container', sa.String(255)),
        sa.Column('service_metadata', sa.Text),
        sa.Column('size', sa.Integer, nullable=False),
        sa.Column('object_count', sa.Integer, nullable=False),
        sa.Column('progress_bytes', sa.BigInteger, nullable=False),
        sa.Column('parent_id', sa.String(36)),
        sa.Column('num_dependent_backups', sa.Integer, nullable=False),
        sa.Column('volume_status', sa.String(32)),
        sa.Column('volume_meta', sa.Text),
        sa.Column('data_timestamp', DateTime),
        sa.Column('restore_volume_id', sa.String(36)),
        sa.Column('deleted', sa.Boolean, nullable=False),
        sa.Column('deleted_at', DateTime),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime))
    op.create_index('ix_backups_project_created', 'backups',
                    ['project_id'] + PAGE_KEYS)
    op.create_index('ix_backups_live_created', 'backups', PAGE_KEYS)
    op.create_index('ix_backups_volume', 'backups', ['volume_id', 'deleted'])
    op.create_index('ix_backups_parent', 'backups', ['parent_id', 'deleted'])
    op.create_table(
        'backup_metadata',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('backup_id', sa.String(36), sa.ForeignKey('backups.id'),
                  nullable=False),
        sa.Column('key', Text255, nullable=False),
        sa.Column('value', Text255, nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
        sa.UniqueConstraint('backup_id', 'key',
                            name='uniq_backup_metadata_key'))
    op.add_column('volumes', sa.Column('backup_id', sa.String(36)))


def downgrade():
    with op.batch_alter_table('volumes') as batch:
        batch.drop_column('backup_id')
    op.drop_table('backup_metadata')
    op.drop_table('backups')
