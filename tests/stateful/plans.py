"""What each thread plays in a burst: a plan of symbolic steps, drawn from
``random.Random`` seeded with (seed, burst, thread) -- short meaningful
scenarios with perturbations (swapped, repeated, twinned steps)."""
import dataclasses
import random
import uuid

from tests.stateful.groups import GroupPlans
from tests.stateful.quotas import QuotaPlans
from tests.stateful.world import HOSTS
from tests.stateful.world import INSTANCES
from tests.stateful.world import TYPE_SLOTS
from tests.stateful.world import VOLUME_SLOTS
from tests.stateful.world import WRITERS


@dataclasses.dataclass
class Step:
    """One request, symbolically: ``args`` name slots and bindings, not
    ids.  ``twin``: fired at the same moment as this one."""
    op: str
    caller: str = 'member'
    args: dict = dataclasses.field(default_factory=dict)
    version: str = '3.71'
    bind: str = None
    twin: 'Step' = None

    def size(self):
        return 1 + (self.twin.size() if self.twin else 0)


class Planner(QuotaPlans, GroupPlans):
    """Draws the plan of one thread in one burst: a list of scenarios,
    each a short meaningful sequence with perturbations."""

    def __init__(self, seed, burst, thread, hot_slots):
        self.rng = random.Random('%s/%d/%d' % (seed, burst, thread))
        self.hot = hot_slots
        self.instances = instance_ids(seed)
        self.counter = 0

    # -- draws ----------------------------------------------------------------
    def chance(self, p):
        return self.rng.random() < p

    def vslot(self):
        if self.chance(0.7):
            return self.rng.choice(self.hot)
        return self.rng.randrange(VOLUME_SLOTS)

    def tslot(self):
        return self.rng.choice(TYPE_SLOTS)

    def writer(self):
        return self.rng.choice(WRITERS)

    def instance(self):
        return self.rng.randrange(INSTANCES)

    def host(self):
        return self.rng.choice(HOSTS)

    def mode(self, p_none=0.4):
        return None if self.chance(p_none) else self.rng.choice(('rw', 'ro'))

    def version(self, minimum=27):
        """Mostly the newest microversion, sometimes an older one (mode
        only counts from 3.54, os-complete needs 3.44)."""
        return self.rng.choice(['3.71', '3.71', '3.54', '3.44', '3.%d'
                                % minimum])

    def name(self, prefix):
        self.counter += 1
        return '%s%d' % (prefix, self.counter)

    def pick(self):
        return self.rng.random()

    # -- the plan -------------------------------------------------------------
    def plan(self, steps):
        scenarios = [
            (self.modern_attach, 6), (self.same_instance_twice, 2),
            (self.two_instances, 2), (self.legacy_attach, 4),
            (self.legacy_odd, 3), (self.detach_race, 3),
            (self.volume_life, 2), (self.type_life, 1),
            (self.retype_extend_attached, 2), (self.admin_mess, 2),
            (self.intruder, 2), (self.malformed, 2), (self.reads, 1),
            (self.quota_play, 2), (self.quota_misuse, 1),
            (self.takeover, 2), (self.fencing, 2),
            (self.snapshot_race, 3), (self.force_delete_race, 1),
            (self.begin_detaching_race, 1), (self.backend_race, 4),
            (self.group_race, 2)]
        makers = [m for m, w in scenarios for _ in range(w)]
        out = []
        while sum(s.size() for s in out) < steps:
            out += self.perturb(self.rng.choice(makers)())
        return out

    def perturb(self, steps):
        """Odd orders: now and then swap two neighbours, repeat one, or
        fire one together with its own copy."""
        steps = list(steps)
        if len(steps) > 1 and self.chance(0.15):
            i = self.rng.randrange(len(steps) - 1)
            steps[i], steps[i + 1] = steps[i + 1], steps[i]
        if steps and self.chance(0.1):
            i = self.rng.randrange(len(steps))
            steps.insert(i, dataclasses.replace(steps[i], bind=None,
                                                twin=None))
        if steps and self.chance(0.1):
            i = self.rng.randrange(len(steps))
            if steps[i].twin is None:
                steps[i] = dataclasses.replace(
                    steps[i], twin=dataclasses.replace(steps[i], bind=None))
        return steps

    def att_create(self, slot, caller, bind, connector=None, instance=-1):
        """POST /attachments with the usual variety."""
        args = {'slot': slot, 'pick': self.pick(),
                'instance': self.instance() if instance == -1 else instance}
        version = self.version()
        if connector is None:
            connector = self.chance(0.5)
        if connector:
            args['host'] = self.host()
            args['conn_mode'] = self.mode()
        if version >= '3.54' and self.chance(0.4):
            args['mode'] = self.mode(0)
        return Step('att_create', caller, args, version, bind=bind)

    # -- scenarios ------------------------------------------------------------
    def modern_attach(self):
        slot, who, a = self.vslot(), self.writer(), self.name('a')
        steps = [self.att_create(slot, who, a)]
        if 'host' not in steps[0].args or self.chance(0.2):
            steps.append(Step('att_update', who, {
                'att': a, 'slot': slot, 'pick': self.pick(),
                'host': self.host(), 'conn_mode': self.mode()}))
        if self.chance(0.85):
            steps.append(Step('att_complete', who, {
                'att': a, 'slot': slot, 'pick': self.pick()},
                self.version(44)))
        if self.chance(0.6):
            steps.append(Step('att_delete', self.rng.choice(
                [who, who, 'admin', 'compute']), {
                'att': a, 'slot': slot, 'pick': self.pick()}))
        return steps

    def takeover(self):
        """A writer and a reader connected to one volume, then the reader
        (or some attachment of the volume) takes over, sometimes twice at
        once, while the writer may be detaching."""
        slot, who = self.vslot(), self.writer()
        a, b = self.name('a'), self.name('b')
        first = self.att_create(slot, who, a, True)
        second = self.att_create(slot, who, b, True)
        second.args['conn_mode'] = 'ro'
        steps = [first, Step('att_complete', who, {'att': a}, '3.71'),
                 second, Step('att_complete', who, {'att': b}, '3.71')]
        target = {'att': b} if self.chance(0.7) else {
            'slot': slot, 'pick': self.pick()}
        take = Step('att_takeover', self.rng.choice(
            (who, who, 'admin', 'compute')), target, self.version(44))
        if self.chance(0.3):
            take.twin = Step('att_takeover', who, {
                'slot': slot, 'pick': self.pick()})
        elif self.chance(0.2):
            take.twin = Step('att_delete', who, {'att': a})
        steps.append(take)
        if self.chance(0.5):
            steps.append(Step('att_delete', who, {'att': b}))
        return steps

    def fencing(self):
        """A host connected to a volume is fenced off it (or off every
        volume of the project), tries to connect again, may detach, and
        is (mostly) unfenced; now and then by a caller who may not."""
        slot, who, a = self.vslot(), self.writer(), self.name('a')
        host = self.host()
        first = self.att_create(slot, who, a, True)
        first.args['host'] = host
        steps = [first, Step('att_complete', who, {'att': a}, '3.71')]
        scope = {'slot': slot, 'pick': self.pick(), 'host': host}
        if self.chance(0.15):
            scope['project'] = True
        fence = Step('host_fence', self.rng.choice(
            ('admin', 'admin', 'admin', who)), scope, self.version())
        if self.chance(0.2):
            # a connect of the host racing the fence
            again = self.att_create(slot, who, None, True)
            again.args['host'] = host
            fence.twin = again
        steps.append(fence)
        if self.chance(0.5):
            again = self.att_create(slot, who, self.name('c'), True)
            again.args['host'] = host
            steps.append(again)
        if self.chance(0.3):
            steps.append(Step('att_delete', who, {'att': a}))
        if self.chance(0.8):
            steps.append(Step('host_unfence', 'admin', dict(scope),
                              self.version()))
        return steps

    def same_instance_twice(self):
        """Live migration: one instance, two attachments, two hosts (or
        the same host, which a plain volume must refuse)."""
        slot, who, inst = self.vslot(), self.writer(), self.instance()
        a, b = self.name('a'), self.name('b')
        first = self.att_create(slot, who, a, True, inst)
        second = self.att_create(slot, who, b, True, inst)
        steps = [first, Step('att_complete', who, {'att': a}), second,
                 Step('att_complete', who, {'att': b})]
        if self.chance(0.6):
            steps.append(Step('att_delete', who, {'att': a}))
        if self.chance(0.4):
            steps.append(Step('att_delete', who, {'att': b}))
        return steps

    def two_instances(self):
        """Two instances at the same moment: a plain volume takes one."""
        slot = self.vslot()
        a, b = self.name('a'), self.name('b')
        one = self.att_create(slot, self.writer(), a, self.chance(0.5))
        two = self.att_create(slot, self.writer(), b, self.chance(0.5))
        one.twin = two
        steps = [one]
        for name in (a, b):
            if self.chance(0.6):
                steps.append(Step('att_complete', self.writer(),
                                  {'att': name}))
        if self.chance(0.5):
            steps.append(Step('att_delete', self.writer(), {'att': a}))
            steps.append(Step('att_delete', self.writer(), {'att': b}))
        return steps

    def legacy_attach(self):
        """os-reserve → os-initialize_connection → os-attach, and the
        way back, with steps dropped now and then."""
        slot, who, host = self.vslot(), self.writer(), self.host()
        mode = self.rng.choice(('rw', 'ro'))
        steps = [
            Step('reserve', who, {'slot': slot}),
            Step('initialize', who, {'slot': slot, 'host': host,
                                     'conn_mode': self.mode(0.6)}),
            Step('attach', who, {'slot': slot, 'instance': self.instance(),
                                 'host': host, 'mode': mode}),
            Step('begin_detaching', who, {'slot': slot}),
            Step('terminate', who, {'slot': slot, 'host': host}),
            Step('detach', who, {'slot': slot, 'pick': self.pick(),
                                 'with_id': self.chance(0.5)}),
        ]
        cut = self.rng.randrange(2, len(steps) + 1)
        steps = steps[:cut]
        if self.chance(0.3):
            steps.pop(self.rng.randrange(len(steps)))
        return steps

    LEGACY = ('reserve', 'unreserve', 'initialize', 'attach',
              'begin_detaching', 'roll_detaching', 'terminate', 'detach',
              'force_detach', 'reset_status', 'readonly', 'extend',
              'retype')

    def legacy_step(self, op, slot, who):
        args = {'slot': slot, 'pick': self.pick()}
        if op in ('initialize', 'terminate', 'attach'):
            args['host'] = self.host()
        if op == 'initialize':
            args['conn_mode'] = self.mode(0.6)
        if op == 'attach':
            args.update(instance=self.instance(),
                        mode=self.rng.choice(('rw', 'ro', 'rw')))
        if op in ('detach', 'force_detach'):
            args['with_id'] = self.chance(0.6)
        if op == 'force_detach' or op == 'reset_status':
            who = 'admin' if self.chance(0.85) else who
        if op == 'reset_status':
            args['status'] = self.rng.choice(
                ['available', 'error', 'in-use', 'reserved', None,
                 'attaching', 'detaching', 'error_deleting'])
            args['attach_status'] = self.rng.choice(
                [None, None, 'detached', 'attached'])
            if args['status'] is None and args['attach_status'] is None:
                args['attach_status'] = 'detached'
        if op == 'readonly':
            args['readonly'] = self.chance(0.5)
        if op == 'extend':
            args['grow'] = self.rng.choice((1, 1, 2))
        if op == 'retype':
            args['type'] = self.tslot()
            args['policy'] = self.rng.choice((None, 'never', 'on-demand'))
        version = self.rng.choice(('3.71', '3.41', '3.0'))
        return Step(op, who, args, version)

    def legacy_odd(self):
        slot, who = self.vslot(), self.writer()
        return [self.legacy_step(self.rng.choice(self.LEGACY), slot, who)
                for _ in range(self.rng.randint(3, 6))]

    def detach_race(self):
        """Attach, then detach it twice at the same moment, by any
        route."""
        slot, who, a = self.vslot(), self.writer(), self.name('a')
        routes = [Step('att_delete', who, {'att': a}),
                  Step('att_delete', 'admin', {'att': a}),
                  Step('detach', who, {'slot': slot, 'att': a,
                                       'with_id': True}),
                  Step('force_detach', 'admin', {'slot': slot, 'att': a,
                                                 'with_id': True}),
                  Step('terminate', who, {'slot': slot, 'att_host': a})]
        first, second = self.rng.choice(routes), self.rng.choice(routes)
        first = dataclasses.replace(first, twin=second)
        return [self.att_create(slot, who, a, True),
                Step('att_complete', who, {'att': a}), first]

    def volume_life(self):
        slot, who = self.vslot(), self.writer()
        create = Step('vol_create', who, {
            'slot': slot, 'type': None if self.chance(0.2) else self.tslot(),
            'size': self.rng.choice((1, 1, 2))})
        delete = Step('vol_delete', who, {'slot': slot, 'pick': self.pick()})
        steps = []
        if self.chance(0.6):
            steps.append(delete)
            if self.chance(0.3):
                steps[-1] = dataclasses.replace(delete, twin=delete)
        steps.append(create)
        if self.chance(0.3):
            steps.append(Step('extend', who, {'slot': slot, 'grow': 1,
                                              'pick': self.pick()}))
        return steps

    def snapshot_race(self):
        """A snapshot taken at the moment its volume is detached,
        deleted, extended or retyped (or twice); then deleted, or its
        volume deleted with cascade."""
        slot, who, s = self.vslot(), self.writer(), self.name('s')
        pick = self.pick()
        snap = Step('snap_create', who, {
            'slot': slot, 'pick': pick,
            'force': self.rng.choice((None, True, 'true'))},
            self.rng.choice(('3.0', '3.65', '3.66', '3.71')), bind=s)
        steps = []
        race = self.rng.choice(('detach', 'delete', 'extend', 'retype',
                                'twice', None))
        if race == 'detach':
            a = self.name('a')
            steps += [self.att_create(slot, who, a, True),
                      Step('att_complete', who, {'att': a})]
            snap = dataclasses.replace(snap, twin=Step(
                'att_delete', who, {'att': a}))
        elif race == 'delete':
            snap = dataclasses.replace(snap, twin=Step(
                'vol_delete', who, {'slot': slot, 'pick': pick}))
        elif race == 'extend':
            snap = dataclasses.replace(snap, twin=Step(
                'extend', who, {'slot': slot, 'grow': 1, 'pick': pick}))
        elif race == 'retype':
            snap = dataclasses.replace(snap, twin=Step(
                'retype', who, {'slot': slot, 'pick': pick,
                                'type': self.tslot()}))
        elif race == 'twice':
            snap = dataclasses.replace(snap, twin=dataclasses.replace(
                snap, bind=None))
        steps.append(snap)
        if self.chance(0.3):
            steps.append(Step('vol_delete_cascade', who,
                              {'slot': slot, 'pick': pick}))
        elif self.chance(0.8):
            steps.append(Step('snap_delete', who, {
                'snap': s, 'slot': slot, 'pick': pick}))
        return steps

    BACKEND_WORK = ('backup', 'clone', 'revert', 'migrate')

    def backend_work(self, work, slot, who, pick):
        """The request of ``work`` (what a volume or backup service does
        after the API has answered), and the steps that must come first."""
        if work == 'backup':
            return [], Step('backup_create', who, {
                'slot': slot, 'pick': pick, 'force': self.chance(0.5)},
                self.rng.choice(('3.0', '3.71')), bind=self.name('b'))
        if work == 'clone':
            return [], Step('vol_clone', who, {
                'slot': slot, 'pick': pick, 'target': self.vslot()})
        if work == 'revert':
            s = self.name('s')
            return [Step('snap_create', who, {
                'slot': slot, 'pick': pick, 'force': True}, bind=s),
                Step('snap_wait', 'admin', {'snap': s})], Step(
                'revert', who, {'slot': slot, 'pick': pick, 'snap': s},
                self.rng.choice(('3.40', '3.71', '3.71', '3.39')))
        return [], Step('vol_migrate', self.rng.choice(
            ('admin', 'admin', 'admin', who)), {
            'slot': slot, 'pick': pick,
            'backend': self.rng.choice(('other', 'other', 'ma', 'noma')),
            'force_copy': self.chance(0.3)}, self.version())

    def backend_race(self):
        """Work the API accepts and a service does afterwards -- a backup,
        a clone, a revert to the latest snapshot, a migration -- at the
        moment its volume is deleted, extended, attached, snapshotted or
        given the same work again; then (mostly) undone."""
        slot, who, pick = self.vslot(), self.writer(), self.pick()
        work = self.rng.choice(self.BACKEND_WORK)
        steps, main = self.backend_work(work, slot, who, pick)
        race = self.rng.choice(('delete', 'extend', 'attach', 'snapshot',
                                'twice', 'other', None))
        if race == 'delete':
            main.twin = Step('vol_delete', who, {'slot': slot, 'pick': pick})
        elif race == 'extend':
            main.twin = Step('extend', who, {'slot': slot, 'grow': 1,
                                             'pick': pick})
        elif race == 'attach':
            a = self.name('a')
            main.twin = self.att_create(slot, who, a, True)
            main.twin.args['pick'] = pick
        elif race == 'snapshot':
            main.twin = Step('snap_create', who, {
                'slot': slot, 'pick': pick, 'force': True})
        elif race == 'twice':
            main.twin = dataclasses.replace(main, bind=None)
        elif race == 'other':
            _, main.twin = self.backend_work(
                self.rng.choice(self.BACKEND_WORK), slot, who, pick)
            main.twin.bind = None
        steps.append(main)
        if race == 'attach':
            steps.append(Step('att_complete', who, {'att': a}))
            if self.chance(0.7):
                steps.append(Step('att_delete', who, {'att': a}))
        if work == 'backup' and self.chance(0.7):
            steps.append(Step('backup_delete', who, {
                'backup': main.bind, 'slot': slot, 'pick': pick}))
        if work == 'revert' and self.chance(0.7):
            steps.append(Step('snap_delete', who, {
                'snap': steps[0].bind, 'slot': slot, 'pick': pick}))
        return steps

    def force_delete_race(self):
        """An attachment completed at the moment an admin force-deletes
        its volume (which detaches what is not attached, and refuses an
        attached volume): never both (``Fuzzer.judge_pair``); or force
        deleted alone, with whatever the volume holds."""
        slot, who, a = self.vslot(), self.writer(), self.name('a')
        force = Step('vol_force_delete', 'admin', {'slot': slot, 'of': a},
                     self.rng.choice(('3.71', '3.0')))
        steps = [self.att_create(slot, who, a)]
        if self.chance(0.7):
            steps.append(Step('att_complete', who, {'att': a}, twin=force))
        else:
            steps.append(force)
        return steps

    def begin_detaching_race(self):
        """Two attachments of one volume completed, then os-begin_detaching
        (which marks the volume when several are attached, the attachment
        when one is) at the moment one of them is deleted; then rolled
        back, or not."""
        slot, who, a, b = self.vslot(), self.writer(), self.name('a'), \
            self.name('a')
        second = self.att_create(slot, who, b, True)
        second.args['of'] = a
        begin = Step('begin_detaching', who, {'slot': slot, 'of': b},
                     self.rng.choice(('3.71', '3.0')))
        steps = [self.att_create(slot, who, a, True),
                 Step('att_complete', who, {'att': a}),
                 second, Step('att_complete', who, {'att': b}),
                 Step('att_delete', who, {'att': a}, twin=begin)]
        if self.chance(0.5):
            steps.append(Step('roll_detaching', who, {'slot': slot, 'of': b}))
        return steps

    def type_life(self):
        """Delete a volume and, once it is gone, its type (and make the
        type again); or create a volume of a type while that type is
        being deleted."""
        slot, tslot, who = self.vslot(), self.tslot(), self.writer()
        v = self.name('v')
        steps = [Step('vol_delete', who, {'slot': slot, 'pick': self.pick()},
                      bind=v),
                 Step('vol_wait_gone', 'admin', {'vol': v}),
                 Step('type_delete', 'admin', {'type': tslot, 'of': v}),
                 Step('type_create', 'admin', {'type': tslot, 'of': v})]
        if self.chance(0.5):
            steps.append(Step('vol_create', who, {
                'slot': slot, 'type': tslot, 'size': 1},
                twin=Step('type_delete', 'admin', {'type': tslot})))
            steps.append(Step('type_create', 'admin', {'type': tslot}))
        steps.append(Step('vol_create', who, {'slot': slot, 'type': tslot,
                                              'size': 1}))
        return steps

    def retype_extend_attached(self):
        slot, who, a = self.vslot(), self.writer(), self.name('a')
        steps = [self.att_create(slot, who, a, True),
                 Step('att_complete', who, {'att': a}),
                 self.legacy_step('retype', slot, who),
                 self.legacy_step('extend', slot, who)]
        if self.chance(0.5):
            steps[2], steps[3] = steps[3], steps[2]
        if self.chance(0.3):
            steps[2] = dataclasses.replace(steps[2], twin=steps[3])
            del steps[3]
        steps.append(Step('att_delete', who, {'att': a}))
        return steps

    def admin_mess(self):
        slot = self.vslot()
        ops = ('reset_status', 'force_detach', 'readonly', 'reset_status')
        steps = [self.legacy_step(self.rng.choice(ops), slot, 'admin')
                 for _ in range(self.rng.randint(1, 3))]
        steps.append(self.att_create(slot, self.writer(), None))
        return steps

    def intruder(self):
        """A reader, another project, or a member using admin actions:
        every one of these must be refused."""
        slot = self.vslot()
        caller = self.rng.choice(('reader', 'other', 'member'))
        if caller == 'member':
            op = self.rng.choice(('force_detach', 'reset_status',
                                  'type_create', 'type_delete'))
        else:
            # not vol_create: another project may make volumes of its own
            op = self.rng.choice(self.LEGACY + (
                'att_create', 'att_delete', 'att_complete', 'att_update',
                'att_takeover', 'vol_delete', 'type_delete', 'vol_update')
                + (('vol_create',) if caller == 'reader' else ()))
        if op == 'att_create':
            step = self.att_create(slot, caller, None)
        elif op.startswith('att_'):
            step = Step(op, caller, {'slot': slot, 'pick': self.pick(),
                                     'host': self.host()})
        elif op.startswith('type_'):
            step = Step(op, caller, {'type': self.tslot()})
        elif op in ('vol_delete', 'vol_update'):
            step = Step(op, caller, {'slot': slot, 'pick': self.pick()})
        elif op == 'vol_create':
            step = Step(op, caller, {'slot': slot, 'type': self.tslot(),
                                     'size': 1})
        else:
            step = self.legacy_step(op, slot, caller)
        step.caller = caller
        step.args['intruder'] = True
        return [step]

    MALFORMED = ('att_bad_mode', 'att_bad_connector', 'att_bad_ip',
                 'att_bad_instance', 'att_extra_key', 'att_mode_too_old',
                 'att_conn_mode', 'action_unknown', 'action_two',
                 'extend_bad', 'attach_no_mountpoint', 'reset_bad',
                 'retype_unknown', 'vol_bad_size', 'vol_multiattach_flag',
                 'type_bad_mode', 'not_json', 'complete_too_old',
                 'update_empty_connector')

    def malformed(self):
        slot, who = self.vslot(), self.writer()
        op = self.rng.choice(self.MALFORMED)
        return [Step('malformed', who, {'slot': slot, 'pick': self.pick(),
                                        'what': op, 'host': self.host(),
                                        'instance': self.instance()})]

    def reads(self):
        slot = self.vslot()
        who = self.rng.choice(('member', 'reader', 'admin', 'compute'))
        return [Step('vol_show', who, {'slot': slot, 'pick': self.pick()}),
                Step('att_list', who, {'slot': slot, 'pick': self.pick()})]


def instance_ids(seed):
    rng = random.Random('%s/instances' % seed)
    return [str(uuid.UUID(int=rng.getrandbits(128), version=4))
            for _ in range(INSTANCES)]
