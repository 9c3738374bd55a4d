"""Snapshots, their metadata, and where a volume came from.

``snapshots``: a point-in-time copy of a volume, kept by the volume's
backend; it counts against its project's ``snapshots`` and ``gigabytes``
quotas (and the per-type ones of ``volume_type_id``, the volume's type
when it was taken).  ``snapshot_metadata``: one row a key, as
``volume_metadata``.  ``volumes.snapshot_id`` and ``volumes.source_volid``:
the snapshot or the volume a volume was created from (no foreign keys:
the source may be deleted afterwards, as in Cinder).

Revision ID: 0012
Revises: 0011
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0012'
down_revision = '0011'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')
Text255 = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset='utf8mb4', collation='utf8mb4_bin'),
    'mysql', 'mariadb')
PAGE_KEYS = ['deleted', 'created_at', 'id']


def upgrade():
    op.create_table(
        'snapshots',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('volume_id', sa.String(36), sa.ForeignKey('volumes.id'),
                  nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255)),
        sa.Column('name', sa.String(255)),
        sa.Column('description', sa.String(255)),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('progress', sa.String(8)),
        sa.Column('volume_size', sa.Integer, nullable=False),
        sa.Column('volume_type_id', sa.String(36), nullable=False),
        sa.Column('deleted', sa.Boolean, nullable=False),
        sa.Column('deleted_at', DateTime),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime))
    op.create_index('ix_snapshots_project_created', 'snapshots',
                    ['project_id'] + PAGE_KEYS)
    op.create_index('ix_snapshots_live_created', 'snapshots', PAGE_KEYS)
    op.create_index('ix_snapshots_volume', 'snapshots',
                    ['volume_id', 'deleted'])
    op.create_table(
        'snapshot_metadata',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('snapshot_id', sa.String(36),
                  sa.ForeignKey('snapshots.id'), nullable=False),
        sa.Column('key', Text255, nullable=False),
        sa.Column('value', Text255, nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
        sa.UniqueConstraint('snapshot_id', 'key',
                            name='uniq_snapshot_metadata_key'))
    op.create_index('ix_snapshot_metadata_key_value', 'snapshot_metadata',
                    ['key', 'value'])
    op.add_column('volumes', sa.Column('snapshot_id', sa.String(36)))
    op.add_column('volumes', sa.Column('source_volid', sa.String(36)))
    # a source is not deleted while a volume is made from it
    op.create_index('ix_volumes_snapshot', 'volumes', ['snapshot_id'])
    op.create_index('ix_volumes_source_volid', 'volumes', ['source_volid'])


def downgrade():
    op.drop_index('ix_volumes_source_volid', 'volumes')
    op.drop_index('ix_volumes_snapshot', 'volumes')
    with op.batch_alter_table('volumes') as batch:
        batch.drop_column('source_volid')
        batch.drop_column('snapshot_id')
    op.drop_table('snapshot_metadata')
    op.drop_table('snapshots')
