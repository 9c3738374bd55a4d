"""Tempest against cinder_lite, in one command (``tools/tempest``).

Starts the project's OpenStack stack (``NovaStack``: Keystone, Glance,
Placement, Nova with two fake compute hosts, cinder_lite in keystone
mode), makes what Tempest's configuration names (tempest_conf.py), writes
``tempest.conf`` from what is running, runs the selected tests with the
pinned Tempest of ``tools/tempest-venv`` and prints, per selection, how
many passed, failed and were skipped, then every failure with a one-line
reason.  Everything stays in the work directory: the stack's configs and
logs (``stack/``), Tempest's workspace (``tempest/``: tempest.conf,
tempest.log, the stestr repository) and ``results.json``.

Selections (any number, one run): ``--interop`` (the interop guideline's
volume tests, tools/tempest-interop-volume.txt), ``--compute-attach``
(tempest.api.compute.volumes.test_attach_volume), ``--backup`` (the
volume tests of backups, their quotas and limits), ``--maintenance``
(a few tests each of migration, retype, manage and unmanage, groups and
group snapshots), ``--volume`` (the
whole tempest.api.volume tree) and regular expressions.  Tests matching
tools/tempest-exclude.txt are not run (and are counted as excluded).

A test whose class setup failed is not run by Tempest: it is counted as
failed (or skipped, when the class skipped itself) with the class's
reason.  doc/source/tempest.rst says more.
"""
import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from tests.harness import cluster as cluster_mod
from tests.harness import openstack
from tests.harness import tempest_conf

ROOT = openstack.ROOT
TOOLS = os.path.join(ROOT, 'tools')
VENV = os.environ.get('CINDER_LITE_TEMPEST_VENV') or os.path.join(
    os.path.expanduser('~'), '.cache', 'cinder_lite', 'tempest-venv')
INTEROP_LIST = os.path.join(TOOLS, 'tempest-interop-volume.txt')
EXCLUDE_LIST = os.path.join(TOOLS, 'tempest-exclude.txt')
RESULTS_READER = os.path.join(ROOT, 'tests', 'harness',
                              'tempest_results.py')
INTEROP_GUIDELINE = 'interop 2020.06 volume tests'
SELECTIONS = {
    'compute-attach': [
        r'^tempest\.api\.compute\.volumes\.test_attach_volume\.'],
    'volume': [r'^tempest\.api\.volume\.'],
    # the volume tests of backups: those Tempest skips without
    # [volume-feature-enabled] backup, and those whose quota sets,
    # quota classes or limits carry the backup counts and limits (the
    # negative quota tests set backups and backup_gigabytes back)
    'backup': [
        r'^tempest\.api\.volume\.test_volumes_backup\.',
        r'^tempest\.api\.volume\.admin\.test_volumes_backup\.',
        r'^tempest\.api\.volume\.test_volumes_snapshots\.'
        r'VolumesSnapshotTestJSON\.test_snapshot_backup\b',
        r'^tempest\.api\.volume\.admin\.test_volume_quotas\.',
        r'^tempest\.api\.volume\.admin\.test_volume_quotas_negative\.',
        r'^tempest\.api\.volume\.admin\.'
        r'test_volume_snapshot_quotas_negative\.',
        r'^tempest\.api\.volume\.admin\.test_volume_quota_classes\.',
        r'^tempest\.api\.volume\.test_volume_absolute_limits\.'],
    # a volume's maintenance (issue 47), one or two quick tests each:
    # migration (a retype that moves the volume to the other backend),
    # retype in place, manage and unmanage of a volume and of a
    # snapshot, groups and group snapshots
    'maintenance': [
        r'^tempest\.api\.volume\.admin\.test_volume_retype\.'
        r'VolumeRetypeWithMigrationTest\.'
        r'test_available_volume_retype_with_migration\b',
        r'^tempest\.api\.volume\.admin\.test_volume_retype\.'
        r'VolumeRetypeWithoutMigrationTest\.test_available_volume_retype\b',
        r'^tempest\.api\.volume\.admin\.test_volume_manage\.'
        r'VolumeManageAdminTest\.test_unmanage_manage_volume\b',
        r'^tempest\.api\.volume\.admin\.test_snapshot_manage\.'
        r'SnapshotManageAdminTest\.test_unmanage_manage_snapshot\b',
        r'^tempest\.api\.volume\.admin\.test_groups\.GroupsTest\.'
        r'test_group_create_show_list_delete\b',
        r'^tempest\.api\.volume\.admin\.test_group_snapshots\.'
        r'GroupSnapshotsTest\.test_group_snapshot_create_show_list_delete\b'],
}
TEST_LINE = re.compile(r'^\{\d+\} ')
CLASS_FIXTURE = re.compile(r'^(setUpClass|tearDownClass) \((\S+)\)$')
REASON_CHARS = 400


def venv_bin(name):
    return os.path.join(VENV, 'bin', name)


def read_list(path):
    """The entries of a list file: one per line, ``#`` starts a comment."""
    entries = []
    with open(path) as f:
        for line in f:
            entry = line.split('#', 1)[0].strip()
            if entry:
                entries.append(entry)
    return entries


def exact(test_id):
    """A regex matching ``test_id`` with or without its [attributes]."""
    return '^%s(\\[|$)' % re.escape(test_id)


def bare(test_id):
    """The test id without Tempest's ``[id-...,smoke]`` attributes."""
    return test_id.split('[', 1)[0]


def selections(args):
    """{selection name: [regex, ...]} in the order asked."""
    chosen = {}
    if args.interop:
        chosen['interop'] = [exact(t) for t in read_list(INTEROP_LIST)]
    for name in ('compute-attach', 'backup', 'maintenance', 'volume'):
        if getattr(args, name.replace('-', '_')):
            chosen[name] = list(SELECTIONS[name])
    for regex in args.regex:
        re.compile(regex)
        chosen[regex] = [regex]
    return chosen


# -- the Tempest workspace --------------------------------------------------

class Workspace:
    """A directory with etc/tempest.conf and an stestr repository, where
    ``tempest run`` is started."""

    def __init__(self, path):
        self.path = path
        self.conf = os.path.join(path, 'etc', 'tempest.conf')
        os.makedirs(os.path.join(path, 'etc'), exist_ok=True)
        os.makedirs(os.path.join(path, 'locks'), exist_ok=True)
        if not os.path.exists(self.conf):
            open(self.conf, 'w').close()
        if not os.path.isdir(os.path.join(path, '.stestr')):
            self._run([venv_bin('stestr'), 'init'], capture=True)

    def _run(self, argv, capture=False, timeout=None):
        proc = subprocess.run(argv, cwd=self.path, text=True,
                              capture_output=capture, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        return proc

    def tempest(self, *args, capture=False):
        return self._run([venv_bin('tempest'), 'run', '--config-file',
                          self.conf] + list(args), capture=capture)

    def write_conf(self, sections):
        cluster_mod.write_conf(self.conf, sections)

    def list_tests(self, regexes):
        """Ids (with attributes) of the tests matching any of ``regexes``."""
        include = os.path.join(self.path, 'include-list.txt')
        with open(include, 'w') as f:
            f.write(''.join(r + '\n' for r in regexes))
        proc = self.tempest('--list-tests', '--include-list', include,
                            capture=True)
        if proc.returncode != 0:
            raise RuntimeError('tempest run --list-tests failed:\n%s\n%s'
                               % (proc.stdout, proc.stderr))
        return sorted(line.strip() for line in proc.stdout.splitlines()
                      if line.startswith('tempest.'))

    def run(self, test_ids, concurrency, out=sys.stdout):
        """Run ``test_ids`` (bare ids: Tempest's attributes depend on the
        configuration, e.g. ``slow`` only with validation on).  Tempest's
        whole output goes to ``run.log``; one line per test to ``out``."""
        include = os.path.join(self.path, 'run-list.txt')
        with open(include, 'w') as f:
            f.write(''.join(exact(t) + '\n' for t in test_ids))
        log_path = os.path.join(self.path, 'run.log')
        with open(log_path, 'w') as log:
            proc = subprocess.Popen(
                [venv_bin('tempest'), 'run', '--config-file', self.conf,
                 '--include-list', include, '--concurrency',
                 str(concurrency)], cwd=self.path, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for line in proc.stdout:
                log.write(line)
                if TEST_LINE.match(line):
                    out.write(line)
                    out.flush()
            return proc.wait()

    def results(self):
        """The last run's results: [{'id', 'status', 'reason', 'seconds'}]."""
        stream = os.path.join(self.path, 'last.subunit')
        with open(stream, 'wb') as f:
            proc = subprocess.run([venv_bin('stestr'), 'last', '--subunit'],
                                  cwd=self.path, stdout=f,
                                  stderr=subprocess.PIPE)
        if proc.returncode != 0:
            raise RuntimeError('stestr last --subunit failed: %s'
                               % proc.stderr.decode(errors='replace'))
        out = os.path.join(self.path, 'last.json')
        proc = subprocess.run([venv_bin('python'), RESULTS_READER, stream,
                               out], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError('reading %s failed:\n%s' % (stream,
                                                           proc.stderr))
        with open(out) as f:
            return json.load(f)


# -- results ----------------------------------------------------------------

EXCEPTION_LINE = re.compile(r'^[A-Za-z_][\w.]*(Error|Exception|Failure|'
                            r'Exceeded|Timeout|[A-Z]\w+)(: |$)')


MULTIPLE = re.compile(r"\(<class '([\w.]+)'>, (.*?), <traceback object",
                      re.DOTALL)


def reason_line(text):
    """One line out of a skip reason or a traceback: the exception line of
    the last traceback and, for Tempest's own exceptions, the ``Details:``
    line after it."""
    many = MULTIPLE.findall(text)
    if many:
        # testtools.MultipleExceptions: a tuple of (class, value, tb)
        return shorten('; '.join('%s: %s' % m for m in many))
    lines = text.strip().splitlines()
    found = None
    for i, line in enumerate(lines):
        if EXCEPTION_LINE.match(line) and not line.startswith('Traceback'):
            found = i
    if found is None:
        one = ' '.join(line.strip() for line in lines)
    else:
        picked = [lines[found]]
        for line in lines[found + 1:found + 4]:
            if line.startswith('Details:'):
                picked.append(line)
                break
        one = ' '.join(line.strip() for line in picked)
    return shorten(one)


def shorten(text):
    one = re.sub(r'\s+', ' ', text).strip()
    return one if len(one) <= REASON_CHARS else one[:REASON_CHARS] + '...'


def class_of(test_id):
    return bare(test_id).rsplit('.', 1)[0]


def outcomes(test_ids, results):
    """{test id: (outcome, reason)} for ``test_ids``, outcome one of
    passed, failed, skipped; and the class fixtures that failed
    ([(fixture id, reason)]).  A test Tempest did not report takes the
    outcome of its class's setUpClass."""
    by_id = {bare(r['id']): r for r in results}
    fixtures = {}
    broken = []
    for r in results:
        m = CLASS_FIXTURE.match(r['id'])
        if m:
            fixtures[(m.group(1), m.group(2))] = r
            if r['status'] not in ('success', 'skip'):
                broken.append((r['id'], reason_line(r['reason'])))
    out = {}
    for test_id in test_ids:
        r = by_id.get(test_id)
        if r is not None:
            status, reason = r['status'], r['reason']
        else:
            setup = fixtures.get(('setUpClass', class_of(test_id)))
            if setup is None:
                out[test_id] = ('failed', 'not run, and no class setup '
                                'failure reported (run interrupted?)')
                continue
            status = setup['status']
            reason = setup['reason']
            if status != 'skip':
                status = 'fail'
                reason = 'class setup failed: ' + reason_line(reason)
        outcome = {'success': 'passed', 'xfail': 'passed',
                   'skip': 'skipped'}.get(status, 'failed')
        out[test_id] = (outcome, reason_line(reason) if reason else '')
    return out, broken


def summarize(chosen, selected, excluded, outcome, broken, missing, out):
    """Print counts per selection, then failures; returns the totals."""
    write = out.write
    totals = collections.Counter()
    for name, regexes in chosen.items():
        ids = [t for t in selected if any(re.search(r, t) for r in regexes)]
        counts = collections.Counter(outcome[t][0] for t in ids)
        ex = sum(1 for t in excluded if any(re.search(r, t)
                                            for r in regexes))
        label = INTEROP_GUIDELINE if name == 'interop' else name
        write('%-32s %3d tests: %3d passed, %3d failed, %3d skipped%s\n' % (
            label, len(ids), counts['passed'], counts['failed'],
            counts['skipped'], ', %d excluded' % ex if ex else ''))
        if name == 'interop':
            write('%-32s %d of %d passed%s\n' % (
                '', counts['passed'], len(read_list(INTEROP_LIST)),
                '; not in this Tempest: %s' % ', '.join(missing)
                if missing else ''))
    totals.update(outcome[t][0] for t in selected)
    failed = sorted(t for t in selected if outcome[t][0] == 'failed')
    if failed:
        write('\nFailed (%d):\n' % len(failed))
        for t in failed:
            write('  %s\n      %s\n' % (bare(t), outcome[t][1]))
    if broken:
        write('\nClass fixtures that failed (%d):\n' % len(broken))
        for fixture, reason in broken:
            write('  %s\n      %s\n' % (fixture, reason))
    skips = collections.Counter(outcome[t][1] for t in selected
                                if outcome[t][0] == 'skipped')
    if skips:
        write('\nSkipped, by reason:\n')
        for reason, n in sorted(skips.items(), key=lambda kv: -kv[1]):
            write('  %3d  %s\n' % (n, reason))
    return totals


# -- main -------------------------------------------------------------------

def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog='tools/tempest', description=__doc__.split('\n\n')[0])
    parser.add_argument('--interop', action='store_true',
                        help='the interop 2020.06 volume tests')
    parser.add_argument('--compute-attach', action='store_true',
                        help='tempest.api.compute.volumes.test_attach_volume')
    parser.add_argument('--backup', action='store_true',
                        help='the volume tests of backups (backups, their '
                             'quotas and limits)')
    parser.add_argument('--maintenance', action='store_true',
                        help='a few tests each of migration, retype, '
                             'manage and unmanage, groups and group '
                             'snapshots')
    parser.add_argument('--volume', action='store_true',
                        help='the whole tempest.api.volume tree')
    parser.add_argument('regex', nargs='*',
                        help='more tests: regular expressions (re.search) '
                             'on Tempest test ids')
    parser.add_argument('--concurrency', type=int, default=1,
                        help='Tempest workers (default 1)')
    parser.add_argument('--workdir',
                        help='keep everything here (default: a new '
                             'directory under the temporary directory)')
    parser.add_argument('--exclude-list', default=EXCLUDE_LIST,
                        help='default tools/tempest-exclude.txt')
    parser.add_argument('--list', action='store_true',
                        help='only list the tests that would run')
    args = parser.parse_args(argv)
    if not (args.interop or args.compute_attach or args.backup or
            args.maintenance or args.volume or args.regex):
        parser.error('nothing selected: give --interop, --compute-attach, '
                     '--backup, --maintenance, --volume or a regex')
    return args


def select(workspace, chosen, exclude_list):
    """(selected ids, excluded ids, interop ids Tempest does not have),
    ids without their attributes."""
    listed = [bare(t) for t in workspace.list_tests(
        [r for rs in chosen.values() for r in rs])]
    exclude = read_list(exclude_list) if exclude_list else []
    excluded = [t for t in listed if any(re.search(r, t) for r in exclude)]
    dropped = set(excluded)
    selected = [t for t in listed if t not in dropped]
    missing = []
    if 'interop' in chosen:
        missing = [t for t in read_list(INTEROP_LIST)
                   if not any(re.search(exact(t), i) for i in listed)]
    return selected, excluded, missing


def main(argv=None):
    args = parse_args(argv)
    chosen = selections(args)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(
        prefix='cinder-lite-tempest-'))
    os.makedirs(workdir, exist_ok=True)
    workspace = Workspace(os.path.join(workdir, 'tempest'))
    timings = {}
    started = time.monotonic()
    selected, excluded, missing = select(workspace, chosen,
                                         args.exclude_list)
    timings['list'] = time.monotonic() - started
    print('tempest: %d tests selected, %d excluded by %s' % (
        len(selected), len(excluded),
        os.path.relpath(args.exclude_list, ROOT) if args.exclude_list
        else 'nothing'), flush=True)
    if args.list:
        for t in selected:
            print(t)
        return 0
    if not selected:
        print('tempest: nothing to run')
        return 1
    stack = openstack.NovaStack(workdir=os.path.join(workdir, 'stack'),
                                keep_workdir=True)
    t = time.monotonic()
    stack.start()       # stops what it started if it fails
    try:
        made = tempest_conf.prepare(stack)
        workspace.write_conf(tempest_conf.sections(stack, made,
                                                   workspace.path))
        timings['stack'] = time.monotonic() - t
        print('tempest: stack up in %.0f s (configs and logs in %s)' % (
            timings['stack'], stack.workdir), flush=True)
        t = time.monotonic()
        workspace.run(selected, args.concurrency)
        timings['run'] = time.monotonic() - t
        stack.check_alive()
    finally:
        t = time.monotonic()
        codes = stack.stop()
        timings['stop'] = time.monotonic() - t
    results = workspace.results()
    outcome, broken = outcomes(selected, results)
    with open(os.path.join(workdir, 'results.json'), 'w') as f:
        json.dump({'selections': chosen, 'excluded': excluded,
                   'missing': missing, 'timings': timings,
                   'tests': {t: {'outcome': o, 'reason': r}
                             for t, (o, r) in outcome.items()},
                   'class_fixtures_failed': broken}, f, indent=1)
    print()
    totals = summarize(chosen, selected, excluded, outcome, broken, missing,
                       sys.stdout)
    bad = {n: rc for n, rc in codes.items() if rc not in (0, -15, None)}
    if bad:
        print('\nprocesses that did not stop cleanly: %r' % bad)
    print('\ntimings: %s; everything is in %s' % (', '.join(
        '%s %.0f s' % kv for kv in timings.items()), workdir))
    # the closing line, in the form CI runners read
    print('tempest: %d passed, %d failed, %d skipped' % (
        totals['passed'], totals['failed'], totals['skipped']))
    return 1 if totals['failed'] or broken else 0


if __name__ == '__main__':
    sys.exit(main())
