"""Quotas: per-project limits, the limits of quota classes (the
``default`` class overrides the configured defaults), and recorded usage.

Usage rows are changed in the transaction that creates, extends, retypes
or deletes a volume, after the rows are locked; nothing expires or is
committed later.  ``volumes.pending_size`` is the size an extend under
way grows a volume to: its growth counts as reserved until the extend
ends.  The usage of the volumes already there is counted here.

Resources are keyed ``volumes`` or ``gigabytes``, and per volume type
``volumes:<type id>`` (the API names them ``volumes_<type name>``), so a
renamed type keeps its limits and usage.

Revision ID: 0008
Revises: 0007
"""
import datetime

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0008'
down_revision = '0007'

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                      'mariadb')


def upgrade():
    op.add_column('volumes', sa.Column('pending_size', sa.Integer))
    op.create_table(
        'quotas',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('hard_limit', sa.Integer, nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_quota_project_resource'))
    op.create_table(
        'quota_classes',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('class_name', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('hard_limit', sa.Integer, nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
        sa.UniqueConstraint('class_name', 'resource',
                            name='uniq_quota_class_resource'))
    usages = op.create_table(
        'quota_usages',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('in_use', sa.BigInteger, nullable=False),
        sa.Column('reserved', sa.BigInteger, nullable=False),
        sa.Column('created_at', DateTime, nullable=False),
        sa.Column('updated_at', DateTime),
        sa.UniqueConstraint('project_id', 'resource',
                            name='uniq_quota_usage_project_resource'))
    _count_existing(usages)


def _count_existing(usages):
    volumes = sa.table('volumes', sa.column('project_id'),
                       sa.column('volume_type_id'), sa.column('size'),
                       sa.column('deleted'))
    rows = op.get_bind().execute(
        sa.select(volumes.c.project_id, volumes.c.volume_type_id,
                  sa.func.count(), sa.func.sum(volumes.c.size))
        .where(volumes.c.deleted == sa.false())
        .group_by(volumes.c.project_id, volumes.c.volume_type_id)).all()
    totals = {}
    for project_id, type_id, count, gigabytes in rows:
        for resource, value in (('volumes', count),
                                ('gigabytes', gigabytes),
                                ('volumes:' + type_id, count),
                                ('gigabytes:' + type_id, gigabytes)):
            key = (project_id, resource)
            totals[key] = totals.get(key, 0) + int(value or 0)
    now = datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None)
    if totals:
        op.get_bind().execute(usages.insert(), [
            {'project_id': project_id, 'resource': resource,
             'in_use': value, 'reserved': 0, 'created_at': now}
            for (project_id, resource), value in sorted(totals.items())])


def downgrade():
    op.drop_table('quota_usages')
    op.drop_table('quota_classes')
    op.drop_table('quotas')
    op.drop_column('volumes', 'pending_size')
