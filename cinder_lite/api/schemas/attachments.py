"""Request bodies of /attachments."""
import copy

from cinder_lite.volume import rules

# (null or {}: reserve without connecting)
connector = rules.CONNECTOR_OR_NONE

create = {
    'type': 'object',
    'properties': {
        'attachment': {
            'type': 'object',
            'properties': {
                'volume_uuid': {'type': 'string', 'format': 'uuid'},
                'instance_uuid': {'type': ['string', 'null'],
                                  'format': 'uuid'},
                'connector': connector,
            },
            'required': ['volume_uuid'],
            'additionalProperties': False,
        },
    },
    'required': ['attachment'],
    'additionalProperties': False,
}

# 3.54: the attach mode.
create_v354 = copy.deepcopy(create)
create_v354['properties']['attachment']['properties']['mode'] = {
    'type': 'string', 'enum': list(rules.MODES)}

update = {
    'type': 'object',
    'properties': {
        'attachment': {
            'type': 'object',
            'properties': {
                'connector': rules.CONNECTOR,
            },
            'required': ['connector'],
            'additionalProperties': False,
        },
    },
    'required': ['attachment'],
    'additionalProperties': False,
}

complete = {
    'type': 'object',
    'properties': {'os-complete': {}},
    'required': ['os-complete'],
    'additionalProperties': False,
}

# cinder_lite's own action: a reader of a single-writer volume becomes its
# writer
takeover = {
    'type': 'object',
    'properties': {'os-takeover': {
        'oneOf': [{'type': 'null'},
                  {'type': 'object', 'additionalProperties': False}]}},
    'required': ['os-takeover'],
    'additionalProperties': False,
}

CREATE = (((None, (3, 53)), create), (((3, 54), None), create_v354))
