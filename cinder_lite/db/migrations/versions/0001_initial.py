"""Volumes, volume types with extra specs and access, services, messages.

Revision ID: 0001
Revises:
"""
import datetime

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0001'
down_revision = None

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')
DEFAULT_TYPE_ID = 'f5e0b9f2-3c5e-4a55-9d7c-2d1b0e2f6a01'


def upgrade():
    types = op.create_table(
        'volume_types',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('name', sa.String(255), nullable=False, unique=True),
        sa.Column('description', sa.String(255)),
        sa.Column('is_public', sa.Boolean, nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
    )
    op.create_table(
        'volume_type_extra_specs',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('volume_type_id', sa.String(36),
                  sa.ForeignKey('volume_types.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('value', sa.String(255), nullable=False),
        sa.UniqueConstraint('volume_type_id', 'key',
                            name='uniq_type_spec_key'),
    )
    op.create_table(
        'volume_type_projects',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('volume_type_id', sa.String(36),
                  sa.ForeignKey('volume_types.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.UniqueConstraint('volume_type_id', 'project_id',
                            name='uniq_type_project'),
    )
    op.create_table(
        'volumes',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255)),
        sa.Column('name', sa.String(255)),
        sa.Column('description', sa.String(255)),
        sa.Column('size', sa.Integer, nullable=False),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('volume_type_id', sa.String(36),
                  sa.ForeignKey('volume_types.id'), nullable=False),
        sa.Column('host', sa.String(255)),
        sa.Column('availability_zone', sa.String(255)),
        sa.Column('multiattach', sa.Boolean, nullable=False),
        sa.Column('bootable', sa.Boolean, nullable=False),
        sa.Column('shared_targets', sa.Boolean),
        sa.Column('service_uuid', sa.String(36)),
        sa.Column('metadata', sa.JSON, nullable=False),
        sa.Column('deleted', sa.Boolean, nullable=False),
        sa.Column('deleted_at', DateTime),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
    )
    op.create_index('ix_volumes_project_status', 'volumes',
                    ['project_id', 'status'])
    op.create_table(
        'services',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('binary', sa.String(255), nullable=False),
        sa.Column('topic', sa.String(255), nullable=False),
        sa.Column('backend', sa.String(255)),
        sa.Column('availability_zone', sa.String(255), nullable=False),
        sa.Column('disabled', sa.Boolean, nullable=False),
        sa.Column('disabled_reason', sa.String(255)),
        sa.Column('report_count', sa.Integer, nullable=False),
        sa.Column('heartbeat_at', DateTime),
        sa.Column('capabilities', sa.JSON),
        sa.Column('rpc_version', sa.String(16)),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
        sa.UniqueConstraint('host', 'binary',
                            name='uniq_service_host_binary'),
    )
    op.create_table(
        'messages',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('request_id', sa.String(255)),
        sa.Column('resource_type', sa.String(255)),
        sa.Column('resource_uuid', sa.String(36)),
        sa.Column('event_id', sa.String(255), nullable=False),
        sa.Column('message_level', sa.String(255), nullable=False),
        sa.Column('detail', sa.String(1024), nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('expires_at', DateTime),
    )
    # Cinder has had a default type since Train; volumes created without a
    # type get it.
    op.bulk_insert(types, [{
        'id': DEFAULT_TYPE_ID, 'name': '__DEFAULT__',
        'description': 'Default Volume Type', 'is_public': True,
        'created_at': datetime.datetime(2026, 1, 1)}])
