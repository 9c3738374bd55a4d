"""Keep backends with room for the volume after their reserved share.

Thick backends need the free space now.  Thin backends (sparse files) need
some free space and room under ``total x max_over_subscription_ratio``
for what they have provisioned, as Cinder counts it.
"""
from cinder_lite.scheduler.filters import base


def usable_free_gb(backend):
    reserved = backend.total_capacity_gb * backend.reserved_percentage / 100
    return backend.free_capacity_gb - reserved


def provisionable_gb(backend):
    """What a thin backend can still provision."""
    reserved = backend.total_capacity_gb * backend.reserved_percentage / 100
    limit = (backend.total_capacity_gb - reserved) * \
        backend.max_over_subscription_ratio
    return limit - backend.provisioned_capacity_gb


class CapacityFilter(base.BaseFilter):

    def refusal(self, request_spec):
        return 'not enough free capacity for %s GiB' % request_spec['size']

    def backend_passes(self, backend, request_spec):
        size = request_spec['size']
        if backend.thin:
            return (usable_free_gb(backend) > 0
                    and provisionable_gb(backend) >= size)
        return usable_free_gb(backend) >= size
