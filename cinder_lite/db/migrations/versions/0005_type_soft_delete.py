"""Volume types are soft-deleted: volumes deleted long ago keep pointing
at the type they had, so the row stays, marked deleted, with its name
freed for a new type (it becomes '#deleted:<id>'), and only listings and
lookups stop showing it.

Revision ID: 0005
Revises: 0004
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0005'
down_revision = '0004'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def upgrade():
    op.add_column('volume_types',
                  sa.Column('deleted', sa.Boolean, nullable=False,
                            server_default=sa.false()))
    op.add_column('volume_types', sa.Column('deleted_at', DateTime))


def downgrade():
    op.drop_column('volume_types', 'deleted_at')
    op.drop_column('volume_types', 'deleted')
