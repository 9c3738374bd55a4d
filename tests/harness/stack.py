"""The whole of cinder_lite in this process, for functional tests.

``Stack`` writes a config file, parses it into the global config (as the
entry points do), migrates a fresh SQLite database and starts the
scheduler, the volume backends and the API on an ephemeral port, all on
the in-process bus.  ``Client`` talks to it over real HTTP.
``start_all`` runs ``cinder-lite-all`` as a process of its own instead.
"""
import atexit
import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid

from oslo_config import cfg
import requests
import sqlalchemy

from cinder_lite.api import server
from cinder_lite.backup import service as backup_service
from cinder_lite.cmd import all as cmd_all
from cinder_lite.cmd import config
from cinder_lite.common import context as cl_context
from cinder_lite.common import policy
from cinder_lite.db import api as db_api
from cinder_lite.db import migration
from cinder_lite.scheduler import service as scheduler_service
from cinder_lite import service
from cinder_lite.volume import service as volume_service
from tests.harness import util

PROJECT = '0123456789abcdef0123456789abcdef'
OTHER_PROJECT = 'fedcba9876543210fedcba9876543210'


class Client:
    """HTTP client speaking Cinder's noauth dialect."""

    def __init__(self, base, project=PROJECT, user='admin', roles=None,
                 version='3.71', project_in_url=True):
        self.base = base.rstrip('/')
        self.project = project
        self.prefix = '/v3/%s' % project if project_in_url else '/v3'
        self.headers = {'X-Auth-Token': '%s:%s' % (user, project)}
        if roles:
            self.headers['X-Roles'] = roles
        if version:
            self.headers['OpenStack-API-Version'] = 'volume %s' % version
        self.session = requests.Session()
        # the stack is on loopback: no proxy or ~/.netrc to look up (requests
        # reads the environment and ~/.netrc at every request otherwise,
        # ~2 ms each on the test machine)
        self.session.trust_env = False

    def request(self, method, path, json=None, data=None, headers=None,
                raw_path=False):
        url = self.base + (path if raw_path else self.prefix + path)
        hdrs = dict(self.headers)
        hdrs.update(headers or {})
        return self.session.request(method, url, json=json, data=data,
                                    headers=hdrs, timeout=30)

    def get(self, path, **kw):
        return self.request('GET', path, **kw)

    def post(self, path, json=None, **kw):
        return self.request('POST', path, json=json, **kw)

    def put(self, path, json=None, **kw):
        return self.request('PUT', path, json=json, **kw)

    def delete(self, path, **kw):
        return self.request('DELETE', path, **kw)

    # -- conveniences -------------------------------------------------------
    def create_type(self, name=None, specs=None, is_public=True):
        body = {'volume_type': {'name': name or 'type-%s' % uuid.uuid4().hex,
                                'os-volume-type-access:is_public':
                                    is_public}}
        if specs:
            body['volume_type']['extra_specs'] = specs
        resp = self.post('/types', json=body)
        assert resp.status_code == 200, resp.text
        return resp.json()['volume_type']

    def create_volume(self, size=1, wait=True, status='available', **extra):
        body = {'volume': dict(size=size, **extra)}
        resp = self.post('/volumes', json=body)
        assert resp.status_code == 202, resp.text
        volume = resp.json()['volume']
        if wait:
            volume = self.wait_volume(volume['id'], status)
        return volume

    def wait_volume(self, volume_id, status):
        def _check():
            vol = self.get('/volumes/%s' % volume_id).json()['volume']
            if vol['status'] == status:
                return vol
            assert vol['status'] not in ('error', 'error_deleting') or \
                status.startswith('error'), vol
            return None
        return util.wait_for(_check, what='volume %s %s' % (volume_id, status))

    def wait_deleted(self, volume_id):
        util.wait_for(lambda: self.get('/volumes/%s' % volume_id).status_code
                      == 404, what='volume %s deleted' % volume_id)


# A copy of the SQLite database the migrations made for this process's
# first stack, before any service wrote to it: later stacks start from a
# copy instead of running the ~20 migrations again (~0.08 s of CPU a
# stack; a few hundred stacks in the functional tier).
_schema = {'template': None}


def _fresh_sqlite(connection):
    """The path of ``connection``'s SQLite file when it is a file that
    does not exist yet; None otherwise."""
    url = sqlalchemy.engine.make_url(connection)
    if url.get_backend_name() != 'sqlite' or not url.database or \
            url.database == ':memory:' or os.path.exists(url.database):
        return None
    return url.database


def _keep_schema(path):
    workdir = tempfile.mkdtemp(prefix='cl-schema-')
    atexit.register(shutil.rmtree, workdir, True)
    template = os.path.join(workdir, 'schema.sqlite')
    # (SQLite's backup API: a consistent copy whatever the journal mode)
    with contextlib.closing(sqlite3.connect(path)) as source, \
            contextlib.closing(sqlite3.connect(template)) as copy:
        source.backup(copy)
    _schema['template'] = template


class Stack:

    def __init__(self, state_path, backends=None, extra=None, sections=None):
        """``backends``: section -> {option: value}; ``extra``: [DEFAULT]
        options; ``sections``: other config sections."""
        self.state_path = str(state_path)
        self.backends = backends or {'file': {}}
        self.extra = extra or {}
        self.sections = sections or {}
        self.services = []
        self.api = None

    def _write_config(self):
        lines = ['[DEFAULT]',
                 'state_path = %s' % self.state_path,
                 'host = testnode',
                 'osapi_volume_listen = 127.0.0.1',
                 'osapi_volume_listen_port = 0',
                 'enabled_backends = %s' % ','.join(self.backends),
                 'report_interval = 1',
                 # a service is down 10 beats after its last one: a stack
                 # beside an OpenStack deployment on a 2-core machine once
                 # saw no beat land for over 3 s, and its first create was
                 # refused (503, no service reported); a clean stop is
                 # down at once whatever this says, and the tests of
                 # beats going stale run clusters with their own values
                 'service_down_time = 10']
        # long enough for a connect on a loaded 2-core machine (two test
        # workers beside an OpenStack deployment); a test of the timeout
        # itself sets a short one in ``extra``
        extra = dict({'volume_rpc_timeout': 10}, **self.extra)
        lines += ['%s = %s' % kv for kv in extra.items()]
        for section, opts in list(self.backends.items()) + list(
                self.sections.items()):
            lines.append('[%s]' % section)
            lines += ['%s = %s' % kv for kv in opts.items()]
        path = os.path.join(self.state_path, 'cinder-lite.conf')
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        return path

    def start(self):
        os.makedirs(self.state_path, exist_ok=True)
        # a new stack is a new process: no request of an earlier test is
        # this thread's current context
        cl_context.clear_current()
        conf = cfg.CONF
        conf.reset()
        conf.clear()
        policy.reset()
        config.parse_args(['--config-file', self._write_config()], conf,
                          default_transport_url=cmd_all.EMBEDDED_TRANSPORT)
        conf.set_override('control_exchange', 'test-%s' % uuid.uuid4().hex)
        self.conf = conf
        fresh = _fresh_sqlite(conf.database.connection)
        if fresh and _schema['template']:
            # the schema the migrations made for the first stack of this
            # process (upgrade below finds it at head: a no-op)
            shutil.copyfile(_schema['template'], fresh)
        db_api.configure(conf)
        migration.upgrade()
        if fresh and not _schema['template']:
            _keep_schema(fresh)
        self.scheduler = scheduler_service.build(conf)
        self.volume_services = volume_service.build(conf)
        # as cinder-lite-all: a backup service with the POSIX driver under
        # state_path
        self.backup_services = backup_service.build(conf)
        self.api_services = server.build(conf)
        self.api = self.api_services[-1]
        self.services = (self.scheduler + self.volume_services
                         + self.backup_services + self.api_services)
        for svc in self.services:
            svc.start()
        self.url = 'http://127.0.0.1:%d' % self.api.port
        return self

    def volume_service(self, section):
        for svc in self.volume_services:
            if svc.backend == section:
                return svc
        raise KeyError(section)

    def stop_backend(self, section):
        """Stop one volume service and wait until the API shows it down."""
        svc = self.volume_service(section)
        svc.stop()
        svc.wait()
        api = self.client()

        def down():
            states = {s['host']: s['state'] for s in
                      api.get('/os-services').json()['services']}
            return states['testnode@%s' % section] == 'down'
        util.wait_for(down, timeout=10, what='%s down' % section)

    def client(self, **kwargs):
        return Client(self.url, **kwargs)

    def stop(self):
        service.stop_all(self.services)
        service.release_bus()
        db_api.dispose()
        cfg.CONF.reset()
        cfg.CONF.clear()


def api_answers(port, host='127.0.0.1'):
    """Whether a cinder_lite API answers on ``port`` (its versions
    document, 300 Multiple Choices)."""
    try:
        return requests.get('http://%s:%d/' % (host, port),
                            timeout=1).status_code == 300
    except requests.ConnectionError:
        return False


@contextlib.contextmanager
def on_server(path, kind, prefix):
    """A started ``Stack`` at ``path`` on a fresh database of ``kind``
    (``cluster.scratch_database``, which names it from ``prefix``); its
    client.  Stopped, and the database dropped, after."""
    from tests.harness import cluster
    with cluster.scratch_database(kind, prefix) as url:
        s = Stack(path, sections={'database': {'connection': url}}).start()
        try:
            yield s.client()
        finally:
            s.stop()


def start_all(workdir, env=None, extra=''):
    """``cinder-lite-all`` as a process, on a free port with its state
    under ``workdir`` (also its working directory), once its API answers;
    returns (process, port, log file).  ``extra``: more [DEFAULT] lines."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = util.free_port()
    conf = workdir / 'cinder-lite.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\nosapi_volume_listen_port'
                    ' = %d\n%s' % (workdir / 'state', port, extra))
    log = open(workdir / 'all.log', 'w')
    proc = subprocess.Popen([sys.executable, '-m', 'cinder_lite.cmd.all',
                             '--config-file', str(conf)], stdout=log,
                            stderr=subprocess.STDOUT, env=env,
                            cwd=str(workdir))
    deadline = time.monotonic() + 30
    while True:
        if api_answers(port):
            return proc, port, log
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            log.close()
            raise AssertionError('no API after 30 s:\n%s' % (
                workdir / 'all.log').read_text())
        time.sleep(0.1)
