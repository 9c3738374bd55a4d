"""Request bodies of /os-quota-sets and /os-quota-class-sets.  The keys
depend on the volume types there are, and the values may be integers or
integer strings (as cinderclient sends them): the service layer checks
both, with Cinder's messages."""


def _body(key):
    return {
        'type': 'object',
        'properties': {
            key: {'type': 'object', 'minProperties': 1,
                  'maxProperties': 1000},
        },
        'required': [key],
        'additionalProperties': False,
    }


update_quota_set = _body('quota_set')
update_quota_class_set = _body('quota_class_set')
