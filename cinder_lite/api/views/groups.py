"""Views of group types, groups and group snapshots (Cinder's keys per
microversion)."""
from cinder_lite.api import wsgi
from cinder_lite.common import policy

GROUP_SOURCES = (3, 14)
GROUP_VOLUMES = (3, 25)
GROUP_REPLICATION = (3, 38)
GROUP_PROJECT_ID = (3, 58)


def group_type(req, gtype):
    view = {'id': gtype['id'], 'name': gtype['name'],
            'description': gtype['description'],
            'is_public': bool(gtype['is_public'])}
    if policy.check(req.context, policy.GROUP_TYPE_SPECS_READ):
        view['group_specs'] = dict(gtype['group_specs'])
    return view


def group_summary(req, group):
    return {'id': group.id, 'name': group.name}


def group_detail(req, group, volume_type_ids, volume_ids=None):
    """``volume_ids``: given (3.25+, ``list_volume=True``) to list them."""
    view = {
        'id': group.id,
        'status': group.status,
        'availability_zone': group.availability_zone,
        'created_at': wsgi.isotime(group.created_at),
        'name': group.name,
        'description': group.description,
        'group_type': group.group_type_id,
        'volume_types': list(volume_type_ids),
    }
    if req.version >= GROUP_SOURCES:
        view['group_snapshot_id'] = group.group_snapshot_id
        view['source_group_id'] = group.source_group_id
    if req.version >= GROUP_VOLUMES and volume_ids is not None:
        view['volumes'] = list(volume_ids)
    if req.version >= GROUP_REPLICATION:
        view['replication_status'] = 'disabled'
    if req.version >= GROUP_PROJECT_ID:
        view['project_id'] = group.project_id
    return view


def group_snapshot_summary(req, group_snapshot):
    return {'id': group_snapshot.id, 'name': group_snapshot.name,
            # (Cinder's: kept for consistency groups moved to groups)
            'group_type_id': group_snapshot.group_type_id}


def group_snapshot_detail(req, group_snapshot):
    view = {
        'id': group_snapshot.id,
        'group_id': group_snapshot.group_id,
        'group_type_id': group_snapshot.group_type_id,
        'status': group_snapshot.status,
        'created_at': wsgi.isotime(group_snapshot.created_at),
        'name': group_snapshot.name,
        'description': group_snapshot.description,
    }
    if req.version >= GROUP_PROJECT_ID:
        view['project_id'] = group_snapshot.project_id
    return view
