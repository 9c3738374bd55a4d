"""How a snapshot looks on the wire, per microversion (Cinder's keys:
Tempest's response schemas forbid others)."""
from cinder_lite.api import wsgi
from cinder_lite.common import policy
from cinder_lite.common import states

GROUP_SNAPSHOTS = (3, 14)
USER_ID = (3, 41)
CONSUMES_QUOTA = (3, 65)
EXTENDED = 'os-extended-snapshot-attributes:'


def summary(req, snapshot, metadata):
    """The list (not detailed) view."""
    return {
        'id': snapshot.id,
        'created_at': wsgi.isotime(snapshot.created_at),
        'updated_at': wsgi.isotime(snapshot.updated_at),
        'name': snapshot.name,
        'description': snapshot.description,
        'volume_id': snapshot.volume_id,
        'status': states.SHOWN_STATUS.get(snapshot.status,
                                          snapshot.status),
        'size': snapshot.volume_size,
        'metadata': metadata or {},
    }


def detail(req, snapshot, metadata, extended=True):
    """Create, update, show and the detailed list; ``extended``: with
    the ``os-extended-snapshot-attributes`` the policy lets the caller
    see (show and the detailed list only, as in Cinder)."""
    view = summary(req, snapshot, metadata)
    if req.version >= GROUP_SNAPSHOTS:
        view['group_snapshot_id'] = snapshot.group_snapshot_id
    if req.version >= USER_ID:
        view['user_id'] = snapshot.user_id
    if req.version >= CONSUMES_QUOTA:
        view['consumes_quota'] = True
    if extended and policy.check(req.context, policy.SNAPSHOT_ATTRIBUTES,
                                 {'project_id': snapshot.project_id}):
        view[EXTENDED + 'project_id'] = snapshot.project_id
        view[EXTENDED + 'progress'] = snapshot.progress or '0%'
    return view
