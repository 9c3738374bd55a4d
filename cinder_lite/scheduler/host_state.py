"""What the scheduler knows about each backend, kept in memory.

Two sources: the capability reports volume services fan out to every
scheduler at each heartbeat (freshest, and corrected locally as volumes
are placed), and the services table (heartbeat, disabled flag, cluster,
last capabilities), read whole when the scheduler starts and then every
``report_interval`` seconds in the background, so a scheduler knows every
backend at once and learns what the reports do not carry.  A decision
reads no table: it asks the index for the best backend, then confirms
that one against its services rows in the deciding transaction (disabled
a moment ago, or down, it is set aside and the next best is asked).

The index groups backends by availability zone and by what they report
apart from capacity: backends of one group pass or fail a type's
capability requirements together, so a type is matched once per group,
not once per backend.  Inside a group a heap orders the backends by the
capacity weigher's weight, which is also what the capacity filter
compares with the size asked: the first backend of the heap that is live
and large enough wins, and a decision looks at a handful of backends
however many report.  A report or a placement pushes the backend again
(its older entries are dropped when they come up).
"""
import datetime
import heapq
import threading

from cinder_lite.common import capabilities as cap
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.db import models
from cinder_lite.db import services as db_services
from cinder_lite.scheduler.filters import capacity_filter

class BackendState:

    def __init__(self, host, availability_zone, capabilities, reported_at):
        self.host = host
        self.availability_zone = availability_zone
        # served by a cluster of volume services (host is the cluster's)
        self.clustered = False
        # from the services table: whether every member is disabled, and
        # the newest heartbeat of an enabled member
        self.disabled = False
        self.heartbeat_at = None
        self.version = 0
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
        self.signature = cap.signature(self.capabilities)

    @property
    def backend_name(self):
        return self.capabilities.get(cap.NAME_KEY)

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

    def weight(self):
        """The capacity weigher's weight, which is also what the capacity
        filter compares with the size asked."""
        if self.thin:
            return capacity_filter.provisionable_gb(self)
        return capacity_filter.usable_free_gb(self)

    def is_up(self, down_time, now):
        """Heard of (a report, or a member's heartbeat) within
        ``down_time`` seconds, and not disabled."""
        if self.disabled:
            return False
        last = max(filter(None, (self.reported_at, self.heartbeat_at)),
                   default=None)
        return db_services.is_up(last, down_time, now)


_CAPACITY = capacity_filter.CapacityFilter()


class _Descending(str):
    """A host name that sorts backwards: on equal weight the larger name
    wins, as ``max`` over (weight, host) picks it."""
    __slots__ = ()

    def __lt__(self, other):
        return str.__gt__(self, other)


class _Group:
    """Backends of one zone that report the same capabilities."""

    def __init__(self, capabilities):
        self.capabilities = capabilities
        self.members = set()
        self.heap = []

    def push(self, state):
        heapq.heappush(self.heap, (-state.weight(), _Descending(state.host),
                                   state.version, state))
        if len(self.heap) > 2 * len(self.members) + 16:
            # drop the entries older reports left behind
            self.heap = [e for e in self.heap
                         if e[3].version == e[2] and e[3] in self.members]
            heapq.heapify(self.heap)

    def best(self, size, fits, passes):
        """The heaviest member that ``passes`` (live, and for a type that
        asks about capacity keys, matching) and ``fits`` ``size``; None
        when none does.  Members set aside are pushed back."""
        aside = []
        found = None
        try:
            while self.heap:
                entry = self.heap[0]
                weight, _, version, state = entry
                if state.version != version or state not in self.members:
                    heapq.heappop(self.heap)
                    continue
                if -weight < size:
                    # the heaviest left is too small: so is everyone else
                    break
                heapq.heappop(self.heap)
                aside.append(entry)
                if passes(state) and fits(state, size):
                    found = state
                    break
        finally:
            for entry in aside:
                heapq.heappush(self.heap, entry)
        return found


class BackendIndex:
    """Backend states by name, grouped for placement (see the module
    docstring).  Not thread-safe: HostManager holds its lock."""

    def __init__(self):
        self.states = {}
        self._groups = {}
        self._group_of = {}
        self._named = {}
        self._name_of = {}

    def put(self, state):
        """Add ``state`` or file it again after it changed."""
        # (a report may have changed the name of the state in place)
        old_name = self._name_of.get(state.host)
        if old_name is not None:
            old_state = self.states[state.host]
            self._named[old_name].discard(old_state)
            if not self._named[old_name]:
                del self._named[old_name]
        self.states[state.host] = state
        self._name_of[state.host] = str(state.backend_name)
        self._named.setdefault(str(state.backend_name), set()).add(state)
        state.version += 1
        key = (state.availability_zone, state.signature)
        old = self._group_of.get(state.host)
        if old is not None and old != key:
            self._groups[old].members.discard(state)
            if not self._groups[old].members:
                del self._groups[old]
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group(state.capabilities)
        group.members.add(state)
        self._group_of[state.host] = key
        group.push(state)

    def best(self, request_spec, is_live, choose_backend, exclude=()):
        """What ``choose_backend`` (filters and weighers over a list)
        would pick among the live backends not in ``exclude``, or None."""
        wanted_az = request_spec.get('availability_zone')
        specs = request_spec.get('extra_specs')
        size = request_spec['size']
        required = cap.capability_requirements(specs)
        # a requirement on a capacity key or the name differs between the
        # members of a group: check it per backend
        per_backend = bool(cap.PER_BACKEND_KEYS.intersection(required))
        name = cap.pinned_name(required)
        if name is not None:
            # a type pinned to the backends of one name (Cinder's usual
            # way)
            live = [s for s in self._named.get(name, ())
                    if s.host not in exclude and is_live(s)]
            try:
                return choose_backend(live, request_spec)
            except exception.NoValidBackend:
                return None

        def passes(state):
            if state.host in exclude or not is_live(state):
                return False
            return not per_backend or cap.satisfies(
                state.capabilities, specs)

        def fits(state, size):
            return _CAPACITY.backend_passes(state, {'size': size})

        winners = []
        for (az, _), group in self._groups.items():
            if wanted_az and wanted_az != az:
                continue
            if not per_backend and not cap.satisfies(
                    group.capabilities, specs):
                continue
            state = group.best(size, fits, passes)
            if state is not None:
                winners.append(state)
        if not winners:
            return None
        return max(winners, key=lambda b: (b.weight(), b.host))


class HostManager:

    def __init__(self, conf):
        self.conf = conf
        self._lock = threading.Lock()
        self._index = BackendIndex()
        self._loaded = False

    def update_from_report(self, host, availability_zone, capabilities,
                           reported_at):
        reported_at = _parse_time(reported_at)
        with self._lock:
            state = self._index.states.get(host)
            if state is None:
                state = BackendState(host, availability_zone, capabilities,
                                     reported_at)
            elif state.reported_at is None or \
                    reported_at >= state.reported_at:
                # (a state read from the services table of a service that
                # stopped cleanly has capabilities but no report time)
                state.availability_zone = availability_zone
                state.update(capabilities, reported_at)
            else:
                return
            self._index.put(state)

    def refresh(self, session):
        """Read the services table: heartbeats, disabled flags, clusters,
        and the capabilities of backends no report told this scheduler
        about yet (or told less recently than the table)."""
        rows = db_services.liveness(session, constants.VOLUME_BINARY)
        members = {}
        for row in rows:
            members.setdefault(row.cluster_name or row.host, []).append(row)
        with self._lock:
            known = dict(self._index.states)
        stale = [name for name, rows in members.items()
                 if name not in known or _newest(rows) and (
                     known[name].reported_at is None
                     or _newest(rows) > known[name].reported_at)]
        caps = {}
        for row in db_services.capabilities_of(
                session, constants.VOLUME_BINARY, stale):
            name = row.cluster_name or row.host
            if row.capabilities and (
                    name not in caps or (row.heartbeat_at or _MIN)
                    > (caps[name][0] or _MIN)):
                caps[name] = (row.heartbeat_at, row.capabilities)
        with self._lock:
            # (a backend without rows here may have reported after this
            # read and registered meanwhile: a decision confirms rows)
            for name, rows in members.items():
                self._note_members(name, rows, caps.get(name))
            self._loaded = True

    def _note_members(self, name, rows, caps=None):
        """Record a backend's services rows (lock held)."""
        enabled = [r for r in rows if not r.disabled]
        state = self._index.states.get(name)
        if state is None:
            if caps is None:
                # up, but it has not reported its capabilities yet
                return
            state = BackendState(name, rows[0].availability_zone,
                                 caps[1], caps[0])
        elif caps is not None and caps[0] and (
                state.reported_at is None or caps[0] > state.reported_at):
            state.update(caps[1], caps[0])
        state.clustered = any(r.cluster_name is not None for r in rows)
        state.disabled = not enabled
        state.heartbeat_at = _newest(enabled)
        self._index.put(state)

    def choose(self, session, request_spec, choose_backend):
        """The backend for ``request_spec``, confirmed live and enabled by
        its services rows in ``session``.  ``choose_backend`` (the
        filters and weighers over a list) explains a refusal."""
        refreshed = not self._loaded
        if refreshed:
            self.refresh(session)
        now = models.utcnow()
        down = self.conf.service_down_time
        set_aside = set()
        while True:
            with self._lock:
                chosen = self._index.best(
                    request_spec, lambda s: s.is_up(down, now),
                    choose_backend, set_aside)
            if chosen is None and not refreshed:
                # A refusal is not made on what memory holds: a backend
                # may have registered (its first report sent before this
                # scheduler listened), come back or been enabled since
                # the last read of the table.
                self.refresh(session)
                refreshed = True
                now = models.utcnow()
                continue
            if chosen is None:
                # explains the refusal (NoValidBackend naming the filter);
                # should it find one after all, that one is confirmed too
                chosen = choose_backend(
                    [s for s in self._live(now) if s.host not in set_aside],
                    request_spec)
            rows = db_services.backend_members(session, chosen.host,
                                               constants.VOLUME_BINARY)
            if rows:
                with self._lock:
                    self._note_members(chosen.host, rows)
            if rows and any(not r.disabled and
                            db_services.is_up(r.heartbeat_at, down)
                            for r in rows):
                return chosen
            set_aside.add(chosen.host)

    def choose_among_live(self, session, request_spec, choose_backend):
        """As ``choose``, but ``choose_backend`` is given every live
        backend (read again from the services table), without the index:
        for a request the index does not describe, such as a group that
        must hold several volume types."""
        self.refresh(session)
        now = models.utcnow()
        down = self.conf.service_down_time
        set_aside = set()
        while True:
            chosen = choose_backend(
                [s for s in self._live(now) if s.host not in set_aside],
                request_spec)
            rows = db_services.backend_members(session, chosen.host,
                                               constants.VOLUME_BINARY)
            if rows and any(not r.disabled and
                            db_services.is_up(r.heartbeat_at, down)
                            for r in rows):
                return chosen
            set_aside.add(chosen.host)

    def _live(self, now):
        with self._lock:
            return sorted((s for s in self._index.states.values()
                           if s.is_up(self.conf.service_down_time, now)),
                          key=lambda s: s.host)

    def consume(self, state, size_gb):
        with self._lock:
            state.consume(size_gb)
            if self._index.states.get(state.host) is state:
                self._index.put(state)


_MIN = datetime.datetime.min


def _newest(rows):
    return max((r.heartbeat_at for r in rows if r.heartbeat_at),
               default=None)


def _parse_time(value):
    if isinstance(value, datetime.datetime):
        return value
    if value:
        return datetime.datetime.fromisoformat(value)
    return models.utcnow()

