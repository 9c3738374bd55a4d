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

``APIProxy(workdir, ports)`` is HAProxy in front of API processes, as
clouds put it before cinder-api: HTTP, ``balance roundrobin``, each
server checked with ``GET /healthcheck``.  A request whose connection to
an API process could not be made is sent to another
(``retries``/``option redispatch``: it never reached the first); one
that reached a process which then died is not sent again (its POST may
have been carried out), and the client is answered 503 in Cinder's
shape (``serviceUnavailable``, ``Retry-After``) saying so, instead of
HAProxy's own 502 page.  Client connections carry one request each
(``option httpclose``): on a kept-alive one, HAProxy closes a request
its server died under without any answer (the client is to send it
again), which leaves a POST's client guessing.  ``url`` is the API's
address through it.
"""
import json
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

    def __init__(self, workdir, ports, writers=1, name='haproxy'):
        self.dir = workdir
        self.ports = list(ports)
        self.writers = writers
        self.port = util.free_port()
        self.cfg = os.path.join(workdir, '%s.cfg' % name)
        self.log = os.path.join(workdir, '%s.log' % name)
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

    def write_files(self):
        """Files the configuration names (none here)."""

    def url(self, user, password):
        return 'mysql+pymysql://%s:%s@127.0.0.1:%d' % (user, password,
                                                       self.port)

    def start(self):
        self.write_files()
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


# What HAProxy answers instead of its own pages: (status it would send,
# why); every one a 503 in Cinder's error shape
API_ERRORS = {
    502: 'The API process serving this request stopped before it '
         'answered; the request may have been carried out: look before '
         'sending it again.',
    503: 'No API process is available; retry later.',
    504: 'The API process serving this request did not answer in time; '
         'the request may have been carried out: look before sending it '
         'again.',
}
# longer than any API call waits on the volume service
API_SERVER_TIMEOUT_S = 90


class APIProxy(HAProxy):
    """HAProxy in HTTP mode in front of the API processes at ``ports``."""

    def __init__(self, workdir, ports, name='haproxy-api'):
        super().__init__(workdir, ports, writers=None, name=name)

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def error_file(self, status):
        return os.path.join(self.dir, '%s-%d.http' % (
            os.path.basename(self.cfg)[:-len('.cfg')], status))

    def write_files(self):
        for status, message in API_ERRORS.items():
            body = json.dumps({'serviceUnavailable': {
                'code': 503, 'message': message}})
            with open(self.error_file(status), 'w') as f:
                f.write('HTTP/1.1 503 Service Unavailable\r\n'
                        'Content-Type: application/json\r\n'
                        'Retry-After: 1\r\n'
                        'Cache-Control: no-cache\r\n'
                        'Connection: close\r\n'
                        'Content-Length: %d\r\n\r\n%s'
                        % (len(body), body))

    def config(self):
        lines = [
            'global',
            '    maxconn 1024',
            '    log stdout format raw local0',
            'defaults',
            '    mode http',
            '    log global',
            '    option httplog',
            '    timeout connect 2s',
            '    timeout client 2m',
            '    timeout server %ds' % API_SERVER_TIMEOUT_S,
            '    timeout http-request 30s',
            # a check's answer may take a while on a loaded machine (the
            # default is ``inter``: both processes were taken out so);
            # a dead process refuses the connection at once anyway
            '    timeout check 5s',
            # a connection refused (the process gone) is tried again on
            # another server; a request sent is not (retry-on's default,
            # conn-failure)
            '    retries 3',
            '    option redispatch 1',
            # one request per client connection: a request the dead
            # process had taken is then answered (the 502 below, as a
            # 503); on a kept-alive connection HAProxy closes without an
            # answer instead, for the client to retry (which a POST's
            # client cannot do blindly)
            '    option httpclose',
            'listen cinder-api',
            '    bind 127.0.0.1:%d' % self.port,
            '    balance roundrobin',
            '    option httpchk',
            # (HTTP/1.1 with a Host: the API refuses HAProxy's default
            # HTTP/1.0 check without one)
            '    http-check send meth GET uri /healthcheck ver HTTP/1.1 '
            'hdr Host 127.0.0.1',
            '    http-check expect status 200',
        ]
        for status in sorted(API_ERRORS):
            lines.append('    errorfile %d %s' % (status,
                                                  self.error_file(status)))
        for index, port in enumerate(self.ports):
            lines.append(
                '    server api%d 127.0.0.1:%d check inter %dms fall 2 '
                'rise 2' % (index + 1, port, CHECK_INTER_MS))
        return '\n'.join(lines) + '\n'

    def answers(self):
        """HAProxy's log lines of requests answered by HAProxy itself
        (no server's answer: termination states other than ``--``)."""
        try:
            with open(self.log, errors='replace') as f:
                lines = f.read().splitlines()
        except OSError:
            return []
        return [line for line in lines if ' cinder-api ' in line and
                ' ---- ' not in line and ' --NI ' not in line]
