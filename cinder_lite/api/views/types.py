"""How a volume type looks on the wire."""
from cinder_lite.common import policy


def show(req, vtype):
    view = {
        'id': vtype['id'],
        'name': vtype['name'],
        'description': vtype['description'],
        'is_public': vtype['is_public'],
        'os-volume-type-access:is_public': vtype['is_public'],
        'qos_specs_id': None,
    }
    if policy.check(req.context, policy.TYPE_SPECS_READ):
        view['extra_specs'] = vtype['extra_specs']
    return view
