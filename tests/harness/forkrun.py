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
"""
import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

# what the commands import: loaded once in the server
PRELOAD = ('cinder_lite.cmd.manage', 'cinder_lite.cmd.status',
           'cinder_lite.cmd.all', 'cinder_lite.cmd.api',
           'cinder_lite.cmd.scheduler', 'cinder_lite.cmd.volume')

_lock = threading.Lock()
_server = None


class _Server:

    def __init__(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX,
                                         socket.SOCK_SEQPACKET)
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))))
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'tests.harness.forkrun',
             str(theirs.fileno())], pass_fds=[theirs.fileno()], cwd=root,
            stdin=subprocess.DEVNULL)
        theirs.close()
        self.sock = ours
        (ready,) = self._receive(timeout=120)
        assert ready == 'ready', ready
        atexit.register(self.close)

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
            request = json.dumps({'module': module, 'args': list(args),
                                  'cwd': cwd or os.getcwd(),
                                  'env': dict(os.environ)}).encode()
            socket.send_fds(self.sock, [request], [
                devnull.fileno(), out.fileno(), err.fileno()])
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

    def close(self):
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run(module, args, env=None, cwd=None, timeout=60):
    """``python -m module args`` as ``subprocess.run(..., capture_output=
    True, text=True)`` answers it: a CompletedProcess."""
    global _server
    if env is not None:
        return subprocess.run([sys.executable, '-m', module] + list(args),
                              capture_output=True, text=True, env=env,
                              cwd=cwd, timeout=timeout)
    with _lock:
        if _server is None:
            _server = _Server()
        return _server.run(module, args, cwd, timeout)


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
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _serve(sock):
    import importlib
    for module in PRELOAD:
        importlib.import_module(module)
    sock.send(json.dumps(['ready']).encode())
    while True:
        request, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        if not request:
            return
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            sock.close()
            _child(json.loads(request), fds)
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps([pid]).encode())
        _, status = os.waitpid(pid, 0)
        sock.send(json.dumps([os.waitstatus_to_exitcode(status)]).encode())


if __name__ == '__main__':
    _serve(socket.socket(fileno=int(sys.argv[1])))
