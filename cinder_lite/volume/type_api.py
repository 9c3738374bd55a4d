"""The service layer for volume types, extra specs and type access."""
import logging

from cinder_lite.common import capabilities
from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.db import api as db_api
from cinder_lite.db import groups as db_groups
from cinder_lite.db import default_types as db_defaults
from cinder_lite.db import quotas as db_quotas
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import rules

LOG = logging.getLogger(__name__)


def _check_specs(specs):
    for key, value in specs.items():
        if key in capabilities.capability_requirements({key: value}):
            capabilities.validate(value)
    rules.check_type_mode(specs.get(rules.TYPE_MODE_KEY))


def _check_name(name):
    if name is not None and name.startswith(db_types.DELETED_PREFIX):
        raise exception.InvalidVolumeType(
            reason="type names starting with '%s' are kept for deleted "
                   "types" % db_types.DELETED_PREFIX)


def _check_private(vtype):
    """Access grants are for private types only (Cinder: 400 on a public
    one, whether adding or removing)."""
    if vtype['is_public']:
        raise exception.InvalidVolumeType(
            reason='Type access modification is not applicable to public '
                   'volume type.')


class TypeService:

    def __init__(self, conf):
        self.conf = conf

    def _scope(self, context):
        return None if context.is_admin else context.project_id

    def create(self, context, name, description, is_public, extra_specs):
        policy.authorize(context, policy.TYPE_MANAGE)
        _check_name(name)
        _check_specs(extra_specs or {})
        vtype = db_api.run_writer(db_types.create, name, description,
                                  is_public, extra_specs)
        LOG.info('volume type %s (%s) created', vtype['id'], name)
        return vtype

    def get(self, context, type_id):
        policy.authorize(context, policy.TYPE_GET)
        with db_api.reader() as session:
            if type_id == 'default':
                # the project's own default first, as Cinder
                default_id = db_defaults.type_id_of(session,
                                                    context.project_id)
                if default_id is not None:
                    return db_types.get(session, default_id)
                return db_types.get_by_name(session,
                                            self.conf.default_volume_type)
            return db_types.get(session, type_id, self._scope(context))

    def list(self, context, is_public=True, name=None, extra_specs=None):
        """``extra_specs``: only the types with every one of these
        key/value pairs (3.52)."""
        policy.authorize(context, policy.TYPE_GET_ALL)
        if not context.is_admin:
            is_public = None  # public ones plus those shared with us
        with db_api.reader() as session:
            return db_types.list_types(session, self._scope(context),
                                       is_public, name, extra_specs)

    def update(self, context, type_id, values):
        policy.authorize(context, policy.TYPE_MANAGE)
        _check_name(values.get('name'))

        def _update(session):
            current = db_types.get(session, type_id)
            if (current['name'] == self.conf.default_volume_type
                    and 'name' in values
                    and values['name'] != current['name']):
                raise exception.InvalidVolumeType(
                    reason='The default volume type cannot be renamed.')
            return db_types.update(session, type_id, values)
        return db_api.run_writer(_update)

    def delete(self, context, type_id):
        policy.authorize(context, policy.TYPE_MANAGE)

        def _delete(session):
            vtype = db_types.get(session, type_id)
            if vtype['name'] == self.conf.default_volume_type:
                raise exception.InvalidVolumeType(
                    reason='Default volume type can not be deleted.')
            # (a live group holding the type keeps it too, as in Cinder)
            db_types.lock_row(session, type_id)
            db_defaults.check_not_default(session, type_id)
            db_types.delete(session, type_id, in_use=lambda s:
                            db_volumes.type_in_use(s, type_id)
                            or db_groups.uses_volume_type(s, type_id))
            # no volume has it: its per-type usage is zero everywhere
            db_quotas.forget_type(session, type_id)
            return vtype
        vtype = db_api.run_writer(_delete)
        LOG.info('volume type %s (%s) deleted', type_id, vtype['name'])

    def get_extra_specs(self, context, type_id):
        policy.authorize(context, policy.TYPE_SPECS_READ)
        return self.get(context, type_id)['extra_specs']

    def set_extra_specs(self, context, type_id, specs):
        policy.authorize(context, policy.TYPE_MANAGE)
        _check_specs(specs)
        return db_api.run_writer(db_types.set_extra_specs, type_id, specs)

    def delete_extra_spec(self, context, type_id, key):
        policy.authorize(context, policy.TYPE_MANAGE)
        db_api.run_writer(db_types.delete_extra_spec, type_id, key)

    def list_access(self, context, type_id):
        policy.authorize(context, policy.TYPE_ACCESS)
        with db_api.reader() as session:
            vtype = db_types.get(session, type_id)
            if vtype['is_public']:
                # Cinder: 404, everyone has access to a public type
                raise exception.TypeAccessListNotFound()
            return db_types.list_access(session, type_id)

    def add_access(self, context, type_id, project_id):
        policy.authorize(context, policy.TYPE_ACCESS)

        def _add(session):
            _check_private(db_types.get(session, type_id))
            db_types.add_access(session, type_id, project_id)
        db_api.run_writer(_add)

    def remove_access(self, context, type_id, project_id):
        policy.authorize(context, policy.TYPE_ACCESS)

        def _remove(session):
            _check_private(db_types.get(session, type_id))
            db_types.remove_access(session, type_id, project_id)
        db_api.run_writer(_remove)
