"""HAProxy of the test's own in front of a Galera cluster, on loopback.

Clouds reach their Galera cluster through HAProxy: one address for the
services, and HAProxy's health checks take a dead node out.  The layout
OpenStack's deployment tools configure sends every connection to one
node and keeps the others as backups (``writers=1``); ``writers=None``
spreads the connections over all of them.

``HAProxy(workdir, ports).start()`` writes ``haproxy.cfg`` (a TCP
``listen`` on a free port, one ``server`` per node port with a TCP check
every ``CHECK_INTER_MS``, two failures marking it down and its sessions
shut) and runs ``haproxy -db`` (in the foreground, no daemon) until
``stop()`` ends it by pid.  ``url(user, password)`` is the server URL
(no database name) the services connect to.
"""
import os
import socket
import subprocess

from tests.harness import util

HAPROXY = '/usr/sbin/haproxy'
CHECK_INTER_MS = 500
START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0


def available():
    """None when HAProxy can run here, else why not."""
    if not os.path.exists(HAPROXY):
        return '%s is missing (apt-get install haproxy)' % HAPROXY
    return None


class HAProxy:

    def __init__(self, workdir, ports, writers=1):
        self.dir = workdir
        self.ports = list(ports)
        self.writers = writers
        self.port = util.free_port()
        self.cfg = os.path.join(workdir, 'haproxy.cfg')
        self.log = os.path.join(workdir, 'haproxy.log')
        self.proc = None

    def config(self):
        lines = [
            'global',
            '    maxconn 1024',
            'defaults',
            '    mode tcp',
            '    timeout connect 2s',
            # the services' pooled connections sit idle for minutes
            '    timeout client 1h',
            '    timeout server 1h',
            'listen galera',
            '    bind 127.0.0.1:%d' % self.port,
            '    option tcpka',
            '    balance roundrobin',
        ]
        for index, port in enumerate(self.ports):
            backup = self.writers is not None and index >= self.writers
            lines.append(
                '    server node%d 127.0.0.1:%d check inter %dms fall 2 '
                'rise 2 on-marked-down shutdown-sessions%s'
                % (index + 1, port, CHECK_INTER_MS,
                   ' backup' if backup else ''))
        return '\n'.join(lines) + '\n'

    def url(self, user, password):
        return 'mysql+pymysql://%s:%s@127.0.0.1:%d' % (user, password,
                                                       self.port)

    def start(self):
        with open(self.cfg, 'w') as f:
            f.write(self.config())
        check = subprocess.run([HAPROXY, '-c', '-f', self.cfg],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError('haproxy.cfg refused: %s%s'
                               % (check.stdout, check.stderr))
        log = open(self.log, 'ab')
        try:
            self.proc = subprocess.Popen(
                [HAPROXY, '-db', '-f', self.cfg], stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        finally:
            log.close()
        util.wait_for(lambda: self._listening() or not self.alive(),
                      START_TIMEOUT, interval=0.1, what='haproxy listening')
        if not self.alive():
            raise RuntimeError('haproxy exited (%s): %s'
                               % (self.proc.returncode, self.tail()))
        return self

    def _listening(self):
        try:
            with socket.create_connection(('127.0.0.1', self.port), 1):
                return True
        except OSError:
            return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def tail(self, chars=3000):
        try:
            with open(self.log, 'rb') as f:
                return f.read().decode('utf-8', 'replace')[-chars:]
        except OSError:
            return ''

    def stop(self):
        """SIGTERM by pid, SIGKILL after a bound; the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT)
        return self.proc.returncode
