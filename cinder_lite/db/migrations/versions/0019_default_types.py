"""Default volume types per project (3.62).

``project_default_types``: at most one row per project, naming the type a
volume of that project takes when its create names none (before
``[DEFAULT] default_volume_type``).  Unsetting deletes the row.

Revision ID: 0019
Revises: 0017
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0019'
down_revision = '0017'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def upgrade():
    op.create_table(
        'project_default_types',
        sa.Column('project_id', sa.String(255), primary_key=True),
        sa.Column('volume_type_id', sa.String(36),
                  sa.ForeignKey('volume_types.id'), nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime))
    # "is this type some project's default?" when a type is deleted
    op.create_index('ix_project_default_types_type',
                    'project_default_types', ['volume_type_id'])


def downgrade():
    op.drop_table('project_default_types')
