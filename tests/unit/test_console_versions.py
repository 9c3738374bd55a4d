"""Every console script of setup.cfg answers ``--version`` with the
installed distribution's version (from git: setuptools-scm), exit 0,
without a configuration file or a database."""
import configparser
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def console_scripts():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'setup.cfg'))
    lines = cfg['options.entry_points']['console_scripts'].strip()
    return [tuple(part.strip() for part in line.split('='))
            for line in lines.splitlines()]


def test_the_scripts_are_the_documented_ones():
    names = {name for name, _target in console_scripts()}
    assert {'cinder-lite-manage', 'cinder-lite-status',
            'fence_cinder_lite', 'cinder-lite-all'} <= names


def _python(code, *args, cwd):
    return subprocess.run([sys.executable, '-c', code] + list(args),
                          capture_output=True, text=True, timeout=120,
                          cwd=cwd)


@pytest.mark.parametrize('name,target', console_scripts())
def test_version(tmp_path, name, target):
    module, func = target.split(':')
    run = _python('import sys; from %s import %s as main; sys.exit(main())'
                  % (module, func), '--version', cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr[-2000:]
    printed = (run.stdout + run.stderr).split()
    # the distribution that interpreter finds there (a checkout's own
    # cinder_lite.egg-info can shadow the virtualenv's from its root)
    installed = _python('from importlib import metadata; '
                        'print(metadata.version("cinder-lite"))',
                        cwd=str(tmp_path)).stdout.strip()
    assert installed
    assert printed[-1] == installed, printed
