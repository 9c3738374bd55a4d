"""A ``lock_seq`` on the rows other rows hang from (volumes, snapshots,
backups, groups, group snapshots): their row locks write it.

A ``SELECT ... FOR UPDATE`` is a lock of one server: a Galera cluster
does not replicate it, and a transaction that only read the row it
locked has nothing of that row for the cluster to certify.  Two writers
on two nodes then both pass a check made under the lock (a snapshot of
a volume that another node is deleting, a volume restored from a backup
being deleted).  A lock that writes the row puts the row in the
transaction's write set: of two such transactions on two nodes, the one
that commits second fails its certification (1213) and runs again.
``lock_seq`` counts those locks; nothing reads it.

Revision ID: 0025
Revises: 0022
"""
from alembic import op
import sqlalchemy as sa

revision = '0025'
down_revision = '0022'

TABLES = ('volumes', 'snapshots', 'backups', 'groups', 'group_snapshots')


def upgrade():
    for table in TABLES:
        op.add_column(table, sa.Column('lock_seq', sa.Integer,
                                       nullable=False, server_default='0'))


def downgrade():
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column('lock_seq')
