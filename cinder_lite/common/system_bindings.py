"""Python bindings that come with a system library, not from PyPI:
libnbd's (``python3-libnbd``) and Ceph's ``rados`` and ``rbd``
(``python3-rados``, ``python3-rbd``), which Debian installs into its
dist-packages for its own Python 3.

``load(name)`` imports one into this interpreter (a virtualenv of another
Python 3.11 build, without the system's site-packages) by loading exactly
that file from its path -- an extension module whose file name carries
this interpreter's ABI (``cpython-311-x86_64-linux-gnu``), or a ``.py``
-- not by putting the whole dist-packages on ``sys.path``: nothing else of
Debian's Python packages is seen.  A module importable already (a venv
made with the system's site-packages) is taken as it is.
"""
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import threading

# where Debian (and Ubuntu) install their python3-* bindings
BINDING_DIRS = ('/usr/lib/python3/dist-packages',)

_lock = threading.Lock()


class BindingMissing(ImportError):
    """The system's bindings for this interpreter are not installed."""


def load(name, package_hint, accept=lambda module: True):
    """The module ``name``, imported from wherever it is importable or
    from the system's dist-packages; ``accept(module)`` tells a module of
    that name that is something else (PyPI has unrelated ``nbd`` and
    ``rbd`` packages).  ``package_hint`` names what to install when it is
    missing."""
    with _lock:
        module = sys.modules.get(name)
        if module is not None and accept(module):
            return module
        try:
            module = importlib.import_module(name)
            if accept(module):
                return module
        except ImportError:
            pass
        for directory in BINDING_DIRS:
            path = _file_of(directory, name)
            if path is not None:
                return _load(name, path)
        raise BindingMissing(
            'the Python bindings %r for this interpreter (%s, extension '
            'suffix %s) are not installed: install %s (Debian) for the '
            'same Python version' % (
                name, sys.version.split()[0],
                importlib.machinery.EXTENSION_SUFFIXES[0], package_hint))


def _file_of(directory, name):
    for suffix in importlib.machinery.EXTENSION_SUFFIXES + ['.py']:
        path = os.path.join(directory, name + suffix)
        if os.path.exists(path):
            return path
    return None


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
