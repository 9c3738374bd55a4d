"""What the scheduler knows about each backend.

Two sources: the capability reports volume services fan out to every
scheduler (freshest, and corrected locally as volumes are placed), and the
services table (heartbeat, disabled flag, last capabilities, so a
scheduler that just started knows every backend at once).
"""
import datetime
import threading

from cinder_lite.db import models
from cinder_lite.db import services as db_services

VOLUME_BINARY = 'cinder-volume'


class BackendState:

    def __init__(self, host, availability_zone, capabilities, reported_at):
        self.host = host
        self.availability_zone = availability_zone
        # served by a cluster of volume services (host is the cluster's)
        self.clustered = False
        self.update(capabilities, reported_at)

    def update(self, capabilities, reported_at):
        self.capabilities = dict(capabilities or {})
        self.reported_at = reported_at
        self.total_capacity_gb = float(
            self.capabilities.get('total_capacity_gb') or 0)
        self.free_capacity_gb = float(
            self.capabilities.get('free_capacity_gb') or 0)
        self.reserved_percentage = float(
            self.capabilities.get('reserved_percentage') or 0)
        self.thin = bool(self.capabilities.get('thin_provisioning_support'))
        self.provisioned_capacity_gb = float(
            self.capabilities.get('provisioned_capacity_gb') or 0)
        self.max_over_subscription_ratio = float(
            self.capabilities.get('max_over_subscription_ratio') or 1)

    @property
    def pool(self):
        return '%s#%s' % (self.host,
                          self.capabilities.get('volume_backend_name')
                          or self.host.partition('@')[2])

    def consume(self, size_gb):
        """Account for a volume just placed here until the next report:
        thin backends provision it, thick ones use it up."""
        if self.thin:
            self.provisioned_capacity_gb += size_gb
        else:
            self.free_capacity_gb -= size_gb


class HostManager:

    def __init__(self, conf):
        self.conf = conf
        self._lock = threading.Lock()
        self._backends = {}

    def update_from_report(self, host, availability_zone, capabilities,
                           reported_at):
        reported_at = _parse_time(reported_at)
        with self._lock:
            state = self._backends.get(host)
            if state is None:
                self._backends[host] = BackendState(
                    host, availability_zone, capabilities, reported_at)
            elif reported_at >= state.reported_at:
                state.availability_zone = availability_zone
                state.update(capabilities, reported_at)

    def live_backends(self, session):
        """Backends that are up and enabled, per the services table.  The
        members of a cluster are one backend (``cluster@section``), live
        while one of them is."""
        rows = db_services.list_services(session, binary=VOLUME_BINARY)
        members = {}
        for row in rows:
            if row.disabled or not db_services.is_up(
                    row, self.conf.service_down_time):
                continue
            members.setdefault(row.cluster_name or row.host, []).append(row)
        live = []
        with self._lock:
            for backend, rows in sorted(members.items()):
                row = db_services.freshest(rows)
                state = self._backends.get(backend)
                if state is None or (row.heartbeat_at > state.reported_at
                                     and row.capabilities):
                    state = BackendState(backend, row.availability_zone,
                                         row.capabilities, row.heartbeat_at)
                    self._backends[backend] = state
                state.clustered = row.cluster_name is not None
                live.append(state)
        return live

    def consume(self, state, size_gb):
        with self._lock:
            state.consume(size_gb)


def _parse_time(value):
    if isinstance(value, datetime.datetime):
        return value
    if value:
        return datetime.datetime.fromisoformat(value)
    return models.utcnow()
