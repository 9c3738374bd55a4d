"""Schema pieces shared by several resources."""

MAX_INT = 2 ** 31 - 1

name_or_null = {'type': ['string', 'null'], 'maxLength': 255}
description_or_null = {'type': ['string', 'null'], 'maxLength': 255}
uuid_or_null = {'type': ['string', 'null'], 'maxLength': 36}

# Cinder's metadata (and extra specs) dict: keys of 1 to 255 letters,
# digits, ``-_:. /``; string values of at most 255 characters.
metadata_dict = {
    'type': 'object',
    'patternProperties': {
        '^[a-zA-Z0-9-_:. /]{1,255}$': {'type': 'string', 'maxLength': 255},
    },
    'additionalProperties': False,
}

metadata = dict(metadata_dict, type=['object', 'null'])

boolean = {'type': ['boolean', 'string'],
           'enum': [True, False, 'True', 'False', 'true', 'false', '1', '0',
                    'yes', 'no', 'on', 'off', 't', 'f', 'y', 'n']}


def to_bool(value):
    if isinstance(value, bool):
        return value
    return str(value).lower() in ('true', '1', 'yes', 'on', 't', 'y')
