"""A wheel built from the checkout is what an operator installs (a release,
a distro package, the systemd guide's /opt virtualenv): it must carry
everything the services read at run time besides Python modules, the
database migrations first of all, then sync its database and serve.

The wheel is built from a copy of the source, so the checkout gets no
``build/`` directory, and installed without its dependencies into a
directory of its own that comes first on the path (the dependencies are
this interpreter's); ``.ci/run`` also installs it with its dependencies
into a fresh virtualenv, as an operator would."""
import os
import shutil
import subprocess
import sys
import zipfile

import requests

from tests.harness import stack as stack_mod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SOURCE = ('cinder_lite', 'setup.cfg', 'pyproject.toml', 'README.rst')


def build_wheel(tmp_path):
    src = tmp_path / 'src'
    src.mkdir()
    for name in SOURCE:
        path = os.path.join(ROOT, name)
        if os.path.isdir(path):
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns(
                '__pycache__', '*.pyc', '*.egg-info'))
        else:
            shutil.copy(path, src / name)
    out = tmp_path / 'dist'
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps',
                    '-w', str(out), str(src)], check=True,
                   capture_output=True, text=True, timeout=300)
    (wheel,) = out.glob('cinder_lite-*.whl')
    return wheel


def test_the_wheel_syncs_its_database_and_serves(tmp_path):
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    migrations = [n for n in names
                  if n.startswith('cinder_lite/db/migrations/')]
    assert 'cinder_lite/db/migrations/env.py' in migrations
    shipped = {os.path.basename(n) for n in migrations
               if '/versions/' in n and n.endswith('.py')}
    assert shipped == {n for n in os.listdir(os.path.join(
        ROOT, 'cinder_lite', 'db', 'migrations', 'versions'))
        if n.endswith('.py')}
    # every file of the dashboard (the page loads each of its scripts)
    static = os.path.join(ROOT, 'cinder_lite', 'dashboard', 'static')
    assert {'index.html', 'app.js', 'snapshots.js'} <= set(
        os.listdir(static))
    for name in os.listdir(static):
        assert 'cinder_lite/dashboard/static/' + name in names, name

    site = tmp_path / 'site'
    subprocess.run([sys.executable, '-m', 'pip', 'install', '-q',
                    '--no-deps', '--target', str(site), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    env = dict(os.environ, PYTHONPATH=str(site))
    where = subprocess.run(
        [sys.executable, '-c', 'import cinder_lite; print(cinder_lite.'
                               '__file__)'],
        env=env, cwd=str(tmp_path), capture_output=True, text=True,
        check=True).stdout.strip()
    assert where.startswith(str(site)), where

    state = tmp_path / 'state'
    conf = tmp_path / 'c.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\n' % state)
    synced = subprocess.run(
        [sys.executable, '-m', 'cinder_lite.cmd.manage', '--config-file',
         str(conf), 'db', 'sync'], env=env, cwd=str(tmp_path),
        capture_output=True, text=True, timeout=120)
    assert synced.returncode == 0, synced.stderr[-2000:]
    assert 'database at revision' in synced.stdout

    proc, port, log = stack_mod.start_all(tmp_path / 'run', env=env)
    try:
        api = stack_mod.Client('http://127.0.0.1:%d' % port)
        vol = api.create_volume(name='from-the-wheel')
        assert vol['status'] == 'available'
        page = requests.get('http://127.0.0.1:%d/dashboard/' % port,
                            timeout=10)
        assert page.status_code == 200 and '<html' in page.text.lower()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
