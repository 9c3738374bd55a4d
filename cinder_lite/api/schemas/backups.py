"""Request bodies of /backups and its actions (Cinder's, per
microversion: metadata from 3.43, availability_zone from 3.51)."""
from cinder_lite.api.schemas import common

_create_props = {
    'volume_id': {'type': 'string', 'format': 'uuid', 'maxLength': 36},
    'container': common.name_or_null,
    'description': common.description_or_null,
    'incremental': common.boolean,
    'force': common.boolean,
    'name': common.name_or_null,
    'snapshot_id': {'type': ['string', 'null'], 'format': 'uuid',
                    'maxLength': 36},
}


def _create(extra):
    props = dict(_create_props, **extra)
    return {
        'type': 'object',
        'properties': {
            'backup': {
                'type': 'object',
                'properties': props,
                'required': ['volume_id'],
                'additionalProperties': False,
            },
        },
        'required': ['backup'],
        'additionalProperties': False,
    }


create = _create({})
create_v343 = _create({'metadata': common.metadata})
create_v351 = _create({'metadata': common.metadata,
                       'availability_zone': common.name_or_null})


def _update(extra):
    return {
        'type': 'object',
        'properties': {
            'backup': {
                'type': ['object', 'null'],
                'properties': dict({'name': common.name_or_null,
                                    'description':
                                        common.description_or_null},
                                   **extra),
                'additionalProperties': False,
            },
        },
        'required': ['backup'],
        'additionalProperties': False,
    }


update = _update({})
update_v343 = _update({'metadata': common.metadata})

restore = {
    'type': 'object',
    'properties': {
        'restore': {
            'type': ['object', 'null'],
            'properties': {
                'name': common.name_or_null,
                'volume_id': {'type': ['string', 'null'], 'format': 'uuid',
                              'maxLength': 36},
            },
            'additionalProperties': False,
        },
    },
    'required': ['restore'],
    'additionalProperties': False,
}

import_record = {
    'type': 'object',
    'properties': {
        'backup-record': {
            'type': 'object',
            'properties': {
                'backup_service': {'type': 'string', 'minLength': 1,
                                   'maxLength': 255},
                'backup_url': {'type': 'string', 'minLength': 1},
            },
            'required': ['backup_service', 'backup_url'],
            'additionalProperties': False,
        },
    },
    'required': ['backup-record'],
    'additionalProperties': False,
}

_status = {
    'type': 'object',
    'properties': {'status': {'type': 'string', 'minLength': 1,
                              'maxLength': 255}},
    'required': ['status'],
    'additionalProperties': False,
}

action = {
    'type': 'object',
    'properties': {
        'os-reset_status': _status,
        'os-force_delete': {'type': ['object', 'null']},
    },
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}
