"""Running services: RPC servers with heartbeats, signals, readiness.

A floor above the database (each service is a row of the services
table that its heartbeat refreshes) and below the services it runs.

Every long-running process builds a list of ``Service`` objects and hands
it to ``run``, which starts them, tells systemd it is ready, and stops them
gracefully on SIGTERM/SIGINT; SIGHUP reloads the mutable options (log
levels).
"""
import functools
import logging
import os
import signal
import socket
import sys
import threading
import time

import oslo_messaging as messaging

from cinder_lite.common import context as cl_context
from cinder_lite.common import exception
from cinder_lite.common import inproc_bus
from cinder_lite.common import notify
from cinder_lite.common import rpc
from cinder_lite.db import api as db_api
from cinder_lite.db import services as db_services

LOG = logging.getLogger(__name__)

# How often the main loop looks at the signals it received.
SIGNAL_POLL_S = 0.2


class DatabaseGuard:
    """An endpoint whose methods raise DatabaseUnavailable, one of our
    domain errors, when the database is out of reach.  Raised as itself,
    SQLAlchemy's error crossed the bus as oslo.messaging's RemoteError,
    which callers cannot tell from a bug: the API answered an attach made
    while the database restarted with a 500 instead of a retriable 503.
    """

    def __init__(self, endpoint, server):
        self._endpoint = endpoint
        self._server = server

    def __getattr__(self, name):
        value = getattr(self._endpoint, name)
        if name.startswith('_') or name == 'target' or not callable(value):
            return value     # (a Target is callable: it copies itself)

        @functools.wraps(value)
        def guarded(*args, **kwargs):
            try:
                return value(*args, **kwargs)
            except db_api.UNAVAILABLE as e:
                # (what the driver said stays in this service's log)
                LOG.warning('%s on %s: the database is unavailable: %s',
                            name, self._server,
                            str(e).splitlines()[0][:300])
                try:
                    raise exception.DatabaseUnavailable(
                        host=self._server, reason='its database is '
                        'unavailable; retry later') from None
                except exception.DatabaseUnavailable:
                    # (sent to the caller as itself, without the server's
                    # traceback in the log: the warning above says it)
                    raise messaging.ExpectedException()
        return guarded


class RPCService:
    """An RPC server for ``endpoints`` on ``topic``/``host`` plus a
    heartbeat thread that also records capabilities when ``report`` is
    given (``report(svc)`` returns them) and, once the heartbeat is
    written, hands them to ``fan_out(svc, capabilities)``."""

    def __init__(self, conf, binary, topic, host, endpoints,
                 availability_zone, backend=None, report=None,
                 rpc_version=None, on_registered=None, on_up=None,
                 register=True, on_stopped=None, cluster_name=None,
                 fan_out=None):
        self.conf = conf
        self.binary = binary
        self.topic = topic
        self.host = host
        self.endpoints = endpoints
        self.availability_zone = availability_zone
        self.backend = backend
        self.report = report
        self.fan_out = fan_out
        self.rpc_version = rpc_version
        # called with the service's row (before it serves), and once it
        # serves and its first heartbeat is in
        self.on_registered = on_registered
        self.on_up = on_up
        # called once the server has stopped serving
        self.on_stopped = on_stopped
        # False for RPC servers that are not services of their own (the
        # API's attach endpoint): no row in the services table.
        self.register = register
        # a cluster this service serves active-active with others: it also
        # consumes the RPC server ``cluster_name``, whose messages go to
        # one member each
        self.cluster_name = cluster_name
        self.service_id = None
        self.service_uuid = None
        self._stop = threading.Event()
        # the newest capabilities to fan out, and the thread that sends
        # them (``beat``)
        self._fan_out_caps = None
        self._fan_out_due = threading.Event()
        self._fan_out_thread = None
        self._thread = None
        self._servers = []

    def start(self):
        if not self.register:
            self._serve()
            return

        # The row is registered before the RPC servers consume, but it is
        # up (a heartbeat) and its capabilities reach the schedulers only
        # once they do: a scheduler that picked a service whose queue did
        # not yet exist would cast a create into nothing.
        def _register(session):
            row = db_services.register(
                session, self.host, self.binary, self.topic,
                self.availability_zone, backend=self.backend,
                rpc_version=self.rpc_version,
                cluster_name=self.cluster_name)
            return row.id, row.uuid

        # (run again from its start when Galera refuses it: its values
        # are taken once it committed)
        self.service_id, self.service_uuid = db_api.run_writer(_register)
        if self.on_registered:
            self.on_registered(self)
        self._serve()
        # registered and serving: an outage from now on must not end the
        # process (the heartbeat loop tries again)
        self._beat_safely()
        if self.on_up:
            self.on_up(self)
        self._thread = threading.Thread(target=self._beat_loop,
                                        name='heartbeat-%s' % self.host,
                                        daemon=True)
        self._thread.start()
        LOG.info('%s started on %s (topic %s%s)', self.binary, self.host,
                 self.topic, ', cluster %s' % self.cluster_name
                 if self.cluster_name else '')

    def _serve(self):
        for server in filter(None, (self.host, self.cluster_name)):
            rpc_server = rpc.get_server(
                self.topic, server,
                [DatabaseGuard(e, server) for e in self.endpoints])
            rpc_server.start()
            self._servers.append(rpc_server)

    def beat(self):
        """One heartbeat: refresh the services row (with capabilities),
        then have them fanned out (to the schedulers) by a thread of
        their own, which sends the newest it has.  A fan-out waits for
        the bus (``rpc.bounded``: up to ``rpc.SEND_GRACE`` seconds while
        the broker is away), and a service whose database heartbeat
        waited for it was taken for down by the API although it served
        (schedulers read what the row holds when they miss a report)."""
        caps = None
        if self.report is not None:
            caps = self.report(self)
        # the row's refresh alone is run again when refused (a heartbeat
        # written through another Galera node than an operator's change
        # of the row); the fan-out follows its commit
        db_api.run_writer(db_services.heartbeat, self.service_id, caps)
        if self.fan_out is not None:
            self._fan_out_caps = caps
            self._fan_out_due.set()
            if self._fan_out_thread is None:
                self._fan_out_thread = threading.Thread(
                    target=self._fan_out_loop,
                    name='fan-out-%s' % self.host, daemon=True)
                self._fan_out_thread.start()

    def _fan_out_loop(self):
        while True:
            self._fan_out_due.wait()
            if self._stop.is_set():
                return
            self._fan_out_due.clear()
            try:
                self.fan_out(self, self._fan_out_caps)
            except Exception:
                LOG.exception('capability fan-out of %s failed', self.host)

    def _beat_loop(self):
        while not self._stop.wait(self.conf.report_interval):
            self._beat_safely()

    def _beat_safely(self):
        """One heartbeat; a database or bus outage is logged, and the next
        beat retries."""
        try:
            self.beat()
        except Exception:
            LOG.exception('heartbeat of %s failed', self.host)

    def _record_down(self):
        """A clean stop says so at once: the API refuses work for this
        service right away instead of waiting service_down_time (or a
        call timing out)."""
        if self.service_id is None:
            return
        try:
            db_api.run_writer(db_services.record_stopped, self.service_id)
            LOG.info('%s on %s stopped: recorded down', self.binary,
                     self.host)
        except Exception:
            LOG.exception('could not record %s on %s down', self.binary,
                          self.host)

    def stop(self):
        self._stop.set()
        self._fan_out_due.set()
        for rpc_server in self._servers:
            rpc_server.stop()
        if self._servers:
            # consumers of the in-process bus sleep until woken
            inproc_bus.wake()

    def wait(self):
        if self._servers:
            # The listener notices the stop only between two receives;
            # nudge in-process consumers so it does not sleep out its poll
            # timeout.
            done = threading.Event()
            nudger = threading.Thread(target=_nudge, args=(done,),
                                      daemon=True)
            nudger.start()
            try:
                for rpc_server in self._servers:
                    rpc_server.wait()
            finally:
                done.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._record_down()
        if self.on_stopped is not None:
            try:
                self.on_stopped()
            except Exception:
                LOG.exception('cleanup of %s failed', self.host)


def _nudge(done):
    while not done.wait(0.05):
        inproc_bus.wake()


def run_periodically(func, interval, stop, what):
    """Call ``func`` now and then every ``interval`` seconds until
    ``stop`` is set (only once when ``interval`` is 0).  An error is logged
    and the next round runs anyway (a database outage must not end the
    loop)."""
    while True:
        try:
            func()
        except Exception:
            LOG.exception('%s failed', what)
        if not interval or stop.wait(interval):
            return


def release_bus():
    """Close this process's RPC and notification transports."""
    rpc.cleanup()
    notify.cleanup()


def stop_all(services):
    """Stop ``services`` together and wait until each is done."""
    threads = [threading.Thread(target=svc.stop) for svc in services]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for svc in services:
        svc.wait()


def notify_systemd(state='READY=1', address=None):
    """sd_notify without a library: one datagram to ``address`` (default
    $NOTIFY_SOCKET)."""
    address = address or os.environ.get('NOTIFY_SOCKET')
    if not address:
        return
    if address.startswith('@'):
        address = '\0' + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.connect(address)
        sock.sendall(state.encode())


def run(conf, services):
    """Start ``services`` and block until SIGTERM or SIGINT; SIGHUP
    reloads the mutable options.

    The handlers only note the signal: a handler runs on the main thread
    between two bytecodes, and taking a lock there (an Event, a logging
    handler) that the main thread already holds would deadlock it.  The
    main loop acts on the notes.
    """
    received = []

    def _note(signum, _frame):
        received.append(signum)

    signal.signal(signal.SIGTERM, _note)
    signal.signal(signal.SIGINT, _note)
    signal.signal(signal.SIGHUP, _note)
    started = []
    try:
        for svc in services:
            svc.start()
            started.append(svc)
    except BaseException:
        # (a service that cannot start stops the ones before it: no
        # half-started process lingers on their threads)
        stop_all(started)
        release_bus()
        raise
    notify_systemd()
    stopping = False
    while not stopping:
        time.sleep(SIGNAL_POLL_S)
        while received:
            signum = received.pop(0)
            if signum == signal.SIGHUP:
                LOG.info('SIGHUP: reloading mutable options')
                conf.mutate_config_files()
            else:
                LOG.info('signal %d: stopping', signum)
                stopping = True
    notify_systemd('STOPPING=1')
    # Closing its channels, py-amqp warns of each message the broker sent
    # meanwhile ("Received method (60, 30) during closing channel"):
    # expected while stopping, and nothing is lost (unacknowledged
    # messages go back to the queue).
    logging.getLogger('amqp').setLevel(logging.ERROR)
    stop_all(services)
    release_bus()


def exit_on_start_error(conf, error):
    """End a console script that could not start, with ``error``'s message
    in one line (no traceback): in the log, and on standard error too when
    the log goes to a file."""
    LOG.error('%s', error)
    if conf.log_file or conf.log_dir:
        print(str(error), file=sys.stderr)
    sys.exit(1)


def admin_context():
    return cl_context.get_admin_context()
