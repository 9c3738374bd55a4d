"""What a volume is made from, explicitly, and the image metadata of
snapshots.

``volumes.image_id``: the Glance image whose data a volume is made from
(null for any other volume).  The volume service decides how to make a
volume from ``image_id``, ``snapshot_id`` and ``source_volid``, never
from the image metadata it carries: a clone of a volume made from an
image carries that image's metadata too, and is a copy, not a download.

``snapshot_image_metadata``: the image metadata a snapshot keeps of its
volume as it was when the snapshot was taken, given to the volumes made
from the snapshot (as Cinder's ``volume_glance_metadata`` rows with a
``snapshot_id``).

Data: volumes still ``creating`` or ``downloading`` without a snapshot
or a source volume were made from the image their image metadata names
(before this revision only a create from an image recorded image
metadata on a volume not yet available); live snapshots take their
volume's image metadata as it is now.

Revision ID: 0015
Revises: 0014
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0015'
down_revision = '0014'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')
Text255 = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset='utf8mb4', collation='utf8mb4_bin'),
    'mysql', 'mariadb')

volumes = sa.table('volumes', sa.column('id'), sa.column('status'),
                   sa.column('snapshot_id'), sa.column('source_volid'),
                   sa.column('image_id'), sa.column('deleted'))
snapshots = sa.table('snapshots', sa.column('id'), sa.column('volume_id'),
                     sa.column('deleted'))
volume_image = sa.table('volume_image_metadata', sa.column('volume_id'),
                        sa.column('key'), sa.column('value'),
                        sa.column('created_at'))
snapshot_image = sa.table('snapshot_image_metadata',
                          sa.column('snapshot_id'), sa.column('key'),
                          sa.column('value'), sa.column('created_at'))


def upgrade():
    op.add_column('volumes', sa.Column('image_id', sa.String(36)))
    op.create_table(
        'snapshot_image_metadata',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('snapshot_id', sa.String(36),
                  sa.ForeignKey('snapshots.id'), nullable=False),
        sa.Column('key', Text255, nullable=False),
        sa.Column('value', sa.Text, nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
        sa.UniqueConstraint('snapshot_id', 'key',
                            name='uniq_snapshot_image_metadata_key'),
    )
    named = (sa.select(volume_image.c.value)
             .where(volume_image.c.volume_id == volumes.c.id,
                    volume_image.c.key == 'image_id',
                    sa.func.length(volume_image.c.value) <= 36)
             .scalar_subquery())
    op.execute(volumes.update()
               .where(volumes.c.deleted == sa.false(),
                      volumes.c.status.in_(('creating', 'downloading')),
                      volumes.c.snapshot_id.is_(None),
                      volumes.c.source_volid.is_(None),
                      named.is_not(None))
               .values(image_id=named))
    op.execute(snapshot_image.insert().from_select(
        ['snapshot_id', 'key', 'value', 'created_at'],
        sa.select(snapshots.c.id, volume_image.c.key, volume_image.c.value,
                  volume_image.c.created_at)
        .select_from(snapshots.join(
            volume_image, volume_image.c.volume_id == snapshots.c.volume_id))
        .where(snapshots.c.deleted == sa.false())))


def downgrade():
    op.drop_table('snapshot_image_metadata')
    with op.batch_alter_table('volumes') as batch:
        batch.drop_column('image_id')
