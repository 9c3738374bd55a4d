"""Request bodies of /types and their extra specs."""
import copy

from cinder_lite.api.schemas import common

SPEC_KEY = '^[a-zA-Z0-9-_:. /<>]{1,255}$'

extra_specs = {
    'type': 'object',
    'patternProperties': {
        SPEC_KEY: {'type': 'string', 'maxLength': 255},
    },
    'additionalProperties': False,
}

create = {
    'type': 'object',
    'properties': {
        'volume_type': {
            'type': 'object',
            'properties': {
                'name': {'type': 'string', 'minLength': 1, 'maxLength': 255,
                         'pattern': r'^(?!\s)(?!.*\s$).+$'},
                'description': common.description_or_null,
                'os-volume-type-access:is_public': common.boolean,
                'extra_specs': extra_specs,
            },
            'required': ['name'],
            'additionalProperties': False,
        },
    },
    'required': ['volume_type'],
    'additionalProperties': False,
}

update = {
    'type': 'object',
    'properties': {
        'volume_type': {
            'type': 'object',
            'properties': {
                'name': copy.deepcopy(
                    create['properties']['volume_type']['properties']
                    ['name']),
                'description': common.description_or_null,
                'is_public': common.boolean,
            },
            'additionalProperties': False,
            'minProperties': 1,
        },
    },
    'required': ['volume_type'],
    'additionalProperties': False,
}

set_extra_specs = {
    'type': 'object',
    'properties': {'extra_specs': extra_specs},
    'required': ['extra_specs'],
    'additionalProperties': False,
}

# PUT /types/{id}/extra_specs/{key}: exactly that one key.
update_extra_spec = {
    'type': 'object',
    'patternProperties': {SPEC_KEY: {'type': 'string', 'maxLength': 255}},
    'additionalProperties': False,
    'minProperties': 1,
    'maxProperties': 1,
}

_project = {
    'type': 'object',
    'properties': {'project': {'type': 'string', 'minLength': 1,
                               'maxLength': 255}},
    'required': ['project'],
    'additionalProperties': False,
}

type_access_action = {
    'type': 'object',
    'properties': {'addProjectAccess': _project,
                   'removeProjectAccess': _project},
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}
