"""An index on the statuses of a volume's live attachments: the volume
status derived after every attachment change asks which statuses occur,
one index probe per status, instead of reading every live attachment of
the volume (10,000 of a volume shared by 10,000 hosts).

Revision ID: 0007
Revises: 0006
"""
from alembic import op

revision = '0007'
down_revision = '0006'


def upgrade():
    op.create_index('ix_attachments_volume_status', 'volume_attachments',
                    ['volume_id', 'deleted', 'attach_status'])


def downgrade():
    op.drop_index('ix_attachments_volume_status', 'volume_attachments')
