"""Volume metadata in its own table (one row a key, as Cinder keeps it),
so the ``metadata`` list filter, the summary's distinct metadata and the
metadata API are served by the database instead of by decoding a JSON
column of every row; the volumes' JSON ``metadata`` column goes.

Also: ``volumes.readonly`` may be null (the read-only flag was never set,
so the view shows no ``readonly`` metadata, as Cinder's admin metadata),
and ``services.frozen`` (``os-services/freeze`` and ``thaw``).

Revision ID: 0010
Revises: 0009
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0010'
down_revision = '0009'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')
# Keys and values compare as Cinder's do on PostgreSQL and SQLite:
# exactly ("Type" and "type" are two keys), also on MySQL/MariaDB.
Text255 = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset='utf8mb4', collation='utf8mb4_bin'),
    'mysql', 'mariadb')

_volumes = sa.table('volumes', sa.column('id', sa.String),
                    sa.column('metadata', sa.JSON),
                    sa.column('deleted', sa.Boolean),
                    sa.column('created_at', DateTime),
                    sa.column('readonly', sa.Boolean))
_metadata = sa.table('volume_metadata', sa.column('volume_id', sa.String),
                     sa.column('key', sa.String), sa.column('value',
                                                            sa.String),
                     sa.column('created_at', DateTime))


def upgrade():
    op.create_table(
        'volume_metadata',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('volume_id', sa.String(36), sa.ForeignKey('volumes.id'),
                  nullable=False),
        sa.Column('key', Text255, nullable=False),
        sa.Column('value', Text255, nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
        sa.UniqueConstraint('volume_id', 'key',
                            name='uniq_volume_metadata_key'),
    )
    # the list filter looks volumes up by key and value
    op.create_index('ix_volume_metadata_key_value', 'volume_metadata',
                    ['key', 'value'])
    conn = op.get_bind()
    rows = conn.execute(sa.select(_volumes.c.id, _volumes.c.metadata,
                                  _volumes.c.created_at)
                        .where(_volumes.c.deleted == sa.false())).all()
    items = [{'volume_id': vid, 'key': str(key), 'value': str(value),
              'created_at': created}
             for vid, meta, created in rows
             for key, value in (meta or {}).items()]
    if items:
        op.bulk_insert(_metadata, items)
    with op.batch_alter_table('volumes') as batch:
        batch.drop_column('metadata')
        batch.alter_column('readonly', existing_type=sa.Boolean,
                           nullable=True, server_default=None)
    op.add_column('services', sa.Column('frozen', sa.Boolean,
                                        nullable=False,
                                        server_default=sa.false()))


def downgrade():
    with op.batch_alter_table('services') as batch:
        batch.drop_column('frozen')
    conn = op.get_bind()
    conn.execute(sa.update(_volumes).where(_volumes.c.readonly.is_(None))
                 .values(readonly=False))
    with op.batch_alter_table('volumes') as batch:
        batch.alter_column('readonly', existing_type=sa.Boolean,
                           nullable=False, server_default=sa.false())
        batch.add_column(sa.Column('metadata', sa.JSON))
    found = {}
    for vid, key, value in conn.execute(sa.select(
            _metadata.c.volume_id, _metadata.c.key, _metadata.c.value)):
        found.setdefault(vid, {})[key] = value
    conn.execute(sa.update(_volumes).values(metadata={}))
    for vid, meta in found.items():
        conn.execute(sa.update(_volumes).where(_volumes.c.id == vid)
                     .values(metadata=meta))
    with op.batch_alter_table('volumes') as batch:
        batch.alter_column('metadata', existing_type=sa.JSON,
                           nullable=False)
    op.drop_index('ix_volume_metadata_key_value', 'volume_metadata')
    op.drop_table('volume_metadata')
