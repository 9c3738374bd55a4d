"""Attachment events: an append-only record of every attachment status
change (who, from which host, with which mode, from/to, why).

Revision ID: 0003
Revises: 0002
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0003'
down_revision = '0002'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def upgrade():
    op.create_table(
        'attachment_events',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer, 'sqlite'),
                  primary_key=True, autoincrement=True),
        sa.Column('attachment_id', sa.String(36), nullable=False),
        sa.Column('volume_id', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255)),
        sa.Column('actor_project_id', sa.String(255)),
        sa.Column('request_id', sa.String(255)),
        sa.Column('instance_uuid', sa.String(36)),
        sa.Column('attached_host', sa.String(255)),
        sa.Column('attach_mode', sa.String(2)),
        sa.Column('from_status', sa.String(32)),
        sa.Column('to_status', sa.String(32), nullable=False),
        sa.Column('reason', sa.String(1024)),
        sa.Column('created_at', DateTime, nullable=False),
    )
    op.create_index('ix_attachment_events_volume', 'attachment_events',
                    ['volume_id', 'id'])
    op.create_index('ix_attachment_events_attachment', 'attachment_events',
                    ['attachment_id', 'id'])


def downgrade():
    op.drop_table('attachment_events')
