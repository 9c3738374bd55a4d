"""The service layer for the default volume type of each project (3.62).

A project's default is the type its volumes take when their create names
none; without one they take ``[DEFAULT] default_volume_type``.  A type
that is some project's default cannot be deleted (Cinder's rule), and a
set and a delete of the same type are ordered by the type's row lock.
"""
import logging

import sqlalchemy as sa

from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.db import api as db_api
from cinder_lite.db import default_types as db_defaults
from cinder_lite.db import volume_types as db_types
from cinder_lite.volume import quota_api

LOG = logging.getLogger(__name__)


class DefaultTypeService:

    def __init__(self, conf):
        self.conf = conf

    def set_default(self, context, project_id, type_name_or_id):
        quota_api.check_project_id(project_id)
        policy.authorize(context, policy.DEFAULT_TYPE_SET,
                         {'project_id': project_id})

        def _set(session):
            vtype = db_types.get_by_name_or_id(session, type_name_or_id)
            db_types.lock_live(session, vtype['id'])
            return vtype, db_defaults.set_default(session, project_id,
                                                  vtype['id'])
        try:
            vtype, default = db_api.run_writer(_set)
        except sa.exc.IntegrityError:
            # the project's first default, set at the same time by
            # another request through the same server: both inserted its
            # row, the second as a duplicate (no lock guards a row not
            # there yet); run again, it finds the row and updates it
            vtype, default = db_api.run_writer(_set)
        LOG.info('project %s: default volume type set to %s (%s)',
                 project_id, vtype['id'], vtype['name'])
        return default

    def get(self, context, project_id):
        quota_api.check_project_id(project_id)
        policy.authorize(context, policy.DEFAULT_TYPE_GET,
                         {'project_id': project_id})
        with db_api.reader() as session:
            default = db_defaults.get(session, project_id)
        if default is None:
            raise exception.ProjectDefaultTypeNotFound(project_id=project_id)
        return default

    def list(self, context):
        policy.authorize(context, policy.DEFAULT_TYPE_GET_ALL)
        with db_api.reader() as session:
            return db_defaults.list_all(session)

    def unset(self, context, project_id):
        quota_api.check_project_id(project_id)
        policy.authorize(context, policy.DEFAULT_TYPE_UNSET,
                         {'project_id': project_id})
        db_api.run_writer(db_defaults.unset, project_id)
        LOG.info('project %s: default volume type unset', project_id)
