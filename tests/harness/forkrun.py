"""``python -m cinder_lite.cmd.X ARGS`` as a process of its own, without
paying an interpreter start and cinder_lite's imports each time.

An interpreter start with cinder_lite's imports costs 1.5-2.5 s on the
2-core test machine (oslo.messaging, eventlet, SQLAlchemy, alembic), and
the command-line tests run dozens of commands.  ``run`` forks each one
from a server process that imported those modules once (a "zygote", as
multiprocessing's forkserver and Android's app launcher do): the command
is still a separate process, with its own global config, database engine
and bus, started afresh from ``runpy`` as ``python -m`` does, with the
caller's environment, working directory, stdout and stderr; only the
module imports are shared, and they happen before any command runs.

What differs from a real start: whatever a module computes at import from
the environment comes from the environment of the test process at the
server's start.  A call with an ``env`` of its own therefore runs as a
real process (``subprocess.run``), as do the tests that check the console
scripts themselves.

The server is one per test process, started at the first call and ended
when the test process ends (it reads EOF on its socket).

``spawn`` starts a long-lived service the same way (the integration
clusters' API, scheduler and volume processes, tests/harness/cluster.py)
and returns at once with a ``Child``, which answers as much of
``subprocess.Popen`` as the harness uses (``pid``, ``poll``, ``wait``,
``returncode``).  The child is the server's, not the test's: the test
signals it by pid, and the server reaps it and reports its exit code
(negative: the signal that killed it, as Popen reports it).  Spawned
children run in a second server, started with PYTHONUNBUFFERED=1 as the
clusters start their services, so that a command run never waits behind a
service; when the test process ends, that server kills the children still
running, so none outlives it.
"""
import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

# what the commands import: loaded once in the server
PRELOAD = ('cinder_lite.cmd.manage', 'cinder_lite.cmd.status',
           'cinder_lite.cmd.all', 'cinder_lite.cmd.api',
           'cinder_lite.cmd.scheduler', 'cinder_lite.cmd.volume',
           'cinder_lite.cmd.backup')

_lock = threading.Lock()
_servers = {}    # 'run' / 'spawn' -> _Server


class _Server:

    def __init__(self, env=None):
        ours, theirs = socket.socketpair(socket.AF_UNIX,
                                         socket.SOCK_SEQPACKET)
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))))
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'tests.harness.forkrun',
             str(theirs.fileno())], pass_fds=[theirs.fileno()], cwd=root,
            stdin=subprocess.DEVNULL, env=env)
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()
        (ready,) = self._receive(timeout=120)
        assert ready == 'ready', ready

    def _request(self, request, fds=()):
        socket.send_fds(self.sock, [json.dumps(request).encode()],
                        list(fds))

    def _receive(self, timeout):
        self.sock.settimeout(timeout)
        data = self.sock.recv(65536)
        if not data:
            raise RuntimeError('the fork server ended (exit %s)'
                               % self.proc.poll())
        return json.loads(data)

    def run(self, module, args, cwd, timeout):
        argv = [sys.executable, '-m', module] + list(args)
        with tempfile.TemporaryFile() as out, \
                tempfile.TemporaryFile() as err, \
                open(os.devnull, 'rb') as devnull:
            self._request({'op': 'run', 'module': module,
                           'args': list(args), 'cwd': cwd or os.getcwd(),
                           'env': dict(os.environ)},
                          [devnull.fileno(), out.fileno(), err.fileno()])
            (pid,) = self._receive(timeout=30)
            try:
                (code,) = self._receive(timeout=timeout)
            except socket.timeout:
                os.kill(pid, 9)
                self._receive(timeout=30)
                raise subprocess.TimeoutExpired(argv, timeout)
            out.seek(0)
            err.seek(0)
            return subprocess.CompletedProcess(
                argv, code, out.read().decode(errors='replace'),
                err.read().decode(errors='replace'))

    def spawn(self, module, args, cwd, env, stdin, stdout, stderr):
        with self.lock:
            self._request({'op': 'spawn', 'module': module,
                           'args': list(args), 'cwd': cwd, 'env': env},
                          [stdin, stdout, stderr])
            (pid,) = self._receive(timeout=30)
        return pid

    def poll(self, pid):
        """The exit code of a spawned child, or None while it runs."""
        with self.lock:
            self._request({'op': 'poll', 'pid': pid})
            (code,) = self._receive(timeout=30)
        return code

    def close(self):
        self.sock.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _get(kind, env=None):
    with _lock:
        if kind not in _servers:
            _servers[kind] = _Server(env)
        return _servers[kind]


@atexit.register
def _close_servers():
    # (registered at import: it runs after the exit handlers of the
    # modules that import this one, e.g. cluster.py's, which stop their
    # processes first)
    with _lock:
        for server in _servers.values():
            server.close()
        _servers.clear()


def run(module, args, env=None, cwd=None, timeout=60):
    """``python -m module args`` as ``subprocess.run(..., capture_output=
    True, text=True)`` answers it: a CompletedProcess."""
    if env is not None:
        return subprocess.run([sys.executable, '-m', module] + list(args),
                              capture_output=True, text=True, env=env,
                              cwd=cwd, timeout=timeout)
    server = _get('run')
    with server.lock:
        return server.run(module, args, cwd, timeout)


class Child:
    """A process started by ``spawn``: the part of ``subprocess.Popen``
    that the harness uses."""

    def __init__(self, server, pid, args):
        self._server = server
        self.pid = pid
        self.args = args
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            self.returncode = self._server.poll(self.pid)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, signum):
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def terminate(self):
        self.send_signal(signal.SIGTERM)


def spawn(module, args, cwd, env, stdout, stderr=None):
    """Start ``python -m module args`` in ``cwd`` with the environment
    ``env`` (the whole of it), stdin from /dev/null and stdout (and stderr,
    unless given) to the open files ``stdout``/``stderr``, and return at
    once with its ``Child``."""
    server = _get('spawn', dict(os.environ, PYTHONUNBUFFERED='1'))
    with open(os.devnull, 'rb') as devnull:
        pid = server.spawn(module, args, cwd, env, devnull.fileno(),
                           stdout.fileno(),
                           (stderr or stdout).fileno())
    return Child(server, pid, [sys.executable, '-m', module] + list(args))


# -- the server side ---------------------------------------------------------
def _child(request, fds):
    """In the forked process: become ``python -m module args``."""
    import runpy
    import traceback
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request['cwd'])
    os.environ.clear()
    os.environ.update(request['env'])
    # as ``python -m`` from that directory
    sys.path[0] = request['cwd']
    module = request['module']
    sys.argv = [module] + request['args']
    code = 0
    try:
        # (run_module warns of a module imported before it is run)
        sys.modules.pop(module, None)
        runpy.run_module(module, run_name='__main__', alter_sys=True)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:
            # as the interpreter ends: wait for the threads that are not
            # daemons, then the exit handlers
            threading._shutdown()
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _reap(pid, flags=0):
    """The exit code of the child ``pid``, or None while it runs."""
    done, status = os.waitpid(pid, flags)
    return os.waitstatus_to_exitcode(status) if done else None


def _serve(sock):
    import importlib
    for module in PRELOAD:
        importlib.import_module(module)
    # a fork copies only the thread that calls it
    assert threading.active_count() == 1, threading.enumerate()
    sock.send(json.dumps(['ready']).encode())
    spawned = set()
    while True:
        data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        if not data:
            break
        request = json.loads(data)
        if request['op'] == 'poll':
            code = _reap(request['pid'], os.WNOHANG)
            if code is not None:
                spawned.discard(request['pid'])
            sock.send(json.dumps([code]).encode())
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            sock.close()
            _child(request, fds)
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps([pid]).encode())
        if request['op'] == 'spawn':
            spawned.add(pid)
        else:
            sock.send(json.dumps([_reap(pid)]).encode())
    # the test process ended: no service it left outlives it
    for pid in spawned:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _reap(pid)


if __name__ == '__main__':
    _serve(socket.socket(fileno=int(sys.argv[1])))
