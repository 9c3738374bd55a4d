"""How a backup looks on the wire, per microversion (Cinder's keys:
Tempest's response schemas forbid others)."""
from cinder_lite.api.views import links
from cinder_lite.api import wsgi
from cinder_lite.common import policy

PROJECT_ATTR = (3, 18)
METADATA = (3, 43)
USER_ID = (3, 56)


def _links(req, backup):
    return links.resource_links(req, req.environ['cinder_lite.conf'],
                                'backups', backup.id, backup.project_id)


def summary(req, backup):
    """Create, update, import and the list (not detailed) view."""
    return {'id': backup.id, 'name': backup.name,
            'links': _links(req, backup)}


def detail(req, backup, metadata):
    """Show and the detailed list."""
    view = {
        'id': backup.id,
        'status': backup.status,
        'size': backup.size or 0,
        'object_count': backup.object_count or 0,
        'availability_zone': backup.availability_zone,
        'container': backup.container,
        'created_at': wsgi.isotime(backup.created_at),
        'updated_at': wsgi.isotime(backup.updated_at),
        'name': backup.name,
        'description': backup.description,
        'fail_reason': backup.fail_reason,
        'volume_id': backup.volume_id,
        'links': _links(req, backup),
        'is_incremental': bool(backup.parent_id),
        'has_dependent_backups': bool(backup.num_dependent_backups),
        'snapshot_id': backup.snapshot_id,
        'data_timestamp': wsgi.isotime(backup.data_timestamp),
    }
    attributes = None
    if req.version >= PROJECT_ATTR:
        attributes = policy.check(req.context, policy.BACKUP_ATTRIBUTES,
                                  {'project_id': backup.project_id})
        if attributes:
            view['os-backup-project-attr:project_id'] = backup.project_id
    if req.version >= METADATA:
        view['metadata'] = metadata or {}
    if req.version >= USER_ID and attributes:
        view['user_id'] = backup.user_id
    return view
