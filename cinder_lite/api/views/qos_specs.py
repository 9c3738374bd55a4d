"""How QoS specs look on the wire (every version)."""
from cinder_lite.api.views import links

COLLECTION = 'qos-specs'


def detail(specs):
    return {'id': specs['id'], 'name': specs['name'],
            'consumer': specs['consumer'], 'specs': specs['specs']}


def show(req, conf, specs):
    """A single specs: the specs and, beside them, their links."""
    return {'qos_specs': detail(specs),
            'links': links.resource_links(req, conf, COLLECTION,
                                          specs['id'],
                                          req.context.project_id)}
