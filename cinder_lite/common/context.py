"""Request context: who is asking, for which project, with which request id.

It travels with every RPC message as a plain dict.
"""
from oslo_context import context as o_context


class RequestContext(o_context.RequestContext):

    def __init__(self, *args, service_roles=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.service_roles = list(service_roles or [])

    def to_dict(self):
        d = super().to_dict()
        d['service_roles'] = self.service_roles
        return d

    @classmethod
    def from_dict(cls, values, **kwargs):
        kwargs.setdefault('service_roles', values.get('service_roles'))
        kwargs.setdefault('is_admin', values.get('is_admin', False))
        return super().from_dict(values, **kwargs)

    def to_policy_values(self):
        values = super().to_policy_values()
        values['service_roles'] = self.service_roles
        return values


def get_admin_context():
    """Context of the services themselves (periodic work, reports)."""
    return RequestContext(is_admin=True, roles=['admin'], overwrite=False)
