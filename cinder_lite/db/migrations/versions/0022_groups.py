"""Generic volume groups (Cinder's groups, 3.13+), their types and group
snapshots.

``group_types`` (soft delete, as volume types), ``group_type_specs`` (one
row a key), ``group_type_projects`` (access to a private group type),
``groups`` (a group lives on one backend: ``host``/``cluster_name``),
``group_volume_type_mapping`` (the volume types a group holds),
``group_snapshots``; ``volumes.group_id`` and
``snapshots.group_snapshot_id`` say which group a volume is in and which
group snapshot a snapshot was taken by.

Revision ID: 0022
Revises: 0021
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0022'
down_revision = '0021'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')
PAGE_KEYS = ['deleted', 'created_at', 'id']


def _stamps():
    return [sa.Column('created_at', DateTime, nullable=False),
            sa.Column('updated_at', DateTime)]


def upgrade():
    op.create_table(
        'group_types',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('name', sa.String(255), nullable=False, unique=True),
        sa.Column('description', sa.String(255)),
        sa.Column('is_public', sa.Boolean, nullable=False),
        sa.Column('deleted', sa.Boolean, nullable=False,
                  server_default=sa.false()),
        sa.Column('deleted_at', DateTime),
        *_stamps())
    op.create_table(
        'group_type_specs',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('group_type_id', sa.String(36),
                  sa.ForeignKey('group_types.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('value', sa.String(255), nullable=False),
        sa.UniqueConstraint('group_type_id', 'key',
                            name='uniq_group_type_spec_key'))
    op.create_table(
        'group_type_projects',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('group_type_id', sa.String(36),
                  sa.ForeignKey('group_types.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.UniqueConstraint('group_type_id', 'project_id',
                            name='uniq_group_type_project'))
    op.create_table(
        'groups',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255)),
        sa.Column('name', sa.String(255)),
        sa.Column('description', sa.String(255)),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('group_type_id', sa.String(36), nullable=False),
        sa.Column('host', sa.String(255)),
        sa.Column('cluster_name', sa.String(255)),
        sa.Column('availability_zone', sa.String(255)),
        sa.Column('group_snapshot_id', sa.String(36)),
        sa.Column('source_group_id', sa.String(36)),
        sa.Column('deleted', sa.Boolean, nullable=False),
        sa.Column('deleted_at', DateTime),
        *_stamps())
    op.create_index('ix_groups_project_created', 'groups',
                    ['project_id'] + PAGE_KEYS)
    op.create_index('ix_groups_live_created', 'groups', PAGE_KEYS)
    op.create_index('ix_groups_group_type', 'groups',
                    ['group_type_id', 'deleted'])
    op.create_table(
        'group_volume_type_mapping',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('group_id', sa.String(36), sa.ForeignKey('groups.id'),
                  nullable=False),
        sa.Column('volume_type_id', sa.String(36),
                  sa.ForeignKey('volume_types.id'), nullable=False),
        sa.UniqueConstraint('group_id', 'volume_type_id',
                            name='uniq_group_volume_type'))
    op.create_index('ix_group_volume_type_type', 'group_volume_type_mapping',
                    ['volume_type_id'])
    op.create_table(
        'group_snapshots',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('group_id', sa.String(36), sa.ForeignKey('groups.id'),
                  nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255)),
        sa.Column('name', sa.String(255)),
        sa.Column('description', sa.String(255)),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('group_type_id', sa.String(36), nullable=False),
        sa.Column('deleted', sa.Boolean, nullable=False),
        sa.Column('deleted_at', DateTime),
        *_stamps())
    op.create_index('ix_group_snapshots_project_created', 'group_snapshots',
                    ['project_id'] + PAGE_KEYS)
    op.create_index('ix_group_snapshots_live_created', 'group_snapshots',
                    PAGE_KEYS)
    op.create_index('ix_group_snapshots_group', 'group_snapshots',
                    ['group_id', 'deleted'])
    op.add_column('volumes', sa.Column('group_id', sa.String(36)))
    op.create_index('ix_volumes_group', 'volumes', ['group_id', 'deleted'])
    op.add_column('snapshots', sa.Column('group_snapshot_id',
                                         sa.String(36)))
    op.create_index('ix_snapshots_group_snapshot', 'snapshots',
                    ['group_snapshot_id', 'deleted'])


def downgrade():
    op.drop_index('ix_snapshots_group_snapshot', 'snapshots')
    with op.batch_alter_table('snapshots') as batch:
        batch.drop_column('group_snapshot_id')
    op.drop_index('ix_volumes_group', 'volumes')
    with op.batch_alter_table('volumes') as batch:
        batch.drop_column('group_id')
    op.drop_table('group_snapshots')
    op.drop_table('group_volume_type_mapping')
    op.drop_table('groups')
    op.drop_table('group_type_projects')
    op.drop_table('group_type_specs')
    op.drop_table('group_types')
