"""Alembic environment: runs on the connection handed over by
``cinder_lite.db.migration``."""
from alembic import context

from cinder_lite.db import models

config = context.config
connection = config.attributes['connection']
context.configure(connection=connection,
                  target_metadata=models.Base.metadata,
                  render_as_batch=connection.dialect.name == 'sqlite')
with context.begin_transaction():
    context.run_migrations()
