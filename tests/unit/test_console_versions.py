"""Every console script of setup.cfg answers ``--version`` with the
installed distribution's version (from git: setuptools-scm), exit 0,
without a configuration file or a database."""
import configparser
from importlib import metadata
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


@pytest.mark.parametrize('name,target', console_scripts())
def test_version(tmp_path, name, target):
    module, func = target.split(':')
    code = ('import sys; from %s import %s as main; sys.exit(main())'
            % (module, func))
    run = subprocess.run([sys.executable, '-c', code, '--version'],
                         capture_output=True, text=True, timeout=120,
                         cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr[-2000:]
    printed = (run.stdout + run.stderr).split()
    assert printed[-1] == metadata.version('cinder-lite'), printed
