"""Request context: who is asking, for which project, with which request id.

It travels with every RPC message as a plain dict.  The context of the
request a thread is serving is also that thread's *current* context
(oslo.context keeps it in a thread-local), which is how every log line of
the request names it.  Contexts the services make for their own work are
never current, and a thread that has served a request forgets it
(``clear_current``): a log line names its own request or none.
"""
from oslo_context import context as o_context

CATALOG_TYPES = ('image',)


class RequestContext(o_context.RequestContext):

    def __init__(self, *args, service_roles=None, current=True,
                 service_catalog=None, **kwargs):
        # set before oslo.context's __init__, which makes the new context
        # current through update_store()
        self._current = current
        super().__init__(*args, **kwargs)
        self.service_roles = list(service_roles or [])
        # the entries of the caller's Keystone catalog that the services
        # call with the caller's token (Glance), as Cinder's context
        self.service_catalog = [
            entry for entry in (service_catalog or [])
            if isinstance(entry, dict) and entry.get('type') in
            CATALOG_TYPES]

    def update_store(self):
        if self._current:
            super().update_store()

    def to_dict(self):
        d = super().to_dict()
        d['service_roles'] = self.service_roles
        d['service_catalog'] = self.service_catalog
        # a service acting for a user on the bus sends its own token too
        # (oslo.context keeps it but does not put it in the dict)
        if self.service_token:
            d['service_token'] = self.service_token
        return d

    @classmethod
    def from_dict(cls, values, **kwargs):
        kwargs.setdefault('service_roles', values.get('service_roles'))
        kwargs.setdefault('service_catalog', values.get('service_catalog'))
        kwargs.setdefault('service_token', values.get('service_token'))
        kwargs.setdefault('is_admin', values.get('is_admin', False))
        return super().from_dict(values, **kwargs)

    def to_policy_values(self):
        values = super().to_policy_values()
        values['service_roles'] = self.service_roles
        return values


def get_admin_context():
    """Context of the services themselves (periodic work, reports); never
    this thread's current context."""
    return RequestContext(is_admin=True, roles=['admin'], current=False)


def clear_current():
    """Forget this thread's current context.  (oslo.context has a getter
    and a setter for its thread-local store but no way to empty it.)"""
    o_context._request_store.__dict__.pop('context', None)
