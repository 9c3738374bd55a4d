"""Handler for POST /volumes/{id}/action.

Success codes: 202 for every action except os-initialize_connection (200
with ``{"connection_info": ...}``), os-set_bootable and
os-unset_image_metadata (200, no body), os-set_image_metadata and
os-show_image_metadata (200 with ``{"metadata": ...}``), as in Cinder;
os-volume_upload_image answers 202 with its body; ``revert`` (3.40 on;
404 before, as an unknown method) answers 202, 400 when the snapshot is
not the volume's latest or its size is not the volume's, 409 when the
volume or the snapshot is not ``available``; ``os-reimage`` (3.68 on)
answers 202, 400 for a volume not in a status it allows or an image that
does not fit, 404 for an image not found, 409 for a volume with several
attachments.
"""
import webob.exc

from cinder_lite.api import microversion
from cinder_lite.api.schemas import common as schema_common
from cinder_lite.api.schemas import volume_actions as schema
from cinder_lite.api import validation
from cinder_lite.api import wsgi
from cinder_lite.common import credentials
from cinder_lite.volume import rules


UPLOAD_IMAGE_PARAMS = (3, 1)
VOLUME_REVERT = (3, 40)
REIMAGE = (3, 68)
MIGRATE_CLUSTER = (3, 16)


def _actions(req):
    return req.environ['cinder_lite.services'].actions


def _migrations(req):
    return req.environ['cinder_lite.services'].actions.migrations


def _images(req):
    return req.environ['cinder_lite.services'].images


def _accepted():
    return wsgi.empty_response(202)


def _reserve(req, vid, body):
    _actions(req).reserve(req.context, vid)


def _unreserve(req, vid, body):
    _actions(req).unreserve(req.context, vid)


def _begin_detaching(req, vid, body):
    _actions(req).begin_detaching(req.context, vid)


def _roll_detaching(req, vid, body):
    _actions(req).roll_detaching(req.context, vid)


def _attach(req, vid, body):
    _actions(req).attach(req.context, vid, body.get('instance_uuid'),
                         body.get('host_name'), body['mountpoint'],
                         body.get('mode', rules.DEFAULT_MODE))


def _detach(req, vid, body):
    _actions(req).detach(req.context, vid,
                         (body or {}).get('attachment_id'))


def _initialize_connection(req, vid, body):
    info = _actions(req).initialize_connection(req.context, vid,
                                               body['connector'])
    # the caller connects (the attach policy let it): the credentials
    # of the attachment it connects through are shown
    if info:
        info = credentials.keyring(req.environ['cinder_lite.conf']).reveal(
            info, info.get('attachment_id'))
    return wsgi.json_response({'connection_info': info})


def _terminate_connection(req, vid, body):
    _actions(req).terminate_connection(req.context, vid, body['connector'])


def _force_detach(req, vid, body):
    _actions(req).force_detach(req.context, vid,
                               (body or {}).get('attachment_id'))


def _reset_status(req, vid, body):
    _actions(req).reset_status(req.context, vid, body.get('status'),
                               body.get('attach_status'),
                               body.get('migration_status'))


def _force_delete(req, vid, body):
    _actions(req).force_delete(req.context, vid)


def _update_readonly_flag(req, vid, body):
    _actions(req).update_readonly_flag(
        req.context, vid, schema_common.to_bool(body['readonly']))


def _set_bootable(req, vid, body):
    _actions(req).set_bootable(req.context, vid,
                               schema_common.to_bool(body['bootable']))
    return wsgi.empty_response(200)


def _upload_image(req, vid, body):
    """202 with Cinder's body; visibility and protected from 3.1."""
    validation.validate(microversion.pick(schema.UPLOAD_IMAGE, req.version),
                        {'os-volume_upload_image': body})
    request = {'name': body['image_name'],
               'disk_format': body.get('disk_format', 'raw'),
               'container_format': body.get('container_format', 'bare')}
    if req.version >= UPLOAD_IMAGE_PARAMS:
        request['visibility'] = body.get('visibility', 'private')
        request['protected'] = schema_common.to_bool(
            body.get('protected', False))
    response = _images(req).upload(
        req.context, vid, request,
        schema_common.to_bool(body.get('force', False)))
    return wsgi.json_response({'os-volume_upload_image': response}, 202)


def _set_image_metadata(req, vid, body):
    metadata = _images(req).set_metadata(req.context, vid,
                                         body['metadata'])
    return wsgi.json_response({'metadata': metadata})


def _unset_image_metadata(req, vid, body):
    _images(req).unset_metadata(req.context, vid, body['key'])
    return wsgi.empty_response(200)


def _show_image_metadata(req, vid, body):
    return wsgi.json_response(
        {'metadata': _images(req).show_metadata(req.context, vid)})


def _retype(req, vid, body):
    _actions(req).retype(req.context, vid, body['new_type'],
                         body.get('migration_policy') or 'never')


def _migrate_volume(req, vid, body):
    """202.  ``host``, or from 3.16 ``host`` or ``cluster``."""
    validation.validate(microversion.pick(schema.MIGRATE_VOLUME,
                                          req.version),
                        {'os-migrate_volume': body})
    host, cluster = body.get('host'), body.get('cluster')
    if req.version >= MIGRATE_CLUSTER and bool(host) == bool(cluster):
        raise webob.exc.HTTPBadRequest(
            explanation='One and only one of cluster and host must be set.')
    _migrations(req).migrate(
        req.context, vid, host=host or None, cluster=cluster or None,
        force_host_copy=schema_common.to_bool(
            body.get('force_host_copy', False)),
        lock_volume=schema_common.to_bool(body.get('lock_volume', False)))


def _migrate_volume_completion(req, vid, body):
    """200 with ``save_volume_id``."""
    error = body.get('error')
    saved = _migrations(req).complete(
        req.context, vid, body['new_volume'],
        schema_common.to_bool(error) if error is not None else False)
    return wsgi.json_response({'save_volume_id': saved})


def _extend(req, vid, body):
    new_size = int(body['new_size'])
    if not 1 <= new_size <= schema_common.MAX_INT:
        raise webob.exc.HTTPBadRequest(
            explanation='new_size must be an integer from 1 to %d'
                        % schema_common.MAX_INT)
    _actions(req).extend(req.context, vid, new_size, req.version)


def _revert(req, vid, body):
    if req.version < VOLUME_REVERT:
        raise webob.exc.HTTPNotFound(
            explanation='The revert action needs microversion 3.40 or '
                        'later.')
    req.environ['cinder_lite.services'].reverts.revert(
        req.context, vid, body.get('snapshot_id'))


def _reimage(req, vid, body):
    if req.version < REIMAGE:
        raise webob.exc.HTTPNotFound(
            explanation='The os-reimage action needs microversion 3.68 or '
                        'later.')
    _images(req).reimage(req.context, vid, body['image_id'],
                         schema_common.to_bool(
                             body.get('reimage_reserved', False)))


def _unmanage(req, vid, body):
    req.environ['cinder_lite.services'].manage.unmanage(req.context, vid)


DISPATCH = {
    'os-reserve': _reserve,
    'os-unreserve': _unreserve,
    'os-begin_detaching': _begin_detaching,
    'os-roll_detaching': _roll_detaching,
    'os-attach': _attach,
    'os-detach': _detach,
    'os-initialize_connection': _initialize_connection,
    'os-terminate_connection': _terminate_connection,
    'os-force_detach': _force_detach,
    'os-reset_status': _reset_status,
    'os-force_delete': _force_delete,
    'os-update_readonly_flag': _update_readonly_flag,
    'os-set_bootable': _set_bootable,
    'os-retype': _retype,
    'os-volume_upload_image': _upload_image,
    'os-set_image_metadata': _set_image_metadata,
    'os-unset_image_metadata': _unset_image_metadata,
    'os-show_image_metadata': _show_image_metadata,
    'os-extend': _extend,
    'revert': _revert,
    'os-reimage': _reimage,
    'os-unmanage': _unmanage,
    'os-migrate_volume': _migrate_volume,
    'os-migrate_volume_completion': _migrate_volume_completion,
}


@wsgi.expected_errors(400, 403, 404, 409, 413, 503)
def volume_action(req):
    """One action per body; see DISPATCH."""
    body = req.json_body()
    if isinstance(body, dict) and len(body) == 1:
        name = next(iter(body))
        if name not in DISPATCH:
            raise webob.exc.HTTPBadRequest(
                explanation='There is no such action: %s' % name)
    validation.validate(schema.action, body)
    name, args = next(iter(body.items()))
    response = DISPATCH[name](req, req.urlvars['volume_id'], args)
    return response or _accepted()
