"""The service layer for group types, their group specs and access.

Group specs are free key/value pairs, as in Cinder; the one cinder_lite
reads is ``consistent_group_snapshot_enabled``: ``<is> True`` places the
group's backend among those that can hold every writer of its volumes
while a group snapshot is taken (doc/source/groups.rst).
"""
import logging

from cinder_lite.common import capabilities
from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.db import api as db_api
from cinder_lite.db import group_types as db_group_types

LOG = logging.getLogger(__name__)

DELETED_PREFIX = '#deleted:'
CONSISTENT_SPEC = 'consistent_group_snapshot_enabled'


def _check_specs(specs):
    for key, value in (specs or {}).items():
        if key in capabilities.capability_requirements({key: value}):
            try:
                capabilities.validate(value)
            except exception.Invalid as e:
                raise exception.InvalidGroupType(reason=e.message) from None


def _check_name(name):
    if name is not None and name.startswith(DELETED_PREFIX):
        raise exception.InvalidGroupType(
            reason="group type names starting with '%s' are kept for "
                   "deleted types" % DELETED_PREFIX)


def requires_consistency(group_specs):
    """True when a group type asks for group snapshots that are one
    point in time across its volumes."""
    value = (group_specs or {}).get(CONSISTENT_SPEC)
    return str(value).strip().lower() in ('<is> true', 'true')


class GroupTypeService:

    def __init__(self, conf):
        self.conf = conf

    @staticmethod
    def _scope(context):
        return None if context.is_admin else context.project_id

    def create(self, context, name, description, is_public, group_specs):
        policy.authorize(context, policy.GROUP_TYPE_MANAGE)
        _check_name(name)
        _check_specs(group_specs)
        gtype = db_api.run_writer(db_group_types.create, name, description,
                                  is_public, group_specs)
        LOG.info('group type %s (%s) created', gtype['id'], name)
        return gtype

    def get(self, context, type_id):
        with db_api.reader() as session:
            if type_id == 'default':
                return self.default(context, session)
            return db_group_types.get(session, type_id,
                                      self._scope(context))

    def default(self, context, session):
        """The ``default_group_type`` (404 when unset or gone)."""
        name = self.conf.default_group_type
        if not name:
            raise exception.GroupTypeNotFoundByName(
                group_type_name='(default_group_type is not set)')
        return db_group_types.get_by_name_or_id(session, name,
                                                self._scope(context))

    def resolve(self, session, context, name_or_id):
        """The group type a request names (by name or id), as the caller
        sees types; InvalidInput (400) when there is none, as Cinder."""
        try:
            return db_group_types.get_by_name_or_id(session, name_or_id,
                                                    self._scope(context))
        except exception.NotFound:
            raise exception.InvalidInput(
                reason='Group type %s not found.' % name_or_id) from None

    def list(self, context, is_public=True, sort_keys=('created_at',),
             sort_dirs=('asc',)):
        if not context.is_admin:
            is_public = None
        with db_api.reader() as session:
            return db_group_types.list_types(session, self._scope(context),
                                             is_public, sort_keys, sort_dirs)

    def update(self, context, type_id, values):
        policy.authorize(context, policy.GROUP_TYPE_MANAGE)
        _check_name(values.get('name'))
        gtype = db_api.run_writer(db_group_types.update, type_id, values)
        LOG.info('group type %s updated: %s', type_id, sorted(values))
        return gtype

    def delete(self, context, type_id):
        policy.authorize(context, policy.GROUP_TYPE_MANAGE)

        def _delete(session):
            gtype = db_group_types.get(session, type_id)
            if self.conf.default_group_type and gtype['name'] == \
                    self.conf.default_group_type:
                raise exception.InvalidGroupType(
                    reason='the default group type %s cannot be deleted'
                           % gtype['name'])
            db_group_types.delete(session, type_id)
        db_api.run_writer(_delete)
        LOG.info('group type %s deleted', type_id)

    # -- group specs -----------------------------------------------------
    def list_specs(self, context, type_id):
        policy.authorize(context, policy.GROUP_TYPE_SPECS_MANAGE)
        with db_api.reader() as session:
            return db_group_types.get(session, type_id)['group_specs']

    def set_specs(self, context, type_id, specs):
        policy.authorize(context, policy.GROUP_TYPE_SPECS_MANAGE)
        _check_specs(specs)
        found = db_api.run_writer(db_group_types.set_specs, type_id, specs)
        LOG.info('group type %s: group specs %s set', type_id,
                 sorted(specs))
        return found

    def show_spec(self, context, type_id, key):
        specs = self.list_specs(context, type_id)
        if key not in specs:
            raise exception.GroupTypeSpecsNotFound(group_type_id=type_id,
                                                   group_specs_key=key)
        return {key: specs[key]}

    def delete_spec(self, context, type_id, key):
        policy.authorize(context, policy.GROUP_TYPE_SPECS_MANAGE)
        db_api.run_writer(db_group_types.delete_spec, type_id, key)
        LOG.info('group type %s: group spec %s deleted', type_id, key)
