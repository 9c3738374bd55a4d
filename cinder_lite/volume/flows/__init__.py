"""Taskflow flows of the volume service: small tasks, each side effect with
a revert.

Building and compiling an engine (a graph of the flow, its storage, its
state machines) costs more than running it, so each thread keeps one
engine per flow and resets it between runs: an engine runs one flow at a
time, and the RPC server's threads each run one request at a time.

A flow runs to its end or to its revert within the request that started
it, and is never resumed from a record (a volume service that died
mid-flow is settled by reconcile from the database), so the engines
persist nothing: ``UNKEPT`` is a persistence backend that keeps no copy,
and the inputs are injected as transient values.  Taskflow's own memory
backend copies the flow's details into a tree of its own on every state
change, a dozen a flow: a fifth of the volume service's CPU per connect.
"""
import contextlib
import logging
import threading

from taskflow import engines
from taskflow import exceptions as tf_exceptions
from taskflow.persistence import base as tf_persistence
from taskflow import states

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


class _UnkeptConnection(tf_persistence.Connection):
    """A connection to ``_Unkept``: updates hand back what they were
    given (the engine's storage keeps it), reads find nothing."""

    def __init__(self, backend):
        self._backend = backend

    @property
    def backend(self):
        return self._backend

    def close(self):
        pass

    def upgrade(self):
        pass

    def validate(self):
        pass

    def clear_all(self):
        pass

    def update_atom_details(self, atom_detail):
        return atom_detail

    def update_flow_details(self, flow_detail):
        return flow_detail

    def save_logbook(self, book):
        return book

    def destroy_logbook(self, book_uuid):
        raise tf_exceptions.NotFound('no logbook %s is kept' % book_uuid)

    def get_logbook(self, book_uuid, lazy=False):
        raise tf_exceptions.NotFound('no logbook %s is kept' % book_uuid)

    def get_logbooks(self, lazy=False):
        return iter(())

    def get_flows_for_book(self, book_uuid):
        raise tf_exceptions.NotFound('no logbook %s is kept' % book_uuid)

    def get_flow_details(self, fd_uuid, lazy=False):
        raise tf_exceptions.NotFound('no flow detail %s is kept' % fd_uuid)

    def get_atom_details(self, ad_uuid):
        raise tf_exceptions.NotFound('no atom detail %s is kept' % ad_uuid)

    def get_atoms_for_flow(self, fd_uuid):
        raise tf_exceptions.NotFound('no flow detail %s is kept' % fd_uuid)


class _Unkept(tf_persistence.Backend):
    """A taskflow persistence backend that keeps nothing (see above)."""

    def __init__(self):
        super().__init__({})
        self._connection = _UnkeptConnection(self)

    def get_connection(self):
        return self._connection

    def close(self):
        pass


UNKEPT = _Unkept()


def run(name, build, store):
    """Run flow ``name`` (made by ``build()`` the first time on this
    thread) with ``store`` as its inputs; returns the engine's storage,
    to fetch results from."""
    cache = getattr(_local, 'engines', None)
    if cache is None:
        cache = _local.engines = {}
    engine = cache.pop(name, None)
    if engine is None:
        engine = engines.load(build(), engine='serial', backend=UNKEPT)
    else:
        engine.reset()
    engine.storage.inject(store, transient=True)
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
                with db_api.writer() as session:
                    db_volumes.touch(session, volume_id, status)
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
