"""The real Glance alone, without Keystone, for benchmarks: the image API
v2 that cinder_lite downloads from, without a whole cloud around it.

``Glance(workdir).start()`` runs glance-api (Glance 33 from the
OpenStack virtualenv that ``tools/openstack-venv`` makes, see
openstack.py) under gunicorn on a free loopback port, as one process
logging to ``<workdir>/glance.log``, with:

* Glance's default paste pipeline (no auth: every request gets Glance's
  unauthenticated context, whatever its X-Auth-Token);
* a policy file that opens the image calls cinder_lite and the caller
  make (create, show, list, upload, download, update, delete) to that
  context, which has no roles; every other rule keeps Glance's default;
* an SQLite database and the file store, both under ``workdir``.

cinder_lite reaches it through ``glance_api_servers``; in noauth mode its
token (``user:project``) is sent along and ignored.  The integration
tests use a Glance with Keystone instead (openstack.NovaStack).

Only loopback addresses are used; ``stop()`` ends the process by pid.
"""
import os
import shutil
import subprocess

import requests

from tests.harness import cluster as cluster_mod
from tests.harness import openstack
from tests.harness import util

HOST = '127.0.0.1'
START_TIMEOUT = 120.0
# the calls opened to the unauthenticated context (policy rule names)
OPEN_RULES = ('add_image', 'get_image', 'get_images', 'upload_image',
              'download_image', 'modify_image', 'delete_image')


class Glance:

    def __init__(self, workdir, port=None, threads=4):
        """``port``: the port to listen on (a free one by default), for
        a caller that must give Glance's address out before it starts;
        ``threads``: requests served at once (1 for uploads at once,
        which in more threads find Glance's SQLite database locked)."""
        self.workdir = str(workdir)
        self.port = port
        self.threads = threads
        self.process = None

    def path(self, *parts):
        return os.path.join(self.workdir, *parts)

    @property
    def url(self):
        return 'http://%s:%d' % (HOST, self.port)

    def start(self):
        if not os.path.exists(openstack.venv_bin('gunicorn')):
            raise cluster_mod.ServiceUnavailable(
                'no OpenStack virtualenv at %s (make it with '
                'tools/openstack-venv)' % openstack.VENV)
        dirs = {name: self.path(name) for name in
                ('images', 'staging', 'tasks', 'locks', 'gunicorn')}
        for path in dirs.values():
            os.makedirs(path, exist_ok=True)
        # the paste pipeline is read from the file next to glance-api.conf
        shutil.copy(os.path.join(openstack.VENV, 'etc', 'glance',
                                 'glance-api-paste.ini'), self.workdir)
        with open(self.path('policy.yaml'), 'w') as f:
            for rule in OPEN_RULES:
                f.write('"%s": ""\n' % rule)
        conf = cluster_mod.write_conf(self.path('glance-api.conf'), {
            'DEFAULT': {'log_dir': '', 'use_stderr': 'true',
                        'enabled_backends': 'fs:file',
                        'enabled_import_methods': '[glance-direct]'},
            'database': {'connection': cluster_mod.sqlite_url(
                self.path('glance.sqlite'))},
            **openstack.glance_stores(dirs),
            'oslo_policy': {'policy_file': self.path('policy.yaml')},
            'oslo_concurrency': {'lock_path': dirs['locks']},
        })
        done = subprocess.run(
            [openstack.venv_bin('glance-manage'), '--config-file', conf,
             'db_sync'], cwd=self.workdir, capture_output=True, text=True,
            timeout=300)
        if done.returncode != 0:
            raise cluster_mod.ClusterError('glance-manage db_sync failed:\n'
                                           + done.stderr[-4000:])
        if self.port is None:
            self.port = util.free_port()
        # gunicorn reads gunicorn.conf.py from its working directory, so
        # the command line holds nothing for Glance's oslo.config
        with open(os.path.join(dirs['gunicorn'], 'gunicorn.conf.py'),
                  'w') as f:
            f.write('wsgi_app = %r\nbind = [%r]\nworkers = 1\n'
                    'threads = %d\ngraceful_timeout = 5\ntimeout = 600\n'
                    'control_socket_disable = True\n'
                    % ('glance.wsgi.api:application',
                       '%s:%d' % (HOST, self.port), self.threads))
        self.process = cluster_mod.Process(
            'glance', [openstack.venv_bin('gunicorn')],
            self.path('glance.log'), dirs['gunicorn'],
            env={'OS_GLANCE_CONFIG_DIR': self.workdir}).start()

        def answers():
            if not self.process.alive():
                raise cluster_mod.ClusterError(
                    'glance-api exited:\n' + cluster_mod.tail(
                        self.path('glance.log')))
            try:
                return requests.get(self.url + '/', timeout=5).status_code \
                    < 500
            except requests.RequestException:
                return False
        util.wait_for(answers, START_TIMEOUT, interval=0.3,
                      what='glance-api answering')
        return self

    def worker_pids(self):
        """The gunicorn master and its worker(s)."""
        return [self.process.pid] + cluster_mod.child_pids(self.process.pid)

    def stop(self):
        if self.process is not None:
            self.process.stop()

    # -- the image API --------------------------------------------------------
    def call(self, method, path, expect, **kwargs):
        resp = requests.request(method, self.url + '/v2' + path,
                                timeout=600, **kwargs)
        if resp.status_code != expect:
            raise cluster_mod.ClusterError('Glance %s %s: %d %s' % (
                method, path, resp.status_code, resp.text[:500]))
        return resp

    def make_image(self, name, path, disk_format, **properties):
        """An active image holding the file at ``path``; returns it."""
        image = self.call('POST', '/images', 201, json=dict(
            properties, name=name, disk_format=disk_format,
            container_format='bare')).json()
        with open(path, 'rb') as f:
            self.call('PUT', '/images/%s/file' % image['id'], 204,
                      data=iter(lambda: f.read(1024 * 1024), b''),
                      headers={'Content-Type': 'application/octet-stream'})
        return self.call('GET', '/images/%s' % image['id'], 200).json()
