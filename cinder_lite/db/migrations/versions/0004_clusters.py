"""Active-active volume services: the cluster a service belongs to, the
cluster a volume lives on, and the volume service holding each
attachment's export.

Revision ID: 0004
Revises: 0003
"""
from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'


def upgrade():
    op.add_column('services', sa.Column('cluster_name', sa.String(255)))
    op.add_column('volumes', sa.Column('cluster_name', sa.String(255)))
    op.add_column('volume_attachments',
                  sa.Column('export_host', sa.String(255)))
    op.create_index('ix_services_cluster', 'services', ['cluster_name'])
    op.create_index('ix_attachments_export_host', 'volume_attachments',
                    ['export_host', 'deleted'])


def downgrade():
    op.drop_index('ix_attachments_export_host', 'volume_attachments')
    op.drop_index('ix_services_cluster', 'services')
    op.drop_column('volume_attachments', 'export_host')
    op.drop_column('volumes', 'cluster_name')
    op.drop_column('services', 'cluster_name')
