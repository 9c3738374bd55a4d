"""The built-in WSGI server (cheroot, threads) and its worker processes.

With ``osapi_volume_workers`` > 1 the parent forks that many workers; each
binds the port with SO_REUSEPORT so the kernel spreads connections, and
each opens its own database pool and bus connection after the fork.
"""
import logging
import os
import select
import signal
import socket
import threading
import time

from cheroot import wsgi as cheroot_wsgi
from oslo_config import cfg

from cinder_lite.api import deploy
from cinder_lite.api import rpc_endpoint
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.db import api as db_api
from cinder_lite import service

LOG = logging.getLogger(__name__)

# Command-line shortcuts of the console scripts that serve the API for
# the two options people change first (the config file's values otherwise).
cli_opts = [
    cfg.PortOpt('port', help='Port the API listens on (overrides [DEFAULT] '
                             'osapi_volume_listen_port).'),
    cfg.HostAddressOpt('listen', help='Address the API listens on '
                                      '(overrides [DEFAULT] '
                                      'osapi_volume_listen).'),
]

# How often the server's connection loop wakes when idle (see start()).
EXPIRATION_INTERVAL_S = 0.05
# A worker that dies sooner than this after its start is not restarted.
MIN_WORKER_LIFE = 5.0
WAIT_POLL_S = 0.2


def apply_cli(conf):
    """Let ``--port``/``--listen`` (registered from ``cli_opts`` before
    parsing) override the config files."""
    if conf.port is not None:
        conf.set_override('osapi_volume_listen_port', conf.port)
    if conf.listen is not None:
        conf.set_override('osapi_volume_listen', conf.listen)


def check_listen(conf, reuse_port=False):
    """Bind the API's address and let it go again, so that a port another
    process holds is said in one line before any service starts.  Raises
    CannotListen."""
    address = (conf.osapi_volume_listen, conf.osapi_volume_listen_port)
    try:
        family = socket.getaddrinfo(*address, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            # as the server binds it: a port in TIME_WAIT is free
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(address)
    except OSError as e:
        raise exception.CannotListen(address=address[0], port=address[1],
                                     reason=e.strerror or str(e))


class APIServer:
    """A service object (start/stop/wait) serving the API in threads."""

    def __init__(self, conf, app=None, reuse_port=False):
        self.conf = conf
        self.app = app
        self.reuse_port = reuse_port
        self._server = None
        self._thread = None

    @property
    def port(self):
        return self._server.bind_addr[1]

    def start(self):
        app = self.app or deploy.make_app(self.conf)
        self._server = cheroot_wsgi.Server(
            (self.conf.osapi_volume_listen,
             self.conf.osapi_volume_listen_port), app,
            numthreads=self.conf.osapi_volume_threads,
            server_name=constants.API_BINARY, reuse_port=self.reuse_port,
            request_queue_size=128)
        # cheroot's connection loop looks at a stop request once per
        # select() timeout, half a second by default: every stop waited
        # that out.  (Ten idle wake-ups a second cost nothing to speak of.)
        self._server.expiration_interval = EXPIRATION_INTERVAL_S
        try:
            self._server.prepare()
        except OSError as e:
            raise exception.CannotListen(
                address=self.conf.osapi_volume_listen,
                port=self.conf.osapi_volume_listen_port,
                reason=e.strerror or str(e))
        self._thread = threading.Thread(target=self._server.serve,
                                        name='api-server', daemon=True)
        self._thread.start()
        LOG.info('API listening on %s:%s (pid %d)',
                 self.conf.osapi_volume_listen, self.port, os.getpid())

    def stop(self):
        if self._server is not None:
            self._server.stop()

    def wait(self):
        if self._thread is not None:
            self._thread.join(timeout=10)


def run_workers(conf, run_one):
    """Fork ``osapi_volume_workers`` children running ``run_one()``.

    SIGTERM/SIGINT stop them all; SIGHUP is passed on (each worker
    reloads its mutable options).  A worker that dies unasked is started
    again, unless it died within ``MIN_WORKER_LIFE`` seconds of its start
    (a worker that cannot start, e.g. because the port is taken, would
    otherwise be restarted forever): then every worker is stopped.  Returns
    the exit status for the parent: 0 after a requested stop, 1 otherwise.

    Under systemd (``$NOTIFY_SOCKET``) the parent speaks for the unit: the
    workers report READY=1 to a socket of the parent, which tells systemd
    once every first worker is ready, and STOPPING=1 when it stops them.
    """
    stopping = []
    children = {}

    def _signal_children(signum):
        for child in list(children):
            try:
                os.kill(child, signum)
            except ProcessLookupError:
                pass

    def _terminate(signum, _frame):
        stopping.append(signum)
        _signal_children(signal.SIGTERM)

    def _reload(signum, _frame):
        _signal_children(signal.SIGHUP)

    # Handlers first: a signal between two forks must not orphan workers.
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    signal.signal(signal.SIGHUP, _reload)
    systemd = os.environ.get('NOTIFY_SOCKET')
    inbox = None
    if systemd:
        inbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        inbox.bind('\0cinder-lite-api-%d' % os.getpid())
        inbox.setblocking(False)
        os.environ['NOTIFY_SOCKET'] = '@cinder-lite-api-%d' % os.getpid()

    def _spawn():
        pid = os.fork()
        if pid == 0:
            if inbox is not None:
                inbox.close()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
            status = 0
            try:
                run_one()
            except BaseException:
                LOG.exception('API worker %d failed', os.getpid())
                status = 1
            finally:
                logging.shutdown()
                os._exit(status)
        children[pid] = time.monotonic()

    for _ in range(conf.osapi_volume_workers):
        _spawn()
    ready = 0 if inbox is not None else None
    told_stopping = False
    failed = False
    while children:
        if inbox is not None:
            select.select([inbox], [], [], WAIT_POLL_S)
            while True:
                try:
                    message = inbox.recv(4096)
                except BlockingIOError:
                    break
                if ready is not None and b'READY=1' in message.split():
                    ready += 1
                    if ready == conf.osapi_volume_workers:
                        service.notify_systemd('READY=1', systemd)
                        ready = None
            if stopping and not told_stopping:
                service.notify_systemd('STOPPING=1', systemd)
                told_stopping = True
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                continue
        else:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            except InterruptedError:
                continue
        started = children.pop(pid, None)
        if started is None or stopping:
            continue
        LOG.error('API worker %d exited unasked (status %d)', pid, status)
        if time.monotonic() - started < MIN_WORKER_LIFE:
            failed = True
            _terminate(signal.SIGTERM, None)
        else:
            _spawn()
    return 1 if failed else 0


def build(conf, reuse_port=False):
    """The API's services: the WSGI server and the RPC endpoint compute
    nodes send attach requests to; both share one service layer."""
    services = deploy.Services(conf)
    return [
        rpc_endpoint.build_service(conf, services.attachments),
        APIServer(conf, deploy.make_app(conf, services),
                  reuse_port=reuse_port),
    ]


def worker_main(conf):
    """Body of one API worker process."""
    db_api.configure(conf)
    try:
        service.run(conf, build(conf,
                                reuse_port=conf.osapi_volume_workers > 1))
    finally:
        service.release_bus()
        db_api.dispose()
