"""Request bodies of /qos-specs (the same at every version, as in
Cinder)."""

SPEC_KEY = '^[a-zA-Z0-9-_:. /]{1,255}$'

# the name and any keys (``consumer`` among them); the service layer
# checks the keys and values are strings of Cinder's lengths
create = {
    'type': 'object',
    'properties': {
        'qos_specs': {
            'type': 'object',
            'properties': {
                'name': {'type': 'string', 'maxLength': 255},
            },
            'required': ['name'],
            'additionalProperties': True,
        },
    },
    'required': ['qos_specs'],
    'additionalProperties': False,
}

# PUT /qos-specs/{id}: keys to add or change (``consumer`` too)
set_keys = {
    'type': 'object',
    'properties': {
        'qos_specs': {
            'type': 'object',
            'patternProperties': {
                SPEC_KEY: {'type': ['string', 'null'], 'maxLength': 255},
            },
            'additionalProperties': False,
        },
    },
    'required': ['qos_specs'],
    'additionalProperties': False,
}

# PUT /qos-specs/{id}/delete_keys
unset_keys = {
    'type': 'object',
    'properties': {
        'keys': {
            'type': 'array',
            'items': {'type': 'string', 'minLength': 1, 'maxLength': 255},
            'uniqueItems': True,
        },
    },
    'required': ['keys'],
    'additionalProperties': False,
}
