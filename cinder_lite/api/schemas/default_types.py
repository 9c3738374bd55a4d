"""Request bodies of /default-types (3.62)."""

create_or_update = {
    'type': 'object',
    'properties': {
        'default_type': {
            'type': 'object',
            'properties': {
                'volume_type': {'type': 'string', 'minLength': 1,
                                'maxLength': 255},
            },
            'required': ['volume_type'],
            'additionalProperties': False,
        },
    },
    'required': ['default_type'],
    'additionalProperties': False,
}
