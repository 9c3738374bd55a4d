"""The message bus: one transport per process, and RPC clients/servers that
carry the request context as a plain dict."""
from concurrent import futures
import os
import threading

import kombu.exceptions
from oslo_config import cfg
import oslo_messaging as messaging
from oslo_messaging._drivers import amqpdriver
from oslo_messaging import opts as messaging_opts
from oslo_messaging import serializer as om_serializer

from cinder_lite.common import context as cl_context
from cinder_lite.common import exception
from cinder_lite.common import inproc_bus  # noqa: F401 (kombu+inproc)

_lock = threading.Lock()
_transport = None

# RabbitMQ: how many times per heartbeat_timeout_threshold a connection
# checks its heartbeat, unless the operator says otherwise.  An idle
# consumer blocks in the broker's socket for threshold / rate / 2 seconds
# at a time (oslo.messaging's default rate 3: 10 s, capped at 5 s by its
# listener), and a stopping service waits for that wait to end, once for
# its RPC server and once for its reply queue: an API stopped after it
# made a call took 5 s.  At 60 the wait is half a second; a check sends
# nothing unless the connection was silent for the whole threshold.
RABBIT_HEARTBEAT_RATE = 60

# The calls an RPC server runs at once (see get_server)
RPC_EXECUTOR_THREADS = 16

# How long a listener's first wait for its next message lasts (seconds).
# oslo.messaging's listeners (an RPC server's, a client's reply queue)
# wait in slices that start at 1 ms after each message and double while
# nothing comes; every slice that runs out is a timeout raised through
# kombu's retry machinery.  An RPC server called every 20 ms timed out
# four times between two calls, and so did its caller's reply queue:
# two of the six milliseconds of CPU a call cost both sides.  A message
# ends a wait as soon as it comes, whatever the slice; the slices exist
# so that a listener's thread sends the acknowledgements other threads
# queue for it, which only notification listeners do (an RPC message is
# acknowledged as it is received), and notices a stop (an idle listener
# waits half a second, see RABBIT_HEARTBEAT_RATE).  oslo.messaging has no
# option for it, hence the module attribute, which
# tests/unit/test_rpc_listener.py watches.
LISTENER_FIRST_WAIT = 0.05

# Bounded sends (``bounded``): reconnections a send tries before it gives
# up (each waits [oslo_messaging_rabbit] rabbit_retry_interval and its
# backoff, plus the connection's own timeout) ...
SEND_RETRIES = 2
# ... the seconds past a call's timeout its caller waits for a call that
# could not be sent, and the most a cast's caller waits for it to go out
SEND_GRACE = 10
# the most sends of one process in flight at once (more wait for a
# worker, within their deadline)
SEND_WORKERS = 64
_pool = {}
_pool_lock = threading.Lock()


class ContextSerializer(om_serializer.NoOpSerializer):
    def serialize_context(self, ctxt):
        return ctxt.to_dict()

    def deserialize_context(self, ctxt):
        return cl_context.RequestContext.from_dict(ctxt)


class NotificationSerializer(ContextSerializer):
    """Notifications go to whoever listens: without the caller's tokens
    and catalog (which only the services' own calls carry)."""

    def serialize_context(self, ctxt):
        values = ctxt.to_dict()
        values.pop('auth_token', None)
        values.pop('service_token', None)
        values.pop('service_catalog', None)
        return values


def get_transport(conf=None):
    """The process-wide RPC transport (``[DEFAULT] transport_url``).

    oslo.messaging registers some options on the global ``cfg.CONF`` only,
    so services always run on it.
    """
    global _transport
    with _lock:
        if _transport is None:
            # Our domain errors cross the bus as themselves, so the API can
            # answer a backend's refusal with the right status code.
            conf = conf or cfg.CONF
            _transport = messaging.get_rpc_transport(
                conf, allowed_remote_exmods=[exception.__name__])
            rabbit_defaults(conf)
        return _transport


def rabbit_defaults(conf):
    """Our defaults of the rabbit driver's options, which it registers
    when its transport is made, before it opens a connection, and the
    first wait of its listeners (``LISTENER_FIRST_WAIT``), which must be
    set before a listener is made."""
    try:
        conf.set_default('heartbeat_rate', RABBIT_HEARTBEAT_RATE,
                         group='oslo_messaging_rabbit')
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        pass        # another driver: nothing to set
    amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = LISTENER_FIRST_WAIT


def cleanup():
    global _transport
    with _lock:
        if _transport is not None:
            _transport.cleanup()
        _transport = None


def get_client(topic, version, server=None, version_cap=None, fanout=False,
               timeout=None):
    target = messaging.Target(topic=topic, server=server, version=version,
                              fanout=fanout)
    return messaging.get_rpc_client(get_transport(), target,
                                    version_cap=version_cap,
                                    serializer=ContextSerializer(),
                                    timeout=timeout)


def get_server(topic, server, endpoints):
    target = messaging.Target(topic=topic, server=server)
    rpc_server = messaging.get_rpc_server(get_transport(), target,
                                          endpoints,
                                          serializer=ContextSerializer())
    # oslo.messaging's "threading" executor is futurist's pool, whose idle
    # workers notice a shutdown only when their one-second wait for work
    # times out, so every stopping service sat out up to a second.  The
    # standard library's pool (same submit/shutdown) wakes them at once.
    # oslo.messaging accepts no other executor name, hence the attribute,
    # which tests/functional/test_process.py watches.
    rpc_server._executor_cls = futures.ThreadPoolExecutor
    # At most RPC_EXECUTOR_THREADS calls at once per server unless the
    # operator sets executor_thread_pool_size (the option exists once a
    # server was made; the pool is sized when the server starts).  At
    # oslo.messaging's 64, a storm of 100 hosts detaching one volume over
    # the bus ran 64 deletes at once in the API, each waiting on the
    # volume's row lock, and as many disconnects in the volume service:
    # 31-50 s, disconnects unanswered within 30 s and the volume service
    # taken for down; at 16, 2.3 s (bench/storm.py, doc/performance.rst).
    messaging_opts.set_defaults(rpc_server.conf,
                                executor_thread_pool_size=RPC_EXECUTOR_THREADS)
    return rpc_server


def _send_pool():
    """This process's pool of send workers (made again in a forked
    child: a pool's threads do not survive a fork)."""
    pid = os.getpid()
    with _pool_lock:
        if _pool.get('pid') != pid:
            _pool.update(pid=pid, pool=futures.ThreadPoolExecutor(
                max_workers=SEND_WORKERS, thread_name_prefix='rpc-send'))
        return _pool['pool']


def bounded(cctxt, ctxt, method, service, timeout=None, **kwargs):
    """Send ``method`` through the prepared client ``cctxt``: a call
    when ``timeout`` (seconds) is given, else a cast.  Returns the call's
    answer, or raises ServiceUnavailable naming ``service`` with the
    reason, within ``timeout`` plus SEND_GRACE (a cast within
    SEND_GRACE) whatever the bus does.

    By default oslo.messaging retries a send for ever, and the first
    call of a process waits, unbounded, for a connection for its reply
    queue: with the broker away an API request that sends held its
    client for as long as the outage lasted.  The send gives up after
    SEND_RETRIES reconnections, and it runs in a worker thread the
    caller stops waiting for at the deadline.  A send that goes out
    after its caller gave up must find nothing to do: each receiver
    acts only on what the database still asks of it (a volume service
    refuses a connect of an attachment settled meanwhile, a scheduler
    claims a volume only while it is ``creating`` with no host, a backup
    service works only on a backup in the status the API left it)."""
    if timeout is not None:
        cctxt = cctxt.prepare(timeout=timeout, retry=SEND_RETRIES)
        send, deadline = cctxt.call, timeout + SEND_GRACE
    else:
        cctxt = cctxt.prepare(retry=SEND_RETRIES)
        send, deadline = cctxt.cast, SEND_GRACE
    future = _send_pool().submit(send, ctxt, method, **kwargs)
    try:
        return future.result(deadline)
    except futures.TimeoutError:
        raise exception.ServiceUnavailable(
            host=service,
            reason='%s %s within %d s (the message bus is out of reach)'
                   % ('no answer to' if timeout is not None
                      else 'the message bus did not take', method,
                      deadline))
    except messaging.MessagingTimeout:
        raise exception.ServiceUnavailable(
            host=service,
            reason='no answer to %s within %d s' % (method, timeout))
    except (messaging.MessageDeliveryFailure,
            # (what the rabbit driver raises when a connection it adds to
            # its pool cannot be made: a 500 before)
            kombu.exceptions.OperationalError) as e:
        raise exception.ServiceUnavailable(
            host=service,
            reason='the message bus did not take %s: %s' % (method, e))
