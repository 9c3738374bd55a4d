"""Weighers order the backends that passed the filters; highest wins."""
from cinder_lite.scheduler.filters import capacity_filter


class CapacityWeigher:
    """Prefer the backend with the most usable free space."""

    def weigh(self, backend, request_spec):
        return capacity_filter.usable_free_gb(backend)
