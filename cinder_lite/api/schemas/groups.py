"""Request bodies of /group_types, /groups and /group_snapshots (Cinder's
schemas: the object of each body takes no key it does not define)."""
from cinder_lite.api.schemas import common
from cinder_lite.api.schemas import types as type_schemas

_name = {'type': 'string', 'minLength': 1, 'maxLength': 255,
         'pattern': r'^(?!\s)(?!.*\s$).+$'}
_uuid = {'type': 'string', 'format': 'uuid', 'maxLength': 36}

group_specs = type_schemas.extra_specs


def _body(key, properties, required=(), min_properties=None):
    inner = {'type': 'object', 'properties': properties,
             'additionalProperties': False}
    if required:
        inner['required'] = list(required)
    if min_properties:
        inner['minProperties'] = min_properties
    return {'type': 'object', 'properties': {key: inner},
            'required': [key], 'additionalProperties': False}


# -- group types (3.11) -------------------------------------------------------
create_group_type = _body('group_type', {
    'name': _name,
    'description': common.description_or_null,
    'is_public': common.boolean,
    'group_specs': group_specs,
}, required=['name'])

update_group_type = _body('group_type', {
    'name': _name,
    'description': common.description_or_null,
    'is_public': common.boolean,
}, min_properties=1)

set_group_specs = {
    'type': 'object',
    'properties': {'group_specs': group_specs},
    'required': ['group_specs'],
    'additionalProperties': False,
}

# PUT /group_types/{id}/group_specs/{key}: one key, the URL's
update_group_spec = dict(group_specs, minProperties=1, maxProperties=1)

# -- groups (3.13) ------------------------------------------------------------
create_group = _body('group', {
    'name': common.name_or_null,
    'description': common.description_or_null,
    'group_type': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    'volume_types': {'type': 'array', 'minItems': 1,
                     'items': {'type': 'string', 'minLength': 1,
                               'maxLength': 255}},
    'availability_zone': common.name_or_null,
}, required=['group_type', 'volume_types'])

# (3.14) POST /groups/action {"create-from-src": ...}
create_group_from_src = {
    'type': 'object',
    'properties': {'create-from-src': {
        'type': 'object',
        'properties': {
            'name': common.name_or_null,
            'description': common.description_or_null,
            'source_group_id': _uuid,
            'group_snapshot_id': _uuid,
        },
        'additionalProperties': False,
    }},
    'required': ['create-from-src'],
    'additionalProperties': False,
}

# the volume lists are comma-separated ids, as Cinder takes them
_volume_list = {'type': ['string', 'null'], 'maxLength': 65535}
update_group = _body('group', {
    'name': common.name_or_null,
    'description': common.description_or_null,
    'add_volumes': _volume_list,
    'remove_volumes': _volume_list,
})

delete_group = {
    'type': 'object',
    'properties': {'delete': {
        'type': 'object',
        'properties': {'delete-volumes': common.boolean},
        'additionalProperties': False,
    }},
    'required': ['delete'],
    'additionalProperties': False,
}

reset_status = {
    'type': 'object',
    'properties': {'reset_status': {
        'type': 'object',
        'properties': {'status': {'type': 'string', 'minLength': 1,
                                  'maxLength': 255}},
        'required': ['status'],
        'additionalProperties': False,
    }},
    'required': ['reset_status'],
    'additionalProperties': False,
}

# -- group snapshots (3.14) ---------------------------------------------------
create_group_snapshot = _body('group_snapshot', {
    'group_id': _uuid,
    'name': common.name_or_null,
    'description': common.description_or_null,
}, required=['group_id'])
