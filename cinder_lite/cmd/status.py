"""cinder-lite-status: checks to run before starting upgraded services (and
after changing their configuration), on oslo.upgradecheck.

    cinder-lite-status [--config-file F] upgrade check [--json]

Exit codes, as every OpenStack ``<project>-status``: 0 all checks passed,
1 a warning (look, but the upgrade may go on), 2 a failure (the services
will not work as configured), 255 a check crashed.

The checks read the configuration given (so run it on each node with that
node's files), the database schema revision and the programs on PATH;
they change nothing and start nothing.
"""
import os
import shutil
import sys

from alembic import script as alembic_script
from oslo_config import cfg
import oslo_messaging
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from cinder_lite.cmd import config
from cinder_lite.common import exception
from cinder_lite.common import iscsi_name
from cinder_lite import conf as cl_conf
from cinder_lite.conf import volume as volume_conf
from cinder_lite.db import api as db_api
from cinder_lite.db import migration
from cinder_lite import version
from cinder_lite.volume import rpcapi as volume_rpcapi
from cinder_lite.volume.targets import nbd as nbd_target

Code = upgradecheck.Code
Result = upgradecheck.Result

AUTHTOKEN = 'keystone_authtoken'
# Where the iSCSI target looks for tgt when it is not on PATH.
SBIN = '/usr/sbin'


def _first_line(error):
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _worst(failures, warnings, success):
    if failures:
        return Result(Code.FAILURE, ' '.join(failures + warnings))
    if warnings:
        return Result(Code.WARNING, ' '.join(warnings))
    return Result(Code.SUCCESS, success)


def _find_program(name, also_in=None):
    found = shutil.which(name)
    if found is None and also_in:
        candidate = os.path.join(also_in, name)
        if os.access(candidate, os.X_OK):
            found = candidate
    return found


class Checks(upgradecheck.UpgradeCommands):

    def __init__(self, conf):
        self.conf = conf

    # -- database ------------------------------------------------------------
    def _check_schema(self):
        """The database is at the newest alembic revision of this code."""
        url = sa.engine.make_url(self.conf.database.connection)
        if url.get_backend_name() == 'sqlite' and url.database and \
                url.database != ':memory:' and \
                not os.path.exists(url.database):
            # connecting would create an empty file
            if config.embedded(self.conf):
                return Result(Code.SUCCESS, 'The SQLite database %s does '
                              'not exist yet; in the embedded mode '
                              'cinder-lite-all makes it at its start.'
                              % url.database)
            return Result(Code.FAILURE, 'The SQLite database %s does not '
                          'exist: run "cinder-lite-manage db sync".'
                          % url.database)
        try:
            db_api.configure(self.conf)
            current = migration.current_revision()
        except Exception as e:
            return Result(Code.FAILURE, 'Cannot read the schema revision '
                          'of [database] connection: %s' % _first_line(e))
        finally:
            db_api.dispose()
        head = migration.head_revision()
        if current == head:
            return Result(Code.SUCCESS, 'Schema at revision %s, the newest.'
                          % head)
        if current is None and config.embedded(self.conf):
            return Result(Code.SUCCESS, 'The database has no schema yet; '
                          'in the embedded mode cinder-lite-all migrates '
                          'it at its start.')
        if current is None:
            return Result(Code.FAILURE, 'The database has no schema: run '
                          '"cinder-lite-manage db sync".')
        scripts = alembic_script.ScriptDirectory(os.path.join(
            os.path.dirname(migration.__file__), 'migrations'))
        try:
            scripts.get_revision(current)
        except Exception:
            return Result(Code.FAILURE, 'The database is at revision %s, '
                          'which this code does not know (newest %s): it '
                          'was migrated by a newer cinder_lite.'
                          % (current, head))
        if config.embedded(self.conf):
            return Result(Code.SUCCESS, 'The database is at revision %s, '
                          'the newest is %s; in the embedded mode '
                          'cinder-lite-all migrates it at its start.'
                          % (current, head))
        return Result(Code.FAILURE, 'The database is at revision %s, the '
                      'newest is %s: run "cinder-lite-manage db sync".'
                      % (current, head))

    # -- keystone ------------------------------------------------------------
    def _register_authtoken_opts(self):
        from keystoneauth1 import loading
        from keystonemiddleware import auth_token
        for group, group_opts in auth_token.list_opts():
            self.conf.register_opts(group_opts, group=group)
        # the old name of www_authenticate_uri, no longer read by
        # keystonemiddleware; registered here only to say so
        try:
            self.conf.register_opt(cfg.StrOpt('auth_uri'), group=AUTHTOKEN)
        except cfg.DuplicateOptError:
            pass
        section = self.conf[AUTHTOKEN].auth_section
        if section:
            loading.register_auth_conf_options(self.conf, section)
        return section or AUTHTOKEN

    def _check_keystone(self):
        """With auth_strategy = keystone, [keystone_authtoken] tells
        clients where Keystone is and has an auth plugin to validate
        tokens with; without either the API answers 500."""
        if self.conf.auth_strategy != 'keystone':
            return Result(Code.SUCCESS, 'auth_strategy = %s: nothing to '
                          'check.' % self.conf.auth_strategy)
        from keystoneauth1 import exceptions as ks_exceptions
        from keystoneauth1 import loading
        section = self._register_authtoken_opts()
        group = self.conf[AUTHTOKEN]
        failures, warnings = [], []
        if not group.www_authenticate_uri:
            if group.auth_uri:
                warnings.append(
                    '[%s] auth_uri is set but keystonemiddleware reads '
                    'www_authenticate_uri only: rename it (until then '
                    'clients are sent to the identity endpoint of the '
                    'catalog).' % AUTHTOKEN)
            else:
                failures.append(
                    '[%s] www_authenticate_uri is not set: the API cannot '
                    'tell a client without a token where Keystone is and '
                    'answers 500.' % AUTHTOKEN)
        auth_type = self.conf[section].auth_type
        if not auth_type:
            failures.append(
                'No auth plugin in [%s]: set auth_type (e.g. password) and '
                'its options (auth_url, username, password, ...); the API '
                'cannot validate tokens without one and answers 500.'
                % section)
        else:
            try:
                loading.load_auth_from_conf_options(self.conf, AUTHTOKEN)
            except ks_exceptions.NoMatchingPlugin:
                failures.append('[%s] auth_type = %s is not an auth plugin '
                                'keystoneauth knows.' % (section, auth_type))
            except ks_exceptions.MissingRequiredOptions as e:
                failures.append('[%s] auth_type = %s needs %s.' % (
                    section, auth_type,
                    ', '.join(o.dest for o in e.options)))
        return _worst(failures, warnings,
                      '[%s] names Keystone (%s) and the auth plugin %s.'
                      % (AUTHTOKEN, group.www_authenticate_uri, auth_type))

    # -- targets -------------------------------------------------------------
    def _check_nbd(self, section, backend):
        problems = []
        if _find_program('nbdkit') is None:
            problems.append('[%s] target_protocol = nbd needs nbdkit, which '
                            'is not on PATH.' % section)
        try:
            nbd_target.parse_port_range(backend.target_port_range)
        except exception.InvalidInput as e:
            problems.append('[%s] %s.' % (section, e.kwargs['reason']))
        return problems

    def _check_iscsi(self, section, backend):
        problems = ['[%s] target_protocol = iscsi needs %s, which is not on '
                    'PATH or in %s.' % (section, program, SBIN)
                    for program in ('tgtd', 'tgtadm')
                    if _find_program(program, SBIN) is None]
        if backend.target_control_port is None and \
                backend.target_port > 32767:
            problems.append(
                '[%s] target_port = %d is above 32767, the highest tgtd '
                'control socket number: set target_control_port.'
                % (section, backend.target_port))
        # the same test the target makes when it starts
        if not iscsi_name.valid(backend.target_prefix + 'volume-x'):
            problems.append('[%s] target_prefix %r does not make valid '
                            'iSCSI names.' % (section, backend.target_prefix))
        return problems

    def _check_targets(self):
        """Each enabled backend's target can run here: its programs are
        installed and its options are usable."""
        failures, seen = [], []
        for section in self.conf.enabled_backends:
            backend = volume_conf.BackendConf(self.conf, section)
            protocol = backend.target_protocol
            seen.append('%s: %s' % (section, protocol))
            if protocol == 'nbd':
                failures += self._check_nbd(section, backend)
            elif protocol == 'iscsi':
                failures += self._check_iscsi(section, backend)
        return _worst(failures, [], 'Targets of the enabled backends (%s) '
                      'have what they need.' % ', '.join(seen))

    def _check_backends(self):
        """A volume service needs its backends named."""
        if volume_conf.backends_configured(self.conf):
            return Result(Code.SUCCESS, 'enabled_backends names %s.' % (
                ', '.join(self.conf.enabled_backends) or 'no backend'))
        if config.embedded(self.conf):
            return Result(Code.SUCCESS, 'The embedded mode: '
                          'cinder-lite-all serves one file backend when '
                          'enabled_backends is not set.')
        return Result(Code.WARNING, 'enabled_backends is not set: '
                      'cinder-lite-volume refuses to start with this '
                      'configuration (cinder-lite-all runs one file '
                      'backend then). Set it on storage nodes.')

    def _check_timeouts(self):
        """The timeouts whose order the services rely on."""
        conf, warnings = self.conf, []
        if conf.service_down_time < 2 * conf.report_interval:
            warnings.append(
                'service_down_time = %d is under two report_interval '
                '(%d): one late heartbeat shows a live service down and '
                'its work is refused or moved.' % (
                    conf.service_down_time, conf.report_interval))
        longest_call = conf.volume_rpc_timeout + \
            volume_rpcapi.CALL_SEND_GRACE
        if conf.reconcile_after <= longest_call:
            warnings.append(
                'reconcile_after = %d is not above volume_rpc_timeout '
                'plus %d s (%d s, the longest an API call waits for a '
                'volume service): reconciliation may settle an attachment '
                'or volume whose request is still on its way.' % (
                    conf.reconcile_after, volume_rpcapi.CALL_SEND_GRACE,
                    longest_call))
        for section in conf.enabled_backends:
            backend = volume_conf.BackendConf(conf, section)
            if backend.target_drain_timeout >= conf.volume_rpc_timeout:
                warnings.append(
                    '[%s] target_drain_timeout = %g is not below '
                    'volume_rpc_timeout (%d): the API gives up on a '
                    'detach, takeover or fence (503) while its cut-off '
                    'may still succeed.' % (
                        section, backend.target_drain_timeout,
                        conf.volume_rpc_timeout))
        return _worst([], warnings, 'service_down_time, reconcile_after '
                      'and target_drain_timeout agree with '
                      'report_interval and volume_rpc_timeout.')

    _upgrade_checks = (
        ('Volume backends', _check_backends),
        ('Database schema', _check_schema),
        ('Keystone auth_token', _check_keystone),
        ('Volume targets', _check_targets),
        ('Timeouts', _check_timeouts),
    )


DESCRIPTION = """\
Checks to run before starting upgraded services and after changing their
configuration: "upgrade check" reads the config files given (run it on
each node with that node's files), the database's schema revision and the
programs on PATH, and changes nothing.  Exit 0: every check passed; 1: a
warning; 2: a failure; 255: a check crashed."""


def main(argv=None):
    conf = cfg.CONF
    cl_conf.register_opts(conf)
    checks = Checks(conf)

    def add_parsers(subparsers):
        upgrade = subparsers.add_parser(
            'upgrade', help='checks before (and after) an upgrade')
        upgrade.add_argument('check', choices=['check'],
                             help='run every check')
        upgrade.add_argument('--json', action='store_true',
                             help='the results as JSON instead of a table')
        upgrade.set_defaults(action_fn=checks.check)

    # (oslo.upgradecheck's own main registers this without a title: its
    # --help shows a section named ":")
    conf.register_cli_opt(cfg.SubCommandOpt(
        'command', title='Commands', handler=add_parsers))
    conf(sys.argv[1:] if argv is None else argv, project='cinder-lite',
         version=version.VERSION, description=DESCRIPTION)
    # (parsing a URL registers oslo.messaging's transport_url, which tells
    # the embedded mode from the distributed one)
    oslo_messaging.TransportURL.parse(conf)
    # (the checks read --json from the library's module-level CONF, which
    # its own main sets)
    upgradecheck.CONF = conf
    return upgradecheck.run(conf)


if __name__ == '__main__':
    sys.exit(main())
