"""Keep backends whose reported capabilities satisfy the type's extra
specs (the matching itself is ``cinder_lite.common.capabilities``)."""
from cinder_lite.common import capabilities
from cinder_lite.scheduler.filters import base


class CapabilitiesFilter(base.BaseFilter):

    def refusal(self, request_spec):
        return "capabilities do not satisfy the volume type's extra specs"

    def backend_passes(self, backend, request_spec):
        return capabilities.satisfies(backend.capabilities,
                                      request_spec.get('extra_specs'))
