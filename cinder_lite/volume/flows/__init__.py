"""Taskflow flows of the volume service: small tasks, each side effect with
a revert.

Building and compiling an engine (a graph of the flow, its storage, its
state machines) costs more than running it, so each thread keeps one
engine per flow and resets it between runs: an engine runs one flow at a
time, and the RPC server's threads each run one request at a time.
"""
import contextlib
import logging
import threading

from taskflow import engines
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


def run(name, build, store):
    """Run flow ``name`` (made by ``build()`` the first time on this
    thread) with ``store`` as its inputs; returns the engine's storage,
    to fetch results from."""
    cache = getattr(_local, 'engines', None)
    if cache is None:
        cache = _local.engines = {}
    engine = cache.pop(name, None)
    if engine is None:
        engine = engines.load(build(), engine='serial', store=store)
    else:
        engine.reset()
        engine.storage.inject(store)
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
    if cache is None or type_id not in cache:
        found = db_qos.for_type(session, type_id)
        if cache is None:
            type_qos = found
        else:
            type_qos = cache[type_id] = found
    else:
        type_qos = cache[type_id]
    return dict(volume,
                qos_specs=qos.for_consumer(type_qos, qos.BACK_END,
                                           volume['size']),
                frontend_qos_specs=qos.for_consumer(
                    type_qos, qos.FRONT_END, volume['size']))
