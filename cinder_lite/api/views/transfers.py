"""How a volume transfer looks on the wire, per microversion.  Links
name ``os-volume-transfer`` and the caller's project on both paths, as
Cinder's do."""
from cinder_lite.api.views import links
from cinder_lite.api import wsgi

COLLECTION = 'os-volume-transfer'
NO_SNAPSHOTS = (3, 55)
HISTORY = (3, 57)


def _links(req, conf, transfer):
    return links.resource_links(req, conf, COLLECTION, transfer['id'],
                                req.context.project_id)


def summary(req, conf, transfer):
    return {'id': transfer['id'], 'volume_id': transfer['volume_id'],
            'name': transfer['name'], 'links': _links(req, conf, transfer)}


def detail(req, conf, transfer):
    view = {'id': transfer['id'],
            'created_at': wsgi.isotime(transfer['created_at']),
            'name': transfer['name'], 'volume_id': transfer['volume_id'],
            'links': _links(req, conf, transfer)}
    if req.version >= NO_SNAPSHOTS:
        view['no_snapshots'] = transfer['no_snapshots']
    if req.version >= HISTORY:
        view.update(
            destination_project_id=transfer['destination_project_id'],
            source_project_id=transfer['source_project_id'],
            accepted=transfer['accepted'])
    return view


def created(req, conf, transfer):
    """The create response: the only one that carries the auth key."""
    return dict(detail(req, conf, transfer), auth_key=transfer['auth_key'])
