"""Bodies of ``POST /os-volume-manage`` and ``POST /os-snapshot-manage``
(Cinder's: other keys are let through, as Cinder lets them)."""
from cinder_lite.api.schemas import common

_ref = {'type': ['object', 'string']}

manage_volume = {
    'type': 'object',
    'properties': {
        'volume': {
            'type': 'object',
            'properties': {
                'name': common.name_or_null,
                'description': common.description_or_null,
                'availability_zone': {'type': ['string', 'null'],
                                      'maxLength': 255},
                # (null from openstackclient: not bootable)
                'bootable': dict(common.boolean,
                                 type=common.boolean['type'] + ['null'],
                                 enum=common.boolean['enum'] + [None]),
                'volume_type': {'type': ['string', 'null'],
                                'maxLength': 255},
                'host': {'type': ['string', 'null'], 'maxLength': 255},
                # 3.16
                'cluster': {'type': ['string', 'null'], 'maxLength': 255},
                'ref': _ref,
                'metadata': common.metadata,
            },
            'required': ['ref'],
            'additionalProperties': True,
        },
    },
    'required': ['volume'],
    'additionalProperties': False,
}

manage_snapshot = {
    'type': 'object',
    'properties': {
        'snapshot': {
            'type': 'object',
            'properties': {
                'name': common.name_or_null,
                'description': common.description_or_null,
                'volume_id': {'type': 'string', 'maxLength': 36},
                'ref': {'type': ['object', 'string', 'null']},
                'metadata': common.metadata,
            },
            'required': ['ref', 'volume_id'],
            'additionalProperties': True,
        },
    },
    'required': ['snapshot'],
    'additionalProperties': False,
}
