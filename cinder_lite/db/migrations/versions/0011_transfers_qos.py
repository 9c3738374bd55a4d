"""Volume transfers and QoS specs.

``transfers``: a volume offered to another project; the auth key is kept
only as an HMAC keyed by a random salt.  ``qos_specs`` and
``qos_specs_keys``: named QoS specs with their consumer (front-end,
back-end or both) and key/value pairs; ``volume_types.qos_specs_id``
associates a type with one of them.

Revision ID: 0011
Revises: 0010
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0011'
down_revision = '0010'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')
PAGE_KEYS = ['deleted', 'created_at', 'id']


def upgrade():
    op.create_table(
        'transfers',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('volume_id', sa.String(36), sa.ForeignKey('volumes.id'),
                  nullable=False),
        sa.Column('name', sa.String(255)),
        sa.Column('salt', sa.String(255), nullable=False),
        sa.Column('crypt_hash', sa.String(255), nullable=False),
        sa.Column('no_snapshots', sa.Boolean, nullable=False),
        sa.Column('source_project_id', sa.String(255), nullable=False),
        sa.Column('destination_project_id', sa.String(255)),
        sa.Column('accepted', sa.Boolean, nullable=False),
        sa.Column('deleted', sa.Boolean, nullable=False),
        sa.Column('deleted_at', DateTime),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime))
    op.create_index('ix_transfers_project_created', 'transfers',
                    ['source_project_id'] + PAGE_KEYS)
    op.create_index('ix_transfers_live_created', 'transfers', PAGE_KEYS)
    op.create_index('ix_transfers_volume', 'transfers',
                    ['volume_id', 'deleted'])
    op.create_table(
        'qos_specs',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('name', sa.String(255), nullable=False, unique=True),
        sa.Column('consumer', sa.String(16), nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime))
    op.create_table(
        'qos_specs_keys',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('qos_specs_id', sa.String(36),
                  sa.ForeignKey('qos_specs.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('value', sa.String(255)),
        sa.UniqueConstraint('qos_specs_id', 'key',
                            name='uniq_qos_specs_key'))
    # no foreign key: SQLite cannot add one to an existing table without
    # copying it, and the association is guarded by the specs' row lock
    # (cinder_lite.db.qos_specs)
    op.add_column('volume_types', sa.Column('qos_specs_id', sa.String(36)))
    op.create_index('ix_volume_types_qos_specs', 'volume_types',
                    ['qos_specs_id'])


def downgrade():
    op.drop_index('ix_volume_types_qos_specs', 'volume_types')
    # (not a batch: on SQLite that copies volume_types, and dropping the
    # old table cascades to its extra specs)
    op.drop_column('volume_types', 'qos_specs_id')
    op.drop_table('qos_specs_keys')
    op.drop_table('qos_specs')
    op.drop_table('transfers')
