"""The run: bootstrap, then bursts -- plan, play from several threads,
check after a quiet period -- and the results: summary, verdict and the
report of each sort of finding with the requests that led to it."""
import collections
import json
import random
import sys
import threading
import time

from tests.stateful.checker import Checker
from tests.stateful.findings import Finding
from tests.stateful.findings import signature
from tests.stateful.model import Model
from tests.stateful.plans import Planner
from tests.stateful.plans import Step
from tests.stateful.plans import instance_ids
from tests.stateful import groups
from tests.stateful import quotas
from tests.stateful.worker import Worker
from tests.stateful.world import TYPE_SLOTS
from tests.stateful.world import VOLUME_SLOTS
from tests.stateful.world import access_mode

BACKEND_OPS = ('backup_create', 'backup_delete', 'vol_clone', 'revert',
               'vol_migrate', 'group_create', 'group_add', 'group_remove',
               'group_delete', 'gsnap_create', 'gsnap_delete')


class Fuzzer:

    def __init__(self, url, seed=0, threads=4, steps_per_thread=25,
                 out=None):
        self.url = url.rstrip('/')
        self.seed = seed
        self.threads = threads
        self.steps_per_thread = steps_per_thread
        self.model = Model()
        self.instances = instance_ids(seed)
        self.checker = Checker(self)
        self.out = out or sys.stdout
        self.log = collections.defaultdict(list)   # burst -> [Call]
        self.findings = []
        self.codes = collections.Counter()
        # os-takeover answers by status: the fuzzer shows it got some
        # through, not only refusals
        self.takeovers = collections.Counter()
        # snapshot creates and deletes likewise
        self.snapshot_calls = collections.Counter()
        # os-force_delete answers, and how many raced an os-complete
        self.force_deletes = collections.Counter()
        # backups, clones, reverts, migrations, groups: op and status
        self.backend_calls = collections.Counter()
        self.requests = 0
        self.t0 = time.monotonic()
        self._lock = threading.Lock()

    # -- bookkeeping ----------------------------------------------------------
    def record(self, burst, call):
        with self._lock:
            self.log[burst].append(call)
            self.codes['%dxx' % (call.status // 100)] += 1
            if call.op == 'att_takeover':
                self.takeovers[call.status] += 1
            if call.op in ('snap_create', 'snap_delete',
                           'vol_delete_cascade'):
                self.snapshot_calls['%s %d' % (call.op, call.status)] += 1
            if call.op == 'vol_force_delete':
                self.force_deletes[call.status] += 1
            if call.op in BACKEND_OPS:
                self.backend_calls['%s %d' % (call.op, call.status)] += 1
            self.requests += 1

    def judge(self, call, burst):
        """The answer alone: 5xx, impossible successes, wrong modes."""
        found = []
        ok = 200 <= call.status < 300

        def add(kind, detail):
            found.append(Finding(
                kind, '%s %s by %s: %s' % (call.method, call.path,
                                           call.caller, detail), burst,
                op=call.op, status=call.status, volume_id=call.volume_id,
                attachment_id=call.attachment_id, type_id=call.type_id))
        if call.status >= 500:
            add('5xx', 'answered %d %s' % (call.status, _short(call.answer)))
        if ok and call.must_fail:
            add('impossible-success', 'answered %d although %s' % (
                call.status, call.must_fail))
        if ok and call.op == 'att_create' and isinstance(call.answer, dict):
            att = call.answer.get('attachment', {})
            if call.want_mode and att.get('attach_mode') != call.want_mode:
                add('mode-ignored' + self.single_writer_suffix(call),
                    'asked for %s, got %s' % (call.want_mode,
                                              att.get('attach_mode')))
            mode = access_mode(att.get('connection_info'))
            if att.get('connection_info') and mode != att.get('attach_mode'):
                add('access-mode', 'attach_mode %s but access_mode %s' % (
                    att.get('attach_mode'), mode))
        with self._lock:
            self.findings += found

    def judge_pair(self, one, two, burst):
        """Two calls fired at the same moment whose successes exclude
        each other whatever the order: an os-complete of an attachment
        and an os-force_delete of its volume (the delete first detaches
        it, the complete first makes the volume attached, which the
        delete refuses)."""
        calls = {one.op: one, two.op: two}
        complete = calls.get('att_complete')
        force = calls.get('vol_force_delete')
        if complete is None or force is None or not (
                200 <= complete.status < 300 and 200 <= force.status < 300):
            return
        with self.model.lock:
            volume_id = self.model.attachments.get(
                complete.attachment_id, {}).get('volume_id')
        if volume_id != force.volume_id:
            return
        with self._lock:
            self.findings.append(Finding(
                'impossible-pair', 'os-complete of attachment %s answered '
                '%d and os-force_delete of its volume %s answered %d at the '
                'same moment' % (complete.attachment_id, complete.status,
                                 volume_id, force.status), burst,
                op=force.op, status=force.status, volume_id=volume_id,
                attachment_id=complete.attachment_id))

    def single_writer_suffix(self, call):
        with self.model.lock:
            tid = self.model.volumes.get(call.volume_id, {}).get('type_id')
            return '-single-writer' if self.model.type_kind.get(tid) == \
                'single' else ''

    # -- the run --------------------------------------------------------------
    def bootstrap(self):
        """Every type slot, and a volume in each slot, one at a time."""
        steps = quotas.bootstrap_steps() + groups.bootstrap_steps()
        steps += [Step('type_create', 'admin', {'type': t})
                  for t in TYPE_SLOTS]
        kinds = ('multi', 'single', 'plain', 'multi', 'pin-ma', 'pin-noma',
                 'single', 'plain', 'multi', None)
        steps += [Step('vol_create', 'member', {
            'slot': slot, 'size': 1,
            'type': 'fz-%s-%d' % (kind, slot % 2) if kind else None})
            for slot, kind in enumerate(kinds[:VOLUME_SLOTS])]
        with self.model.lock:
            self.model.pools = sorted(p['name'] for p in self.checker.get(
                '/scheduler-stats/get_pools')['pools'])
        Worker(self, 0, steps, -1).run()
        snap, stuck = self.checker.quiet(-1)
        self.findings += stuck
        self.model.refresh(snap)
        return snap

    def burst(self, burst):
        hot_rng = random.Random('%s/%d/hot' % (self.seed, burst))
        hot = hot_rng.sample(range(VOLUME_SLOTS), 3)
        plans = [Planner(self.seed, burst, t, hot).plan(
            self.steps_per_thread) for t in range(self.threads)]
        workers = [Worker(self, t, plan, burst)
                   for t, plan in enumerate(plans)]
        threads = [threading.Thread(target=w.run, name='fuzz-%d' % i)
                   for i, w in enumerate(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(len(p) for p in plans)

    def check(self, burst, before):
        snap, stuck = self.checker.quiet(burst)
        found = list(stuck) + self.checker.check_state(snap, burst)
        if not stuck:
            found += quotas.check_usage(self.checker, snap, burst)
        touched = {c.volume_id for c in self.log[burst] if c.volume_id}
        touched |= {a['volume_id'] for a in snap['attachments'].values()}
        touched |= {a['volume_id'] for a in before['attachments'].values()}
        touched &= set(self.model.history) | set(snap['volumes'])
        found += self.checker.check_audit(snap, touched, burst)
        self.checker.add_evidence(found)
        self.findings += found
        self.checker.forget_resets(snap)
        self.model.refresh(snap)
        return snap

    def run(self, steps):
        snap = self.bootstrap()
        burst = 0
        while self.requests < steps:
            self.burst(burst)
            snap = self.check(burst, snap)
            if not any(f.burst == burst for f in self.findings):
                # keep only the logs of bursts with something to show
                self.log.pop(burst, None)
            burst += 1
        self.bursts = burst
        self.seconds = time.monotonic() - self.t0
        return self

    # -- results --------------------------------------------------------------
    def unexpected(self):
        """Every finding: each 5xx, impossible success and invariant
        break fails the run."""
        return list(self.findings)

    def failed_bursts(self):
        """The bursts with a finding (-1 is the bootstrap)."""
        return sorted({f.burst for f in self.findings})

    def verdict(self):
        """The line for CI log readers: bursts without findings passed,
        bursts with findings failed (the bootstrap counts only when it has
        a finding, as a failed burst)."""
        failed = self.failed_bursts()
        passed = self.bursts - sum(1 for b in failed if b >= 0)
        return 'stateful fuzz: %d passed, %d failed' % (passed, len(failed))

    def summary(self):
        rows = [('seed', self.seed), ('threads', self.threads),
                ('bursts', self.bursts), ('steps (requests)', self.requests)]
        rows += [('  %s' % k, self.codes[k]) for k in sorted(self.codes)]
        rows += [('os-takeover', ', '.join(
            '%d x%d' % kv for kv in sorted(self.takeovers.items())) or '-')]
        rows += [('snapshots', ', '.join(
            '%s x%d' % kv for kv in sorted(self.snapshot_calls.items()))
            or '-')]
        rows += [('os-force_delete', ', '.join(
            '%d x%d' % kv for kv in sorted(self.force_deletes.items()))
            or '-')]
        rows += [('backend work', ', '.join(
            '%s x%d' % kv for kv in sorted(self.backend_calls.items()))
            or '-')]
        rows += [('5xx', sum(n for k, n in self.codes.items()
                             if k.startswith('5'))),
                 ('invariant breaks', sum(1 for f in self.findings
                                          if f.kind != '5xx')),
                 ('findings', len(self.findings)),
                 ('bursts with findings', len(self.failed_bursts())),
                 ('seconds', '%.1f' % self.seconds)]
        width = max(len(k) for k, _ in rows)
        lines = ['%-*s  %s' % (width, k, v) for k, v in rows]
        by_kind = collections.Counter(f.kind for f in self.findings)
        for kind, n in sorted(by_kind.items()):
            lines.append('  %-28s x%d' % (kind, n))
        return '\n'.join(lines)

    def report(self, limit=8):
        """The findings, one of each sort, with the requests that led to
        them."""
        out = []
        sorts = collections.OrderedDict()
        for f in self.findings:
            sorts.setdefault(signature(f), []).append(f)
        for n, (sort, found) in enumerate(sorts.items()):
            if n == limit:
                out.append('... %d more sorts of finding not shown' % (
                    len(sorts) - limit))
                break
            f = found[0]
            out.append('FINDING x%d (seed %s, burst %d): %s: %s' % (
                len(found), self.seed, f.burst, f.kind, f.detail[:1500]))
            out.append(self.sequence(f))
            if f.evidence:
                out.append('  audit trail of volume %s:' % f.volume_id)
                out.append(f.evidence)
        return '\n'.join(out)

    def sequence(self, finding, limit=40):
        """The requests of the finding's burst about its objects, in the
        order they were answered."""
        calls = sorted((c for c in self.log.get(finding.burst, [])
                        if c.concerns(finding.volume_id,
                                      finding.attachment_id,
                                      finding.type_id)),
                       key=lambda c: c.ended)
        if len(calls) > limit:
            calls = calls[-limit:]
        lines = [c.line(self.t0) for c in calls]
        return '\n'.join(lines) or '  (no request of the burst names it)'


def _short(answer):
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return text[:300]
