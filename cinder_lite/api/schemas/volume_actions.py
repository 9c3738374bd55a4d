"""Bodies of POST /volumes/{id}/action: exactly one action per body."""
import copy

from cinder_lite.api.schemas import common
from cinder_lite.volume import rules

_nothing = {'type': ['object', 'null'], 'additionalProperties': False}
_connector = rules.CONNECTOR
_uuid_or_null = {'type': ['string', 'null'], 'format': 'uuid'}

# os-volume_upload_image (3.0); ``UPLOAD_IMAGE`` per microversion
_upload_image = {
    'type': 'object',
    'properties': {
        'image_name': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'force': common.boolean,
        'disk_format': {'type': 'string',
                        'enum': ['raw', 'vmdk', 'vdi', 'qcow2', 'vhd',
                                 'vhdx', 'ploop']},
        'container_format': {'type': 'string',
                             'enum': ['bare', 'ovf', 'ova', 'aki', 'ari',
                                      'ami', 'docker', 'compressed']},
    },
    'required': ['image_name'],
    'additionalProperties': False,
}
# 3.1: the image's visibility and protection
_upload_image_v31 = copy.deepcopy(_upload_image)
_upload_image_v31['properties'].update(
    visibility={'type': 'string',
                'enum': ['community', 'public', 'private', 'shared']},
    protected=common.boolean)

# image metadata: keys as user metadata, values text (image properties
# may be long)
_image_metadata = {
    'type': 'object',
    'patternProperties': {
        '^[a-zA-Z0-9-_:. /]{1,255}$': {'type': 'string',
                                        'maxLength': 65535},
    },
    'additionalProperties': False,
}

ACTIONS = {
    'os-volume_upload_image': _upload_image_v31,
    'os-set_image_metadata': {
        'type': 'object',
        'properties': {'metadata': _image_metadata},
        'required': ['metadata'],
        'additionalProperties': False,
    },
    'os-unset_image_metadata': {
        'type': 'object',
        'properties': {'key': {'type': 'string', 'minLength': 1,
                               'maxLength': 255}},
        'required': ['key'],
        'additionalProperties': False,
    },
    # (Cinder takes any value here)
    'os-show_image_metadata': {},
    'os-reserve': _nothing,
    'os-unreserve': _nothing,
    'os-begin_detaching': _nothing,
    'os-roll_detaching': _nothing,
    'os-attach': {
        'type': 'object',
        'properties': {
            'instance_uuid': {'type': 'string', 'format': 'uuid'},
            'host_name': {'type': 'string', 'minLength': 1,
                          'maxLength': 255},
            'mountpoint': {'type': 'string', 'minLength': 1,
                           'maxLength': 255},
            'mode': {'type': 'string', 'enum': list(rules.MODES)},
        },
        'required': ['mountpoint'],
        'anyOf': [{'required': ['instance_uuid']},
                  {'required': ['host_name']}],
        'additionalProperties': False,
    },
    'os-detach': {
        'type': ['object', 'null'],
        'properties': {'attachment_id': _uuid_or_null},
        'additionalProperties': False,
    },
    'os-initialize_connection': {
        'type': 'object',
        'properties': {'connector': _connector},
        'required': ['connector'],
        'additionalProperties': False,
    },
    'os-terminate_connection': {
        'type': 'object',
        'properties': {'connector': _connector},
        'required': ['connector'],
        'additionalProperties': False,
    },
    'os-force_detach': {
        'type': ['object', 'null'],
        'properties': {
            'attachment_id': _uuid_or_null,
            'connector': {'type': ['object', 'string', 'null']},
        },
        'additionalProperties': False,
    },
    'os-reset_status': {
        'type': 'object',
        'properties': {
            'status': {'type': 'string', 'maxLength': 255},
            'attach_status': {'type': 'string', 'maxLength': 255},
            'migration_status': {'type': ['string', 'null'],
                                 'maxLength': 255},
        },
        'minProperties': 1,
        'additionalProperties': False,
    },
    # Cinder accepts any body here ({} from Tempest, null from
    # cinderclient)
    'os-force_delete': {'type': ['object', 'null']},
    # (null from cinderclient, {} from Tempest)
    'os-unmanage': {'type': ['object', 'null']},
    'os-update_readonly_flag': {
        'type': 'object',
        'properties': {'readonly': common.boolean},
        'required': ['readonly'],
        'additionalProperties': False,
    },
    'os-set_bootable': {
        'type': 'object',
        'properties': {'bootable': common.boolean},
        'required': ['bootable'],
        'additionalProperties': False,
    },
    'os-retype': {
        'type': 'object',
        'properties': {
            'new_type': {'type': 'string', 'minLength': 1,
                         'maxLength': 255},
            'migration_policy': {'type': ['string', 'null'],
                                 'enum': ['never', 'on-demand', None]},
        },
        'required': ['new_type'],
        'additionalProperties': False,
    },
    # 3.68
    'os-reimage': {
        'type': 'object',
        'properties': {
            'image_id': {'type': 'string', 'format': 'uuid'},
            'reimage_reserved': common.boolean,
        },
        'required': ['image_id'],
        'additionalProperties': False,
    },
    # 3.40; as Cinder's, other keys are let through
    'revert': {
        'type': 'object',
        'properties': {'snapshot_id': {'type': ['string', 'null']}},
    },
    # checked again per microversion (MIGRATE_VOLUME)
    'os-migrate_volume': {'type': 'object'},
    'os-migrate_volume_completion': {
        'type': 'object',
        'properties': {
            'new_volume': {'type': 'string', 'format': 'uuid'},
            'error': {'type': ['boolean', 'string', 'null']},
        },
        'required': ['new_volume'],
        'additionalProperties': False,
    },
    'os-extend': {
        'type': 'object',
        'properties': {
            'new_size': {'type': ['integer', 'string'],
                         'pattern': '^[0-9]+$', 'maxLength': 10,
                         'minimum': 1, 'maximum': common.MAX_INT},
        },
        'required': ['new_size'],
        'additionalProperties': False,
    },
}

action = {
    'type': 'object',
    'properties': ACTIONS,
    'minProperties': 1,
    'maxProperties': 1,
    'additionalProperties': False,
}


def _only(name, schema):
    return {'type': 'object', 'properties': {name: schema},
            'required': [name], 'additionalProperties': False}


UPLOAD_IMAGE = (
    ((None, (3, 0)), _only('os-volume_upload_image', _upload_image)),
    (((3, 1), None), _only('os-volume_upload_image', _upload_image_v31)))

# os-migrate_volume: ``host`` required; from 3.16 ``host`` or ``cluster``
# (exactly one: the handler says so)
_migrate_volume = {
    'type': 'object',
    'properties': {
        'host': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'force_host_copy': common.boolean,
        'lock_volume': common.boolean,
    },
    'required': ['host'],
    'additionalProperties': False,
}
_migrate_volume_v316 = copy.deepcopy(_migrate_volume)
_migrate_volume_v316['properties']['host'] = {
    'type': ['string', 'null'], 'maxLength': 255}
_migrate_volume_v316['properties']['cluster'] = {
    'type': ['string', 'null'], 'maxLength': 255}
del _migrate_volume_v316['required']
MIGRATE_VOLUME = (
    ((None, (3, 15)), _only('os-migrate_volume', _migrate_volume)),
    (((3, 16), None), _only('os-migrate_volume', _migrate_volume_v316)))
