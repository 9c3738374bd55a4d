"""Request bodies of /os-volume-transfer and /volume-transfers."""
import copy

from cinder_lite.api.schemas import common

create = {
    'type': 'object',
    'properties': {
        'transfer': {
            'type': 'object',
            'properties': {
                'volume_id': {'type': 'string', 'format': 'uuid'},
                'name': {'type': ['string', 'null'], 'maxLength': 255},
            },
            'required': ['volume_id'],
            'additionalProperties': False,
        },
    },
    'required': ['transfer'],
    'additionalProperties': False,
}

# 3.55 (/volume-transfers only): ``no_snapshots``
create_v355 = copy.deepcopy(create)
create_v355['properties']['transfer']['properties']['no_snapshots'] = \
    common.boolean

accept = {
    'type': 'object',
    'properties': {
        'accept': {
            'type': 'object',
            'properties': {
                'auth_key': {'type': ['string', 'integer'],
                             'maxLength': 255},
            },
            'required': ['auth_key'],
            'additionalProperties': False,
        },
    },
    'required': ['accept'],
    'additionalProperties': False,
}

# /os-volume-transfer takes the first body at every version
CREATE_LEGACY = (((None, None), create),)
CREATE = (((None, (3, 54)), create), (((3, 55), None), create_v355))
