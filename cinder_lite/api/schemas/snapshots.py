"""Request bodies of /snapshots, their metadata and actions (all
microversions; Cinder's)."""
import copy

from cinder_lite.api.schemas import common

create = {
    'type': 'object',
    'properties': {
        'snapshot': {
            'type': 'object',
            'properties': {
                'name': common.name_or_null,
                'display_name': common.name_or_null,
                'description': common.description_or_null,
                'display_description': common.description_or_null,
                'volume_id': common.uuid_or_null,
                'force': common.boolean,
                'metadata': common.metadata,
            },
            'required': ['volume_id'],
            'additionalProperties': False,
        },
    },
    'required': ['snapshot'],
    'additionalProperties': False,
}

update = {
    'type': 'object',
    'properties': {
        'snapshot': {
            'type': 'object',
            'properties': {
                'name': common.name_or_null,
                'display_name': common.name_or_null,
                'description': common.description_or_null,
                'display_description': common.description_or_null,
            },
            'additionalProperties': False,
            'anyOf': [{'required': ['name']},
                      {'required': ['description']},
                      {'required': ['display_name']},
                      {'required': ['display_description']}],
        },
    },
    'required': ['snapshot'],
    'additionalProperties': False,
}

# POST (merge) and PUT (replace all) of /snapshots/{id}/metadata
metadata = {
    'type': 'object',
    'properties': {'metadata': common.metadata_dict},
    'required': ['metadata'],
    'additionalProperties': False,
}

# PUT /metadata/{key}: exactly the one key of the URL
_one_item = copy.deepcopy(common.metadata_dict)
_one_item.update(minProperties=1, maxProperties=1)
meta_item = {
    'type': 'object',
    'properties': {'meta': _one_item},
    'required': ['meta'],
    'additionalProperties': False,
}

# POST /snapshots/{id}/action: one action a body
action = {
    'type': 'object',
    'properties': {
        'os-reset_status': {
            'type': 'object',
            'properties': {'status': {'type': 'string', 'maxLength': 255}},
            'required': ['status'],
            'additionalProperties': False,
        },
        # Cinder accepts any body here ({} or null)
        'os-force_delete': {},
        'os-unmanage': {},
        'os-update_snapshot_status': {
            'type': 'object',
            'properties': {
                'status': {'type': 'string', 'maxLength': 255},
                'progress': {'type': ['string', 'null'], 'maxLength': 8},
            },
            'required': ['status'],
            'additionalProperties': False,
        },
    },
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}
