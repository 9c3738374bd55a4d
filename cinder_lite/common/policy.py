"""Authorisation rules (oslo.policy), with every default defined here.

Cinder's personas (``cinder/policies/base.py`` since Xena), in project
scope only:

* a *reader* of a project (``reader``, ``member`` or ``admin`` in it)
  reads that project's resources (``project_reader_api``);
* a *member* (``member`` or ``admin`` in it) also changes them
  (``project_member_api``);
* an *admin* (``admin`` in any project) acts everywhere and alone reaches
  the admin actions (``admin_api``).

Keystone gives a member the reader role and an admin both (implied
roles); noauth passes roles as sent, so each check names every role that
implies the one it needs.  A role outside the three reads nothing.  Every
rule carries ``scope_types=['project']``: a system- or domain-scoped
token is refused.  An operator overrides any rule in ``policy.yaml``.
"""
import threading
import time

from oslo_config import cfg
from oslo_policy import _checks
from oslo_policy import opts as policy_opts
from oslo_policy import policy

from cinder_lite.common import exception

SCOPE_TYPES = ['project']

ADMIN = 'role:admin or is_admin:True'
OWNER = 'project_id:%(project_id)s'
PROJECT_READER = '(role:reader or role:member or role:admin) and rule:owner'
PROJECT_MEMBER = '(role:member or role:admin) and rule:owner'
# Reads: a reader of the owning project.  Writes: a member of it.
ADMIN_OR_READER = 'rule:admin_api or rule:project_reader_api'
ADMIN_OR_MEMBER = 'rule:admin_api or rule:project_member_api'
# Who is given an attachment's secrets: an admin, a compute service (the
# service role, in the token or in a service token sent with the user's),
# or a member of the owning project; a reader sees them masked.
ADMIN_SERVICE_OR_MEMBER = ('rule:admin_api or role:service or '
                           'service_roles:service or '
                           'rule:project_member_api')


def _base(name, check_str, description):
    return policy.RuleDefault(name, check_str, description=description,
                              scope_types=SCOPE_TYPES)


_BASE = [
    _base('admin_api', ADMIN, 'The caller is a cloud administrator.'),
    _base('owner', OWNER,
          'The caller acts in the project that owns the resource.'),
    _base('project_reader_api', PROJECT_READER,
          'A reader of the owning project (reader, member or admin in it).'),
    _base('project_member_api', PROJECT_MEMBER,
          'A member of the owning project (member or admin in it).'),
    _base('admin_or_reader', ADMIN_OR_READER,
          'An administrator or a reader of the owning project.'),
    _base('admin_or_member', ADMIN_OR_MEMBER,
          'An administrator or a member of the owning project (not a '
          'reader).'),
]


def _op(name, rule, description, *operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=rule, description=description,
        scope_types=SCOPE_TYPES,
        operations=[{'method': m, 'path': p} for m, p in operations])


VOLUME_CREATE = 'volume:create'
VOLUME_GET = 'volume:get'
VOLUME_GET_ALL = 'volume:get_all'
VOLUME_UPDATE = 'volume:update'
VOLUME_DELETE = 'volume:delete'
VOLUME_ALL_TENANTS = 'volume:get_all_tenants'
VOLUME_TENANT_ATTR = 'volume_extension:volume_tenant_attribute'
MULTIATTACH = 'volume:multiattach'
IMAGE_METADATA_SHOW = 'volume_extension:volume_image_metadata:show'
IMAGE_METADATA_SET = 'volume_extension:volume_image_metadata:set'
IMAGE_METADATA_REMOVE = 'volume_extension:volume_image_metadata:remove'
UPLOAD_IMAGE = 'volume_extension:volume_actions:upload_image'
UPLOAD_PUBLIC = 'volume_extension:volume_actions:upload_public'
MULTIATTACH_BOOTABLE = 'volume:multiattach_bootable_volume'
TYPE_MANAGE = 'volume_extension:types_manage'
TYPE_GET = 'volume_extension:type_get'
TYPE_GET_ALL = 'volume_extension:type_get_all'
TYPE_SPECS_READ = 'volume_extension:types_extra_specs:index'
TYPE_ACCESS = 'volume_extension:volume_type_access'
DEFAULT_TYPE_SET = 'volume_extension:default_set_or_update'
DEFAULT_TYPE_GET = 'volume_extension:default_get'
DEFAULT_TYPE_GET_ALL = 'volume_extension:default_get_all'
DEFAULT_TYPE_UNSET = 'volume_extension:default_unset'
WORKERS_CLEANUP = 'workers:cleanup'
SERVICES = 'volume_extension:services:index'
SERVICES_UPDATE = 'volume_extension:services:update'
POOLS = 'scheduler_extension:scheduler_stats:get_pools'
CAPABILITIES = 'volume_extension:capabilities'
ATTACHMENT_CREATE = 'volume:attachment_create'
ATTACHMENT_UPDATE = 'volume:attachment_update'
ATTACHMENT_COMPLETE = 'volume:attachment_complete'
ATTACHMENT_DELETE = 'volume:attachment_delete'
ATTACHMENT_TAKEOVER = 'volume:attachment_takeover'
ATTACHMENT_GET = 'volume:attachment_get'
ATTACHMENT_GET_ALL = 'volume:attachment_get_all'
ATTACHMENT_ALL_TENANTS = 'volume:attachment_get_all_tenants'
ATTACHMENT_SECRETS = 'volume:attachment_secrets'
ATTACH_ACTIONS = 'volume_extension:volume_actions:attach'
READONLY_FLAG = 'volume:update_readonly_flag'
METADATA_GET = 'volume:get_volume_metadata'
METADATA_CREATE = 'volume:create_volume_metadata'
METADATA_UPDATE = 'volume:update_volume_metadata'
METADATA_DELETE = 'volume:delete_volume_metadata'
FORCE_DELETE = 'volume_extension:volume_admin_actions:force_delete'
VOLUME_FORCE_DELETE = 'volume:force_delete'
HOSTS = 'volume_extension:hosts'
FREEZE = 'volume:freeze_host'
THAW = 'volume:thaw_host'
RETYPE = 'volume:retype'
EXTEND = 'volume:extend'
REVERT = 'volume:revert_to_snapshot'
REIMAGE = 'volume:reimage'
REIMAGE_RESERVED = 'volume:reimage_reserved'
FORCE_DETACH = 'volume_extension:volume_admin_actions:force_detach'
RESET_STATUS = 'volume_extension:volume_admin_actions:reset_status'
MIGRATE = 'volume_extension:volume_admin_actions:migrate_volume'
MIGRATE_COMPLETE = \
    'volume_extension:volume_admin_actions:migrate_volume_completion'
HOST_FENCE = 'volume_extension:host_fence'
MESSAGES = 'message:get_all'
ATTACHMENT_EVENTS = 'volume:attachment_events'
MESSAGE_DELETE = 'message:delete'
QUOTA_SHOW = 'volume_extension:quotas:show'
QUOTA_UPDATE = 'volume_extension:quotas:update'
QUOTA_DELETE = 'volume_extension:quotas:delete'
QUOTA_CLASS_GET = 'volume_extension:quota_classes:get'
QUOTA_CLASS_UPDATE = 'volume_extension:quota_classes:update'
LIMITS = 'limits_extension:used_limits'
TRANSFER_CREATE = 'volume:create_transfer'
TRANSFER_ACCEPT = 'volume:accept_transfer'
TRANSFER_DELETE = 'volume:delete_transfer'
TRANSFER_GET = 'volume:get_transfer'
TRANSFER_GET_ALL = 'volume:get_all_transfers'
QOS_CREATE = 'volume_extension:qos_specs_manage:create'
QOS_GET = 'volume_extension:qos_specs_manage:get'
QOS_GET_ALL = 'volume_extension:qos_specs_manage:get_all'
QOS_UPDATE = 'volume_extension:qos_specs_manage:update'
QOS_DELETE = 'volume_extension:qos_specs_manage:delete'
TYPE_QOS_ID = 'volume_extension:access_types_qos_specs_id'
SNAPSHOT_CREATE = 'volume:create_snapshot'
SNAPSHOT_GET = 'volume:get_snapshot'
SNAPSHOT_GET_ALL = 'volume:get_all_snapshots'
SNAPSHOT_UPDATE = 'volume:update_snapshot'
SNAPSHOT_DELETE = 'volume:delete_snapshot'
SNAPSHOT_ATTRIBUTES = 'volume_extension:extended_snapshot_attributes'
SNAPSHOT_METADATA_GET = 'volume:get_snapshot_metadata'
SNAPSHOT_METADATA_UPDATE = 'volume:update_snapshot_metadata'
SNAPSHOT_METADATA_DELETE = 'volume:delete_snapshot_metadata'
SNAPSHOT_RESET_STATUS = \
    'volume_extension:snapshot_admin_actions:reset_status'
SNAPSHOT_FORCE_DELETE = \
    'volume_extension:snapshot_admin_actions:force_delete'
SNAPSHOT_UPDATE_STATUS = \
    'snapshot_extension:snapshot_actions:update_snapshot_status'
VOLUME_MANAGE = 'volume_extension:volume_manage'
VOLUME_UNMANAGE = 'volume_extension:volume_unmanage'
VOLUME_LIST_MANAGEABLE = 'volume_extension:list_manageable'
SNAPSHOT_MANAGE = 'snapshot_extension:snapshot_manage'
SNAPSHOT_UNMANAGE = 'snapshot_extension:snapshot_unmanage'
SNAPSHOT_LIST_MANAGEABLE = 'snapshot_extension:list_manageable'
BACKUP_CREATE = 'backup:create'
BACKUP_GET = 'backup:get'
BACKUP_GET_ALL = 'backup:get_all'
BACKUP_ALL_TENANTS = 'backup:get_all_tenants'
BACKUP_UPDATE = 'backup:update'
BACKUP_DELETE = 'backup:delete'
BACKUP_RESTORE = 'backup:restore'
BACKUP_ATTRIBUTES = 'backup:backup_project_attribute'
BACKUP_EXPORT = 'backup:export-import'
BACKUP_IMPORT = 'backup:backup-import'
BACKUP_RESET_STATUS = 'volume_extension:backup_admin_actions:reset_status'
BACKUP_FORCE_DELETE = 'volume_extension:backup_admin_actions:force_delete'

_RULES = [
    _op(VOLUME_CREATE, ADMIN_OR_MEMBER, 'Create a volume.',
        ('POST', '/volumes')),
    _op(VOLUME_GET, ADMIN_OR_READER, 'Show a volume.',
        ('GET', '/volumes/{volume_id}')),
    _op(VOLUME_GET_ALL, ADMIN_OR_READER, 'List volumes.',
        ('GET', '/volumes'), ('GET', '/volumes/detail'),
        ('GET', '/volumes/summary')),
    _op(VOLUME_UPDATE, ADMIN_OR_MEMBER, 'Update a volume.',
        ('PUT', '/volumes/{volume_id}')),
    _op(VOLUME_DELETE, ADMIN_OR_MEMBER, 'Delete a volume.',
        ('DELETE', '/volumes/{volume_id}')),
    _op(VOLUME_FORCE_DELETE, 'rule:admin_api',
        'Delete a volume whatever its status (``?force=true``, 3.23).',
        ('DELETE', '/volumes/{volume_id}')),
    _op(METADATA_GET, ADMIN_OR_READER, "Show a volume's metadata.",
        ('GET', '/volumes/{volume_id}/metadata'),
        ('GET', '/volumes/{volume_id}/metadata/{key}')),
    _op(METADATA_CREATE, ADMIN_OR_MEMBER,
        "Add keys to a volume's metadata.",
        ('POST', '/volumes/{volume_id}/metadata')),
    _op(METADATA_UPDATE, ADMIN_OR_MEMBER,
        "Replace a volume's metadata, or set one key.",
        ('PUT', '/volumes/{volume_id}/metadata'),
        ('PUT', '/volumes/{volume_id}/metadata/{key}')),
    _op(METADATA_DELETE, ADMIN_OR_MEMBER,
        "Delete a key of a volume's metadata.",
        ('DELETE', '/volumes/{volume_id}/metadata/{key}')),
    _op(VOLUME_ALL_TENANTS, 'rule:admin_api',
        'List volumes of every project (all_tenants=1).',
        ('GET', '/volumes?all_tenants=1')),
    _op(VOLUME_TENANT_ATTR, ADMIN_OR_READER,
        'Show os-vol-tenant-attr:tenant_id in volume show and list '
        'responses.', ('GET', '/volumes/{volume_id}'),
        ('GET', '/volumes/detail')),
    _op(IMAGE_METADATA_SHOW, ADMIN_OR_READER,
        "Show a volume's image metadata (volume_image_metadata in volume "
        "show and list responses, os-show_image_metadata).",
        ('GET', '/volumes/{volume_id}'), ('GET', '/volumes/detail'),
        ('POST', '/volumes/{volume_id}/action (os-show_image_metadata)')),
    _op(IMAGE_METADATA_SET, ADMIN_OR_MEMBER,
        "Set keys of a volume's image metadata.",
        ('POST', '/volumes/{volume_id}/action (os-set_image_metadata)')),
    _op(IMAGE_METADATA_REMOVE, ADMIN_OR_MEMBER,
        "Remove a key of a volume's image metadata.",
        ('POST', '/volumes/{volume_id}/action (os-unset_image_metadata)')),
    _op(UPLOAD_IMAGE, ADMIN_OR_MEMBER, 'Upload a volume to a new image.',
        ('POST', '/volumes/{volume_id}/action (os-volume_upload_image)')),
    _op(UPLOAD_PUBLIC, 'rule:admin_api',
        'Upload a volume to a public image.',
        ('POST', '/volumes/{volume_id}/action (os-volume_upload_image)')),
    _op(MULTIATTACH, ADMIN_OR_MEMBER,
        'Create a volume of a multiattach type, or retype to one.',
        ('POST', '/volumes')),
    _op(MULTIATTACH_BOOTABLE, ADMIN_OR_MEMBER,
        'Attach a bootable multiattach volume to more than one host.',
        ('POST', '/attachments')),
    _op(TYPE_MANAGE, 'rule:admin_api',
        'Create, update and delete volume types and their extra specs.',
        ('POST', '/types'), ('PUT', '/types/{type_id}'),
        ('DELETE', '/types/{type_id}'),
        ('POST', '/types/{type_id}/extra_specs')),
    _op(TYPE_GET, ADMIN_OR_READER, 'Show a volume type.',
        ('GET', '/types/{type_id}')),
    _op(TYPE_GET_ALL, ADMIN_OR_READER, 'List volume types.',
        ('GET', '/types')),
    _op(TYPE_SPECS_READ, ADMIN_OR_READER,
        'Read the extra specs of a volume type.',
        ('GET', '/types/{type_id}/extra_specs')),
    _op(TYPE_ACCESS, 'rule:admin_api',
        'List, add and remove projects that may use a private type.',
        ('GET', '/types/{type_id}/os-volume-type-access'),
        ('POST', '/types/{type_id}/action')),
    _op(DEFAULT_TYPE_SET, 'rule:admin_api',
        "Set or change a project's default volume type.",
        ('PUT', '/default-types/{project_id}')),
    _op(DEFAULT_TYPE_GET, 'rule:admin_api',
        "Show a project's default volume type.",
        ('GET', '/default-types/{project_id}')),
    _op(DEFAULT_TYPE_GET_ALL, 'rule:admin_api',
        'List the default volume types of every project.',
        ('GET', '/default-types')),
    _op(DEFAULT_TYPE_UNSET, 'rule:admin_api',
        "Unset a project's default volume type.",
        ('DELETE', '/default-types/{project_id}')),
    _op(WORKERS_CLEANUP, 'rule:admin_api',
        'Settle what services left in a transition (workers cleanup).',
        ('POST', '/workers/cleanup')),
    _op(SERVICES, 'rule:admin_api', 'List services.',
        ('GET', '/os-services')),
    _op(SERVICES_UPDATE, 'rule:admin_api',
        'Enable, disable, freeze or thaw a service.',
        ('PUT', '/os-services/{action}')),
    _op(FREEZE, 'rule:admin_api',
        'Freeze a volume backend: no volume there is created or deleted.',
        ('PUT', '/os-services/freeze')),
    _op(THAW, 'rule:admin_api', 'Thaw a frozen volume backend.',
        ('PUT', '/os-services/thaw')),
    _op(HOSTS, 'rule:admin_api',
        'List the enabled services (os-hosts) and show the volumes of a '
        'volume service.',
        ('GET', '/os-hosts'), ('GET', '/os-hosts/{host_name}')),
    _op(POOLS, 'rule:admin_api', 'List backend pools and capabilities.',
        ('GET', '/scheduler-stats/get_pools')),
    _op(CAPABILITIES, 'rule:admin_api', 'Show the capabilities of a host.',
        ('GET', '/capabilities/{host}')),
    _op(ATTACHMENT_CREATE, ADMIN_OR_MEMBER,
        'Create an attachment (reserve, and connect with a connector).',
        ('POST', '/attachments')),
    _op(ATTACHMENT_UPDATE, ADMIN_OR_MEMBER,
        'Connect an attachment (give its connector).',
        ('PUT', '/attachments/{attachment_id}')),
    _op(ATTACHMENT_COMPLETE, ADMIN_OR_MEMBER, 'Mark an attachment attached.',
        ('POST', '/attachments/{attachment_id}/action')),
    _op(ATTACHMENT_DELETE, ADMIN_OR_MEMBER,
        'Delete an attachment. A connected attachment made by a compute '
        'service is also guarded: only a service or an admin may delete '
        'it.', ('DELETE', '/attachments/{attachment_id}')),
    _op(ATTACHMENT_TAKEOVER, ADMIN_OR_MEMBER,
        'Make a read-only attachment of a single-writer volume its writer, '
        'cutting the current writer off at the target (os-takeover).',
        ('POST', '/attachments/{attachment_id}/action')),
    _op(ATTACHMENT_GET, ADMIN_OR_READER, 'Show an attachment.',
        ('GET', '/attachments/{attachment_id}')),
    _op(ATTACHMENT_GET_ALL, ADMIN_OR_READER, 'List attachments.',
        ('GET', '/attachments'), ('GET', '/attachments/detail')),
    _op(ATTACHMENT_ALL_TENANTS, 'rule:admin_api',
        'List attachments of every project (all_tenants=1).',
        ('GET', '/attachments?all_tenants=1')),
    _op(ATTACHMENT_SECRETS, ADMIN_SERVICE_OR_MEMBER,
        "See the secrets (CHAP password, TLS key) in an attachment's "
        'connection_info; others see them masked.',
        ('POST', '/attachments'), ('PUT', '/attachments/{attachment_id}'),
        ('GET', '/attachments/{attachment_id}'),
        ('GET', '/attachments/detail'),
        ('POST', '/volumes/{volume_id}/action (os-initialize_connection)')),
    _op(ATTACH_ACTIONS, ADMIN_OR_MEMBER,
        'Legacy attach actions: os-reserve, os-unreserve, os-attach, '
        'os-detach, os-begin_detaching, os-roll_detaching, '
        'os-initialize_connection, os-terminate_connection.',
        ('POST', '/volumes/{volume_id}/action')),
    _op(READONLY_FLAG, ADMIN_OR_MEMBER,
        'Set the read-only flag (os-update_readonly_flag).',
        ('POST', '/volumes/{volume_id}/action')),
    _op(FORCE_DELETE, 'rule:admin_api',
        'Delete a volume whatever its status (os-force_delete).',
        ('POST', '/volumes/{volume_id}/action')),
    _op(RETYPE, ADMIN_OR_MEMBER, 'Change the type of a volume.',
        ('POST', '/volumes/{volume_id}/action')),
    _op(EXTEND, ADMIN_OR_MEMBER, 'Grow a volume.',
        ('POST', '/volumes/{volume_id}/action')),
    _op(REVERT, ADMIN_OR_MEMBER,
        'Revert a volume to its latest snapshot.',
        ('POST', '/volumes/{volume_id}/action (revert)')),
    _op(REIMAGE, ADMIN_OR_MEMBER,
        "Reimage a volume in 'available' or 'error' status.",
        ('POST', '/volumes/{volume_id}/action (os-reimage)')),
    _op(REIMAGE_RESERVED, ADMIN_OR_MEMBER,
        "Reimage a volume in 'reserved' status.",
        ('POST', '/volumes/{volume_id}/action (os-reimage)')),
    _op(FORCE_DETACH, 'rule:admin_api',
        'Detach one attachment whatever its state.',
        ('POST', '/volumes/{volume_id}/action')),
    _op(RESET_STATUS, 'rule:admin_api', 'Overwrite the status of a volume.',
        ('POST', '/volumes/{volume_id}/action')),
    _op(MIGRATE, 'rule:admin_api',
        'Move a volume to another backend (os-migrate_volume).',
        ('POST', '/volumes/{volume_id}/action')),
    _op(MIGRATE_COMPLETE, 'rule:admin_api',
        'End a migration whose data another service copied '
        '(os-migrate_volume_completion).',
        ('POST', '/volumes/{volume_id}/action')),
    _op(HOST_FENCE, 'rule:admin_api',
        'Fence a consumer host off volumes at the storage targets (cut '
        'and drain its exports, refuse new ones), unfence it, and read '
        'the fences and what the targets say.',
        ('GET', '/os-host-fences'), ('GET', '/os-host-fences/{host}'),
        ('POST', '/os-host-fences/{host}/action')),
    _op(ATTACHMENT_EVENTS, 'rule:admin_api',
        'Read the attachment audit trail.',
        ('GET', '/os-attachment-events')),
    _op(MESSAGES, ADMIN_OR_READER, 'List and show user messages.',
        ('GET', '/messages'), ('GET', '/messages/{message_id}')),
    _op(MESSAGE_DELETE, ADMIN_OR_MEMBER, 'Delete a user message.',
        ('DELETE', '/messages/{message_id}')),
    _op(QUOTA_SHOW, ADMIN_OR_READER,
        'Show the quotas (and usage) of a project, or their defaults.',
        ('GET', '/os-quota-sets/{project_id}'),
        ('GET', '/os-quota-sets/{project_id}/defaults')),
    _op(QUOTA_UPDATE, 'rule:admin_api', 'Set quotas of a project.',
        ('PUT', '/os-quota-sets/{project_id}')),
    _op(QUOTA_DELETE, 'rule:admin_api',
        'Revert the quotas of a project to the defaults.',
        ('DELETE', '/os-quota-sets/{project_id}')),
    _op(QUOTA_CLASS_GET, 'rule:admin_api', 'Show a quota class.',
        ('GET', '/os-quota-class-sets/{class_name}')),
    _op(QUOTA_CLASS_UPDATE, 'rule:admin_api',
        'Set limits of a quota class (the default class: every '
        "project's defaults).", ('PUT', '/os-quota-class-sets/{class_name}')),
    _op(LIMITS, ADMIN_OR_READER,
        "Show a project's absolute limits and what it uses of them.",
        ('GET', '/limits')),
    _op(TRANSFER_GET_ALL, ADMIN_OR_READER, 'List volume transfers.',
        ('GET', '/os-volume-transfer'), ('GET', '/os-volume-transfer/detail'),
        ('GET', '/volume-transfers'), ('GET', '/volume-transfers/detail')),
    _op(TRANSFER_CREATE, ADMIN_OR_MEMBER,
        'Offer a volume to another project (create a volume transfer).',
        ('POST', '/os-volume-transfer'), ('POST', '/volume-transfers')),
    _op(TRANSFER_GET, ADMIN_OR_READER, 'Show a volume transfer.',
        ('GET', '/os-volume-transfer/{transfer_id}'),
        ('GET', '/volume-transfers/{transfer_id}')),
    _op(TRANSFER_ACCEPT, ADMIN_OR_MEMBER,
        'Accept a volume transfer into the caller\'s project.',
        ('POST', '/os-volume-transfer/{transfer_id}/accept'),
        ('POST', '/volume-transfers/{transfer_id}/accept')),
    _op(TRANSFER_DELETE, ADMIN_OR_MEMBER, 'Delete a volume transfer.',
        ('DELETE', '/os-volume-transfer/{transfer_id}'),
        ('DELETE', '/volume-transfers/{transfer_id}')),
    _op(QOS_GET_ALL, 'rule:admin_api',
        'List QoS specs or the associations of one.',
        ('GET', '/qos-specs'), ('GET', '/qos-specs/{qos_id}/associations')),
    _op(QOS_GET, 'rule:admin_api', 'Show QoS specs.',
        ('GET', '/qos-specs/{qos_id}')),
    _op(QOS_CREATE, 'rule:admin_api', 'Create QoS specs.',
        ('POST', '/qos-specs')),
    _op(QOS_UPDATE, 'rule:admin_api',
        'Set keys of QoS specs, associate them with a volume type or '
        'disassociate them.',
        ('PUT', '/qos-specs/{qos_id}'),
        ('GET', '/qos-specs/{qos_id}/associate'),
        ('GET', '/qos-specs/{qos_id}/disassociate'),
        ('GET', '/qos-specs/{qos_id}/disassociate_all')),
    _op(QOS_DELETE, 'rule:admin_api',
        'Delete QoS specs or unset keys of them.',
        ('DELETE', '/qos-specs/{qos_id}'),
        ('PUT', '/qos-specs/{qos_id}/delete_keys')),
    _op(SNAPSHOT_GET_ALL, ADMIN_OR_READER,
        'List snapshots (admins: of every project with all_tenants=1).',
        ('GET', '/snapshots'), ('GET', '/snapshots/detail')),
    _op(SNAPSHOT_ATTRIBUTES, ADMIN_OR_READER,
        'Show os-extended-snapshot-attributes:project_id and :progress in '
        'snapshot show and detail responses.',
        ('GET', '/snapshots/{snapshot_id}'), ('GET', '/snapshots/detail')),
    _op(SNAPSHOT_CREATE, ADMIN_OR_MEMBER, 'Take a snapshot of a volume.',
        ('POST', '/snapshots')),
    _op(SNAPSHOT_GET, ADMIN_OR_READER, 'Show a snapshot.',
        ('GET', '/snapshots/{snapshot_id}')),
    _op(SNAPSHOT_UPDATE, ADMIN_OR_MEMBER,
        'Change the name or description of a snapshot.',
        ('PUT', '/snapshots/{snapshot_id}')),
    _op(SNAPSHOT_DELETE, ADMIN_OR_MEMBER, 'Delete a snapshot.',
        ('DELETE', '/snapshots/{snapshot_id}')),
    _op(SNAPSHOT_METADATA_GET, ADMIN_OR_READER,
        "Show a snapshot's metadata.",
        ('GET', '/snapshots/{snapshot_id}/metadata'),
        ('GET', '/snapshots/{snapshot_id}/metadata/{key}')),
    _op(SNAPSHOT_METADATA_UPDATE, ADMIN_OR_MEMBER,
        "Add keys to, replace, or set one key of a snapshot's metadata.",
        ('POST', '/snapshots/{snapshot_id}/metadata'),
        ('PUT', '/snapshots/{snapshot_id}/metadata'),
        ('PUT', '/snapshots/{snapshot_id}/metadata/{key}')),
    _op(SNAPSHOT_METADATA_DELETE, ADMIN_OR_MEMBER,
        "Delete a key of a snapshot's metadata.",
        ('DELETE', '/snapshots/{snapshot_id}/metadata/{key}')),
    _op(SNAPSHOT_RESET_STATUS, 'rule:admin_api',
        'Overwrite the status of a snapshot (os-reset_status).',
        ('POST', '/snapshots/{snapshot_id}/action')),
    _op(SNAPSHOT_FORCE_DELETE, 'rule:admin_api',
        'Delete a snapshot whatever its status (os-force_delete).',
        ('POST', '/snapshots/{snapshot_id}/action')),
    _op(SNAPSHOT_UPDATE_STATUS, ADMIN_OR_MEMBER,
        'Report the status and progress of a snapshot being made or '
        'deleted (os-update_snapshot_status).',
        ('POST', '/snapshots/{snapshot_id}/action')),
    _op(VOLUME_MANAGE, 'rule:admin_api',
        'Make a volume of a storage object a backend holds '
        '(os-volume-manage).', ('POST', '/os-volume-manage')),
    _op(VOLUME_UNMANAGE, 'rule:admin_api',
        'Remove the record of a volume, leaving its storage on the '
        'backend (os-unmanage).',
        ('POST', '/volumes/{volume_id}/action (os-unmanage)')),
    _op(VOLUME_LIST_MANAGEABLE, 'rule:admin_api',
        'List what a backend holds that volumes could be made of.',
        ('GET', '/manageable_volumes'),
        ('GET', '/manageable_volumes/detail')),
    _op(SNAPSHOT_MANAGE, 'rule:admin_api',
        'Make a snapshot of a copy a backend holds (os-snapshot-manage).',
        ('POST', '/os-snapshot-manage')),
    _op(SNAPSHOT_UNMANAGE, 'rule:admin_api',
        'Remove the record of a snapshot, leaving its copy on the backend '
        '(os-unmanage).',
        ('POST', '/snapshots/{snapshot_id}/action (os-unmanage)')),
    _op(SNAPSHOT_LIST_MANAGEABLE, 'rule:admin_api',
        'List what a backend holds that snapshots could be made of.',
        ('GET', '/manageable_snapshots'),
        ('GET', '/manageable_snapshots/detail')),
    _op(BACKUP_CREATE, ADMIN_OR_MEMBER, 'Back a volume up.',
        ('POST', '/backups')),
    _op(BACKUP_GET, ADMIN_OR_READER, 'Show a backup.',
        ('GET', '/backups/{backup_id}')),
    _op(BACKUP_GET_ALL, ADMIN_OR_READER, 'List backups.',
        ('GET', '/backups'), ('GET', '/backups/detail')),
    _op(BACKUP_ALL_TENANTS, 'rule:admin_api',
        'List the backups of every project (all_tenants=1).',
        ('GET', '/backups?all_tenants=1')),
    _op(BACKUP_UPDATE, ADMIN_OR_MEMBER,
        'Change the name, description or metadata of a backup.',
        ('PUT', '/backups/{backup_id}')),
    _op(BACKUP_DELETE, ADMIN_OR_MEMBER, 'Delete a backup.',
        ('DELETE', '/backups/{backup_id}')),
    _op(BACKUP_RESTORE, ADMIN_OR_MEMBER,
        'Restore a backup into a new volume or one of the project\'s.',
        ('POST', '/backups/{backup_id}/restore')),
    _op(BACKUP_ATTRIBUTES, 'rule:admin_api',
        'Show the project and user ids of backups.',
        ('GET', '/backups/{backup_id}'), ('GET', '/backups/detail')),
    _op(BACKUP_EXPORT, 'rule:admin_api',
        'Export the record of a backup (to import it elsewhere).',
        ('GET', '/backups/{backup_id}/export_record')),
    _op(BACKUP_IMPORT, 'rule:admin_api',
        'Import the record of a backup.',
        ('POST', '/backups/import_record')),
    _op(BACKUP_RESET_STATUS, 'rule:admin_api',
        'Overwrite the status of a backup (os-reset_status).',
        ('POST', '/backups/{backup_id}/action')),
    _op(BACKUP_FORCE_DELETE, 'rule:admin_api',
        'Delete a backup whatever its status (os-force_delete).',
        ('POST', '/backups/{backup_id}/action')),
    _op(TYPE_QOS_ID, 'rule:admin_api',
        "Include a volume type's qos_specs_id in volume type show and "
        'list responses.', ('GET', '/types'), ('GET', '/types/{type_id}')),
]

# -- generic volume groups (Cinder's names) ----------------------------------
GROUP_TYPE_MANAGE = 'group:group_types_manage'
GROUP_TYPE_SPECS_READ = 'group:access_group_types_specs'
GROUP_TYPE_SPECS_MANAGE = 'group:group_types_specs'
GROUP_GET = 'group:get'
GROUP_GET_ALL = 'group:get_all'
GROUP_CREATE = 'group:create'
GROUP_UPDATE = 'group:update'
GROUP_DELETE = 'group:delete'
GROUP_RESET_STATUS = 'group:reset_status'
GROUP_SNAPSHOT_GET = 'group:get_group_snapshot'
GROUP_SNAPSHOT_GET_ALL = 'group:get_all_group_snapshots'
GROUP_SNAPSHOT_CREATE = 'group:create_group_snapshot'
GROUP_SNAPSHOT_DELETE = 'group:delete_group_snapshot'
GROUP_SNAPSHOT_RESET_STATUS = 'group:reset_group_snapshot_status'

_GROUP_RULES = [
    _op(GROUP_TYPE_MANAGE, 'rule:admin_api',
        'Create, update or delete a group type, and give or take access '
        'to a private one.',
        ('POST', '/group_types'), ('PUT', '/group_types/{group_type_id}'),
        ('DELETE', '/group_types/{group_type_id}')),
    _op(GROUP_TYPE_SPECS_READ, 'rule:admin_api',
        'Show the group specs of group types in their views.',
        ('GET', '/group_types/{group_type_id}')),
    _op(GROUP_TYPE_SPECS_MANAGE, 'rule:admin_api',
        'List, show, create, update or delete the group specs of a group '
        'type.',
        ('GET', '/group_types/{group_type_id}/group_specs'),
        ('POST', '/group_types/{group_type_id}/group_specs'),
        ('PUT', '/group_types/{group_type_id}/group_specs/{key}'),
        ('DELETE', '/group_types/{group_type_id}/group_specs/{key}')),
    _op(GROUP_GET, ADMIN_OR_READER, 'Show a group.',
        ('GET', '/groups/{group_id}')),
    _op(GROUP_GET_ALL, ADMIN_OR_READER, 'List groups.',
        ('GET', '/groups'), ('GET', '/groups/detail')),
    _op(GROUP_CREATE, ADMIN_OR_MEMBER,
        'Create a group (also from a group snapshot or another group).',
        ('POST', '/groups'), ('POST', '/groups/action')),
    _op(GROUP_UPDATE, ADMIN_OR_MEMBER,
        'Rename a group, or add volumes to it or remove them.',
        ('PUT', '/groups/{group_id}')),
    _op(GROUP_DELETE, ADMIN_OR_MEMBER,
        'Delete a group (with its volumes: delete-volumes).',
        ('POST', '/groups/{group_id}/action')),
    _op(GROUP_RESET_STATUS, 'rule:admin_api',
        'Overwrite the status of a group (reset_status).',
        ('POST', '/groups/{group_id}/action')),
    _op(GROUP_SNAPSHOT_GET, ADMIN_OR_READER, 'Show a group snapshot.',
        ('GET', '/group_snapshots/{group_snapshot_id}')),
    _op(GROUP_SNAPSHOT_GET_ALL, ADMIN_OR_READER, 'List group snapshots.',
        ('GET', '/group_snapshots'), ('GET', '/group_snapshots/detail')),
    _op(GROUP_SNAPSHOT_CREATE, ADMIN_OR_MEMBER,
        'Take a snapshot of every volume of a group at one moment.',
        ('POST', '/group_snapshots')),
    _op(GROUP_SNAPSHOT_DELETE, ADMIN_OR_MEMBER,
        'Delete a group snapshot and its snapshots.',
        ('DELETE', '/group_snapshots/{group_snapshot_id}')),
    _op(GROUP_SNAPSHOT_RESET_STATUS, 'rule:admin_api',
        'Overwrite the status of a group snapshot (reset_status).',
        ('POST', '/group_snapshots/{group_snapshot_id}/action')),
]


def list_rules():
    return _BASE + _RULES + _GROUP_RULES


_enforcer = None
_enforcer_lock = threading.Lock()


# The checks whose verdict depends on nothing but the target, the
# credentials and the rules: oslo.policy's own, but for http(s): checks,
# which ask a server, and whatever check an operator plugs in.
_DETERMINISTIC = frozenset((
    _checks.TrueCheck, _checks.FalseCheck, _checks.RoleCheck,
    _checks.GenericCheck, _checks.RuleCheck, _checks.AndCheck,
    _checks.OrCheck, _checks.NotCheck))


def _frozen(values):
    """A hashable copy of a target or of credentials (the values
    oslo.context and our handlers put in them: strings, booleans, None and
    lists of strings); None for anything else."""
    try:
        items = tuple((k, tuple(v) if isinstance(v, list) else v)
                      for k, v in values.items())
        hash(items)
    except (AttributeError, TypeError):
        return None
    return items


class Enforcer(policy.Enforcer):
    """oslo.policy's enforcer, with two savings on the request path.

    oslo.policy looks for changed policy files before every check: a
    search of the configuration directories for the policy file and each
    policy directory, and a stat of each, 80 us here, five times an
    attach cycle.  This one looks at most once a second, so an operator's
    edit of policy.yaml applies within a second instead of at the next
    request.

    And it remembers its verdicts until it next looks.  oslo.policy
    inspects the signature of every check it evaluates (nine for
    ``admin_or_member``), which made a verdict cost 0.1-0.3 ms and policy
    a twentieth of the API's CPU in an attach cycle.  A verdict is kept
    for the rule, target and credentials it was given, only when every
    check the rule reaches is one of ``_DETERMINISTIC``; the memory is
    dropped whenever the rules are looked at or set, so it never outlives
    the rules it was made with."""

    RECHECK_SECONDS = 1.0
    MAX_VERDICTS = 4096
    _checked = None

    def __init__(self, *args, **kwargs):
        self._verdicts = {}
        super().__init__(*args, **kwargs)

    def load_rules(self, force_reload=False):
        now = time.monotonic()
        if force_reload or self._checked is None or \
                now - self._checked >= self.RECHECK_SECONDS:
            self._verdicts = {}
            super().load_rules(force_reload)
            self._checked = now

    def set_rules(self, *args, **kwargs):
        self._verdicts = {}
        super().set_rules(*args, **kwargs)

    def clear(self):
        self._verdicts = {}
        super().clear()

    def enforce(self, rule, target, creds, do_raise=False, exc=None,
                *args, **kwargs):
        self.load_rules()
        # the memory as it is now: one dropped while this verdict is made
        # is not given a verdict of the rules it was dropped for
        verdicts = self._verdicts
        key = None
        if isinstance(rule, str) and not do_raise and not args \
                and not kwargs:
            frozen_target = _frozen(target)
            frozen_creds = _frozen(creds)
            if frozen_target is not None and frozen_creds is not None:
                key = (rule, frozen_target, frozen_creds)
                verdict = verdicts.get(key)
                if verdict is not None:
                    return verdict
        verdict = super().enforce(rule, target, creds, do_raise, exc,
                                  *args, **kwargs)
        if key is not None and self._deterministic(rule):
            if len(verdicts) >= self.MAX_VERDICTS:
                verdicts.clear()
            verdicts[key] = verdict
        return verdict

    def _deterministic(self, name):
        """Whether every check the rule ``name`` reaches (through
        ``rule:`` references too) is one of ``_DETERMINISTIC``."""
        rules = self.rules
        if name not in rules:
            return False
        seen = set()
        todo = [rules[name]]
        while todo:
            check = todo.pop()
            kind = type(check)
            if kind not in _DETERMINISTIC:
                return False
            if kind is _checks.RuleCheck:
                if check.match not in seen and check.match in rules:
                    seen.add(check.match)
                    todo.append(rules[check.match])
            elif kind is _checks.NotCheck:
                todo.append(check.rule)
            elif kind in (_checks.AndCheck, _checks.OrCheck):
                todo.extend(check.rules)
        return True


def get_enforcer(conf=None):
    """The enforcer, for oslopolicy-sample-generator and the API.  Built
    whole before it is published: request threads race for the first
    one."""
    global _enforcer
    with _enforcer_lock:
        if _enforcer is None:
            conf = conf or cfg.CONF
            # the defaults above are the only ones (no deprecated rule is
            # OR'd in) and their scope is checked; oslo.policy 6 has both
            # by default and no enforce_scope option any more, releases
            # before it take these defaults (set_defaults ignores an
            # option a release lacks)
            policy_opts.set_defaults(conf, enforce_scope=True,
                                     enforce_new_defaults=True)
            enforcer = Enforcer(conf)
            enforcer.register_defaults(list_rules())
            _enforcer = enforcer
        return _enforcer


def reset():
    global _enforcer
    _enforcer = None


def authorize(context, action, target=None):
    """Raise PolicyNotAuthorized unless ``context`` may do ``action`` on a
    resource whose owner is ``target['project_id']``."""
    target = target or {'project_id': context.project_id}
    if not get_enforcer().authorize(action, target,
                                    context.to_policy_values(),
                                    do_raise=False):
        raise exception.PolicyNotAuthorized(action=action)


def list_scope(context, list_rule, all_tenants_rule, filters, all_tenants):
    """The project a list request covers (None: every project), after the
    policy checks; a ``project_id`` filter counts only with all_tenants."""
    authorize(context, list_rule)
    project_filter = filters.pop('project_id', None)
    if not all_tenants:
        return context.project_id
    authorize(context, all_tenants_rule)
    return project_filter


def is_service(context):
    """A compute service: the service role, or a caller on the bus."""
    return 'service' in (getattr(context, 'service_roles', None) or [])


def check(context, action, target=None):
    """Whether ``context`` may do ``action`` on a resource whose owner is
    ``target['project_id']`` (the caller's project when no target is
    given), without raising: for what a response shows or masks, e.g.
    ``check(context, ATTACHMENT_SECRETS, {'project_id':
    attachment.project_id})``."""
    try:
        authorize(context, action, target)
        return True
    except exception.PolicyNotAuthorized:
        return False
