"""The NBD target: one ``nbdkit`` per attachment, read-only attachments
exported with ``-r`` so the server refuses their writes.

Each export requires TLS with a pre-shared key only its attachment
holds (``--tls=require --tls-psk=FILE``): FILE, 0600 in the target's
state directory, holds the one identity of that attachment
(``psk_identity``) and its key, which is never stored anywhere else but
derived again whenever it is needed (``credentials.keyring(conf)
.secret(attachment_id, 'tls_psk_key')``: after a restart too), and goes
with the export.  A client without TLS, or with the key of any other
attachment, fails the TLS handshake before any NBD option; one with the
right key but another export name is refused too (nbdkit's exportname
filter, strict, listing only the volume id).  So removing an export
(detach, takeover, fence) revokes its credential everywhere: no other
export of the volume accepts it.

nbdkit's ip filter cannot add the connector's address as a second check
with the nbdkit 1.32.5 of Debian 12: that build was made without
``inet_pton`` (the filter imports no such symbol), so it refuses every
address rule with "don't know how to parse rule: allow=127.0.0.2"
(``allow=127.0.0.2/32``: 'cannot parse address "127.0.0.2"'); only
``all``/``anyipv4``/``anyipv6`` and the Unix-socket ``pid:``/``uid:``/
``gid:`` rules parse.

Back-end QoS specs are applied with nbdkit's rate filter (see
``rate_limit`` and doc/source/qos.rst): it limits the bytes each export moves
per second, reads and writes each on their own; it has no limit of
operations per second, so the ``*_iops_sec`` keys are not applied.

Every read-write export runs nbdkit's pause filter, controlled through
a Unix socket beside its record (``<attachment>.pause``; in a private
directory under the temporary directory when the state directory's
path is too long for a socket address): ``hold``
pauses every read-write export of some volumes -- nbdkit answers once
the requests it had received are done, and leaves later ones waiting --
and resumes them when the block ends.  That is how a group snapshot is
one point in time across its volumes (doc/source/groups.rst); ``start``
resumes any export a service that died while holding left paused.

Each export listens on ``target_ip_address`` at the first free port of
``target_port_range``; its pid, port and file are kept in a small JSON
file under the backend's state directory, so the service can stop it by
pid (also after a restart) and knows which exports exist.  nbdkit's
messages (refused clients among them) go to a log file beside it.
"""
import contextlib
import errno
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time

from cinder_lite.common import credentials
from cinder_lite.common import exception
from cinder_lite import nbd as nbd_client

LOG = logging.getLogger(__name__)

READY_TIMEOUT_S = 5.0
# nbdkit answers SIGTERM by exiting at once (under 1 ms here) when no
# client is connected, and otherwise by waiting for its clients to hang
# up, which a host that died (or that a takeover cuts off) never does: an
# export whose attachment ends gets this long to exit, then is killed,
# and waited for (``drain_timeout``): a write being done when the kill
# came finishes before the process exits, and nothing lands after.
# Writes nbdkit acknowledged are in the file already (the file plugin
# writes through), so nothing acknowledged is lost.
STOP_TIMEOUT_S = 0.005


# how long a pause may wait for the requests nbdkit is doing (it answers
# once they are done), and a resume for its answer
HOLD_TIMEOUT_S = 10.0
# the longest path a Unix socket's address holds (sun_path, 108 bytes
# with its NUL)
SOCKET_PATH_MAX = 107

# how long reach() waits for each handshake it tries
PROBE_TIMEOUT_S = 2.0
PSK_KEY = 'tls_psk_key'


def psk_identity(attachment_id):
    """The TLS-PSK identity (user name) of an attachment."""
    return 'attachment-%s' % attachment_id


# the back-end QoS keys the rate filter can apply: bytes per second
RATE_KEYS = ('total_bytes_sec', 'read_bytes_sec', 'write_bytes_sec')


def rate_limit(qos_specs, what='an NBD export'):
    """The rate (bits per second, as nbdkit's rate filter takes it) that
    keeps both directions of an export within every byte limit of
    ``qos_specs`` (back-end QoS specs; None or {} for none), or None.

    nbdkit limits reads and writes separately, each to the same rate, so
    the rate is the smallest limit given: ``read_bytes_sec`` then bounds
    writes as well, and ``total_bytes_sec`` bounds reads and writes each
    (not their sum).  Keys the filter cannot apply are logged."""
    limits = []
    for key in RATE_KEYS:
        value = (qos_specs or {}).get(key)
        if value is None:
            continue
        try:
            number = int(value)
        except (TypeError, ValueError):
            LOG.warning('%s: QoS %s=%r is not an integer; not applied',
                        what, key, value)
            continue
        if number > 0:
            limits.append(number)
    ignored = sorted(k for k in (qos_specs or {}) if k not in RATE_KEYS)
    if ignored:
        LOG.warning('%s: nbdkit cannot apply the back-end QoS keys %s '
                    '(only %s)', what, ', '.join(ignored),
                    ', '.join(RATE_KEYS))
    return min(limits) * 8 if limits else None


def parse_port_range(text):
    low, sep, high = str(text).partition('-')
    try:
        low = int(low)
        high = int(high) if sep else low
    except ValueError:
        raise exception.InvalidInput(
            reason='target_port_range must look like 10809-10999, not %r'
                   % text)
    if not 1 <= low <= high <= 65535:
        raise exception.InvalidInput(
            reason='target_port_range %r is out of bounds' % text)
    return low, high


class NbdTarget:

    protocol = 'nbd'

    def __init__(self, conf, state_dir):
        self.ip = conf.target_ip_address
        self.ports = parse_port_range(conf.target_port_range)
        self.state_dir = os.path.realpath(os.path.join(state_dir, 'nbd'))
        self.nbdkit = shutil.which('nbdkit') or 'nbdkit'
        self.drain_timeout = conf.target_drain_timeout
        self.keyring = credentials.keyring(conf)
        self._children = {}
        # a port is chosen and its nbdkit started under this lock: two
        # connects that chose the same free port at once had the loser's
        # readiness probe answered by the winner's nbdkit (the loser's
        # exits, unable to bind), and its record named the other
        # attachment's export -- another key (refused), or before TLS
        # another mode
        self._spawning = threading.Lock()
        # volumes whose writers ``hold`` pauses: no export of theirs is
        # started meanwhile (it would not be paused)
        self._held = set()
        self._holding = threading.Condition()
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        os.chmod(self.state_dir, 0o700)

    def _key(self, attachment_id):
        return self.keyring.secret(attachment_id, PSK_KEY)

    def _psk_file(self, attachment_id):
        return os.path.join(self.state_dir, '%s.psk' % attachment_id)

    def _log_file(self, attachment_id):
        return os.path.join(self.state_dir, '%s.log' % attachment_id)

    def _write_psk(self, attachment_id):
        """The PSK file of one attachment: its identity and key alone,
        0600 from the start."""
        path = self._psk_file(attachment_id)
        tmp = path + '.tmp'
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(nbd_client.psk_line(psk_identity(attachment_id),
                                        self._key(attachment_id)))
        os.rename(tmp, path)
        return path

    def _pause_path(self, attachment_id):
        """The pause control socket of an attachment's export: in the
        state directory, or, when that path would pass the 107 bytes a
        Unix socket's address holds, in a directory of this user's own
        under the temporary directory named after the state directory."""
        name = '%s.pause' % attachment_id
        path = os.path.join(self.state_dir, name)
        if len(path.encode()) <= SOCKET_PATH_MAX:
            return path
        # (a long TMPDIR too: /tmp then; nbdkit exited at once on a path
        # too long for a socket, which the API told as "no free port")
        for tmp in (tempfile.gettempdir(), '/tmp'):
            short = os.path.join(tmp, 'cinder-lite-nbd-%s' % (
                hashlib.sha256(self.state_dir.encode()).hexdigest()[:16]))
            if len(os.path.join(short, name).encode()) <= SOCKET_PATH_MAX:
                break
        else:
            raise exception.CinderLiteError(
                'no directory holds an NBD pause control socket whose path '
                'fits the %d bytes of a Unix socket address (state '
                'directory %s, temporary directory %s)' % (
                    SOCKET_PATH_MAX, self.state_dir, tempfile.gettempdir()))
        try:
            os.mkdir(short, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(short)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or \
                st.st_mode & 0o077:
            raise exception.CinderLiteError(
                '%s is not a private directory of this user; cannot put '
                'NBD pause control sockets there' % short)
        return os.path.join(short, name)

    def _forget_files(self, attachment_id):
        for path in (self._psk_file(attachment_id),
                     self._log_file(attachment_id),
                     self._pause_path(attachment_id)):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        # (a short directory stays: removed once empty, it went from
        # under another export between its mkdir and its nbdkit's bind,
        # and that connect failed)

    def _state_file(self, attachment_id):
        return os.path.join(self.state_dir, '%s.json' % attachment_id)

    def _load(self, attachment_id):
        try:
            with open(self._state_file(attachment_id)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def exports(self):
        """attachment id -> export record, for those this backend runs."""
        found = {}
        for name in os.listdir(self.state_dir):
            if name.endswith('.json'):
                record = self._load(name[:-5])
                if record:
                    found[name[:-5]] = record
        return found

    def ensure_export(self, path, volume_id, attachment_id, mode,
                      connection_info, connector, qos_specs=None):
        """Make sure the export of an attachment runs, on the port its
        connection info names (clients hold that info), with the QoS its
        volume's type has now."""
        record = self._load(attachment_id)
        if record and not record.get('tls') and _is_nbdkit(record['pid']):
            # an export made before exports required TLS: made again
            LOG.warning('NBD export of attachment %s runs without TLS: '
                        'restarting it with its key', attachment_id)
            self.remove_export(attachment_id)
            record = None
        if record and _is_nbdkit(record['pid']):
            return True
        if record:
            os.unlink(self._state_file(attachment_id))
        with self._spawn_lock(volume_id):
            return self._spawn(path, volume_id, attachment_id, mode,
                               connection_info.get('port'), qos_specs)

    def start(self):
        """Resume every export a service that stopped while holding its
        writers left paused (a resume of one not paused changes
        nothing)."""
        for attachment_id, record in self.exports().items():
            if record.get('pause') and _is_nbdkit(record['pid']):
                try:
                    with self._control(record) as ctl:
                        _command(ctl, b'r', attachment_id)
                except (OSError, exception.CinderLiteError) as e:
                    LOG.warning('NBD export of attachment %s: cannot '
                                'resume it: %s', attachment_id, e)

    # -- holding the writers of volumes --------------------------------------
    @contextlib.contextmanager
    def _control(self, record):
        """A connection to an export's pause control socket."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(HOLD_TIMEOUT_S)
            sock.connect(record['pause'])
            yield sock
        finally:
            sock.close()

    @contextlib.contextmanager
    def hold(self, volume_ids):
        """While the block runs, no write of any host reaches the
        volumes ``volume_ids`` through this target: every read-write
        export of theirs is paused (each pause answered once the requests
        nbdkit had received are done, so those are in the file), none is
        started, and all are resumed at the end, whatever happens.
        CannotHoldWrites when an export cannot be paused (one started
        before exports had the pause filter); then none stays paused."""
        wanted = set(volume_ids)
        with self._holding:
            while self._held & wanted:
                self._holding.wait()
            self._held |= wanted
        paused = []
        try:
            with self._spawning:
                exports = sorted(
                    (a, r) for a, r in self.exports().items()
                    if r.get('volume_id') in wanted and r.get('mode') != 'ro'
                    and _is_nbdkit(r['pid']))
            for attachment_id, record in exports:
                if not record.get('pause'):
                    raise exception.CannotHoldWrites(
                        volume_id=record['volume_id'],
                        reason='the NBD export of attachment %s was started '
                               'without the pause filter; detach and attach '
                               'it again' % attachment_id)
            with contextlib.ExitStack() as stack:
                # every pause is sent before any answer is awaited: the
                # exports stop as close together as they can
                controls = []
                for attachment_id, record in exports:
                    ctl = stack.enter_context(self._control(record))
                    ctl.sendall(b'p')
                    controls.append((attachment_id, ctl))
                    paused.append((attachment_id, ctl))
                for attachment_id, ctl in controls:
                    _answer(ctl, b'P', attachment_id)
                LOG.info('holding the writers of %d volume(s): %d NBD '
                         'export(s) paused', len(wanted), len(controls))
                try:
                    yield
                finally:
                    for attachment_id, ctl in paused:
                        try:
                            _command(ctl, b'r', attachment_id)
                        except (OSError, exception.CinderLiteError) as e:
                            LOG.error('NBD export of attachment %s: cannot '
                                      'resume it: %s', attachment_id, e)
                    LOG.info('writers of %d volume(s) released',
                             len(wanted))
        except OSError as e:
            raise exception.CannotHoldWrites(
                volume_id=', '.join(sorted(wanted)),
                reason='pause control failed: %s' % e) from None
        finally:
            with self._holding:
                self._held -= wanted
                self._holding.notify_all()

    @contextlib.contextmanager
    def _spawn_lock(self, volume_id):
        """The spawn lock, taken while ``volume_id``'s writers are not
        held: ``hold`` marks its volumes before it takes this lock to
        list their exports, so an export is either listed (and paused) or
        started after the hold."""
        while True:
            with self._holding:
                while volume_id in self._held:
                    self._holding.wait()
            self._spawning.acquire()
            with self._holding:
                if volume_id not in self._held:
                    break
            self._spawning.release()
        try:
            yield
        finally:
            self._spawning.release()

    def stop(self):
        """Exports outlive the service: hosts keep their I/O across a
        restart, which re-adopts them by pid."""

    def prune(self):
        """End the nbdkit processes of this target that no record names:
        a service killed between starting nbdkit and writing its record
        (the record is written once nbdkit listens) left them running.
        Every nbdkit this target starts runs in its state directory, which
        is how they are told from anyone else's."""
        owned = {r['pid'] for r in self.exports().values()}
        for pid in _nbdkits_in(self.state_dir):
            if pid not in owned:
                LOG.warning('ending nbdkit pid %d: no export record names '
                            'it', pid)
                try:
                    self._kill(pid)
                except exception.CinderLiteError as e:
                    LOG.error('pruning: %s', e)
        records = self.exports()
        for name in os.listdir(self.state_dir):
            base, dot, ext = name.rpartition('.')
            if ext in ('psk', 'log', 'pause') and base not in records:
                self._forget_files(base)

    def _ports_in_use(self):
        return {r['port'] for r in self.exports().values()}

    def create_export(self, path, volume_id, attachment_id, mode,
                      connector, qos_specs=None):
        if self._load(attachment_id):
            return
        low, high = self.ports
        with self._spawn_lock(volume_id):
            taken = self._ports_in_use()
            for port in range(low, high + 1):
                if port in taken or not self._port_free(port):
                    continue
                if self._spawn(path, volume_id, attachment_id, mode, port,
                               qos_specs):
                    return
        raise exception.CinderLiteError(
            'no free port for an NBD export in %d-%d on %s' % (
                low, high, self.ip))

    def _port_free(self, port):
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((self.ip, port))
            except OSError:
                return False
        return True

    def _spawn(self, path, volume_id, attachment_id, mode, port,
               qos_specs=None):
        psk = self._write_psk(attachment_id)
        argv = [self.nbdkit, '--foreground',
                '-i', self.ip, '-p', str(port), '-e', volume_id,
                '--tls=require', '--tls-psk=%s' % psk]
        if mode == 'ro':
            argv.append('-r')
        rate = rate_limit(qos_specs, 'NBD export of attachment %s'
                          % attachment_id)
        argv.append('--filter=exportname')
        pause = self._pause_path(attachment_id) if mode != 'ro' else None
        if pause:
            argv.append('--filter=pause')
        if rate:
            argv.append('--filter=rate')
        argv += ['file', path,
                 # only the volume's name opens it, and only it is listed
                 'exportname=%s' % volume_id, 'exportname-strict=true',
                 'exportname-list=explicit']
        if rate:
            argv.append('rate=%d' % rate)
        if pause:
            try:
                os.unlink(pause)
            except FileNotFoundError:
                pass
            argv.append('pause-control=%s' % pause)
        # nbdkit's messages (every refused client adds some) go to a file:
        # a pipe nobody reads any more (after a restart) would fill up
        log_fd = os.open(self._log_file(attachment_id),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL,
                                    stderr=log_fd,
                                    cwd=self.state_dir,
                                    start_new_session=True)
        except OSError as e:
            self._forget_files(attachment_id)
            raise exception.CinderLiteError('cannot run nbdkit: %s' % e)
        finally:
            os.close(log_fd)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                with open(self._log_file(attachment_id), errors='replace'
                          ) as f:
                    err = f.read().strip()
                self._forget_files(attachment_id)
                LOG.warning('nbdkit for %s on port %d exited: %s',
                            attachment_id, port, err)
                return False
            try:
                socket.create_connection((self.ip, port), timeout=0.5
                                         ).close()
                break
            except OSError:
                time.sleep(0.01)
        else:
            self._kill(proc.pid, proc)
            self._forget_files(attachment_id)
            return False
        record = {'pid': proc.pid, 'port': port, 'host': self.ip,
                  'path': path, 'mode': mode, 'volume_id': volume_id,
                  'rate': rate, 'tls': True, 'pause': pause}
        tmp = self._state_file(attachment_id) + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(record, f)
        os.rename(tmp, self._state_file(attachment_id))
        self._children[proc.pid] = proc
        LOG.info('NBD export of %s for attachment %s on %s:%d (%s, pid %d%s)',
                 volume_id, attachment_id, self.ip, port, mode, proc.pid,
                 ', at most %d bit/s each way' % rate if rate else '')
        return True

    def remove_export(self, attachment_id):
        """End the export of an attachment and drain it: the nbdkit
        serving it has exited (and, when it is this process's child, been
        reaped) before this returns, so nothing its client sent lands
        afterwards.  Returns the seconds from the signal to the exit;
        raises (keeping the record, so a retry kills again) when the
        process outlives ``drain_timeout``."""
        record = self._load(attachment_id)
        if record is None:
            return None
        drained = self._kill(record['pid'],
                             self._children.get(record['pid']))
        self._children.pop(record['pid'], None)
        try:
            os.unlink(self._state_file(attachment_id))
        except FileNotFoundError:
            pass
        self._forget_files(attachment_id)
        LOG.info('NBD export of attachment %s removed (pid %d, drained in '
                 '%.1f ms)', attachment_id, record['pid'], drained * 1000)
        return drained

    def _kill(self, pid, proc=None):
        """SIGTERM, a short grace, SIGKILL; then wait until the process
        has exited (a zombie has: it runs no more code), at most
        ``drain_timeout``.  The seconds it took."""
        started = time.monotonic()
        if proc is None and not _is_nbdkit(pid):
            return 0.0  # gone, or the pid now belongs to someone else
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return 0.0
        grace = started + STOP_TIMEOUT_S
        deadline = started + self.drain_timeout
        killed = False
        while True:
            if proc is not None:
                if proc.poll() is not None:
                    return time.monotonic() - started
            elif _exited(pid):
                return time.monotonic() - started
            now = time.monotonic()
            if now >= deadline:
                raise exception.CinderLiteError(
                    'nbdkit pid %d has not exited %.1fs after SIGKILL: '
                    'writes of its client may still be landing'
                    % (pid, self.drain_timeout))
            if not killed and now >= grace:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                killed = True
            time.sleep(0.001 if not killed else 0.002)

    def reach(self, volume_id, attachment_ids, initiators):
        """Whether a host can still open the volume, found by trying: a
        TLS handshake and NBD_OPT_GO with the key of each of its
        attachments (``attachment_ids``) against every export of the
        volume this target runs.  ``exports``: the attachments whose key
        opened one; ``reachable``: whether any did (None when some export
        did not answer, so it cannot be told)."""
        running = [r for r in self.exports().values()
                   if r.get('volume_id') == volume_id and
                   _is_nbdkit(r['pid']) and not _exited(r['pid'])]
        opened, unknown = [], False
        for attachment_id in attachment_ids:
            key = self._key(attachment_id)
            for record in running:
                got = nbd_client.opens(record['host'], record['port'],
                                       volume_id, psk_identity(attachment_id),
                                       key, timeout=PROBE_TIMEOUT_S)
                if got:
                    opened.append(attachment_id)
                    break
                if got is None:
                    unknown = True
        reachable = True if opened else (None if unknown else False)
        return {'exports': opened, 'acl': [], 'sessions': 0,
                'reachable': reachable}

    def connection_data(self, path, volume_id, attachment_id, mode):
        record = self._load(attachment_id)
        if record is None:
            raise exception.CinderLiteError(
                'attachment %s has no NBD export' % attachment_id)
        # what QEMU's client takes (tls-creds-psk: username, and a keys.psk
        # of ``identity:key`` lines) and libnbd's (set_tls_psk_file,
        # set_tls_username); the key is masked wherever it is recorded
        return {'host': record['host'], 'port': record['port'],
                'export_name': volume_id, 'access_mode': mode,
                'tls': True, 'tls_psk_identity': psk_identity(attachment_id),
                PSK_KEY: self._key(attachment_id)}


def _answer(ctl, expected, attachment_id):
    got = ctl.recv(1)
    if got != expected:
        raise exception.CinderLiteError(
            'NBD export of attachment %s answered %r to its pause control, '
            'not %r' % (attachment_id, got, expected))


def _command(ctl, command, attachment_id):
    ctl.sendall(command)
    _answer(ctl, command.upper(), attachment_id)


def _exited(pid):
    """True when ``pid`` is gone or a zombie (not our child, so not
    ours to reap)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            stat = f.read()
    except OSError:
        return True
    # the state follows the command name, which is in parentheses
    return stat[stat.rindex(')') + 2:][:1] in ('Z', 'X')


def _is_nbdkit(pid):
    try:
        with open('/proc/%d/comm' % pid) as f:
            return f.read().strip() == 'nbdkit'
    except OSError as e:
        if e.errno == errno.ENOENT:
            return False
        raise


def _nbdkits_in(directory):
    """Pids of the nbdkit processes whose working directory is
    ``directory``."""
    found = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            if os.readlink('/proc/%d/cwd' % pid) != directory or \
                    not _is_nbdkit(pid):
                continue
        except OSError:
            continue  # gone meanwhile, or not ours to look at
        found.append(pid)
    return found
