"""The built-in WSGI server (cheroot, threads) and its worker processes.

With ``osapi_volume_workers`` > 1 the parent forks that many workers; each
binds the port with SO_REUSEPORT so the kernel spreads connections, and
each opens its own database pool and bus connection after the fork.
"""
import logging
import os
import signal
import threading

from cheroot import wsgi as cheroot_wsgi

from cinder_lite.api import deploy
from cinder_lite.api import rpc_endpoint
from cinder_lite.api import rpcapi
from cinder_lite.common import rpc
from cinder_lite.common import service
from cinder_lite.db import api as db_api

LOG = logging.getLogger(__name__)


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
            server_name='cinder-lite-api', reuse_port=self.reuse_port,
            request_queue_size=128)
        self._server.prepare()
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
    """Fork ``osapi_volume_workers`` children running ``run_one()``; stop
    them on SIGTERM/SIGINT and return when all are gone."""
    children = set()
    for _ in range(conf.osapi_volume_workers):
        pid = os.fork()
        if pid == 0:
            try:
                run_one()
            finally:
                os._exit(0)
        children.add(pid)

    def _forward(signum, _frame):
        for child in list(children):
            try:
                os.kill(child, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, _forward)
    signal.signal(signal.SIGINT, _forward)
    while children:
        try:
            pid, _status = os.wait()
        except ChildProcessError:
            break
        children.discard(pid)


def build(conf, reuse_port=False):
    """The API's services: the WSGI server and the RPC endpoint compute
    nodes send attach requests to; both share one service layer."""
    services = deploy.Services(conf)
    return [
        service.RPCService(conf, 'cinder-lite-api', rpcapi.TOPIC, conf.host,
                           [rpc_endpoint.AttachmentEndpoint(
                               services.attachments)],
                           conf.storage_availability_zone, register=False),
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
        rpc.cleanup()
        db_api.dispose()
