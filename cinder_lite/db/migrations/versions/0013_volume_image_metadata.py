"""Volume image metadata: what a volume made from a Glance image carries
of it (``volume_image_metadata`` in the volume view: the image's id, name,
formats, checksum, sizes and properties), one row a key as Cinder's
``volume_glance_metadata``.  Values are text: image properties may be
long (a block device mapping in JSON).

Revision ID: 0013
Revises: 0012
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0013'
down_revision = '0012'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')
# keys compare exactly on every database, as those of volume_metadata
Text255 = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset='utf8mb4', collation='utf8mb4_bin'),
    'mysql', 'mariadb')


def upgrade():
    op.create_table(
        'volume_image_metadata',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('volume_id', sa.String(36), sa.ForeignKey('volumes.id'),
                  nullable=False),
        sa.Column('key', Text255, nullable=False),
        sa.Column('value', sa.Text, nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
        sa.UniqueConstraint('volume_id', 'key',
                            name='uniq_volume_image_metadata_key'),
    )
    # the glance_metadata list filter looks volumes up by key
    op.create_index('ix_volume_image_metadata_key', 'volume_image_metadata',
                    ['key'])


def downgrade():
    op.drop_index('ix_volume_image_metadata_key', 'volume_image_metadata')
    op.drop_table('volume_image_metadata')
