"""Weighers order the backends that passed the filters; highest wins."""
from cinder_lite.scheduler.filters import capacity_filter


class CapacityWeigher:
    """Prefer the backend with the most room: free space, or what a thin
    backend can still provision."""

    def weigh(self, backend, request_spec):
        if backend.thin:
            return capacity_filter.provisionable_gb(backend)
        return capacity_filter.usable_free_gb(backend)
