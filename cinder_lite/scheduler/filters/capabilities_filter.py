"""Keep backends whose reported capabilities satisfy the type's extra
specs.

Unscoped keys and keys scoped ``capabilities:`` are requirements; other
scopes (``qos:``, ``os:`` …) and keys that describe attachments rather
than storage (``mode``) are not for the scheduler.
"""
from cinder_lite.scheduler.filters import base
from cinder_lite.scheduler.filters import extra_specs_ops

NOT_CAPABILITIES = frozenset(['mode'])


def capability_requirements(extra_specs):
    """The extra specs that the storage must satisfy, scope stripped."""
    wanted = {}
    for key, requirement in (extra_specs or {}).items():
        scope, sep, name = key.partition(':')
        if sep and scope != 'capabilities':
            continue
        name = name if sep else key
        if name in NOT_CAPABILITIES:
            continue
        wanted[name] = requirement
    return wanted


def satisfies(capabilities, extra_specs):
    return all(extra_specs_ops.match(capabilities.get(name), requirement)
               for name, requirement
               in capability_requirements(extra_specs).items())


class CapabilitiesFilter(base.BaseFilter):

    def backend_passes(self, backend, request_spec):
        return satisfies(backend.capabilities,
                         request_spec.get('extra_specs'))
