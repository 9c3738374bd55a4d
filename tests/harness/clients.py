"""python-cinderclient's and python-openstackclient's command lines, run
in this process against a stack (noauth): the same argv, environment and
exit code as the console scripts, without an interpreter start per
command.  tests/functional/test_readme.py runs both as real processes."""
import collections
import contextlib
import io
import os
import sys
import threading

from tests.harness import stack as stack_mod

Result = collections.namedtuple('Result', 'returncode stdout stderr')

# the environment and sys.argv are the process's: one command at a time
_lock = threading.Lock()


@contextlib.contextmanager
def _environ(values):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _run(main, prog, argv, env):
    out, err = io.StringIO(), io.StringIO()
    with _lock, _environ(env), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        saved_argv, sys.argv = sys.argv, [prog] + list(argv)
        try:
            code = main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else \
                (0 if e.code is None else 1)
        finally:
            sys.argv = saved_argv
    return Result(code or 0, out.getvalue(), err.getvalue())


def cinder_env(stack, version='3.71', project=stack_mod.PROJECT):
    env = {'OS_AUTH_TYPE': 'noauth', 'CINDER_ENDPOINT': stack.url + '/v3',
           'OS_USER_ID': 'admin', 'OS_PROJECT_ID': project}
    if version:
        env['OS_VOLUME_API_VERSION'] = version
    return env


def run_cinder(stack, *args, version='3.71'):
    """``cinder ARGS`` as the console script runs it."""
    from cinderclient import shell
    return _run(shell.main, 'cinder', args, cinder_env(stack, version))


def cinder(stack, *args):
    """The output of a ``cinder`` command that must succeed."""
    result = run_cinder(stack, *args)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def cinder_fails(stack, *args):
    """The error output of a ``cinder`` command that must fail (exit 1)."""
    result = run_cinder(stack, *args)
    assert result.returncode == 1, (args, result.stdout, result.stderr)
    return result.stderr


def _forget_osc_clients():
    """python-openstackclient keeps each service's client on its
    ClientManager class (osc_lib's ClientCache descriptors), made once per
    process: a command run here after one against another stack would
    talk to that stack's endpoint.  A console script starts afresh."""
    from openstackclient.common import clientmanager
    from osc_lib import clientmanager as osc_clientmanager
    for klass in clientmanager.ClientManager.__mro__:
        for value in vars(klass).values():
            if isinstance(value, osc_clientmanager.ClientCache):
                value._handle = None


def run_openstack(stack, *args, version='3.71'):
    """``openstack ARGS`` as the console script runs it (keystoneauth's
    token_endpoint plugin)."""
    from openstackclient import shell
    _forget_osc_clients()
    env = {'OS_AUTH_TYPE': 'token_endpoint',
           'OS_TOKEN': 'admin:%s' % stack_mod.PROJECT,
           'OS_ENDPOINT': '%s/v3/%s' % (stack.url, stack_mod.PROJECT),
           'OS_VOLUME_API_VERSION': version}
    return _run(lambda: shell.main(sys.argv[1:]), 'openstack', args, env)


def openstack(stack, *args, version='3.71'):
    """The output of an ``openstack`` command that must succeed."""
    result = run_openstack(stack, *args, version=version)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def table(output):
    """Rows of a prettytable as lists of cells."""
    rows = []
    for line in output.splitlines():
        if line.startswith('|'):
            rows.append([c.strip() for c in line.strip('|').split('|')])
    return rows


def props(output):
    """A Property | Value table as a dict."""
    return {row[0]: row[1] for row in table(output)[1:]}
