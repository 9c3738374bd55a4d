"""Host fences: the durable mark that a host is cut off a volume.

``host_fences``: one row per fence of a consumer host (the ``host`` of
its connectors, as attachments record it in ``attached_host``) off one
volume, live while ``deleted`` is false.  Who fenced it, why and when
stay on the row, and so do who unfenced it, why and when: the rows are
the audit trail of fencing.  Every export path asks for a live row before
it exports to a host.

Revision ID: 0014
Revises: 0013
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0014'
down_revision = '0013'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')
Text255 = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset='utf8mb4', collation='utf8mb4_bin'),
    'mysql', 'mariadb')


def upgrade():
    op.create_table(
        'host_fences',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer, 'sqlite'),
                  primary_key=True, autoincrement=True),
        sa.Column('host', Text255, nullable=False),
        sa.Column('volume_id', sa.String(36), sa.ForeignKey('volumes.id'),
                  nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('reason', sa.String(1024)),
        sa.Column('fenced_by', sa.String(255)),
        sa.Column('request_id', sa.String(255)),
        sa.Column('unfenced_by', sa.String(255)),
        sa.Column('unfence_reason', sa.String(1024)),
        sa.Column('deleted', sa.Boolean, nullable=False),
        sa.Column('deleted_at', DateTime),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime))
    op.create_index('ix_host_fences_volume_host', 'host_fences',
                    ['volume_id', 'host', 'deleted'])
    op.create_index('ix_host_fences_host', 'host_fences',
                    ['host', 'deleted'])


def downgrade():
    # the indexes go with the table (MariaDB refuses to drop the one its
    # foreign key uses on its own)
    op.drop_table('host_fences')
