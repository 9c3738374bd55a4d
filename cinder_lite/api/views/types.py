"""How a volume type looks on the wire.

As in Cinder, ``qos_specs_id`` is shown only by ``GET /types`` and
``GET /types/{id}``, and only to callers the
``volume_extension:access_types_qos_specs_id`` rule allows (admins by
default); create and update responses never carry it (Tempest's schemas
for them refuse it).
"""
from cinder_lite.common import policy


def updated(req, vtype):
    """A type as ``PUT /types/{id}`` answers: without the type-access
    extension's ``os-volume-type-access:is_public`` (as Cinder)."""
    view = {
        'id': vtype['id'],
        'name': vtype['name'],
        'description': vtype['description'],
        'is_public': vtype['is_public'],
    }
    if policy.check(req.context, policy.TYPE_SPECS_READ):
        view['extra_specs'] = vtype['extra_specs']
    return view


def show(req, vtype):
    """A type as create, show and list answer."""
    view = updated(req, vtype)
    view['os-volume-type-access:is_public'] = vtype['is_public']
    return view


def shown(req, vtype):
    """A type as ``GET /types`` and ``GET /types/{id}`` show it."""
    view = show(req, vtype)
    if policy.check(req.context, policy.TYPE_QOS_ID):
        view['qos_specs_id'] = vtype['qos_specs_id']
    return view
