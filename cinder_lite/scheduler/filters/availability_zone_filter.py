"""Keep backends in the availability zone the request asks for."""
from cinder_lite.scheduler.filters import base


class AvailabilityZoneFilter(base.BaseFilter):

    def refusal(self, request_spec):
        return 'not in availability zone %s' % request_spec.get(
            'availability_zone')

    def backend_passes(self, backend, request_spec):
        wanted = request_spec.get('availability_zone')
        return not wanted or wanted == backend.availability_zone
