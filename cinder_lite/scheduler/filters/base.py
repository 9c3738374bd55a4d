"""Filter interface: a filter keeps the backends that can take a request."""


class BaseFilter:

    def backend_passes(self, backend, request_spec):
        raise NotImplementedError()

    def filter_all(self, backends, request_spec):
        return [b for b in backends if self.backend_passes(b, request_spec)]
