"""Indexes that serve list pages: live rows in the default order
(created_at, id), per project and overall, attachments per volume and per
instance, and one host's connections to a volume.  A page of 50 then
reads about 50 index entries however many rows (mostly deleted history)
the table holds.

Revision ID: 0006
Revises: 0005
"""
from alembic import op

revision = '0006'
down_revision = '0005'

PAGE_KEYS = ['deleted', 'created_at', 'id']


def upgrade():
    op.create_index('ix_volumes_live_created', 'volumes', PAGE_KEYS)
    op.create_index('ix_volumes_project_created', 'volumes',
                    ['project_id'] + PAGE_KEYS)
    op.create_index('ix_attachments_live_created', 'volume_attachments',
                    PAGE_KEYS)
    op.create_index('ix_attachments_project_created', 'volume_attachments',
                    ['project_id'] + PAGE_KEYS)
    op.create_index('ix_attachments_volume_created', 'volume_attachments',
                    ['volume_id'] + PAGE_KEYS)
    op.create_index('ix_attachments_instance', 'volume_attachments',
                    ['instance_uuid'] + PAGE_KEYS)
    # the connections of one host to a volume shared by thousands
    op.create_index('ix_attachments_volume_host', 'volume_attachments',
                    ['volume_id', 'attached_host', 'deleted'])
    # the new ones begin with the same columns (MySQL keeps the foreign
    # key on volume_id served by ix_attachments_volume_created)
    op.drop_index('ix_attachments_volume_live', 'volume_attachments')
    op.drop_index('ix_attachments_project', 'volume_attachments')


def downgrade():
    op.create_index('ix_attachments_project', 'volume_attachments',
                    ['project_id'])
    op.create_index('ix_attachments_volume_live', 'volume_attachments',
                    ['volume_id', 'deleted'])
    for name, table in (('ix_attachments_volume_host', 'volume_attachments'),
                        ('ix_attachments_instance', 'volume_attachments'),
                        ('ix_attachments_volume_created',
                         'volume_attachments'),
                        ('ix_attachments_project_created',
                         'volume_attachments'),
                        ('ix_attachments_live_created',
                         'volume_attachments'),
                        ('ix_volumes_project_created', 'volumes'),
                        ('ix_volumes_live_created', 'volumes')):
        op.drop_index(name, table)
