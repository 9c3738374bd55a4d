"""Taskflow flows of the volume service: small tasks, each side effect with
a revert.

Building and compiling an engine (a graph of the flow, its storage, its
state machines) costs more than running it, so each thread keeps one
engine per flow and resets it between runs: an engine runs one flow at a
time, and the RPC server's threads each run one request at a time.
"""
import threading

from taskflow import engines
from taskflow import states

_local = threading.local()
# an engine in these states can be reset and run again; one whose revert
# failed (FAILURE) is dropped and built anew
_REUSABLE = (states.SUCCESS, states.REVERTED)


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
