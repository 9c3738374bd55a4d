"""Generic volume groups in the fuzz: a group of the project's types is
made, volumes are added to and removed from it and group snapshots taken
at the moment those volumes are deleted, extended, attached or
snapshotted, then (mostly) all of it undone; and, at every quiet point,
the invariants: no group or group snapshot in an error status or left
in transition, no volume of a group that is gone, no group snapshot of
one, and the project's ``groups`` usage what its groups are."""
import collections

from tests.stateful.findings import Finding
from tests.stateful.world import DEFAULT_TYPE
from tests.stateful.world import OTHER_PROJECT
from tests.stateful.world import PROJECT
from tests.stateful.world import TYPE_SLOTS
from tests.stateful.world import UNKNOWN_ID

GROUP_TYPE = 'fz-group-type'
# the type kinds no backend holds (world.TYPE_KINDS): a group of one
# rightly ends in error
NO_BACKEND_KINDS = ('multi-noma',)
TRANSIENT_GROUP = ('creating', 'deleting', 'updating')
TRANSIENT_GROUP_SNAPSHOT = ('creating', 'deleting')
# the group type's specs: none (a consistent group snapshot needs a
# backend that can hold writers, at its targets, which the fuzz's
# backends have not: its groups would rightly end in error)
GROUP_SPECS = {}


def Step(*args, **kwargs):
    # (plans imports this module)
    from tests.stateful import plans
    return plans.Step(*args, **kwargs)


def Call(*args, **kwargs):
    # (calls imports this module)
    from tests.stateful import calls
    return calls.Call(*args, **kwargs)


def bootstrap_steps():
    return [Step('group_type_create', 'admin', {})]


class GroupPlans:
    """Planner scenarios (mixed into ``plans.Planner``)."""

    def group_race(self):
        slot, who, pick = self.vslot(), self.writer(), self.pick()
        g, gs = self.name('g'), self.name('gs')
        steps = [Step('group_create', who, {'slot': slot, 'pick': pick},
                      bind=g), Step('group_wait', 'admin', {'group': g})]
        add = Step('group_add', who, {'group': g, 'slot': slot,
                                      'pick': pick})
        snap = Step('gsnap_create', who, {'group': g}, bind=gs)
        race = self.rng.choice(('delete', 'extend', 'attach', 'snapshot',
                                'remove', None))
        raced = add if self.chance(0.5) else snap
        if race == 'delete':
            raced.twin = Step('vol_delete', who, {'slot': slot,
                                                  'pick': pick})
        elif race == 'extend':
            raced.twin = Step('extend', who, {'slot': slot, 'grow': 1,
                                              'pick': pick})
        elif race == 'attach':
            raced.twin = self.att_create(slot, who, None, True)
            raced.twin.args['pick'] = pick
        elif race == 'snapshot':
            raced.twin = Step('snap_create', who, {
                'slot': slot, 'pick': pick, 'force': True})
        elif race == 'remove' and raced is snap:
            raced.twin = Step('group_remove', who, {
                'group': g, 'slot': slot, 'pick': pick})
        steps += [add, Step('group_wait', 'admin', {'group': g}), snap]
        if self.chance(0.85):
            steps.append(Step('gsnap_delete', who, {'gsnap': gs}))
            if self.chance(0.8):
                steps.append(Step('gsnap_wait_gone', 'admin',
                                  {'gsnap': gs}))
                steps.append(Step('group_remove', who, {
                    'group': g, 'slot': slot, 'pick': pick}))
                steps.append(Step('group_wait', 'admin', {'group': g}))
                steps.append(Step('group_delete', who, {'group': g}))
        return steps


class GroupCalls:
    """Resolver ops (mixed into ``calls.Resolver``)."""

    def group(self, args):
        return self.bound.get(args.get('group')) or UNKNOWN_ID

    def op_group_type_create(self, step, args):
        return Call('', '', 'POST', '/group_types', {'group_type': {
            'name': GROUP_TYPE, 'is_public': True,
            'group_specs': GROUP_SPECS}})

    def op_group_create(self, step, args):
        """A group of the type of the volume it is for, or of the default
        type when no backend holds that one (types no backend holds, or
        none holds together, would leave it in error, rightly)."""
        vid = self.volume(args)
        with self.model.lock:
            tid = self.model.volumes.get(vid, {}).get('type_id')
            name = self.model.type_names.get(tid)
            if name not in self.model.types or not (
                    name in TYPE_SLOTS or name == DEFAULT_TYPE) or \
                    self.model.kind_of_name(name) in NO_BACKEND_KINDS:
                name = DEFAULT_TYPE
        return Call('', '', 'POST', '/groups', {'group': {
            'name': 'fz-group', 'group_type': GROUP_TYPE,
            'volume_types': [name]}}, volume_id=vid)

    def _update(self, args, key):
        gid, vid = self.group(args), self.volume(args)
        return Call('', '', 'PUT', '/groups/%s' % gid, {'group': {
            key: vid}}, volume_id=vid)

    def op_group_add(self, step, args):
        return self._update(args, 'add_volumes')

    def op_group_remove(self, step, args):
        return self._update(args, 'remove_volumes')

    def op_group_wait(self, step, args):
        """Until the group a scenario made is out of transition (if its
        create was taken)."""
        call = Call('', '', 'GET', '/groups/%s' % self.group(args))
        if args['group'] in self.taken:
            call.until = lambda body: body.get('group', {}).get(
                'status') not in TRANSIENT_GROUP
        return call

    def op_group_delete(self, step, args):
        return Call('', '', 'POST', '/groups/%s/action' % self.group(args),
                    {'delete': {'delete-volumes': False}})

    def op_gsnap_create(self, step, args):
        return Call('', '', 'POST', '/group_snapshots', {'group_snapshot': {
            'group_id': self.group(args), 'name': 'fz-gsnap'}})

    def op_gsnap_delete(self, step, args):
        gsid = self.bound.get(args['gsnap']) or UNKNOWN_ID
        return Call('', '', 'DELETE', '/group_snapshots/%s' % gsid)

    def op_gsnap_wait_gone(self, step, args):
        gsid = self.bound.get(args['gsnap']) or UNKNOWN_ID
        call = Call('', '', 'GET', '/group_snapshots/%s' % gsid)
        if args['gsnap'] in self.taken:
            call.poll = 404
        return call


def observe(resolver, step, answer):
    """Learn the ids of what a group step made."""
    if step.op == 'group_create' and 'group' in answer and step.bind:
        resolver.bound[step.bind] = answer['group']['id']
    elif step.op == 'gsnap_create' and 'group_snapshot' in answer and \
            step.bind:
        resolver.bound[step.bind] = answer['group_snapshot']['id']


def busy(snap):
    moving = []
    for g in snap['groups'].values():
        if g['status'] in TRANSIENT_GROUP:
            moving.append(('group', g['id'], g['status']))
    for gs in snap['group_snapshots'].values():
        if gs['status'] in TRANSIENT_GROUP_SNAPSHOT:
            moving.append(('group snapshot', gs['id'], gs['status']))
    return moving


def check(checker, snap, burst):
    found = []
    groups = snap['groups']
    for gid, g in groups.items():
        if g['status'].startswith('error'):
            found.append(Finding('group-error', 'group %s is %s' % (
                gid, g['status']), burst))
    for gsid, gs in snap['group_snapshots'].items():
        if gs['status'].startswith('error'):
            found.append(Finding('group-snapshot-error', 'group snapshot '
                                 '%s of group %s is %s' % (
                                     gsid, gs['group_id'], gs['status']),
                                 burst))
        if gs['group_id'] not in groups:
            found.append(Finding('orphan-group-snapshot', 'group snapshot '
                                 '%s of group %s, which is gone' % (
                                     gsid, gs['group_id']), burst))
    for vid, v in snap['volumes'].items():
        if v.get('group_id') and v['group_id'] not in groups:
            found.append(Finding('orphan-group-member', 'volume %s is in '
                                 'group %s, which is gone' % (
                                     vid, v['group_id']), burst,
                                 volume_id=vid))
    counted = collections.Counter(g.get('project_id') for g in
                                  groups.values())
    for project in (PROJECT, OTHER_PROJECT):
        usage = checker.get('/os-quota-sets/%s?usage=True' % project)[
            'quota_set'].get('groups')
        if usage is not None and (usage['in_use'] != counted[project] or
                                  usage['reserved']):
            found.append(Finding('quota-usage', 'project %s groups: the API '
                                 'says in_use %d reserved %d, the groups '
                                 'say %d' % (project, usage['in_use'],
                                             usage['reserved'],
                                             counted[project]), burst))
    return found
