"""Request bodies of /volumes."""
import copy

from cinder_lite.api.schemas import common

_create_volume = {
    'type': 'object',
    'properties': {
        'name': common.name_or_null,
        'display_name': common.name_or_null,
        'description': common.description_or_null,
        'display_description': common.description_or_null,
        # null (or absent) with a snapshot_id or source_volid: the
        # source's size
        'size': {'type': ['integer', 'string', 'null'],
                 'pattern': '^[0-9]+$', 'maxLength': 10,
                 'minimum': 1, 'maximum': common.MAX_INT},
        'volume_type': {'type': ['string', 'null'], 'minLength': 1,
                        'maxLength': 255},
        'availability_zone': {'type': ['string', 'null'], 'minLength': 1,
                              'maxLength': 255},
        'metadata': common.metadata,
        'multiattach': common.boolean,
        'snapshot_id': common.uuid_or_null,
        'source_volid': common.uuid_or_null,
        # Accepted so that clients sending them as null keep working;
        # a value is refused by the handler (not supported here).
        'backup_id': common.uuid_or_null,
        'consistencygroup_id': common.uuid_or_null,
        'group_id': common.uuid_or_null,
        # the Glance image to make it from (an id, a name or a URL
        # ending in the id); image_id is Cinder's other name for it
        'imageRef': {'type': ['string', 'null'], 'maxLength': 255},
        'image_id': {'type': ['string', 'null'], 'maxLength': 255},
    },
    'additionalProperties': True,
}

create = {
    'type': 'object',
    'properties': {
        'volume': _create_volume,
        'OS-SCH-HNT:scheduler_hints': {'type': ['object', 'null']},
    },
    'required': ['volume'],
    'additionalProperties': False,
}

# 3.53: unknown keys in the volume are refused.
create_v353 = copy.deepcopy(create)
create_v353['properties']['volume']['additionalProperties'] = False

update = {
    'type': 'object',
    'properties': {
        'volume': {
            'type': 'object',
            'properties': {
                'name': common.name_or_null,
                'display_name': common.name_or_null,
                'description': common.description_or_null,
                'display_description': common.description_or_null,
                'metadata': common.metadata,
            },
            'additionalProperties': True,
        },
    },
    'required': ['volume'],
    'additionalProperties': False,
}

# 3.53: unknown keys in the volume are refused.
update_v353 = copy.deepcopy(update)
update_v353['properties']['volume']['additionalProperties'] = False

CREATE = (((None, (3, 52)), create), (((3, 53), None), create_v353))
UPDATE = (((None, (3, 52)), update), (((3, 53), None), update_v353))
