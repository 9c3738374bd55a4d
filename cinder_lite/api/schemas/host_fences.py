"""Request bodies of /os-host-fences/{host}/action (cinder_lite's own
resource, not Cinder's)."""

# which volumes: one, or every volume of a project; and why
scope = {
    'type': 'object',
    'properties': {
        'volume_id': {'type': 'string', 'format': 'uuid'},
        'project_id': {'type': 'string', 'minLength': 1, 'maxLength': 255,
                       'pattern': r'^[^\s]+$'},
        'reason': {'type': ['string', 'null'], 'maxLength': 255},
    },
    'oneOf': [{'required': ['volume_id']}, {'required': ['project_id']}],
    'additionalProperties': False,
}

action = {
    'type': 'object',
    'properties': {'os-fence': scope, 'os-unfence': scope},
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}
