"""Whether a volume's backend keeps SCSI persistent reservations coherent
for every host attached to it (an iSCSI target does; NBD and local
exports have no reservations).  Recorded when the volume is created, as
``shared_targets`` is; null for volumes made before.

Revision ID: 0009
Revises: 0008
"""
from alembic import op
import sqlalchemy as sa

revision = '0009'
down_revision = '0008'


def upgrade():
    op.add_column('volumes', sa.Column('persistent_reservations',
                                       sa.Boolean))


def downgrade():
    with op.batch_alter_table('volumes') as batch:
        batch.drop_column('persistent_reservations')
