"""How a volume looks on the wire, per microversion."""
from cinder_lite.api.views import links
from cinder_lite.api import wsgi
from cinder_lite.common import policy
from cinder_lite.common import states


def summary(req, conf, volume):
    return {'id': volume.id, 'name': volume.name,
            'links': links.resource_links(req, conf, 'volumes', volume.id,
                                          volume.project_id)}


def visible_metadata(volume, metadata):
    """The volume's metadata as its view shows it: the user's keys, and
    the read-only flag as Cinder shows its admin metadata (``readonly``:
    "True"/"False" once os-update_readonly_flag has set it, winning over
    a user key of that name)."""
    shown = dict(metadata or {})
    if volume.readonly is not None:
        shown['readonly'] = str(bool(volume.readonly))
    return shown


def summary_of_volumes(req, count, size, metadata):
    """GET /volumes/summary: ``metadata`` (every key with its distinct
    values) from 3.36."""
    body = {'total_count': count, 'total_size': size}
    if req.version >= (3, 36):
        body['metadata'] = metadata
    return {'volume-summary': body}


def detail(req, conf, volume, type_name, attachments=(), metadata=None,
           extended=True, image_metadata=None):
    """``extended``: a show or list view, which (as in Cinder) carries
    the admin extensions (``os-vol-host-attr:host``,
    ``os-vol-mig-status-attr:*``), tells the volume's own project
    readers ``os-vol-tenant-attr:tenant_id`` too, and shows
    ``volume_image_metadata`` (a volume made from an image, to those
    allowed); create and update responses do not."""
    version = req.version
    is_admin = req.context.is_admin
    view = {
        'id': volume.id,
        'name': volume.name,
        'description': volume.description,
        'size': volume.size,
        'status': states.SHOWN_STATUS.get(volume.status, volume.status),
        'availability_zone': volume.availability_zone,
        'created_at': wsgi.isotime(volume.created_at),
        'updated_at': wsgi.isotime(volume.updated_at),
        'attachments': list(attachments),
        'bootable': 'true' if volume.bootable else 'false',
        'encrypted': False,
        'links': links.resource_links(req, conf, 'volumes', volume.id,
                                      volume.project_id),
        'metadata': visible_metadata(volume, metadata),
        'multiattach': bool(volume.multiattach),
        'replication_status': None,
        'snapshot_id': volume.snapshot_id,
        'source_volid': volume.source_volid,
        'user_id': volume.user_id,
        'volume_type': type_name,
        'consistencygroup_id': None,
    }
    if is_admin:
        # as Cinder: admins only; None when it never migrated
        view['migration_status'] = volume.migration_status
    if is_admin and extended:
        # Cinder's admin extensions extend show and list only
        view['os-vol-host-attr:host'] = volume.host
        view['os-vol-mig-status-attr:migstat'] = volume.migration_status
        view['os-vol-mig-status-attr:name_id'] = None
        view['os-vol-tenant-attr:tenant_id'] = volume.project_id
    elif extended and policy.check(req.context, policy.VOLUME_TENANT_ATTR,
                                   {'project_id': volume.project_id}):
        view['os-vol-tenant-attr:tenant_id'] = volume.project_id
    if extended and image_metadata and policy.check(
            req.context, policy.IMAGE_METADATA_SHOW,
            {'project_id': volume.project_id}):
        view['volume_image_metadata'] = dict(image_metadata)
    if version >= (3, 13):
        view['group_id'] = getattr(volume, 'group_id', None)
    if version >= (3, 21) and is_admin:
        view['provider_id'] = None
    if version >= (3, 48):
        view['service_uuid'] = volume.service_uuid
        shared = volume.shared_targets
        # Before 3.69 the field is a plain boolean; unknown means "assume
        # shared" so older clients stay safe.
        view['shared_targets'] = (shared if version >= (3, 69)
                                  else (True if shared is None else shared))
    if version >= (3, 61) and is_admin:
        view['cluster_name'] = volume.cluster_name
    if version >= (3, 63):
        view['volume_type_id'] = volume.volume_type_id
    if version >= (3, 65):
        view['consumes_quota'] = True
    return view
