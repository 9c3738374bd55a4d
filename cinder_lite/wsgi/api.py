"""The API as a WSGI application for an external server::

    gunicorn --workers 4 --threads 8 -b 127.0.0.1:8776 \
        cinder_lite.wsgi.api:application
    uwsgi --http 127.0.0.1:8776 --processes 4 --threads 8 \
        --module cinder_lite.wsgi.api:application

The config files come from ``CINDER_LITE_CONFIG_FILES`` (comma separated),
else oslo.config's search (``/etc/cinder-lite/cinder-lite.conf`` …).  Each
worker process also serves the bus endpoint compute nodes send attach
requests to (topic ``cinder-lite-api``), as ``cinder-lite-api`` does; it is
started when the worker loads the application, after the server forked it
(do not preload the application).
"""
import atexit
import os
import threading

from cinder_lite.api import auth
from cinder_lite.api import deploy
from cinder_lite.api import rpc_endpoint
from cinder_lite.cmd import config
from cinder_lite.db import api as db_api
from cinder_lite import service

CONFIG_ENV = 'CINDER_LITE_CONFIG_FILES'

_lock = threading.Lock()
_app = None


def init_application():
    argv = []
    for path in filter(None, os.environ.get(CONFIG_ENV, '').split(',')):
        argv += ['--config-file', path.strip()]
    conf = config.parse_args(argv)
    if conf.auth_strategy == 'noauth':
        # (the address is the WSGI server's, not osapi_volume_listen)
        auth.warn_noauth()
    db_api.configure(conf)
    services = deploy.Services(conf)
    endpoint = rpc_endpoint.build_service(conf, services.attachments)
    endpoint.start()

    def _shutdown():
        endpoint.stop()
        endpoint.wait()
        service.release_bus()
        db_api.dispose()

    atexit.register(_shutdown)
    return deploy.make_app(conf, services)


def application(environ, start_response):
    """Loads the application at the first request of this process."""
    global _app
    if _app is None:
        with _lock:
            if _app is None:
                _app = init_application()
    return _app(environ, start_response)
