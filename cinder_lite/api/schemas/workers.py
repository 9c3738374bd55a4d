"""Request body of POST /workers/cleanup (3.24)."""
from cinder_lite.api.schemas import common

_hostname = {'type': ['string', 'null'], 'minLength': 1, 'maxLength': 255}

cleanup = {
    'type': ['object', 'null'],
    'properties': {
        'cluster_name': _hostname,
        'host': _hostname,
        'binary': {'enum': ['cinder-volume', 'cinder-scheduler',
                            'cinder-backup', None]},
        'is_up': dict(common.boolean, enum=common.boolean['enum'] + [None],
                      type=['boolean', 'string', 'null']),
        'disabled': dict(common.boolean,
                         enum=common.boolean['enum'] + [None],
                         type=['boolean', 'string', 'null']),
        'resource_id': {'type': ['string', 'null'],
                        'pattern': '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?'
                                   '[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?'
                                   '[0-9a-fA-F]{12}$'},
        'resource_type': {'type': ['string', 'null'], 'maxLength': 40},
        'service_id': {'type': ['integer', 'string', 'null'],
                       'pattern': '^[0-9]{1,10}$', 'minimum': 0,
                       'maximum': common.MAX_INT},
    },
    'additionalProperties': False,
}
