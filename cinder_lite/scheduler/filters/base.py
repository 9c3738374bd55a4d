"""Filter interface: a filter keeps the backends that can take a request."""


class BaseFilter:

    def refusal(self, request_spec):
        """Why a backend this filter removes cannot take the request, in
        a user's words."""
        return 'does not take this request'

    def backend_passes(self, backend, request_spec):
        raise NotImplementedError()

    def filter_all(self, backends, request_spec):
        return [b for b in backends if self.backend_passes(b, request_spec)]
