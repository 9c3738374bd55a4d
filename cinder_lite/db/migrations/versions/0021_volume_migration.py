"""``volumes.migration_status``: where a migration of the volume to
another backend is (``starting``, ``migrating``, ``completing``,
``success``, ``error``; null when it never migrated), and, on the
temporary volume a migration makes on the destination,
``target:<id of the volume it is for>``, as in Cinder.

Revision ID: 0021
Revises: 0019
"""
from alembic import op
import sqlalchemy as sa

revision = '0021'
down_revision = '0019'


def upgrade():
    with op.batch_alter_table('volumes') as batch:
        batch.add_column(sa.Column('migration_status', sa.String(255)))


def downgrade():
    with op.batch_alter_table('volumes') as batch:
        batch.drop_column('migration_status')
