"""The route table.

Each path maps HTTP methods to handlers; a known path with another method
answers 405 with an ``Allow`` header.  Every resource path is served both
with the project in the URL (``/v3/{project_id}/volumes``) and without it
(``/v3/volumes``); when the URL names a project it must be the caller's.
As in Cinder, the project segment must match ``[DEFAULT]
project_id_regex``: ``/v3/admin/volumes`` is not a project's URL but an
unknown path.
"""
import routes
import webob.exc

from cinder_lite.api.handlers import admin
from cinder_lite.api.handlers import attachment_events
from cinder_lite.api.handlers import host_fences
from cinder_lite.api.handlers import attachments
from cinder_lite.api.handlers import default_types
from cinder_lite.api.handlers import extensions
from cinder_lite.api.handlers import group_snapshots
from cinder_lite.api.handlers import group_types
from cinder_lite.api.handlers import groups
from cinder_lite.api.handlers import hosts
from cinder_lite.api.handlers import backups
from cinder_lite.api.handlers import messages
from cinder_lite.api.handlers import qos_specs
from cinder_lite.api.handlers import quotas
from cinder_lite.api.handlers import manage
from cinder_lite.api.handlers import resource_filters
from cinder_lite.api.handlers import snapshots
from cinder_lite.api.handlers import transfers
from cinder_lite.api.handlers import types
from cinder_lite.api.handlers import volume_actions
from cinder_lite.api.handlers import volume_metadata
from cinder_lite.api.handlers import volumes
from cinder_lite.api.handlers import workers
from cinder_lite.api import wsgi

# Order matters where a literal segment could be read as an id: list the
# literal first (``/volumes/detail`` before ``/volumes/{volume_id}``).
ROUTE_DECLARATIONS = (
    ('/volumes', {'GET': volumes.list_volumes,
                  'POST': volumes.create_volume}),
    ('/volumes/detail', {'GET': volumes.list_volumes_detail}),
    ('/volumes/summary', {'GET': volumes.volume_summary}),
    ('/volumes/{volume_id}', {'GET': volumes.show_volume,
                              'PUT': volumes.update_volume,
                              'DELETE': volumes.delete_volume}),
    ('/volumes/{volume_id}/action', {'POST': volume_actions.volume_action}),
    ('/volumes/{volume_id}/metadata', {
        'GET': volume_metadata.list_metadata,
        'POST': volume_metadata.create_metadata,
        'PUT': volume_metadata.replace_metadata}),
    ('/volumes/{volume_id}/metadata/{key}', {
        'GET': volume_metadata.show_metadata_item,
        'PUT': volume_metadata.update_metadata_item,
        'DELETE': volume_metadata.delete_metadata_item}),
    ('/os-volume-manage', {'POST': manage.manage_volume}),
    ('/os-snapshot-manage', {'POST': manage.manage_snapshot}),
    # (POST here as on os-volume-manage: Cinder's v3 path for a manage)
    ('/manageable_volumes', {'GET': manage.list_manageable_volumes,
                             'POST': manage.manage_volume}),
    ('/manageable_volumes/detail', {
        'GET': manage.list_manageable_volumes_detail}),
    ('/manageable_snapshots', {'GET': manage.list_manageable_snapshots,
                               'POST': manage.manage_snapshot}),
    ('/manageable_snapshots/detail', {
        'GET': manage.list_manageable_snapshots_detail}),
    ('/backups', {'GET': backups.list_backups,
                  'POST': backups.create_backup}),
    ('/backups/detail', {'GET': backups.list_backups_detail}),
    ('/backups/import_record', {'POST': backups.import_record}),
    ('/backups/{backup_id}', {'GET': backups.show_backup,
                              'PUT': backups.update_backup,
                              'DELETE': backups.delete_backup}),
    ('/backups/{backup_id}/restore', {'POST': backups.restore_backup}),
    ('/backups/{backup_id}/progress', {'GET': backups.show_progress}),
    ('/backups/{backup_id}/export_record', {
        'GET': backups.export_record}),
    ('/backups/{backup_id}/action', {'POST': backups.backup_action}),
    ('/snapshots', {'GET': snapshots.list_snapshots,
                    'POST': snapshots.create_snapshot}),
    ('/snapshots/detail', {'GET': snapshots.list_snapshots_detail}),
    ('/snapshots/{snapshot_id}', {'GET': snapshots.show_snapshot,
                                  'PUT': snapshots.update_snapshot,
                                  'DELETE': snapshots.delete_snapshot}),
    ('/snapshots/{snapshot_id}/action', {
        'POST': snapshots.snapshot_action}),
    ('/snapshots/{snapshot_id}/metadata', {
        'GET': snapshots.list_metadata,
        'POST': snapshots.create_metadata,
        'PUT': snapshots.replace_metadata}),
    ('/snapshots/{snapshot_id}/metadata/{key}', {
        'GET': snapshots.show_metadata_item,
        'PUT': snapshots.update_metadata_item,
        'DELETE': snapshots.delete_metadata_item}),
    ('/attachments', {'GET': attachments.list_attachments,
                      'POST': attachments.create_attachment}),
    ('/attachments/detail', {'GET': attachments.list_attachments_detail}),
    ('/attachments/{attachment_id}', {
        'GET': attachments.show_attachment,
        'PUT': attachments.update_attachment,
        'DELETE': attachments.delete_attachment}),
    ('/attachments/{attachment_id}/action', {
        'POST': attachments.attachment_action}),
    ('/types', {'GET': types.list_types, 'POST': types.create_type}),
    ('/types/{type_id}', {'GET': types.show_type,
                          'PUT': types.update_type,
                          'DELETE': types.delete_type}),
    ('/types/{type_id}/extra_specs', {'GET': types.list_extra_specs,
                                      'POST': types.create_extra_specs}),
    ('/types/{type_id}/extra_specs/{key}', {
        'GET': types.show_extra_spec, 'PUT': types.update_extra_spec,
        'DELETE': types.delete_extra_spec}),
    ('/types/{type_id}/os-volume-type-access', {
        'GET': types.list_type_access}),
    ('/types/{type_id}/action', {'POST': types.type_action}),
    # generic volume groups (3.11+, 3.13+, 3.14+)
    ('/group_types', {'GET': group_types.list_group_types,
                      'POST': group_types.create_group_type}),
    ('/group_types/{group_type_id}', {
        'GET': group_types.show_group_type,
        'PUT': group_types.update_group_type,
        'DELETE': group_types.delete_group_type}),
    ('/group_types/{group_type_id}/group_specs', {
        'GET': group_types.list_group_specs,
        'POST': group_types.create_group_specs}),
    ('/group_types/{group_type_id}/group_specs/{key}', {
        'GET': group_types.show_group_spec,
        'PUT': group_types.update_group_spec,
        'DELETE': group_types.delete_group_spec}),
    ('/groups', {'GET': groups.list_groups, 'POST': groups.create_group}),
    ('/groups/detail', {'GET': groups.list_groups_detail}),
    ('/groups/action', {'POST': groups.create_group_from_src}),
    ('/groups/{group_id}', {'GET': groups.show_group,
                            'PUT': groups.update_group}),
    ('/groups/{group_id}/action', {'POST': groups.group_action}),
    ('/group_snapshots', {
        'GET': group_snapshots.list_group_snapshots,
        'POST': group_snapshots.create_group_snapshot}),
    ('/group_snapshots/detail', {
        'GET': group_snapshots.list_group_snapshots_detail}),
    ('/group_snapshots/{group_snapshot_id}', {
        'GET': group_snapshots.show_group_snapshot,
        'DELETE': group_snapshots.delete_group_snapshot}),
    ('/group_snapshots/{group_snapshot_id}/action', {
        'POST': group_snapshots.group_snapshot_action}),
    ('/default-types', {'GET': default_types.list_default_types}),
    ('/default-types/{target_project_id}', {
        'GET': default_types.show_default_type,
        'PUT': default_types.set_default_type,
        'DELETE': default_types.unset_default_type}),
    ('/workers/cleanup', {'POST': workers.cleanup}),
    ('/resource_filters', {
        'GET': resource_filters.list_resource_filters}),
    ('/os-availability-zone', {
        'GET': hosts.list_availability_zones}),
    ('/os-hosts', {'GET': hosts.list_hosts}),
    ('/os-hosts/{host_name}', {'GET': hosts.show_host}),
    ('/extensions', {'GET': extensions.list_extensions}),
    ('/extensions/{alias}', {'GET': extensions.show_extension}),
    ('/os-services', {'GET': admin.list_services}),
    ('/os-services/{action}', {'PUT': admin.update_service}),
    ('/scheduler-stats/get_pools', {'GET': admin.get_pools}),
    ('/capabilities/{host}', {'GET': admin.show_capabilities}),
    ('/messages', {'GET': messages.list_messages}),
    ('/os-attachment-events', {'GET': attachment_events.list_events}),
    ('/os-host-fences', {'GET': host_fences.list_fences}),
    ('/os-host-fences/{host}', {'GET': host_fences.show_fence}),
    ('/os-host-fences/{host}/action', {'POST': host_fences.fence_action}),
    ('/messages/{message_id}', {'GET': messages.show_message,
                                'DELETE': messages.delete_message}),
    ('/os-quota-sets/{target_project_id}/defaults', {
        'GET': quotas.show_quota_defaults}),
    ('/os-quota-sets/{target_project_id}', {
        'GET': quotas.show_quota_set, 'PUT': quotas.update_quota_set,
        'DELETE': quotas.delete_quota_set}),
    ('/os-quota-class-sets/{class_name}', {
        'GET': quotas.show_quota_class_set,
        'PUT': quotas.update_quota_class_set}),
    ('/limits', {'GET': quotas.show_limits}),
    ('/os-volume-transfer', {'GET': transfers.list_transfers_legacy,
                             'POST': transfers.create_transfer_legacy}),
    ('/os-volume-transfer/detail', {
        'GET': transfers.list_transfers_detail_legacy}),
    ('/os-volume-transfer/{transfer_id}', {
        'GET': transfers.show_transfer,
        'DELETE': transfers.delete_transfer}),
    ('/os-volume-transfer/{transfer_id}/accept', {
        'POST': transfers.accept_transfer}),
    ('/volume-transfers', {'GET': transfers.list_transfers,
                           'POST': transfers.create_transfer}),
    ('/volume-transfers/detail', {
        'GET': transfers.list_transfers_detail}),
    ('/volume-transfers/{transfer_id}', {
        'GET': transfers.show_transfer,
        'DELETE': transfers.delete_transfer}),
    ('/volume-transfers/{transfer_id}/accept', {
        'POST': transfers.accept_transfer}),
    ('/qos-specs', {'GET': qos_specs.list_qos_specs,
                    'POST': qos_specs.create_qos_specs}),
    ('/qos-specs/{qos_id}', {'GET': qos_specs.show_qos_specs,
                             'PUT': qos_specs.set_keys,
                             'DELETE': qos_specs.delete_qos_specs}),
    ('/qos-specs/{qos_id}/delete_keys', {'PUT': qos_specs.unset_keys}),
    ('/qos-specs/{qos_id}/associations', {
        'GET': qos_specs.list_associations}),
    ('/qos-specs/{qos_id}/associate', {'GET': qos_specs.associate}),
    ('/qos-specs/{qos_id}/disassociate', {'GET': qos_specs.disassociate}),
    ('/qos-specs/{qos_id}/disassociate_all', {
        'GET': qos_specs.disassociate_all}),
)


def _methods_handler(methods):
    def dispatch(req):
        handler = methods.get(req.method)
        if handler is None:
            allow = ', '.join(sorted(methods))
            error = webob.exc.HTTPMethodNotAllowed(
                explanation='The method %s is not allowed here; allowed: '
                            '%s.' % (req.method, allow))
            error.headers['Allow'] = allow
            raise error
        return handler(req)
    return dispatch


def _check_project(req):
    project_in_url = req.urlvars.get('project_id')
    if project_in_url is not None and \
            project_in_url != req.context.project_id:
        # Cinder's words first, then what is wrong
        raise webob.exc.HTTPBadRequest(
            explanation="Malformed request url: the project in the URL "
                        "(%s) is not the token's project (%s)." % (
                            project_in_url[:64],
                            req.context.project_id))


class Router:

    def __init__(self, project_id_regex=r'[0-9a-f\-]+'):
        self.mapper = routes.Mapper()
        for path, methods in ROUTE_DECLARATIONS:
            dispatch = _methods_handler(methods)
            self.mapper.connect('/v3' + path, dispatch=dispatch)
        for path, methods in ROUTE_DECLARATIONS:
            dispatch = _methods_handler(methods)
            self.mapper.connect('/v3/{project_id}' + path,
                                dispatch=dispatch,
                                requirements={'project_id':
                                              project_id_regex})

    def __call__(self, environ, start_response):
        # as Cinder: no resource path ends with a slash, so
        # ``/volumes/`` (an empty id) names nothing (404)
        path = environ.get('PATH_INFO') or '/'
        match = self.mapper.match(path)
        if match is None:
            raise webob.exc.HTTPNotFound(
                explanation='The resource could not be found.')
        dispatch = match.pop('dispatch')
        environ['wsgiorg.routing_args'] = ((), match)
        req = wsgi.Request(environ)
        _check_project(req)
        return dispatch(req)(environ, start_response)
