"""Quotas in the fuzz: limits set near what the project uses while
volumes are created, extended, retyped and deleted around them, reads by
every caller, bad limits; and, at every quiet point, the invariant that
the usage the API reports is what the volumes are (count and GiB, per
project and per type, nothing reserved) and never beyond a limit."""
import collections

from tests.stateful.findings import Finding
from tests.stateful.world import OTHER_PROJECT
from tests.stateful.world import PROJECT

QUOTA_READS = ('quota_show', 'limits')
QUOTA_ADMIN = ('quota_set', 'quota_revert')
# what bootstrap sets: the fuzz's own scenarios decide when a limit bites
# (a revert brings back these defaults: no limit)
UNLIMITED_CLASS = {'volumes': -1, 'gigabytes': -1}
BAD_LIMITS = ({'volumes': -5}, {'gigabytes': 'lots'}, {'volumes': 1.5},
              {'bogus': 3}, {'volumes_fz-nope-0': 1}, {'gigabytes': None})


def Step(*args, **kwargs):
    # (plans imports this module)
    from tests.stateful import plans
    return plans.Step(*args, **kwargs)


def Call(*args, **kwargs):
    # (calls imports this module)
    from tests.stateful import calls
    return calls.Call(*args, **kwargs)


class QuotaPlans:
    """Planner scenarios (mixed into ``plans.Planner``)."""

    def quota_play(self):
        """Set a limit at or just above what is used, race creates,
        extends and a retype against it, then read and lift it."""
        who = self.writer()
        per_type = self.chance(0.4)
        args = {'resource': self.rng.choice(('volumes', 'gigabytes')),
                'tslot': self.tslot() if per_type else None,
                'room': self.rng.choice((0, 0, 1, 2))}
        if self.chance(0.15):
            args = {'per_volume': self.rng.choice((1, 2, 3, -1))}
        steps = [Step('quota_set', 'admin', args)]
        for _ in range(self.rng.randint(1, 3)):
            slot = self.vslot()
            steps.append(Step('vol_create', who, {
                'slot': slot, 'size': self.rng.choice((1, 2)),
                'type': args.get('tslot') or (
                    None if self.chance(0.3) else self.tslot())}))
        if self.chance(0.4):
            steps.append(Step('extend', who, {'slot': self.vslot(),
                                              'grow': 1,
                                              'pick': self.pick()}))
        if self.chance(0.3):
            steps.append(Step('retype', who, {
                'slot': self.vslot(), 'pick': self.pick(),
                'type': args.get('tslot') or self.tslot()}))
        steps.append(Step('quota_show', self.rng.choice(
            ('member', 'reader', 'admin')), {'usage': self.chance(0.5)}))
        steps.append(Step('limits', self.rng.choice(('member', 'reader'))))
        lift = {'resource': args.get('resource', 'volumes'),
                'tslot': args.get('tslot'), 'unlimited': True}
        if 'per_volume' in args:
            lift = {'per_volume': -1}
        steps.append(Step('quota_revert', 'admin') if self.chance(0.3)
                     else Step('quota_set', 'admin', lift))
        return steps

    def quota_misuse(self):
        """Who may not set or read, and limits that are not limits."""
        steps = [Step('quota_set', self.rng.choice(
            ('member', 'reader', 'compute', 'other')),
            {'resource': 'volumes', 'room': 5}),
            Step('quota_show', 'other', {'usage': True}),
            Step('quota_revert', self.rng.choice(('member', 'other'))),
            Step('quota_set', 'admin', {
                'bad': self.rng.randrange(len(BAD_LIMITS))})]
        self.rng.shuffle(steps)
        return steps


class QuotaCalls:
    """Resolver ops (mixed into ``calls.Resolver``)."""

    def _quota_key(self, args):
        resource = args['resource']
        if args.get('tslot'):
            return '%s_%s' % (resource, self.type_name({'type':
                                                        args['tslot']}))
        return resource

    def op_quota_set(self, step, args):
        path = '/os-quota-sets/%s' % PROJECT
        if 'bad' in args:
            return Call('', '', 'PUT', path,
                        {'quota_set': BAD_LIMITS[args['bad']]},
                        must_fail='malformed: quota limit')
        if 'per_volume' in args:
            limits = {'per_volume_gigabytes': args['per_volume']}
        elif args.get('unlimited'):
            limits = {self._quota_key(args): -1}
        else:
            limits = {self._quota_key(args): self._used(args)
                      + args['room']}
        return Call('', '', 'PUT', path, {'quota_set': limits})

    def _used(self, args):
        """What the model (as of the last quiet point) says is used."""
        want_type = None
        if args.get('tslot'):
            want_type = self.model.type_id(
                self.type_name({'type': args['tslot']}))
        with self.model.lock:
            mine = [v for v in self.model.volumes.values()
                    if want_type is None or v.get('type_id') == want_type]
            if args['resource'] == 'volumes':
                return len(mine)
            # snapshots count their volume's size too
            snapped = [self.model.volumes.get(vid, {})
                       for vid in self.model.snapshots.values()]
            return sum(v.get('size', 1) for v in mine) + sum(
                v.get('size', 1) for v in snapped
                if want_type is None or v.get('type_id') == want_type)

    def op_quota_revert(self, step, args):
        return Call('', '', 'DELETE', '/os-quota-sets/%s' % PROJECT)

    def op_quota_show(self, step, args):
        return Call('', '', 'GET', '/os-quota-sets/%s?usage=%s' % (
            PROJECT, args.get('usage', False)))

    def op_limits(self, step, args):
        return Call('', '', 'GET', '/limits')

    def op_quota_class(self, step, args):
        return Call('', '', 'PUT', '/os-quota-class-sets/default',
                    {'quota_class_set': args['limits']})


def bootstrap_steps():
    return [Step('quota_class', 'admin', {'limits': UNLIMITED_CLASS})]


def check_usage(checker, snap, burst):
    """Usage (from the API) equals the volumes of the snapshot, and is
    within every limit that is not -1."""
    found = []
    counted = collections.defaultdict(lambda: collections.Counter())
    # a volume an operator reset is not waited for (Checker.busy): one
    # still extending at a quiet point holds its growth as reserved
    extending = collections.defaultdict(set)
    for v in snap['volumes'].values():
        project = v.get('os-vol-tenant-attr:tenant_id')
        if v['status'] == 'extending':
            extending[project] |= {'gigabytes',
                                   'gigabytes_%s' % v['volume_type']}
        for key, amount in (('volumes', 1), ('gigabytes', v['size']),
                            ('volumes_%s' % v['volume_type'], 1),
                            ('gigabytes_%s' % v['volume_type'],
                             v['size'])):
            counted[project][key] += amount
    # a snapshot counts its volume's size and type when it was taken; a
    # volume retyped since makes the per-type keys of its project unknown
    # here (the server's own audit, cinder-lite-manage quota check,
    # still covers them)
    fuzzy = collections.defaultdict(bool)
    for sn in snap.get('snapshots', {}).values():
        project = sn.get('os-extended-snapshot-attributes:project_id')
        volume = snap['volumes'].get(sn['volume_id'], {})
        vtype = volume.get('volume_type')
        counted[project]['snapshots'] += 1
        counted[project]['gigabytes'] += sn['size']
        counted[project]['snapshots_%s' % vtype] += 1
        counted[project]['gigabytes_%s' % vtype] += sn['size']
        history = checker.fz.model.history.get(sn['volume_id'], {})
        if history.get('retyped'):
            fuzzy[project] = True
    for b in snap.get('backups', {}).values():
        project = b.get('os-backup-project-attr:project_id')
        counted[project]['backups'] += 1
        counted[project]['backup_gigabytes'] += b['size']
    for project in (PROJECT, OTHER_PROJECT):
        shown = checker.get('/os-quota-sets/%s?usage=True' % project)[
            'quota_set']
        real = counted[project]
        for key, value in sorted(shown.items()):
            if key == 'id' or not key.startswith((
                    'volumes', 'gigabytes', 'snapshots', 'backups',
                    'backup_gigabytes')):
                continue
            if fuzzy[project] and '_' in key:
                continue
            may_reserve = key in extending[project]
            if value['in_use'] != real[key] or (
                    value['reserved'] and not may_reserve):
                found.append(Finding(
                    'quota-usage', 'project %s %s: the API says in_use %d '
                    'reserved %d, the volumes say %d' % (
                        project, key, value['in_use'], value['reserved'],
                        real[key]), burst))
            if value['limit'] >= 0 and \
                    value['in_use'] + value['reserved'] > value['limit']:
                found.append(Finding(
                    'quota-over-limit', 'project %s %s: %d used, limit %d'
                    % (project, key, value['in_use'] + value['reserved'],
                       value['limit']), burst))
        missing = sorted(k for k in real if k not in shown)
        if missing:
            found.append(Finding(
                'quota-usage', 'project %s: volumes count in %s, which the '
                'quota set does not show' % (project, ', '.join(missing)),
                burst))
    return found
