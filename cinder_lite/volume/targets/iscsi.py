"""The iSCSI target, on tgt.

Per volume there are up to two targets on the same file: a read-write one
(``<prefix>volume-<id>``) and a read-only one (``<prefix>volume-<id>-ro``,
its LUN updated to ``readonly=1`` before anyone may log in, so tgt answers
every write with DATA PROTECT).  An attachment is a CHAP account of its
own (user ``attachment-<id>``, its secret derived from the deployment key:
``credentials.keyring``) bound to the target of its mode, and an ACL entry:
its connector's initiator name, a second layer.  Once a target has an
account bound, tgt lets nobody log in without CHAP.  Detaching unbinds
and deletes the account first (its credentials never log in again), then
unbinds the initiator and drops its sessions, unless another attachment
of that initiator still uses the target; the last attachment removes the
target.

The backend runs its own ``tgtd`` on ``target_ip_address:target_port``,
managed through its own control socket (``target_control_port``).  The
daemon keeps serving across a restart of the volume service (hosts keep
their I/O); it is stopped when the service stops with no export left.
tgt has no limit of bandwidth or of operations per second (per target,
LUN or session), so back-end QoS specs are not applied; front-end ones are the
host's to apply (doc/source/qos.rst).  Each
attachment's export is a small JSON record under the backend's state
directory, which is what ``exports()`` reports and what a restart rebuilds
targets from.
"""
import errno
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import weakref

from cinder_lite.common import credentials
from cinder_lite.common import exception
from cinder_lite.common import iscsi_name
from cinder_lite.common import qos
from cinder_lite.iscsi import errors as iscsi_errors
from cinder_lite.iscsi import pr
from cinder_lite.iscsi import scsi
from cinder_lite.iscsi import session as iscsi_session

LOG = logging.getLogger(__name__)

LUN = 1
# the volume service's own initiator, which logs in to remove the
# registration of a host whose attachment ended, with its own key
FENCER_NAME = 'cinder-lite-fencer'
FENCER_KEY = 0x636c2d66656e6365           # 'cl-fence'
# the CHAP account each attachment gets: ACCOUNT_PREFIX + attachment id
ACCOUNT_PREFIX = 'attachment-'
# bound first to every target, with a secret nobody is told: a target
# always has an account, so tgt never lets a login in without CHAP (with
# none bound it asks for no authentication), even while the accounts
# after it are bound again (_unbind_account)
GUARD_USER = 'cinder-lite-guard'
FENCER_TIMEOUT_S = 5.0
READY_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 5.0
TGTADM_TIMEOUT_S = 30
SOCKET_DIR = '/var/run/tgtd'
# session parameters that let an initiator move 256 KiB per PDU and a
# whole 4 MiB command per burst (tgt's defaults are 8 KiB and 256 KiB)
TARGET_PARAMS = (('MaxRecvDataSegmentLength', '262144'),
                 ('MaxXmitDataSegmentLength', '262144'),
                 ('FirstBurstLength', '262144'),
                 ('MaxBurstLength', '4194304'),
                 ('InitialR2T', 'No'),
                 ('ImmediateData', 'Yes'))

# what tgtadm answers for an account made again, and one it does not know
# (its exit status is the same for every error)
ACCOUNT_EXISTS = 'this account already exists'
NO_ACCOUNT = "can't find the account"


class TargetError(exception.CinderLiteError):
    msg_fmt = 'iSCSI target: %(reason)s'


def parse_show(text):
    """``tgtadm --mode target --op show`` as {iqn: target}; a target has
    ``tid``, ``acl`` (addresses and initiator names), ``accounts`` (the
    incoming CHAP users bound to it), ``luns``
    ({lun: {'path', 'readonly'}}) and ``nexus`` ([{'id', 'initiator',
    'connections': [{'cid', 'address'}]}])."""
    targets = {}
    current = section = lun = nexus = None
    for raw in text.splitlines():
        line = raw.strip()
        m = re.match(r'^Target (\d+): (\S+)$', raw)
        if m:
            current = {'tid': int(m.group(1)), 'acl': [], 'accounts': [],
                       'luns': {}, 'nexus': []}
            targets[m.group(2)] = current
            section = None
            continue
        if current is None or not line:
            continue
        if line.endswith('information:'):
            section = line
            continue
        if section == 'I_T nexus information:':
            if line.startswith('I_T nexus:'):
                nexus = {'id': int(line.split(':')[1]), 'initiator': None,
                         'connections': []}
                current['nexus'].append(nexus)
            elif line.startswith('Initiator:') and nexus is not None:
                nexus['initiator'] = line.split()[1]
            elif line.startswith('Connection:') and nexus is not None:
                nexus['connections'].append(
                    {'cid': int(line.split(':')[1]), 'address': None})
            elif line.startswith('IP Address:') and nexus and \
                    nexus['connections']:
                nexus['connections'][-1]['address'] = line.split(':', 1)[
                    1].strip()
        elif section == 'LUN information:':
            if line.startswith('LUN:'):
                lun = {'path': None, 'readonly': False}
                current['luns'][int(line.split(':')[1])] = lun
            elif line.startswith('Readonly:') and lun is not None:
                lun['readonly'] = line.split(':')[1].strip() == 'Yes'
            elif line.startswith('Backing store path:') and lun is not None:
                lun['path'] = line.split(':', 1)[1].strip()
        elif section == 'ACL information:':
            current['acl'].append(line)
        elif section == 'Account information:':
            if not line.endswith('(outgoing)'):
                current['accounts'].append(line)
    return targets


def parse_accounts(text):
    """``tgtadm --mode account --op show`` as the set of user names."""
    users = set()
    for raw in text.splitlines():
        line = raw.strip()
        if line and line != 'Account list:':
            users.add(line)
    return users


class IscsiTarget:

    protocol = 'iscsi'

    def __init__(self, conf, state_dir):
        self.ip = conf.target_ip_address
        self.port = conf.target_port
        self.control = conf.target_control_port
        if self.control is None:
            if self.port > 32767:
                raise exception.InvalidInput(
                    reason='tgtd control sockets are numbered up to 32767; '
                           'set target_control_port for target_port %d'
                           % self.port)
            self.control = self.port
        self.prefix = conf.target_prefix
        self.drain_timeout = conf.target_drain_timeout
        if not iscsi_name.valid(self.prefix + 'volume-x'):
            raise exception.InvalidInput(
                reason='target_prefix %r does not make valid iSCSI names'
                       % self.prefix)
        self.keyring = credentials.keyring(conf)
        self.state_dir = os.path.join(state_dir, 'iscsi')
        self.tgtd = shutil.which('tgtd') or '/usr/sbin/tgtd'
        self.tgtadm = shutil.which('tgtadm') or '/usr/sbin/tgtadm'
        self._lock = threading.RLock()
        self._proc = None
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)

    @property
    def portal(self):
        host = '[%s]' % self.ip if ':' in self.ip else self.ip
        return '%s:%d' % (host, self.port)

    def iqn(self, volume_id, mode):
        return '%svolume-%s%s' % (self.prefix, volume_id,
                                  '-ro' if mode == 'ro' else '')

    # -- the daemon ----------------------------------------------------------
    def _daemon_file(self):
        return os.path.join(self.state_dir, 'tgtd.json')

    def _daemon_pid(self):
        try:
            with open(self._daemon_file()) as f:
                return json.load(f)['pid']
        except (OSError, ValueError, KeyError):
            return None

    def _answers(self):
        try:
            self._adm('--mode', 'system', '--op', 'show', lld=False)
        except TargetError:
            return False
        return True

    def start(self):
        """Make sure our tgtd serves the portal: adopt the one a previous
        run of the service left, else start one."""
        with self._lock:
            pid = self._daemon_pid()
            if pid and _comm(pid) == 'tgtd' and self._answers():
                if not _listens(pid, self.ip, self.port):
                    raise TargetError(reason='tgtd (pid %d) runs but does '
                                      'not listen on %s' % (pid,
                                                            self.portal))
                return
            if self._answers():
                raise TargetError(
                    reason='another tgtd answers on control socket %d; '
                           'give this backend its own target_control_port'
                           % self.control)
            self._start_daemon()

    def _start_daemon(self):
        log = open(os.path.join(self.state_dir, 'tgtd.log'), 'ab')
        try:
            proc = subprocess.Popen(
                [self.tgtd, '-f', '-C', str(self.control), '--iscsi',
                 'portal=%s' % self.portal],
                stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            raise TargetError(reason='cannot run tgtd: %s' % e)
        finally:
            log.close()
        _started[proc.pid] = proc
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise TargetError(reason='tgtd exited at start (rc %d): %s'
                                  % (proc.returncode, self._log_tail()))
            if self._answers():
                # tgtd binds its portal before it opens the control
                # socket, and keeps running when the bind failed
                deadline = min(deadline, time.monotonic() + 0.5)
                if _listens(proc.pid, self.ip, self.port):
                    break
            time.sleep(0.02)
        else:
            self._proc = proc
            self._stop_daemon(proc.pid)
            raise TargetError(reason='tgtd did not listen on %s: %s'
                              % (self.portal, self._log_tail()))
        self._proc = proc
        tmp = self._daemon_file() + '.tmp'
        with open(tmp, 'w') as f:
            json.dump({'pid': proc.pid, 'portal': self.portal}, f)
        os.rename(tmp, self._daemon_file())
        LOG.info('tgtd (pid %d) serves iSCSI on %s', proc.pid, self.portal)

    def _log_tail(self):
        try:
            with open(os.path.join(self.state_dir, 'tgtd.log'), 'rb') as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 2048))
                lines = f.read().decode(errors='replace').splitlines()
        except OSError:
            return ''
        # what tgtd says about its portal, not its usual start-up chatter
        # (RDMA, oom_score_adj and nr_open cannot be set in a container)
        wanted = [line for line in lines[-20:]
                  if re.search(r'unable|fail|error|cannot', line, re.I)
                  and 'RDMA' not in line]
        return '; '.join(wanted[-3:] or lines[-3:])

    def stop(self):
        """Stop our tgtd when no export is left (hosts keep working
        across a service restart otherwise)."""
        with self._lock:
            pid = self._daemon_pid()
            if not pid:
                return
            left = self.exports()
            if left:
                LOG.info('tgtd (pid %d) keeps serving %d exports', pid,
                         len(left))
                return
            self._stop_daemon(pid)

    def _stop_daemon(self, pid):
        # tgtd ignores SIGTERM; it leaves through the control socket once
        # it has no targets
        if _comm(pid) == 'tgtd':
            try:
                for iqn, target in self._show().items():
                    self._delete_target(target['tid'])
                self._adm('--mode', 'system', '--op', 'delete', lld=False)
            except TargetError as e:
                LOG.warning('tgtd (pid %d) did not stop cleanly: %s', pid,
                            e)
            if not self._wait_exit(pid, STOP_TIMEOUT_S):
                LOG.warning('killing tgtd (pid %d)', pid)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._wait_exit(pid, STOP_TIMEOUT_S)
        for suffix in ('', '.lock'):
            try:
                os.unlink('%s/socket.%d%s' % (SOCKET_DIR, self.control,
                                              suffix))
            except FileNotFoundError:
                pass
        try:
            os.unlink(self._daemon_file())
        except FileNotFoundError:
            pass
        LOG.info('tgtd (pid %d) on %s stopped', pid, self.portal)

    def _wait_exit(self, pid, timeout):
        proc = self._proc if self._proc and self._proc.pid == pid else None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None:
                if proc.poll() is not None:
                    self._proc = None
                    return True
            elif _comm(pid) != 'tgtd':
                return True
            time.sleep(0.02)
        return False

    # -- tgtadm --------------------------------------------------------------
    def _adm(self, *args, lld=True, deadline=None):
        """Run tgtadm; ``deadline`` (a time.monotonic() value) bounds the
        wait for a tgtd that does not answer, as a cut-off must."""
        argv = [self.tgtadm, '-C', str(self.control)]
        if lld:
            argv += ['--lld', 'iscsi']
        argv += list(args)
        timeout = TGTADM_TIMEOUT_S if deadline is None else \
            max(0.05, deadline - time.monotonic())
        try:
            done = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise TargetError(reason='%s: %s' % (_shown(args), e))
        if done.returncode != 0:
            raise TargetError(reason='%s: %s' % (
                _shown(args), (done.stderr or done.stdout).strip()))
        return done.stdout

    def _show(self, deadline=None):
        return parse_show(self._adm('--mode', 'target', '--op', 'show',
                                    deadline=deadline))

    def _new_target(self, iqn, path, mode, targets):
        tid = max([t['tid'] for t in targets.values()] + [0]) + 1
        self._adm('--mode', 'target', '--op', 'new', '--tid', str(tid),
                  '-T', iqn)
        try:
            self._adm('--mode', 'logicalunit', '--op', 'new', '--tid',
                      str(tid), '--lun', str(LUN), '-b', path)
            # before any ACL exists: nobody may log in to a read-only
            # target whose LUN still accepts writes
            self._adm('--mode', 'logicalunit', '--op', 'update', '--tid',
                      str(tid), '--lun', str(LUN), '--params',
                      'readonly=1' if mode == 'ro' else 'thin_provisioning=1')
            for name, value in TARGET_PARAMS:
                self._adm('--mode', 'target', '--op', 'update', '--tid',
                          str(tid), '--name', name, '--value', value)
            # before any ACL entry: CHAP from the first login on
            self._add_account(GUARD_USER, os.urandom(16).hex(), tid, None)
        except TargetError:
            self._undo_target(tid)
            raise
        LOG.info('iSCSI target %s (tid %d, %s) on %s', iqn, tid, mode, path)
        return tid

    def _delete_target(self, tid):
        self._adm('--mode', 'target', '--op', 'delete', '--force', '--tid',
                  str(tid))

    def _undo_target(self, tid):
        """Remove a target an export failed to finish; the export's own
        error is what the caller reports."""
        try:
            self._delete_target(tid)
        except TargetError as e:
            # a dead tgtd took the target with it
            LOG.warning('could not remove target tid %d after a failed '
                        'export: %s', tid, e)

    def _bind(self, tid, initiator):
        self._adm('--mode', 'target', '--op', 'bind', '--tid', str(tid),
                  '--initiator-name', initiator)

    # -- CHAP accounts -------------------------------------------------------
    @staticmethod
    def user(attachment_id):
        return ACCOUNT_PREFIX + attachment_id

    def secret(self, attachment_id):
        return self.keyring.secret(attachment_id, 'auth_password')

    def _accounts(self, deadline=None):
        return parse_accounts(self._adm('--mode', 'account', '--op', 'show',
                                        deadline=deadline))

    def _add_account(self, user, secret, tid, target):
        """Make ``user`` (if tgtd has not got it) and bind it to ``tid``
        (``target``: as shown, None for a target just made)."""
        # (one tgtadm call where asking for the accounts first takes two;
        # the secret is on tgtadm's command line for a moment: tgtadm
        # takes it no other way; _adm never shows it in an error)
        try:
            self._adm('--mode', 'account', '--op', 'new', '--user', user,
                      '--password', secret)
        except TargetError as e:
            if ACCOUNT_EXISTS not in str(e):
                raise
        if target is None or user not in target['accounts']:
            self._adm('--mode', 'account', '--op', 'bind', '--tid',
                      str(tid), '--user', user)

    def _unbind_account(self, target, user, deadline=None):
        """Take ``user`` off ``target`` (as shown, its accounts in tgt's
        order; updated).  tgt 1.0.85 leaves a hole where an account that
        is not the last one was unbound, and then crashes on the next
        show or login; so the accounts after it are unbound first, from
        the last, and bound again after (in order: they fill the same
        places).  The guard account, bound first, keeps CHAP required
        meanwhile; a host logging in during these few milliseconds may
        be refused once and retries."""
        accounts = list(target['accounts'])
        if user not in accounts:
            return
        at = accounts.index(user)
        after = accounts[at + 1:]
        tid = str(target['tid'])
        for other in reversed(after + [user]):
            self._adm('--mode', 'account', '--op', 'unbind', '--tid', tid,
                      '--user', other, deadline=deadline)
        for other in after:
            self._adm('--mode', 'account', '--op', 'bind', '--tid', tid,
                      '--user', other, deadline=deadline)
        target['accounts'] = accounts[:at] + after

    def _revoke(self, user, target, deadline=None):
        """Unbind ``user`` from ``target`` (as shown; None when it is
        gone) and delete it: its credentials open nothing of this
        tgtd again.  Sessions it opened are the caller's to end."""
        if target is not None:
            self._unbind_account(target, user, deadline)
        try:
            self._adm('--mode', 'account', '--op', 'delete', '--user', user,
                      deadline=deadline)
        except TargetError as e:
            if NO_ACCOUNT not in str(e):
                raise

    def _unbind(self, target, initiator, started=None):
        """Cut ``initiator`` off ``target``: take it off the ACL (so it
        cannot log in again), end its sessions (unbinding alone leaves
        them running), then drain: wait until tgt shows no I_T nexus of
        it.  tgt completes the commands it had handed to the backing
        store after the connection is deleted, and drops the nexus only
        once they are done, so until then a write of the host may still
        land.  The whole cut-off is bounded by ``drain_timeout`` (a tgtd
        that does not answer included); returns the seconds it took,
        raises TargetError past it.  ``started``: when the cut-off began
        (the deadline counts from it)."""
        started = time.monotonic() if started is None else started
        deadline = started + self.drain_timeout
        tid = str(target['tid'])
        if initiator in target['acl']:
            self._adm('--mode', 'target', '--op', 'unbind', '--tid', tid,
                      '--initiator-name', initiator, deadline=deadline)
        self._end_sessions(target, initiator, deadline)
        self._drain(target, initiator, deadline)
        return time.monotonic() - started

    def _end_sessions(self, target, initiator=None, deadline=None):
        tid = str(target['tid'])
        for nexus in target['nexus']:
            if initiator is not None and nexus['initiator'] != initiator:
                continue
            for conn in nexus['connections']:
                try:
                    self._adm('--mode', 'conn', '--op', 'delete', '--tid',
                              tid, '--sid', str(nexus['id']), '--cid',
                              str(conn['cid']), deadline=deadline)
                except TargetError as e:
                    # gone meanwhile (its host hung up), or tgtd does not
                    # answer: the drain below is what tells
                    LOG.info('ending session %d of %s on tid %s: %s',
                             nexus['id'], nexus['initiator'], tid, e)

    def _drain(self, target, initiator, deadline):
        """Wait until the target named by ``target`` shows no I_T nexus
        (of ``initiator``, or of anyone when None), until ``deadline``."""
        pause = 0.002
        iqn = target.get('iqn')
        what = iqn or 'tid %d' % target['tid']
        while True:
            try:
                current = self._show_tid(target['tid'], iqn, deadline)
            except TargetError as e:
                raise TargetError(
                    reason='cannot confirm that %s drained the commands of '
                           '%s: %s' % (what, initiator or 'its initiators',
                                       e))
            left = [n for n in (current or {}).get('nexus', ())
                    if initiator is None or n['initiator'] == initiator]
            if not left:
                return
            if time.monotonic() >= deadline:
                raise TargetError(
                    reason='%s still has %d I_T nexus of %s %.1fs after '
                           'the cut-off began: commands it sent may still '
                           'be landing' % (what, len(left),
                                           initiator or 'its initiators',
                                           self.drain_timeout))
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _remove_target(self, target, started=None):
        """Every host off ``target`` (ACL, sessions), drained, then the
        target itself; the seconds the cut-off took."""
        started = time.monotonic() if started is None else started
        deadline = started + self.drain_timeout
        # (from the last: see _unbind_account)
        for user in reversed(target.get('accounts', ())):
            self._adm('--mode', 'account', '--op', 'unbind', '--tid',
                      str(target['tid']), '--user', user, deadline=deadline)
        for entry in list(target['acl']):
            self._adm('--mode', 'target', '--op', 'unbind', '--tid',
                      str(target['tid']), '--initiator-name', entry,
                      deadline=deadline)
        self._end_sessions(target, None, deadline)
        self._drain(target, None, deadline)
        self._delete_target(target['tid'])
        return time.monotonic() - started

    def _show_tid(self, tid, iqn=None, deadline=None):
        for name, target in self._show(deadline).items():
            if target['tid'] == tid and (iqn is None or name == iqn):
                return dict(target, iqn=name)
        return None

    # -- exports -------------------------------------------------------------
    def _record_file(self, attachment_id):
        return os.path.join(self.state_dir, '%s.json' % attachment_id)

    def _load(self, attachment_id):
        try:
            with open(self._record_file(attachment_id)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def _save(self, attachment_id, record):
        tmp = self._record_file(attachment_id) + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(record, f)
        os.rename(tmp, self._record_file(attachment_id))

    def exports(self):
        found = {}
        for name in os.listdir(self.state_dir):
            if name.endswith('.json') and name != 'tgtd.json':
                record = self._load(name[:-5])
                if record:
                    found[name[:-5]] = record
        return found

    @staticmethod
    def _initiator(connector):
        initiator = (connector or {}).get('initiator')
        if not initiator:
            raise exception.InvalidConnector(
                reason='an iSCSI attachment needs the initiator name of '
                       'the host')
        if not iscsi_name.valid(initiator):
            raise exception.InvalidConnector(
                reason='initiator %r is not an iqn., eui. or naa. name'
                       % initiator)
        return initiator

    def create_export(self, path, volume_id, attachment_id, mode,
                      connector, qos_specs=None):
        initiator = self._initiator(connector)
        qos.not_applied(qos_specs, 'iSCSI export of attachment %s'
                        % attachment_id, 'tgt has no I/O limits')
        with self._lock:
            if self._load(attachment_id):
                return
            self.start()
            self._export(attachment_id, {
                'volume_id': volume_id, 'path': path, 'mode': mode,
                'iqn': self.iqn(volume_id, mode), 'initiator': initiator})

    def _export(self, attachment_id, record):
        targets = self._show()
        target = targets.get(record['iqn'])
        created = target is None
        if created:
            tid = self._new_target(record['iqn'], record['path'],
                                   record['mode'], targets)
            acl = []
        else:
            tid, acl = target['tid'], target['acl']
        try:
            # the account before the ACL entry: a target made here is
            # never open to a login without CHAP
            if target is not None and GUARD_USER not in target['accounts']:
                # a target made before accounts were: no login without
                # CHAP from now on
                self._add_account(GUARD_USER, os.urandom(16).hex(), tid,
                                  target)
            self._add_account(self.user(attachment_id),
                              self.secret(attachment_id), tid, target)
            if record['initiator'] not in acl:
                self._bind(tid, record['initiator'])
            self._save(attachment_id, record)
        except Exception:
            if created:
                self._undo_target(tid)
            raise
        LOG.info('attachment %s: %s may log in to %s (%s) as %s',
                 attachment_id, record['initiator'], record['iqn'],
                 record['mode'], self.user(attachment_id))

    def remove_export(self, attachment_id):
        with self._lock:
            record = self._load(attachment_id)
            if record is None:
                return
            others = [r for a, r in self.exports().items()
                      if a != attachment_id and r['iqn'] == record['iqn']]
            started = time.monotonic()
            target = self._target_now(record['iqn'],
                                      started + self.drain_timeout)
            drained = None
            # its credentials first, so that they never log in again
            # while its sessions end and drain
            if self._running():
                self._revoke(self.user(attachment_id), target,
                             started + self.drain_timeout)
            if target is not None:
                if not others:
                    drained = self._remove_target(target, started)
                    LOG.info('iSCSI target %s removed', record['iqn'])
                elif not any(r['initiator'] == record['initiator']
                             for r in others):
                    drained = self._unbind(target, record['initiator'],
                                           started)
                    if record['mode'] == 'rw':
                        self._drop_registration(record['iqn'],
                                                attachment_id)
            # a drain that timed out raised above: the record stays, so
            # a retry of the detach cuts and drains again
            os.unlink(self._record_file(attachment_id))
            LOG.info('attachment %s: export on %s removed%s', attachment_id,
                     record['iqn'], '' if drained is None else
                     ', %s drained in %.1f ms' % (record['initiator'],
                                                  drained * 1000))
            return drained

    def _running(self):
        pid = self._daemon_pid()
        return bool(pid) and _comm(pid) == 'tgtd'

    def _target_now(self, iqn, deadline):
        """Target ``iqn`` as our tgtd shows it, None when it has none or
        no tgtd runs (its exit ended every session); raises when a tgtd
        runs but does not answer by ``deadline``: nobody can then say
        whether a host is still connected."""
        pid = self._daemon_pid()
        if not pid or _comm(pid) != 'tgtd':
            return None
        try:
            target = self._show(deadline).get(iqn)
        except TargetError as e:
            raise TargetError(reason='tgtd (pid %d) does not answer, so '
                              'the cut-off of %s cannot be confirmed: %s'
                              % (pid, iqn, e))
        return dict(target, iqn=iqn) if target is not None else None

    def _drop_registration(self, iqn, attachment_id):
        """Remove the persistent-reservation registration a departed host
        made with its attachment's key (``attachment_key``) on the
        read-write target ``iqn``, which other hosts still use, as
        ``fence_scsi`` removes a failed node: log in as this service,
        register, PREEMPT the key (taking its reservation if it held one),
        RELEASE that, unregister.  For the others the reservation ends as
        if the departed host had unregistered itself.  tgt cannot say which
        key belongs to whom (no READ FULL STATUS), so a registration under
        any other key stays; a failure is logged, the detach goes on."""
        key = pr.attachment_key(attachment_id)
        fencer = self.prefix + FENCER_NAME
        try:
            removed = self._preempt_as_fencer(iqn, fencer, key)
        except Exception as e:    # the detach must go on whatever happens
            LOG.error('attachment %s: could not remove its registration '
                      '(key 0x%016x) on %s: %s', attachment_id, key, iqn, e)
            return
        finally:
            try:
                target = self._show().get(iqn)
                if target is not None:
                    self._revoke(fencer, target)
                    self._unbind(target, fencer)
            except TargetError as e:
                LOG.error('could not take %s off the ACL of %s: %s (prune '
                          'removes it)', fencer, iqn, e)
        if removed is not None:
            LOG.info('attachment %s: its registration (key 0x%016x) on %s '
                     'removed%s', attachment_id, key, iqn,
                     ' with its reservation' if removed else '')

    def _preempt_as_fencer(self, iqn, fencer, key):
        """Log in to ``iqn`` as ``fencer`` and preempt ``key``; None when
        the key is not registered, else whether its holder's reservation
        was released too.  The fencer's own registration is removed again
        also when a command fails."""
        target = self._show().get(iqn)
        if target is None:
            return None
        # an account of its own for this login alone (removed again with
        # the ACL entry), its secret made afresh: nothing keeps it
        # (one a failed run left behind goes first: it has another secret)
        secret = os.urandom(16).hex()
        self._revoke(fencer, target)
        self._add_account(fencer, secret, target['tid'], None)
        self._bind(target['tid'], fencer)
        ask = scsi.settled
        with iscsi_session.IscsiSession(self.portal, iqn, LUN, fencer,
                                        timeout=FENCER_TIMEOUT_S,
                                        chap=(fencer, secret)) as session:
            if key not in ask(session.read_keys)[1]:
                return None
            ask(lambda: session.register_and_ignore(FENCER_KEY))
            try:
                _gen, holder, rtype = ask(session.read_reservation)
                ask(lambda: session.preempt(FENCER_KEY, key, rtype or 0))
                if holder == key:
                    ask(lambda: session.release(FENCER_KEY, rtype))
            finally:
                ask(lambda: session.register_and_ignore(0))
            return holder == key

    def ensure_export(self, path, volume_id, attachment_id, mode,
                      connection_info, connector, qos_specs=None):
        """Rebuild the target and ACL of an attachment after tgtd lost
        them (a restart); the IQN its connection info names is kept."""
        with self._lock:
            record = self._load(attachment_id)
            if record is None:
                try:
                    initiator = self._initiator(connector)
                except exception.InvalidConnector:
                    return False
                record = {'volume_id': volume_id, 'path': path,
                          'mode': mode, 'initiator': initiator,
                          'iqn': connection_info.get('target_iqn') or
                          self.iqn(volume_id, mode)}
            self.start()
            target = self._show().get(record['iqn'])
            if target and record['initiator'] in target['acl'] and \
                    self.user(attachment_id) in target['accounts'] and \
                    GUARD_USER in target['accounts'] and \
                    self.user(attachment_id) in self._accounts():
                self._save(attachment_id, record)
                return True
            # (its account too: the secret is derived again, the same)
            self._export(attachment_id, record)
            return True

    def prune(self):
        """Remove targets and ACL entries of this backend's prefix that no
        export record asks for."""
        with self._lock:
            if not self._answers():
                return
            wanted, users = {}, {}
            for attachment_id, record in self.exports().items():
                wanted.setdefault(record['iqn'], set()).add(
                    record['initiator'])
                users.setdefault(record['iqn'], set()).add(
                    self.user(attachment_id))
            for iqn, target in self._show().items():
                if not iqn.startswith(self.prefix):
                    continue
                target = dict(target, iqn=iqn)
                try:
                    if iqn not in wanted:
                        LOG.warning('removing iSCSI target %s: no '
                                    'attachment uses it', iqn)
                        self._remove_target(target)
                        continue
                    for user in list(target['accounts']):
                        if user not in users[iqn] and user != GUARD_USER:
                            LOG.warning('removing account %s from %s: no '
                                        'attachment uses it', user, iqn)
                            self._revoke(user, target)
                    for entry in target['acl']:
                        if entry not in wanted[iqn]:
                            LOG.warning('removing %s from the ACL of %s: '
                                        'no attachment uses it', entry, iqn)
                            self._unbind(target, entry)
                except TargetError as e:
                    # the next prune tries again; the others go on
                    LOG.error('pruning %s: %s', iqn, e)
            # accounts of attachments whose export is gone
            mine = set().union(*users.values()) if users else set()
            try:
                for user in self._accounts():
                    if user.startswith(ACCOUNT_PREFIX) and user not in mine:
                        LOG.warning('removing account %s: no attachment '
                                    'uses it', user)
                        self._revoke(user, None)
            except TargetError as e:
                LOG.error('pruning accounts: %s', e)

    def reach(self, volume_id, attachment_ids, initiators):
        """Whether the host can reach the volume, found by trying: for
        each target of the volume, a login (from the target's own
        address) as each of ``initiators``, without credentials and with
        the derived credentials of each of ``attachment_ids`` (these
        also as one other initiator the target admits); and the
        sessions of ``initiators`` tgt still shows.  ``logins`` are the
        attempts that got in (``mode attachment-id|none initiator``),
        ``acl`` the ACL entries of ``initiators`` (for information: an
        entry opens nothing without an account).  Bounded, as a cut-off
        is, by ``target_drain_timeout``: a tgtd that does not answer by
        then raises (nobody can tell), instead of holding the caller
        past its RPC timeout and the target's lock for tgtadm's 30 s."""
        deadline = time.monotonic() + self.drain_timeout
        with self._lock:
            running = [a for a in attachment_ids if self._load(a)]
            acl, sessions, logins = [], 0, []
            pid = self._daemon_pid()
            if self._running():
                try:
                    targets = self._show(deadline)
                except TargetError as e:
                    raise TargetError(
                        reason='tgtd (pid %s) does not answer, so whether '
                               'the host reaches volume %s cannot be '
                               'told: %s' % (pid, volume_id, e))
                for mode in ('rw', 'ro'):
                    iqn = self.iqn(volume_id, mode)
                    target = targets.get(iqn)
                    if target is None:
                        continue
                    acl += ['%s %s' % (mode, e) for e in target['acl']
                            if e in initiators]
                    sessions += sum(1 for n in target['nexus']
                                    if n['initiator'] in initiators)
                    # a name the target admits that is not the host's:
                    # with it, a login tells whether the host's
                    # credentials still open the target once its own
                    # names are off the ACL (as a stranger who copied
                    # that name would try)
                    admitted = [e for e in target['acl']
                                if e not in initiators and
                                iscsi_name.valid(e)][:1]
                    tries = [(name, None) for name in initiators] + [
                        (name, a) for name in list(initiators) + admitted
                        for a in attachment_ids]
                    for initiator, attachment_id in tries:
                        if self._opens(iqn, initiator, attachment_id,
                                       deadline):
                            logins.append('%s %s %s' % (
                                mode, attachment_id or 'none', initiator))
        return {'exports': running, 'acl': acl, 'sessions': sessions,
                'logins': logins, 'reachable': bool(logins or sessions)}

    def _opens(self, iqn, initiator, attachment_id, deadline=None):
        """Whether a login to ``iqn`` as ``initiator``, with the
        credentials of ``attachment_id`` (none when None), gets in;
        raises when it cannot be told by ``deadline``."""
        chap = None if attachment_id is None else (
            self.user(attachment_id), self.secret(attachment_id))
        source = None if self.ip in ('0.0.0.0', '::') else self.ip
        timeout = FENCER_TIMEOUT_S
        if deadline is not None:
            timeout = min(timeout, deadline - time.monotonic())
            if timeout <= 0:
                raise TargetError(reason='cannot tell whether %s reaches '
                                  '%s within %.1f s' % (
                                      initiator, iqn, self.drain_timeout))
        session = iscsi_session.IscsiSession(
            self.portal, iqn, LUN, initiator, timeout=timeout,
            source_address=source, chap=chap)
        try:
            session.connect(probe=False)
        except iscsi_errors.IscsiError as e:
            if e.errno in (errno.EACCES, errno.EPERM):
                return False
            raise TargetError(reason='cannot tell whether %s reaches %s: '
                              '%s' % (initiator, iqn, e))
        session.close()
        return True

    def connection_data(self, path, volume_id, attachment_id, mode):
        record = self._load(attachment_id)
        if record is None:
            raise TargetError(reason='attachment %s has no export'
                              % attachment_id)
        return {'target_iqn': record['iqn'], 'target_portal': self.portal,
                'target_lun': LUN, 'target_discovered': False,
                # os-brick's CHAP keys; the connect flow masks the secret
                # (credentials.conceal) before it is recorded or sent
                'auth_method': 'CHAP',
                'auth_username': self.user(attachment_id),
                'auth_password': self.secret(attachment_id),
                'volume_id': volume_id, 'discard': mode == 'rw',
                # the key to register with, so that the registration
                # ends with the attachment (see _drop_registration)
                'reservation_key': '0x%016x'
                                   % pr.attachment_key(attachment_id)}


# the tgtd processes this process started, by pid: a zombie among them is
# reaped through its Popen, which then knows how it ended
_started = weakref.WeakValueDictionary()


def _shown(args):
    """tgtadm's arguments as an error may show them: no secret."""
    shown = list(args)
    for i, arg in enumerate(shown[:-1]):
        if arg == '--password':
            shown[i + 1] = credentials.MASK
    return ' '.join(shown)


def _comm(pid):
    """The name of running process ``pid``; None when there is none, or
    only its zombie (a tgtd started by another target object of this
    process, killed: reaped here, as nobody else waits for it)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            stat = f.read()
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ESRCH):
            return None
        raise
    name, _, rest = stat.partition(' (')[2].rpartition(') ')
    if rest[:1] == 'Z':
        proc = _started.get(pid)
        if proc is not None:
            proc.poll()
            return None
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return None
    return name


def _listens(pid, ip, port):
    """True when process ``pid`` owns the TCP socket listening on
    ``ip:port`` (tgtd keeps running when it cannot bind its portal)."""
    try:
        packed = socket.inet_pton(socket.AF_INET, ip)
        table, width = '/proc/net/tcp', 4
    except OSError:
        packed = socket.inet_pton(socket.AF_INET6, ip)
        table, width = '/proc/net/tcp6', 16
    # /proc/net/tcp prints addresses as host-order 32-bit words in hex
    words = [packed[i:i + 4][::-1].hex().upper()
             for i in range(0, width, 4)]
    local = '%s:%04X' % (''.join(words), port)
    inodes = set()
    try:
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                if fields[1] == local and fields[3] == '0A':   # LISTEN
                    inodes.add('socket:[%s]' % fields[9])
        fds = os.listdir('/proc/%d/fd' % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink('/proc/%d/fd/%s' % (pid, fd)) in inodes:
                return True
        except OSError:
            continue
    return False
