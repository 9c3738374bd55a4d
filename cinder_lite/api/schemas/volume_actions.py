"""Bodies of POST /volumes/{id}/action: exactly one action per body."""
from cinder_lite.api.schemas import common

_nothing = {'type': ['object', 'null'], 'additionalProperties': False}
_connector = {'type': 'object', 'minProperties': 1}
_uuid_or_null = {'type': ['string', 'null'], 'format': 'uuid'}

ACTIONS = {
    'os-reserve': _nothing,
    'os-unreserve': _nothing,
    'os-begin_detaching': _nothing,
    'os-roll_detaching': _nothing,
    'os-attach': {
        'type': 'object',
        'properties': {
            'instance_uuid': {'type': 'string', 'format': 'uuid'},
            'host_name': {'type': 'string', 'minLength': 1,
                          'maxLength': 255},
            'mountpoint': {'type': 'string', 'minLength': 1,
                           'maxLength': 255},
            'mode': {'type': 'string', 'enum': ['rw', 'ro']},
        },
        'required': ['mountpoint'],
        'anyOf': [{'required': ['instance_uuid']},
                  {'required': ['host_name']}],
        'additionalProperties': False,
    },
    'os-detach': {
        'type': ['object', 'null'],
        'properties': {'attachment_id': _uuid_or_null},
        'additionalProperties': False,
    },
    'os-initialize_connection': {
        'type': 'object',
        'properties': {'connector': _connector},
        'required': ['connector'],
        'additionalProperties': False,
    },
    'os-terminate_connection': {
        'type': 'object',
        'properties': {'connector': _connector},
        'required': ['connector'],
        'additionalProperties': False,
    },
    'os-force_detach': {
        'type': ['object', 'null'],
        'properties': {
            'attachment_id': _uuid_or_null,
            'connector': {'type': ['object', 'string', 'null']},
        },
        'additionalProperties': False,
    },
    'os-reset_status': {
        'type': 'object',
        'properties': {
            'status': {'type': 'string', 'maxLength': 255},
            'attach_status': {'type': 'string', 'maxLength': 255},
            'migration_status': {'type': ['string', 'null'],
                                 'maxLength': 255},
        },
        'minProperties': 1,
        'additionalProperties': False,
    },
    # Cinder accepts any body here ({} from Tempest, null from
    # cinderclient)
    'os-force_delete': {'type': ['object', 'null']},
    'os-update_readonly_flag': {
        'type': 'object',
        'properties': {'readonly': common.boolean},
        'required': ['readonly'],
        'additionalProperties': False,
    },
    'os-set_bootable': {
        'type': 'object',
        'properties': {'bootable': common.boolean},
        'required': ['bootable'],
        'additionalProperties': False,
    },
    'os-retype': {
        'type': 'object',
        'properties': {
            'new_type': {'type': 'string', 'minLength': 1,
                         'maxLength': 255},
            'migration_policy': {'type': ['string', 'null'],
                                 'enum': ['never', 'on-demand', None]},
        },
        'required': ['new_type'],
        'additionalProperties': False,
    },
    'os-extend': {
        'type': 'object',
        'properties': {
            'new_size': {'type': ['integer', 'string'],
                         'pattern': '^[0-9]+$', 'maxLength': 10,
                         'minimum': 1, 'maximum': common.MAX_INT},
        },
        'required': ['new_size'],
        'additionalProperties': False,
    },
}

action = {
    'type': 'object',
    'properties': ACTIONS,
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}
