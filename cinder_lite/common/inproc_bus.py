"""An in-process message bus for the embedded mode: kombu's memory
transport, made to sleep until a message arrives.

kombu's memory transport has no blocking receive, so oslo.messaging polls
it; for ``memory://`` URLs it even sets the polling interval to zero, which
keeps a core busy per consumer while the service is idle.  Here every put
bumps a generation counter under a condition variable and a consumer with
nothing to read waits on it: no busy loop, and a message wakes its
consumer at once.  Use it with ``transport_url = kombu+inproc:////``; like
the memory transport it never leaves the process.
"""
import queue
import socket
import threading

from kombu import transport as kombu_transport
from kombu.transport import memory

ALIAS = 'inproc'
URL = 'kombu+%s:////' % ALIAS

_changed = threading.Condition()
_generation = 0


def wake():
    """Wake every waiting consumer (a put does this too)."""
    _bump()


def _bump():
    global _generation
    with _changed:
        _generation += 1
        _changed.notify_all()


class Channel(memory.Channel):

    def _put(self, queue, message, **kwargs):
        super()._put(queue, message, **kwargs)
        _bump()

    def _put_fanout(self, exchange, message, routing_key=None, **kwargs):
        super()._put_fanout(exchange, message, routing_key, **kwargs)
        _bump()


class Transport(memory.Transport):

    Channel = Channel
    driver_name = ALIAS
    # no host to connect to (kombu warns "No hostname was supplied" for
    # every connection when a default host is named)
    default_connection_params = {}

    def drain_events(self, connection, timeout=None):
        """Deliver one message, waiting for a put at most ``timeout``
        seconds.  A wake-up without a message for this consumer raises a
        timeout so the caller can look at its own state (a stopping
        listener) before it waits again."""
        with _changed:
            seen = _generation
        try:
            self.cycle.get(self._deliver, timeout=timeout)
            return
        except queue.Empty:
            pass
        with _changed:
            if _generation == seen:
                _changed.wait(timeout)
        try:
            self.cycle.get(self._deliver, timeout=timeout)
        except queue.Empty:
            raise socket.timeout()

kombu_transport.TRANSPORT_ALIASES[ALIAS] = __name__ + ':Transport'


def quiet(conf):
    """oslo.messaging's rabbit driver asks every connection for
    heartbeats and warns once per connection that this bus has none:
    nothing is wrong with a bus inside the process, so ask for none."""
    from oslo_messaging import opts as messaging_opts
    for group, opts in messaging_opts.list_opts():
        if group == 'oslo_messaging_rabbit':
            conf.register_opts(opts, group=group)
    conf.set_default('heartbeat_timeout_threshold', 0,
                     group='oslo_messaging_rabbit')
