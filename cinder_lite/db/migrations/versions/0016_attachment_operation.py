"""What is under way on an attachment, in a column of its own.

``volume_attachments.operation``: ``taking_over`` (a read-only attachment
becoming its volume's writer, os-takeover), ``disconnecting`` (its
disconnect is under way) or ``os-reserve`` (a reservation the legacy
os-reserve made, which shows its volume ``attaching``); null when
nothing is.  Before this revision these were words in ``status_reason``,
next to the human text of an error.

Data: rows whose status_reason is one of those words get the operation
and no status_reason (the API shows the same words as status_reason
while the attachment has no other); the downgrade writes them back.

Revision ID: 0016
Revises: 0015
"""
from alembic import op
import sqlalchemy as sa

revision = '0016'
down_revision = '0015'

attachments = sa.table('volume_attachments', sa.column('operation'),
                       sa.column('status_reason'))

# operation -> the status_reason that meant it before this revision
MARKS = {'taking_over': 'taking over',
         'disconnecting': 'disconnecting',
         'os-reserve': 'reserved by os-reserve'}


def upgrade():
    op.add_column('volume_attachments',
                  sa.Column('operation', sa.String(32)))
    for operation, reason in MARKS.items():
        op.execute(attachments.update()
                   .where(attachments.c.status_reason == reason)
                   .values(operation=operation, status_reason=None))


def downgrade():
    for operation, reason in MARKS.items():
        op.execute(attachments.update()
                   .where(attachments.c.operation == operation,
                          attachments.c.status_reason.is_(None))
                   .values(status_reason=reason))
    with op.batch_alter_table('volume_attachments') as batch:
        batch.drop_column('operation')
