"""Keep backends with room for the volume after their reserved share."""
from cinder_lite.scheduler.filters import base


def usable_free_gb(backend):
    reserved = backend.total_capacity_gb * backend.reserved_percentage / 100
    return backend.free_capacity_gb - reserved


class CapacityFilter(base.BaseFilter):

    def backend_passes(self, backend, request_spec):
        return usable_free_gb(backend) >= request_spec['size']
