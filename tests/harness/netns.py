"""Hosts of a test's own on this machine: Linux network namespaces joined
by a bridge, and faults made per node.

``Network(nodes)`` makes one namespace per node, named
``cl<pid>n<k>-<node>`` (unique per test process and network), and a
"switch" namespace holding a bridge; each node has one veth pair whose
node end, ``v-<node>``, carries its address on a private /24
(``10.<a>.<b>.0/24``, ``a`` and ``b`` from the pid) and whose other end
is a port of the bridge.  The namespaces have loopback and that address,
no default route: nothing in them reaches the root namespace or the
machine's network, and nothing in the root namespace reaches them.

Rules kept here (doc/source/reliability.rst, "Network faults"):

* every process of a test runs inside a namespace of its network
  (``Network.argv(node, argv)`` prefixes ``ip netns exec``);
* the test process itself never connects to a namespace's address from
  the root namespace: a socket it needs there is made by a thread that
  entered the namespace (``entered(name)``, setns(2) for that thread
  only), e.g. the HTTP sessions of ``session(node)``;
* ``destroy()`` ends, by pid, every process still inside the network's
  namespaces (those the test started and what they left, such as
  Erlang's epmd) and deletes the namespaces.

Faults, each undone by its counterpart: ``link(node, up)`` (the node's
interface down/up), ``cut(node, peers)`` / ``heal(node)`` (iptables in the
node's namespace dropping what it sends to and receives from ``peers``;
other paths stay up), ``lose(node, percent)`` (iptables dropping that
share of the node's packets at random), ``limit_rate(node, rate)`` (a
token bucket on its interface, ``tc … tbf``) and ``netem(node, …)``
(``tc … netem`` delay and loss, where the kernel has the qdisc).

``unavailable()`` says why this machine cannot run such a network (not
root, a program missing, a namespace, bridge, veth or iptables rule
refused), or None.  This module imports no pytest.
"""
import contextlib
import ctypes
import itertools
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import requests
import requests.adapters
import urllib3

CLONE_NEWNET = 0x40000000
NETNS_DIR = '/run/netns'
BRIDGE = 'br0'
PROGRAMS = ('ip', 'iptables', 'tc')
NAME_RE = re.compile(r'^cl(\d+)n\d+-')
# first host number of the nodes on their /24 (.1 is the switch's bridge)
FIRST_HOST = 10
STOP_TIMEOUT = 15.0

_libc = ctypes.CDLL(None, use_errno=True)
_counter = itertools.count(1)
_probe = {}
_probe_lock = threading.Lock()


class NetnsError(Exception):
    """A namespace command failed; the message has its output."""


class Unsupported(NetnsError):
    """This kernel or machine lacks what a fault needs (e.g. netem)."""


def _run(argv, check=True, timeout=60):
    done = subprocess.run(argv, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise NetnsError('%s failed (%d): %s' % (
            ' '.join(argv), done.returncode,
            (done.stderr or done.stdout).strip()[-2000:]))
    return done


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise OSError(code, 'setns: %s' % os.strerror(code))


@contextlib.contextmanager
def entered(name):
    """The calling thread inside network namespace ``name`` (sockets it
    makes meanwhile belong there for good); back where it was after."""
    own = os.open('/proc/thread-self/ns/net', os.O_RDONLY)
    try:
        target = os.open(os.path.join(NETNS_DIR, name), os.O_RDONLY)
        try:
            _setns(target)
            try:
                yield
            finally:
                _setns(own)
        finally:
            os.close(target)
    finally:
        os.close(own)


class _NetnsConnection(urllib3.connection.HTTPConnection):
    """An HTTP connection whose socket is made inside ``netns``."""

    netns = None

    def _new_conn(self):
        with entered(self.netns):
            return super()._new_conn()


def session(name):
    """A requests Session whose connections are made inside network
    namespace ``name``."""
    conn_cls = type('HTTPConnectionIn', (_NetnsConnection,),
                    {'netns': name})
    pool_cls = type('HTTPConnectionPoolIn', (urllib3.HTTPConnectionPool,),
                    {'ConnectionCls': conn_cls})
    adapter = requests.adapters.HTTPAdapter()
    adapter.poolmanager.pool_classes_by_scheme = {'http': pool_cls}
    sess = requests.Session()
    sess.trust_env = False
    sess.mount('http://', adapter)
    return sess


def port_open(name, host, port, timeout=1.0):
    """True when ``host:port`` accepts a connection made inside namespace
    ``name``."""
    import socket
    with entered(name):
        sock = socket.socket()
    try:
        sock.settimeout(timeout)
        sock.connect((host, port))
        return True
    except OSError:
        return False
    finally:
        sock.close()


def namespace_inode(name):
    return os.stat(os.path.join(NETNS_DIR, name)).st_ino


def pids_in(inodes):
    """{pid: inode} of the processes whose network namespace is one of
    ``inodes``."""
    found = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            ino = os.stat('/proc/%s/ns/net' % entry).st_ino
        except OSError:
            continue
        if ino in inodes:
            found[int(entry)] = ino
    return found


def comm(pid):
    try:
        with open('/proc/%d/comm' % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def _end(pids, timeout=STOP_TIMEOUT):
    """SIGTERM ``pids``, SIGKILL those left after ``timeout``."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p)]
            if not pids:
                return
            time.sleep(0.05)


def _alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != 'Z'


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale():
    """Delete the namespaces of test processes that no longer exist (a
    run killed before its teardown), ending what still runs inside them.
    Only names of this module's pattern whose pid is gone are touched."""
    try:
        names = os.listdir(NETNS_DIR)
    except OSError:
        return
    stale = [n for n in names if NAME_RE.match(n)
             and not _pid_alive(int(NAME_RE.match(n).group(1)))]
    inodes = set()
    for name in stale:
        try:
            inodes.add(namespace_inode(name))
        except OSError:
            pass
    _end(list(pids_in(inodes)), timeout=5)
    for name in stale:
        _run(['ip', 'netns', 'del', name], check=False)
    for pid in {int(NAME_RE.match(n).group(1)) for n in stale}:
        # the guard route of that run (``Network.create``)
        _run(['ip', 'route', 'del', 'blackhole', '%s.0/24' % subnet_of(pid)],
             check=False)


def subnet_of(pid):
    """The first three octets of the subnet of a test process ``pid``."""
    return '10.%d.%d' % ((pid >> 8) & 0xff, pid & 0xff)


def _probe_machine():
    if os.geteuid() != 0:
        return 'network namespaces need root (euid %d)' % os.geteuid()
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        return '%s not installed (apt-get install iproute2 iptables)' % (
            ', '.join(missing))
    name = 'cl%dn0-probe' % os.getpid()
    steps = [
        ['ip', 'netns', 'add', name],
        ['ip', '-n', name, 'link', 'add', BRIDGE, 'type', 'bridge'],
        ['ip', '-n', name, 'link', 'add', 'v-a', 'type', 'veth', 'peer',
         'name', 'p-a'],
        ['ip', '-n', name, 'link', 'set', 'p-a', 'master', BRIDGE],
        ['ip', '-n', name, 'addr', 'add', '10.255.255.1/24', 'dev', 'v-a'],
        ['ip', '-n', name, 'link', 'set', 'v-a', 'up'],
        ['ip', 'netns', 'exec', name, 'iptables', '-w', '-A', 'OUTPUT',
         '-d', '10.255.255.2', '-j', 'DROP'],
    ]
    try:
        for argv in steps:
            done = _run(argv, check=False)
            if done.returncode != 0:
                return '`%s` is not permitted here (%d): %s' % (
                    ' '.join(argv), done.returncode,
                    (done.stderr or done.stdout).strip())
        return None
    finally:
        _run(['ip', 'netns', 'del', name], check=False)


def unavailable():
    """Why network namespaces cannot be used here, or None (probed once
    per process)."""
    with _probe_lock:
        if 'reason' not in _probe:
            _probe['reason'] = _probe_machine()
        return _probe['reason']


def netem_unavailable():
    """Why ``netem`` cannot be used here (this kernel lacks sch_netem on
    some machines), or None."""
    with _probe_lock:
        if 'netem' not in _probe:
            name = 'cl%dn0-netem' % os.getpid()
            try:
                _run(['ip', 'netns', 'add', name])
                _run(['ip', '-n', name, 'link', 'add', 'd0', 'type',
                      'veth', 'peer', 'name', 'd1'])
                done = _run(['ip', 'netns', 'exec', name, 'tc', 'qdisc',
                             'add', 'dev', 'd0', 'root', 'netem', 'delay',
                             '1ms'], check=False)
                _probe['netem'] = None if done.returncode == 0 else \
                    'tc netem: %s' % (done.stderr or done.stdout).strip()
            except NetnsError as e:
                _probe['netem'] = str(e)
            finally:
                _run(['ip', 'netns', 'del', name], check=False)
        return _probe['netem']


class Network:
    """Namespaces for ``nodes`` (names of up to 12 characters) on one
    bridge.  ``address[node]`` is the node's address; ``ns[node]`` its
    namespace's name."""

    def __init__(self, nodes):
        pid = os.getpid()
        self.prefix = 'cl%dn%d' % (pid, next(_counter))
        self.subnet = subnet_of(pid)
        self.switch = '%s-switch' % self.prefix
        self.nodes = list(nodes)
        self.ns = {n: '%s-%s' % (self.prefix, n) for n in self.nodes}
        self.address = {n: '%s.%d' % (self.subnet, FIRST_HOST + i)
                        for i, n in enumerate(self.nodes)}
        self._made = []
        self._inodes = {}
        self._cuts = {}
        self._blackhole = False

    def interface(self, node):
        return 'v-%s' % node

    # -- lifecycle ------------------------------------------------------------
    def create(self):
        sweep_stale()
        try:
            # a guard: from the root namespace the subnet would go out of
            # the machine by its default route; while the network exists
            # it is a blackhole there, so a stray packet is dropped here
            _run(['ip', 'route', 'replace', 'blackhole',
                  '%s.0/24' % self.subnet])
            self._blackhole = True
            self._add_namespace(self.switch)
            sw = ['ip', '-n', self.switch]
            _run(sw + ['link', 'add', BRIDGE, 'type', 'bridge'])
            _run(sw + ['link', 'set', BRIDGE, 'up'])
            for node in self.nodes:
                ns, veth = self.ns[node], self.interface(node)
                self._add_namespace(ns)
                port = 'p-%s' % node
                _run(sw + ['link', 'add', veth, 'type', 'veth', 'peer',
                           'name', port])
                _run(sw + ['link', 'set', veth, 'netns', ns])
                _run(sw + ['link', 'set', port, 'master', BRIDGE])
                _run(sw + ['link', 'set', port, 'up'])
                here = ['ip', '-n', ns]
                _run(here + ['addr', 'add', '%s/24' % self.address[node],
                             'dev', veth])
                _run(here + ['link', 'set', veth, 'up'])
        except BaseException:
            self.destroy()
            raise
        return self

    def _add_namespace(self, name):
        _run(['ip', 'netns', 'add', name])
        self._made.append(name)
        self._inodes[name] = namespace_inode(name)
        _run(['ip', '-n', name, 'link', 'set', 'lo', 'up'])

    def processes(self, node=None):
        """{pid: command name} of the processes inside the network (or
        inside ``node``'s namespace)."""
        if node is None:
            inodes = set(self._inodes.values())
        else:
            inodes = {self._inodes[self.ns[node]]}
        return {pid: comm(pid) for pid in pids_in(inodes)}

    def destroy(self, timeout=STOP_TIMEOUT):
        """End every process left inside the namespaces (by pid), then
        delete them.  Returns {pid: command name} of the processes it had
        to end."""
        left = self.processes() if self._inodes else {}
        _end(list(left), timeout)
        for name in reversed(self._made):
            _run(['ip', 'netns', 'del', name], check=False)
        self._made, self._inodes = [], {}
        if self._blackhole:
            _run(['ip', 'route', 'del', 'blackhole', '%s.0/24' % self.subnet],
                 check=False)
            self._blackhole = False
        return left

    # -- running things -------------------------------------------------------
    def argv(self, node, argv):
        """``argv`` run inside ``node``'s namespace."""
        return ['ip', 'netns', 'exec', self.ns[node]] + list(argv)

    def run(self, node, *argv, check=True, timeout=60):
        return _run(self.argv(node, argv), check=check, timeout=timeout)

    def session(self, node):
        return session(self.ns[node])

    def port_open(self, node, host, port):
        return port_open(self.ns[node], host, port)

    # -- faults ---------------------------------------------------------------
    def link(self, node, up):
        """The node's interface up or down (every path of the node)."""
        _run(['ip', '-n', self.ns[node], 'link', 'set',
              self.interface(node), 'up' if up else 'down'])

    def _iptables(self, node, *args):
        self.run(node, 'iptables', '-w', *args)

    def cut(self, node, peers):
        """Drop, inside ``node``'s namespace, what it sends to and receives
        from ``peers`` (node names); its other paths stay up.  Packets
        vanish (DROP, no reset): the node's connections to them hang as
        on a broken network, and resume if healed in time."""
        for peer in peers:
            address = self.address[peer]
            self._iptables(node, '-I', 'INPUT', '-s', address, '-j', 'DROP')
            self._iptables(node, '-I', 'OUTPUT', '-d', address, '-j',
                           'DROP')
            self._cuts.setdefault(node, set()).add(peer)

    def heal(self, node):
        """Undo ``cut`` and ``lose`` on ``node`` (its filter rules are
        flushed; the test's are the only ones there)."""
        self._iptables(node, '-F')
        self._cuts.pop(node, None)

    def cuts(self):
        """{node: peers it is cut from}."""
        return {n: set(p) for n, p in self._cuts.items()}

    def lose(self, node, percent):
        """Drop ``percent`` % of the packets the node receives and of those
        it sends, at random (iptables' statistic match)."""
        share = '%.4f' % (percent / 100.0)
        for chain in ('INPUT', 'OUTPUT'):
            self._iptables(node, '-I', chain, '-m', 'statistic', '--mode',
                           'random', '--probability', share, '-j', 'DROP')

    def limit_rate(self, node, rate='1mbit', burst='32kbit',
                   latency='400ms'):
        """A token bucket on the node's interface (what it sends)."""
        self.run(node, 'tc', 'qdisc', 'replace', 'dev', self.interface(node),
                 'root', 'tbf', 'rate', rate, 'burst', burst, 'latency',
                 latency)

    def netem(self, node, delay=None, loss=None):
        """``tc netem`` on the node's interface: ``delay`` ('50ms'),
        ``loss`` (percent).  Unsupported when the kernel lacks it."""
        reason = netem_unavailable()
        if reason:
            raise Unsupported(reason)
        argv = ['tc', 'qdisc', 'replace', 'dev', self.interface(node),
                'root', 'netem']
        if delay:
            argv += ['delay', delay]
        if loss is not None:
            argv += ['loss', '%s%%' % loss]
        self.run(node, *argv)

    def clear_qdisc(self, node):
        done = self.run(node, 'tc', 'qdisc', 'del', 'dev',
                        self.interface(node), 'root', check=False)
        if done.returncode not in (0, 2):
            raise NetnsError(done.stderr)

    def __enter__(self):
        return self.create()

    def __exit__(self, *exc):
        self.destroy()
