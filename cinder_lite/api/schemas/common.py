"""Schema pieces shared by several resources."""

MAX_INT = 2 ** 31 - 1

name_or_null = {'type': ['string', 'null'], 'maxLength': 255}
description_or_null = {'type': ['string', 'null'], 'maxLength': 255}
uuid_or_null = {'type': ['string', 'null'], 'maxLength': 36}

metadata = {
    'type': ['object', 'null'],
    'patternProperties': {
        '^.{1,255}$': {'type': 'string', 'maxLength': 255},
    },
    'additionalProperties': False,
}

boolean = {'type': ['boolean', 'string'],
           'enum': [True, False, 'True', 'False', 'true', 'false', '1', '0',
                    'yes', 'no', 'on', 'off', 't', 'f', 'y', 'n']}


def to_bool(value):
    if isinstance(value, bool):
        return value
    return str(value).lower() in ('true', '1', 'yes', 'on', 't', 'y')
