"""OpenStack's compute side around a distributed cinder_lite: Keystone,
Glance, Placement and Nova on this machine, for integration tests, for
``tools/tempest`` and for a person, through ``tools/nova-stack``.

``NovaStack().start()`` brings up, each as its own process logging to
``<workdir>/<name>.log``:

* Keystone (fernet tokens), served by gunicorn, bootstrapped with
  ``keystone-manage bootstrap``; service project ``service`` with users
  ``nova``, ``placement``, ``glance`` and ``cinder-lite``;
* Glance (image API v2), served by gunicorn, with keystone auth, the file
  store under ``<workdir>/glance/images`` and its own database,
  registered in the catalog as ``image``;
* Placement, served by gunicorn;
* nova-api (gunicorn), nova-conductor, nova-scheduler and two nova-compute
  services with ``fake.FakeDriver`` (hosts ``compute-1`` and
  ``compute-2``), cell0 and cell1 made with ``nova-manage cell_v2``;
* cinder_lite (a ``Cluster`` on MariaDB: API, scheduler, volume nodes
  ``ma`` and ``mb``, both multiattach file backends, and, given
  ``rbd_backend`` (the options of an RBD backend section), a third node
  ``rbd`` with backend RBD_BACKEND on that Ceph pool, and a backup
  service, host BACKUP_HOST, with the POSIX store under
  ``<workdir>/cinder-lite/backup``) with ``auth_strategy = keystone``,
  registered in the catalog as ``volumev3`` and ``block-storage``.

Nova also needs a ``network`` endpoint: ``no_network.py`` answers there
that this cloud has no ports (see its docstring).

Every database is fresh (``cl_os_<run>_<name>`` on MariaDB) and Nova has a
RabbitMQ vhost of its own; ``stop()`` ends every process by pid and drops
the databases.  No Neutron: servers boot with ``"networks": "none"``.

Nova, Placement, Keystone and Glance come from their own virtualenv, made by
``tools/openstack-venv`` (``CINDER_LITE_OPENSTACK_VENV``, default
``~/.cache/cinder_lite/openstack-venv``), so their pins never meet ours.
Without it ``check_available`` raises ``ServiceUnavailable``.

Only loopback addresses are used.  Like cluster.py this module imports no
pytest.
"""
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid

import requests
from requests import adapters
from urllib3.util import retry

from tests.harness import cluster as cluster_mod
from tests.harness import util

VENV = os.environ.get('CINDER_LITE_OPENSTACK_VENV') or os.path.join(
    os.path.expanduser('~'), '.cache', 'cinder_lite', 'openstack-venv')
STAMP = '.cinder-lite-requirements'
REGION = 'RegionOne'
DOMAIN = 'Default'
ADMIN_PASSWORD = 'admin-secret'
SERVICE_PASSWORD = 'service-secret'
USER_PASSWORD = 'user-secret'
SERVICE_USERS = ('nova', 'placement', 'glance', 'cinder-lite')
COMPUTES = ('compute-1', 'compute-2')
START_TIMEOUT = 180.0
HOST = '127.0.0.1'
ERROR_LINES = 120      # per log, in a failed test's report
# the RBD backend's section, and its node's host: a name no other test's
# backend on the shared pool has, since a backend's export records are an
# omap object of the pool named after its section
RBD_BACKEND = 'rbd-os'
RBD_HOST = 'node-rbd-os'
# cinder_lite's backup service: the POSIX store in a directory of the
# deployment's work directory
BACKUP_HOST = 'node-backup-os'
BACKUP_DRIVER = 'cinder_lite.backup.drivers.posix.PosixBackupDriver'
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def glance_stores(dirs):
    """glance-api.conf's sections for one file store, with the staging
    and tasks stores Glance 33 wants, under ``dirs['images']``,
    ``dirs['staging']`` and ``dirs['tasks']``."""
    return {
        'glance_store': {'default_backend': 'fs'},
        'fs': {'filesystem_store_datadir': dirs['images']},
        'os_glance_staging_store': {
            'filesystem_store_datadir': dirs['staging']},
        'os_glance_tasks_store': {
            'filesystem_store_datadir': dirs['tasks']},
    }


def fernet_keys(repository):
    """A Fernet key repository as Keystone's setup commands make it:
    files 0 (the staged key) and 1 (the primary), each 32 random bytes in
    URL-safe base64, readable by their owner only."""
    os.makedirs(repository, mode=0o700, exist_ok=True)
    for name in ('0', '1'):
        path = os.path.join(repository, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, 'wb') as f:
            f.write(base64.urlsafe_b64encode(os.urandom(32)))


def venv_bin(name):
    return os.path.join(VENV, 'bin', name)


def check_available():
    """Raise ServiceUnavailable unless the OpenStack virtualenv, RabbitMQ
    and MariaDB are there."""
    if not os.path.exists(os.path.join(VENV, STAMP)):
        raise cluster_mod.ServiceUnavailable(
            'no OpenStack virtualenv at %s (make it with tools/openstack-venv)'
            % VENV)
    cluster_mod.check_services('mysql')


class Identity:
    """Keystone's REST API as an administrator (and as anyone else)."""

    def __init__(self, url):
        self.url = url            # http://127.0.0.1:PORT/v3
        self.session = _session()
        self._admin = None

    def token(self, user, password, project=None, domain=DOMAIN,
              project_id=None):
        """(token, body) for ``user`` scoped to ``project`` (a name in
        ``domain``) or ``project_id``."""
        auth = {'identity': {'methods': ['password'], 'password': {
            'user': {'name': user, 'domain': {'name': domain},
                     'password': password}}}}
        if project_id:
            auth['scope'] = {'project': {'id': project_id}}
        elif project:
            auth['scope'] = {'project': {'name': project,
                                         'domain': {'name': domain}}}
        resp = self.session.post(self.url + '/auth/tokens',
                                 json={'auth': auth}, timeout=30)
        if resp.status_code != 201:
            raise cluster_mod.ClusterError('token for %s: %d %s' % (
                user, resp.status_code, resp.text))
        return resp.headers['X-Subject-Token'], resp.json()['token']

    def admin(self):
        if self._admin is None:
            self._admin = self.token('admin', ADMIN_PASSWORD, 'admin')[0]
        return self._admin

    def call(self, method, path, body=None, expect=(200, 201, 204),
             headers=None):
        resp = self.session.request(method, self.url + path, json=body,
                                    headers=dict(headers or {},
                                                 **{'X-Auth-Token':
                                                    self.admin()}),
                                    timeout=30)
        if resp.status_code not in expect:
            raise cluster_mod.ClusterError('%s %s: %d %s' % (
                method, path, resp.status_code, resp.text))
        return resp.json() if resp.content else None

    def find(self, kind, name):
        """The id of the project/user/role/service called ``name``."""
        key = 'type' if kind == 'services' else 'name'
        items = self.call('GET', '/%s?%s=%s' % (kind, key, name))[kind]
        return items[0]['id'] if items else None

    def project(self, name):
        return self.find('projects', name) or self.call(
            'POST', '/projects', {'project': {'name': name,
                                              'domain_id': 'default'}}
        )['project']['id']

    def user(self, name, password, project_id=None):
        return self.find('users', name) or self.call(
            'POST', '/users', {'user': {
                'name': name, 'password': password, 'domain_id': 'default',
                'default_project_id': project_id}})['user']['id']

    def grant(self, project_id, user_id, role):
        self.call('PUT', '/projects/%s/users/%s/roles/%s' % (
            project_id, user_id, self.find('roles', role)))

    def register(self, service_type, name, url):
        """A catalog entry with public, internal and admin endpoints."""
        service_id = self.find('services', service_type) or self.call(
            'POST', '/services', {'service': {
                'type': service_type, 'name': name}})['service']['id']
        for interface in ('public', 'internal', 'admin'):
            self.call('POST', '/endpoints', {'endpoint': {
                'service_id': service_id, 'interface': interface,
                'region_id': REGION, 'url': url}})


def _session():
    """A keep-alive session that sends a GET again when the server
    closed the connection it reused as the request went out (gunicorn
    ends idle connections after its ``keepalive``; a request that
    crosses that close reads a reset), as any HTTP client of these APIs
    must.  Other methods are not sent again: they are not idempotent."""
    session = requests.Session()
    again = adapters.HTTPAdapter(max_retries=retry.Retry(
        total=3, connect=3, read=3, status=0, other=0,
        allowed_methods=frozenset(['GET', 'HEAD']), backoff_factor=0.1,
        raise_on_status=False))
    session.mount('http://', again)
    return session


class Client:
    """A user's session: a Keystone token scoped to one project and the
    catalog it came with; ``compute`` and ``volume`` call Nova and
    cinder_lite at a microversion, ``image`` calls Glance."""

    COMPUTE_VERSION = '2.60'
    VOLUME_VERSION = '3.71'

    def __init__(self, identity, user, password, project):
        self.token, body = identity.token(user, password, project)
        self.user_id = body['user']['id']
        self.project_id = body['project']['id']
        self.roles = sorted(r['name'] for r in body['roles'])
        self.endpoints = {
            entry['type']: e['url'] for entry in body['catalog']
            for e in entry['endpoints'] if e['interface'] == 'public'}
        self.session = _session()

    def _call(self, base, header, version, method, path, body, expect):
        resp = self.session.request(
            method, base + path, json=body, timeout=60,
            headers={'X-Auth-Token': self.token,
                     'OpenStack-API-Version': '%s %s' % (header, version)})
        if expect is not None and resp.status_code != expect:
            raise AssertionError('%s %s: expected %d, got %d %s' % (
                method, path, expect, resp.status_code, resp.text[:2000]))
        return resp

    def compute(self, method, path, body=None, expect=None,
                version=COMPUTE_VERSION):
        return self._call(self.endpoints['compute'], 'compute', version,
                          method, path, body, expect)

    def volume(self, method, path, body=None, expect=None,
               version=VOLUME_VERSION):
        return self._call(self.endpoints['volumev3'], 'volume', version,
                          method, path, body, expect)

    def image(self, method, path, body=None, data=None, expect=None):
        """Glance's image API (v2, no microversions); ``data``: raw bytes
        sent as application/octet-stream instead of a JSON ``body``."""
        headers = {'X-Auth-Token': self.token}
        if data is not None:
            headers['Content-Type'] = 'application/octet-stream'
        resp = self.session.request(method, self.endpoints['image'] + path,
                                    json=body, data=data, headers=headers,
                                    timeout=60)
        if expect is not None and resp.status_code != expect:
            raise AssertionError('%s %s: expected %d, got %d %s' % (
                method, path, expect, resp.status_code, resp.text[:2000]))
        return resp


class CinderLite(cluster_mod.Cluster):
    """The cinder_lite cluster in keystone mode: readiness is checked with
    a Keystone token of the admin project."""

    def __init__(self, identity, rbd_backend=None, **kwargs):
        super().__init__('mysql', **kwargs)
        self.identity = identity
        # two backends that can both share volumes, as a cloud Tempest
        # judges has them (devstack's LVM backends): a type with no
        # specs may land on either, and retyping it to a multiattach
        # type in place (Tempest's retype tests) must work on both
        self.nodes = {'ma': cluster_mod.NODES['ma'],
                      'mb': ('node-mb', 'mb', {})}
        # and an RBD backend that Tempest's volumes go to (tempest_conf
        # makes types naming it); volumes of other types go where the
        # capacity weigher sends them: the file backends, while the
        # machine's disk has more room than the test cluster's 2 GiB OSD
        self.rbd_backend = None
        if rbd_backend is not None:
            self.rbd_backend = RBD_BACKEND
            self.nodes['rbd'] = (RBD_HOST, RBD_BACKEND, dict(rbd_backend))
        # a backup service (cinder-lite-backup), started with the others:
        # the common config gives it the database, the message bus and
        # the credential key file the API and the volume services use;
        # its backups go to the POSIX store under <workdir>/backup
        self.backups = {'backup': BACKUP_HOST}
        self.process_sections['backup'] = {'DEFAULT': {
            'host': BACKUP_HOST, 'backup_driver': BACKUP_DRIVER,
            'backup_posix_path': '{workdir}/backup'}}

    def admin_auth(self):
        token, body = self.identity.token('admin', ADMIN_PASSWORD, 'admin')
        return body['project']['id'], token


class NovaStack:

    def __init__(self, workdir=None, keep_workdir=False, rbd_backend=None):
        self.run_id = uuid.uuid4().hex[:10]
        self.rbd_backend = rbd_backend
        self._own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix='cinder-lite-nova-')
        self.keep_workdir = keep_workdir
        self.processes = {}
        self.databases = []
        self.vhost = None
        self.ports = {}
        self.cinder = None
        self.identity = None

    # -- pieces ---------------------------------------------------------------
    def _db(self, name):
        db = 'cl_os_%s_%s' % (self.run_id, name)
        url = cluster_mod.create_database('mysql', db)
        self.databases.append(db)
        return url + '?charset=utf8mb4'

    def path(self, *parts):
        return os.path.join(self.workdir, *parts)

    def url(self, name):
        return 'http://%s:%d' % (HOST, self.ports[name])

    @property
    def keystone_url(self):
        return self.url('keystone') + '/v3'

    def run(self, *argv, env=None, timeout=300):
        proc = subprocess.run(
            [venv_bin(argv[0])] + list(argv[1:]), cwd=self.workdir,
            capture_output=True, text=True, timeout=timeout,
            env=dict(os.environ, **(env or {})))
        if proc.returncode != 0:
            raise cluster_mod.ClusterError('%s failed (%d):\n%s\n%s' % (
                ' '.join(argv), proc.returncode, proc.stdout[-4000:],
                proc.stderr[-4000:]))
        return proc.stdout

    def spawn(self, name, argv, env=None):
        proc = cluster_mod.Process(name, argv, self.path('%s.log' % name),
                                   self.workdir, env=env).start()
        self.processes[name] = proc
        return proc

    def gunicorn(self, name, app, env, threads=8):
        """Serve ``app`` with gunicorn.  Its settings come from
        ``gunicorn.conf.py`` in a directory of its own (gunicorn reads that
        file from its working directory), so the command line holds no
        arguments for the application's oslo.config to trip over."""
        where = self.path('gunicorn-%s' % name)
        os.makedirs(where, exist_ok=True)
        with open(os.path.join(where, 'gunicorn.conf.py'), 'w') as f:
            f.write('wsgi_app = %r\nbind = [%r]\nworkers = 1\n'
                    'threads = %d\ngraceful_timeout = 5\ntimeout = 120\n'
                    # (idle keep-alive connections live longer than the
                    # tests' polls wait between requests: gunicorn's 2 s
                    # made a poll every 2 s meet the close)
                    'keepalive = 75\n'
                    'control_socket_disable = True\n'
                    % (app, '%s:%d' % (HOST, self.ports[name]), threads))
        proc = cluster_mod.Process(name, [venv_bin('gunicorn')],
                                   self.path('%s.log' % name), where,
                                   env=env).start()
        self.processes[name] = proc

    def auth_section(self, user):
        return {
            'auth_type': 'password', 'auth_url': self.keystone_url,
            'username': user, 'password': SERVICE_PASSWORD,
            'project_name': 'service', 'user_domain_name': DOMAIN,
            'project_domain_name': DOMAIN, 'region_name': REGION}

    def authtoken_section(self, user):
        section = self.auth_section(user)
        section.pop('region_name')
        section.update({'www_authenticate_uri': self.keystone_url,
                        'service_token_roles_required': 'true'})
        return section

    def wait_http(self, name, path, timeout=START_TIMEOUT):
        def answers():
            self.check_alive()
            try:
                return requests.get(self.url(name) + path,
                                    timeout=5).status_code < 500
            except requests.RequestException:
                return False
        util.wait_for(answers, timeout, interval=0.3,
                      what='%s answering' % name)

    # -- Keystone -------------------------------------------------------------
    def start_keystone(self):
        conf = self.path('keystone.conf')
        keys = {k: self.path('keys', k) for k in ('fernet', 'credential')}
        cluster_mod.write_conf(conf, {
            'DEFAULT': {'log_dir': '', 'use_stderr': 'true'},
            'database': {'connection': self._db('keystone')},
            'token': {'provider': 'fernet'},
            # the fewest bcrypt rounds: a token in ms, not a second
            'identity': {'password_hash_rounds': '4'},
            'fernet_tokens': {'key_repository': keys['fernet']},
            'fernet_receipts': {'key_repository': keys['fernet']},
            'credential': {'key_repository': keys['credential']},
        })
        env = {'OS_KEYSTONE_CONFIG_FILES': conf}
        self.run('keystone-manage', '--config-file', conf, 'db_sync')
        # what keystone-manage fernet_setup and credential_setup write
        # (two interpreter starts fewer): a staged key 0 and a primary 1
        for what in ('fernet', 'credential'):
            fernet_keys(keys[what])
        self.run('keystone-manage', '--config-file', conf, 'bootstrap',
                 '--bootstrap-password', ADMIN_PASSWORD,
                 '--bootstrap-admin-url', self.keystone_url,
                 '--bootstrap-internal-url', self.keystone_url,
                 '--bootstrap-public-url', self.keystone_url,
                 '--bootstrap-region-id', REGION)
        self.gunicorn('keystone', 'keystone.wsgi.api:application', env)
        self.wait_http('keystone', '/v3')
        self.identity = Identity(self.keystone_url)
        service = self.identity.project('service')
        for name in SERVICE_USERS:
            user_id = self.identity.user(name, SERVICE_PASSWORD, service)
            self.identity.grant(service, user_id, 'service')
            if name in ('nova', 'placement', 'cinder-lite'):
                # Nova and Placement act as administrators of each other
                # (Placement's policy, Nova's admin context towards it);
                # Nova finds the servers of an external event (cinder_lite's
                # volume-extended) in any project only for an admin
                self.identity.grant(service, user_id, 'admin')

    # -- Glance ---------------------------------------------------------------
    def start_glance(self):
        """glance-api under gunicorn (Glance 33 runs only under a WSGI
        server: its ``glance-api`` script refuses to serve), one file
        store, keystone auth, no image cache."""
        where = self.path('glance')
        dirs = {name: self.path('glance', name)
                for name in ('images', 'staging', 'tasks', 'locks')}
        for path in dirs.values():
            os.makedirs(path, exist_ok=True)
        # the paste pipeline is read from the file next to glance-api.conf
        shutil.copy(os.path.join(VENV, 'etc', 'glance',
                                 'glance-api-paste.ini'), where)
        conf = cluster_mod.write_conf(os.path.join(where, 'glance-api.conf'), {
            'DEFAULT': {'log_dir': '', 'use_stderr': 'true',
                        'enabled_backends': 'fs:file',
                        # web-download would fetch URLs from anywhere
                        'enabled_import_methods': '[glance-direct,'
                                                  'copy-image]'},
            'database': {'connection': self._db('glance')},
            **glance_stores(dirs),
            'paste_deploy': {'flavor': 'keystone'},
            'keystone_authtoken': self.authtoken_section('glance'),
            'oslo_concurrency': {'lock_path': dirs['locks']},
        })
        self.run('glance-manage', '--config-file', conf, 'db_sync')
        self.gunicorn('glance', 'glance.wsgi.api:application',
                      {'OS_GLANCE_CONFIG_DIR': where})
        self.identity.register('image', 'glance', self.url('glance'))
        self.wait_http('glance', '/')

    # -- Placement ------------------------------------------------------------
    def start_placement(self):
        os.makedirs(self.path('placement'), exist_ok=True)
        cluster_mod.write_conf(self.path('placement', 'placement.conf'), {
            'placement_database': {'connection': self._db('placement')},
            'api': {'auth_strategy': 'keystone'},
            'keystone_authtoken': self.authtoken_section('placement'),
        })
        env = {'OS_PLACEMENT_CONFIG_DIR': self.path('placement')}
        self.run('placement-manage', '--config-file',
                 self.path('placement', 'placement.conf'), 'db', 'sync')
        self.gunicorn('placement', 'placement.wsgi.api:application', env)
        self.identity.register('placement', 'placement', self.url('placement'))
        self.wait_http('placement', '/')

    # -- cinder_lite ----------------------------------------------------------
    def start_cinder_lite(self):
        self.cinder = CinderLite(
            self.identity, rbd_backend=self.rbd_backend,
            workdir=self.path('cinder-lite'), keep_workdir=True,
            extra_default={'auth_strategy': 'keystone',
                           'allow_multiattach': 'true',
                           # os-volume_upload_image of in-use volumes
                           'enable_force_upload': 'true'},
            extra_sections={
                'keystone_authtoken': self.authtoken_section('cinder-lite'),
                # Nova is told when an attached volume grows (its
                # endpoint from the catalog, once Nova is registered)
                'nova': self.auth_section('cinder-lite')})
        self.cinder.start()
        url = self.cinder.url + '/v3/%(project_id)s'
        self.identity.register('volumev3', 'cinder-lite-v3', url)
        self.identity.register('block-storage', 'cinder-lite', url)

    # -- Nova -----------------------------------------------------------------
    def start_nova(self):
        os.makedirs(self.path('nova', 'state'), exist_ok=True)
        shutil.copy(os.path.join(VENV, 'etc', 'nova', 'api-paste.ini'),
                    self.path('nova', 'api-paste.ini'))
        transport = cluster_mod.RABBIT_URL
        self.vhost = cluster_mod.acquire_vhost(urllib.parse.unquote(
            urllib.parse.urlsplit(transport).username or 'guest'))
        if self.vhost:
            transport = cluster_mod.with_vhost(transport, self.vhost)
        api_db, cell0_db, cell1_db = (self._db(n) for n in
                                      ('nova_api', 'nova_cell0', 'nova'))
        common = {
            'DEFAULT': {
                'transport_url': transport,
                'state_path': self.path('nova', 'state'),
                'my_ip': HOST, 'my_block_storage_ip': HOST,
                'compute_driver': 'fake.FakeDriver',
                'host': 'nova-controller',
                # periodic tasks from the start, not after a random delay
                # of up to 60 s: the scheduler maps new compute hosts to
                # cell1 in its first round (discover_hosts_in_cells_interval)
                'periodic_fuzzy_delay': '0'},
            'api': {'auth_strategy': 'keystone'},
            'wsgi': {'api_paste_config': self.path('nova', 'api-paste.ini')},
            'keystone_authtoken': self.authtoken_section('nova'),
            'placement': self.auth_section('nova'),
            'cinder': dict(self.auth_section('nova'),
                           os_region_name=REGION,
                           catalog_info='volumev3::publicURL'),
            'service_user': dict(self.auth_section('nova'),
                                 send_service_user_token='true'),
            'neutron': self.auth_section('nova'),
            # Glance from the catalog (Nova calls it with the user's token)
            'glance': {'region_name': REGION, 'valid_interfaces': 'public'},
            'scheduler': {'discover_hosts_in_cells_interval': '2',
                          'workers': '1'},
            'conductor': {'workers': '1'},
            'oslo_concurrency': {'lock_path': self.path('nova', 'locks')},
            'vnc': {'enabled': 'false'},
            'oslo_messaging_rabbit': {'heartbeat_timeout_threshold': '0'},
        }
        cluster_mod.write_conf(self.path('nova', 'nova.conf'), common)
        cluster_mod.write_conf(self.path('nova', 'nova-db.conf'), {
            'api_database': {'connection': api_db},
            'database': {'connection': cell1_db}})
        conf = self.nova_db_conf()
        self.run('nova-manage', *conf, 'api_db', 'sync')
        self.run('nova-manage', *conf, 'cell_v2', 'map_cell0',
                 '--database_connection', cell0_db)
        self.run('nova-manage', *conf, 'cell_v2', 'create_cell',
                 '--name', 'cell1')
        self.run('nova-manage', *conf, 'db', 'sync')
        # the conductor first: a compute that starts before the conductor
        # consumes waits 10 s for its ping to time out, then asks again
        for binary in ('nova-conductor', 'nova-scheduler'):
            self.spawn(binary, [venv_bin(binary)] + conf)
        self.identity.register('compute', 'nova',
                               self.url('nova-api') + '/v2.1')
        # Nova needs a network endpoint even for servers without networks
        # (no_network.py says why); it answers that there are none
        self.spawn('no-network', [
            cluster_mod.python(), '-m', 'tests.harness.no_network',
            '--host', HOST, '--port', str(self.ports['no-network'])],
            env={'PYTHONPATH': ROOT})
        self.identity.register('network', 'no-network',
                               self.url('no-network'))
        env = {'OS_NOVA_CONFIG_DIR': self.path('nova'),
               # the first file is also the paste pipeline's
               'OS_NOVA_CONFIG_FILES': 'api-paste.ini;nova.conf;nova-db.conf'}
        self.gunicorn('nova-api', 'nova.wsgi.osapi_compute:application', env)
        for host in COMPUTES:
            path = self.path('nova', '%s.conf' % host)
            cluster_mod.write_conf(path, {'DEFAULT': {'host': host}})
            self.spawn(host, [venv_bin('nova-compute'), '--config-file',
                              self.path('nova', 'nova.conf'),
                              '--config-file', path])
        self.wait_http('nova-api', '/')

    def client(self, user, password, project):
        return Client(self.identity, user, password, project)

    def admin(self):
        return self.client('admin', ADMIN_PASSWORD, 'admin')

    def make_project(self, name, users):
        """Project ``name`` with ``users`` ({user: [roles]}), each with
        password USER_PASSWORD; returns the project id."""
        project = self.identity.project(name)
        for user, roles in users.items():
            user_id = self.identity.user(user, USER_PASSWORD, project)
            for role in roles:
                self.identity.grant(project, user_id, role)
        return project

    def nova_db_conf(self):
        """The arguments of a Nova process that reaches the databases."""
        return ['--config-file', self.path('nova', 'nova.conf'),
                '--config-file', self.path('nova', 'nova-db.conf')]

    # -- whole ----------------------------------------------------------------
    def start(self, timeout=START_TIMEOUT):
        check_available()
        # (a work directory given by the caller, e.g. tools/tempest's
        # <workdir>/stack, may not exist yet)
        os.makedirs(self.workdir, exist_ok=True)
        try:
            for name in ('keystone', 'glance', 'placement', 'nova-api',
                         'no-network'):
                self.ports[name] = util.free_port(HOST)
            self.start_keystone()
            self.start_glance()
            self.start_placement()
            self.start_cinder_lite()
            self.start_nova()
            self.wait_computes(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_computes(self, timeout):
        """Until both compute hosts are up and mapped to cell1 (a server
        scheduled to an unmapped host would end in cell0): the scheduler
        maps them (``discover_hosts_in_cells_interval``), and Nova's
        hypervisor list leaves out a host that has no mapping yet."""
        session = requests.Session()
        token, _ = self.identity.token('admin', ADMIN_PASSWORD, 'admin')

        def up():
            self.check_alive()
            try:
                resp = session.get(
                    self.url('nova-api') + '/v2.1/os-hypervisors',
                    headers={'X-Auth-Token': token,
                             'OpenStack-API-Version': 'compute 2.60'},
                    timeout=10)
            except requests.RequestException:
                return False
            if resp.status_code != 200:
                return False
            names = {h['hypervisor_hostname'] for h in
                     resp.json()['hypervisors'] if h['state'] == 'up'}
            return len(names) >= len(COMPUTES)
        util.wait_for(up, timeout, interval=0.5,
                      what='%d nova-compute hosts up and mapped to cell1'
                      % len(COMPUTES))

    def check_alive(self):
        dead = ['%s (rc %s)' % (p.name, p.popen.returncode)
                for p in self.processes.values() if not p.alive()]
        if dead:
            raise cluster_mod.ClusterError('%s exited:\n%s' % (
                ', '.join(dead), self.logs()))
        if self.cinder is not None:
            self.cinder.check_alive()

    def logs(self, lines=cluster_mod.LOG_TAIL_LINES):
        out = ['----- %s (pid %s) %s -----\n%s' % (
            name, proc.pid, proc.log_path,
            cluster_mod.tail(proc.log_path, lines))
            for name, proc in self.processes.items()]
        if self.cinder is not None:
            out.append(self.cinder.logs(lines))
        return '\n'.join(out)

    def errors(self, lines=ERROR_LINES):
        """The last ``lines`` ERROR lines of every service's log (oslo.log
        prefixes each line of a traceback with the level, so a
        RemoteError comes with the remote side's traceback): what a
        failed test's report carries, since a Nova failure such as a
        server in ERROR leaves its reason only in these logs."""
        logs = [(name, proc.log_path) for name, proc in self.processes.items()]
        if self.cinder is not None:
            logs += [('cinder-lite ' + name, proc.log_path)
                     for name, proc in self.cinder.processes.items()]
        out = []
        for name, path in logs:
            try:
                with open(path, encoding='utf-8', errors='replace') as f:
                    found = [line.rstrip('\n') for line in f
                             if ' ERROR ' in line]
            except OSError:
                continue
            if found:
                out.append('----- %s %s (%d ERROR lines) -----\n%s' % (
                    name, path, len(found), '\n'.join(found[-lines:])))
        return '\n'.join(out) or '(no ERROR lines in %s)' % self.workdir

    def stop(self):
        """Stop every process (Nova first), drop the databases.  One
        process that will not go does not keep the others running."""
        codes = {}
        try:
            for name in reversed(list(self.processes)):
                try:
                    self.processes[name].terminate()
                except OSError:
                    pass
            for name in reversed(list(self.processes)):
                try:
                    codes[name] = self.processes[name].stop()
                except (OSError, subprocess.SubprocessError) as e:
                    codes[name] = 'not stopped: %s' % e
            if self.cinder is not None:
                codes.update(('cinder-lite ' + k, v) for k, v in
                             self.cinder.stop_processes().items())
        finally:
            if self.cinder is not None:
                self.cinder.cleanup()
            for db in self.databases:
                try:
                    cluster_mod.drop_database('mysql', db)
                except Exception as e:
                    print('nova stack: could not drop %s: %s' % (db, e),
                          file=sys.stderr)
            self.databases = []
            cluster_mod.release_vhost(self.vhost)
            self.vhost = None
            if self._own_workdir and not self.keep_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
        return codes


def main():
    """Start the stack and keep it until interrupted."""
    import argparse
    import signal
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--workdir', help='keep configs and logs here')
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    # a shell starts background jobs with SIGINT ignored: take it back
    signal.signal(signal.SIGINT, signal.default_int_handler)
    stack = NovaStack(workdir=args.workdir, keep_workdir=True)
    started = time.monotonic()
    stack.start()      # stops what it started if it fails or is stopped
    try:
        print('OpenStack up in %.0f s; configs and logs in %s' % (
            time.monotonic() - started, stack.workdir))
        print('  export OS_AUTH_URL=%s OS_USERNAME=admin OS_PASSWORD=%s '
              'OS_PROJECT_NAME=admin OS_USER_DOMAIN_NAME=Default '
              'OS_PROJECT_DOMAIN_NAME=Default OS_REGION_NAME=%s'
              % (stack.keystone_url, ADMIN_PASSWORD, REGION))
        for name in ('keystone', 'glance', 'placement', 'nova-api'):
            print('  %-11s %s' % (name, stack.url(name)))
        print('  %-11s %s' % ('cinder_lite', stack.cinder.url))
        print('Ctrl-C stops everything.', flush=True)
        while True:
            time.sleep(1)
            stack.check_alive()
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()


if __name__ == '__main__':
    main()
