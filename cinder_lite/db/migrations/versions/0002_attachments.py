"""Volume attachments; per-volume attachment sequence and read-only flag.

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0002'
down_revision = '0001'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def upgrade():
    with op.batch_alter_table('volumes') as batch:
        batch.add_column(sa.Column('attach_seq', sa.Integer, nullable=False,
                                   server_default='0'))
        batch.add_column(sa.Column('readonly', sa.Boolean, nullable=False,
                                   server_default=sa.false()))
    op.create_table(
        'volume_attachments',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('volume_id', sa.String(36), sa.ForeignKey('volumes.id'),
                  nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('instance_uuid', sa.String(36)),
        sa.Column('attached_host', sa.String(255)),
        sa.Column('mountpoint', sa.String(255)),
        sa.Column('attach_status', sa.String(32), nullable=False),
        sa.Column('attach_mode', sa.String(2)),
        sa.Column('connector', sa.JSON),
        sa.Column('connection_info', sa.JSON),
        sa.Column('service_owned', sa.Boolean, nullable=False),
        sa.Column('status_reason', sa.String(1024)),
        sa.Column('attach_time', DateTime),
        sa.Column('detach_time', DateTime),
        sa.Column('deleted', sa.Boolean, nullable=False),
        sa.Column('deleted_at', DateTime),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
    )
    op.create_index('ix_attachments_volume_live', 'volume_attachments',
                    ['volume_id', 'deleted'])
    op.create_index('ix_attachments_project', 'volume_attachments',
                    ['project_id'])
