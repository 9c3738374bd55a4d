"""Taskflow flows of the volume service: small tasks, each side effect with
a revert.

Building and compiling an engine (a graph of the flow, its storage, its
state machines) costs more than running it, so each thread keeps one
engine per flow and resets it between runs: an engine runs one flow at a
time, and the RPC server's threads each run one request at a time.

A flow runs to its end or to its revert within the request that started
it, and is never resumed from a record (a volume service that died
mid-flow is settled by reconcile from the database), so the engines
persist nothing: their storage (``_Storage``) keeps the run's details
once, in place, and the inputs are injected as transient values.
Taskflow's own storage copies an atom's details on each of the two dozen
changes of a run, saves the copy through a backend (its memory backend
copies it again), with retries, under a reader/writer lock: with the
memory backend a fifth of the volume service's CPU per connect, and
without it still two thirds of the cost of running a flow.
"""
import contextlib
import logging
import threading

from oslo_utils import uuidutils
from taskflow.engines.action_engine import engine as tf_engine
from taskflow.persistence import models as tf_models
from taskflow import states
from taskflow import storage as tf_storage
from taskflow.utils import misc as tf_misc

from cinder_lite.common import qos
from cinder_lite.db import api as db_api
from cinder_lite.db import qos_specs as db_qos
from cinder_lite.db import volumes as db_volumes

LOG = logging.getLogger(__name__)

_local = threading.local()
# an engine that succeeded is reset and run again; one that reverted (or
# whose revert failed) is dropped and built anew: a reset engine's storage
# still holds the failures of its last run, which the next failure's
# WrappedFailure would carry too (a reverted promote and then another on
# the same thread raised both)
_REUSABLE = (states.SUCCESS,)


class _NoLock:
    """The reader/writer lock of a storage that one thread uses."""

    _held = contextlib.nullcontext()

    def read_lock(self):
        return self._held

    def write_lock(self):
        return self._held


def _unlocked(cls):
    """``cls`` with the methods of taskflow's ``Storage`` as written, not
    as its reader/writer lock decorators wrap them: each call through a
    decorator looks the lock up and enters it, even a ``_NoLock``, and
    a run of a three-task flow makes about ninety such calls (a seventh
    of its cost).  The decorated methods are those whose code is the
    decorators' (``fetch`` is read-locked, ``save`` write-locked);
    ``__wrapped__`` is the method itself."""
    wrappers = {tf_storage.Storage.fetch.__code__,
                tf_storage.Storage.save.__code__}
    for name, member in vars(tf_storage.Storage).items():
        if name not in vars(cls) and \
                getattr(member, '__code__', None) in wrappers:
            setattr(cls, name, member.__wrapped__)
    return cls


@_unlocked
class _Storage(tf_storage.Storage):
    """An engine's storage for a run that one thread makes and nothing
    resumes: one copy of the run's details, changed in place.

    Taskflow's storage works on a copy of an atom's details for each
    change, has a persistence backend save the copy (retrying a failed
    save with tenacity) and merges it back, under a reader/writer lock;
    two dozen changes a run.  Here no copy is made and no backend asked
    once the storage is made (taskflow gives a storage without one a
    memory backend, which then holds the details' first state), so no
    save can fail, and the lock guards nothing: each thread keeps its
    own engines (``run``).  What is overridden
    is checked against taskflow's ``Storage`` by
    ``tests/unit/test_flow_runs.py``."""

    def __init__(self, flow_detail, scope_fetcher):
        super().__init__(flow_detail, scope_fetcher=scope_fetcher)
        self._lock = _NoLock()

    def _with_connection(self, functor, *args, **kwargs):
        return functor(None, *args, **kwargs)

    def _fetch_flowdetail(self, clone=False):
        return self._flowdetail, self._flowdetail

    def _atomdetail_by_name(self, atom_name, expected_type=None,
                            clone=False):
        return super()._atomdetail_by_name(atom_name, expected_type)

    @staticmethod
    def _saved(connection, detail, changed):
        # (``changed`` is ``detail``, changed in place)
        return detail

    _save_flow_detail = _saved
    _save_atom_detail = _saved


class _Engine(tf_engine.SerialActionEngine):
    """Taskflow's serial engine on ``_Storage``, without the timing
    statistics nobody reads, validated once for the names of its inputs.

    Taskflow validates at every run (each atom's arguments, to run and to
    revert, looked up against what the flow and the storage provide: a
    tenth of its machinery's CPU in a connect).  The flow is the same
    from one run to the next and so are the names of its inputs
    (``run``), so it validates again only when those change."""

    def __init__(self, flow):
        super().__init__(flow, tf_models.FlowDetail(
            flow.name, uuidutils.generate_uuid()), None,
            {'gather_statistics': False})
        self.inputs = None
        self._validated_for = None

    def validate(self):
        if self._validated_for is None or \
                self._validated_for != self.inputs:
            super().validate()
            self._validated_for = self.inputs

    @tf_misc.cachedproperty
    def storage(self):
        def scopes(atom_name):
            return (self._runtime.fetch_scopes_for(atom_name)
                    if self._compiled else None)
        return _Storage(self._flow_detail, scopes)


def run(name, build, store):
    """Run flow ``name`` (made by ``build()`` the first time on this
    thread) with ``store`` as its inputs; returns the engine's storage,
    to fetch results from."""
    cache = getattr(_local, 'engines', None)
    if cache is None:
        cache = _local.engines = {}
    engine = cache.pop(name, None)
    if engine is None:
        engine = _Engine(build())
    else:
        engine.reset()
    engine.storage.inject(store, transient=True)
    engine.inputs = frozenset(store)
    try:
        engine.run()
    finally:
        if engine.storage.get_flow_state() in _REUSABLE:
            cache[name] = engine
    return engine.storage


@contextlib.contextmanager
def kept_fresh(volume_id, status, interval=30):
    """While the block runs (a copy that may take longer than
    ``reconcile_after``), renew the volume's ``updated_at`` every
    ``interval`` seconds as long as it is ``status``: reconciliation, here
    or on another member of the cluster, leaves it alone."""
    done = threading.Event()

    def renew():
        while not done.wait(interval):
            try:
                db_api.run_writer(db_volumes.touch, volume_id, status)
            except Exception:
                LOG.exception('volume %s: could not renew updated_at',
                              volume_id)
    thread = threading.Thread(target=renew, daemon=True,
                              name='fresh-%s' % volume_id)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def with_qos(session, volume, cache=None):
    """``volume`` (a dict) with its type's QoS specs as they apply to a
    connection: the back-end ones in ``qos_specs`` (the driver applies
    what it can) and the front-end ones in ``frontend_qos_specs`` (handed
    to the host in the connection info); None where there are none.
    ``cache``: type id -> its specs, for many volumes."""
    type_id = volume['volume_type_id']
    if cache is None:
        type_qos = db_qos.for_type(session, type_id)
    elif type_id not in cache:
        type_qos = cache[type_id] = db_qos.for_type(session, type_id)
    else:
        type_qos = cache[type_id]
    return _applied(volume, type_qos)


def with_qos_read(session, volume, type_qos):
    """``with_qos`` when the (id, consumer) of the type's specs (None
    without) were read with the volume (``db_attachments.with_volume``):
    only their keys are left to read."""
    return _applied(volume,
                    type_qos and db_qos.with_keys(session, *type_qos))


def _applied(volume, type_qos):
    return dict(volume,
                qos_specs=qos.for_consumer(type_qos, qos.BACK_END,
                                           volume['size']),
                frontend_qos_specs=qos.for_consumer(
                    type_qos, qos.FRONT_END, volume['size']))
