"""From a symbolic step to a concrete request: the Resolver names the
objects a step refers to (through the model and the thread's bindings) and
says why the request must fail, if it must; the Call carries the request,
its answer and the curl line of the report."""
import dataclasses
import json

from tests.stateful.groups import GroupCalls
from tests.stateful.quotas import QUOTA_ADMIN
from tests.stateful.quotas import QUOTA_READS
from tests.stateful.quotas import QuotaCalls
from tests.stateful.world import CALLERS
from tests.stateful.world import DEFAULT_TYPE
from tests.stateful.world import HOSTS
from tests.stateful.world import PROJECT
from tests.stateful.world import TYPE_KINDS
from tests.stateful.world import UNKNOWN_ID


@dataclasses.dataclass
class Call:
    """A step made concrete: the request, why it must fail (if it must),
    and the ids it concerns (for the report)."""
    op: str
    caller: str
    method: str
    path: str
    body: object = None
    raw: bytes = None
    version: str = '3.71'
    must_fail: str = None
    volume_id: str = None
    attachment_id: str = None
    type_id: str = None
    want_mode: str = None
    poll: int = None       # repeat (a few seconds at most) until this
    until: object = None   # or until this is true of the answer's body
    status: int = None
    answer: object = None
    started: float = 0.0
    ended: float = 0.0
    thread: int = 0
    seq: int = 0

    def concerns(self, volume_id=None, attachment_id=None, type_id=None):
        return ((volume_id and volume_id == self.volume_id)
                or (attachment_id and attachment_id == self.attachment_id)
                or (type_id and type_id == self.type_id))

    def line(self, t0):
        body = ''
        if self.raw is not None:
            body = ' --data %r' % self.raw
        elif self.body is not None:
            body = " -d '%s'" % json.dumps(self.body, sort_keys=True)
        answer = self.answer
        if not isinstance(answer, str):
            answer = json.dumps(answer, sort_keys=True)
        if len(answer) > 400:
            answer = answer[:400] + '...'
        who = CALLERS[self.caller]
        return ('  [+%.3fs..%.3fs t%d #%d %s] curl -X %s %s -H "X-Roles: %s"'
                '%s -H "OpenStack-API-Version: volume %s"%s\n      -> %s %s'
                % (self.started - t0, self.ended - t0, self.thread, self.seq,
                   self.op, self.method, self.path, who.roles,
                   ' -H "X-Service-Roles: service"' if who.service else '',
                   self.version, body, self.status, answer))


def _vt(version):
    major, minor = version.split('.')
    return int(major), int(minor)


class Resolver(QuotaCalls, GroupCalls):
    """Turns Steps into Calls against the current model; one per worker
    thread (it holds that thread's bindings)."""

    def __init__(self, model, instances):
        self.model = model
        self.instances = instances
        self.bound = {}      # binding name -> attachment id
        self.bound_hosts = {}  # binding name -> its connector's host
        self.taken = set()     # bindings whose request succeeded

    # -- references -----------------------------------------------------------
    def volume(self, args):
        """The volume of the attachment a scenario bound (``of``), else
        one of the slot's."""
        bound = self.bound.get(args.get('of'))
        if bound is not None:
            with self.model.lock:
                vid = self.model.attachments.get(bound, {}).get('volume_id')
            if vid is not None:
                return vid
        slot = args.get('slot')
        if slot is None:
            return UNKNOWN_ID
        return self.model.volume(slot, args.get('pick', 0.0)) or UNKNOWN_ID

    def attachment(self, args, key='att'):
        """The attachment a scenario bound, else one of the volume's."""
        name = args.get(key)
        if name and name in self.bound:
            return self.bound[name]
        if args.get('slot') is None:
            return UNKNOWN_ID
        return self.model.attachment_of(self.volume(args),
                                        args.get('pick', 0.0)) or UNKNOWN_ID

    def connector(self, args):
        conn = {'host': args['host'], 'ip': '127.0.0.%d' % (
            HOSTS.index(args['host']) + 10) if args['host'] in HOSTS
            else '127.0.0.9',
            'initiator': 'iqn.2026-11.org.example:%s' % args['host']}
        if args.get('conn_mode'):
            conn['mode'] = args['conn_mode']
        return conn

    def instance(self, args):
        i = args.get('instance')
        return None if i is None else self.instances[i]

    # -- steps ----------------------------------------------------------------
    def call(self, step):
        who = CALLERS[step.caller]
        build = getattr(self, 'op_' + step.op)
        call = build(step, step.args)
        call.op, call.caller, call.version = step.op, step.caller, \
            step.version
        call.path = '/v3/%s%s' % (who.project, call.path)
        if call.must_fail is None:
            call.must_fail = self.refusal(step)
        return call

    def refusal(self, step):
        """Why this caller may not do this, whatever the state."""
        op, caller = step.op, step.caller
        reads = ('vol_show', 'att_list') + QUOTA_READS
        if caller == 'other' and op not in ('type_create',
                                            'group_type_create'):
            return 'another project'
        if caller == 'reader' and op not in reads:
            return 'a reader may not write'
        if caller in ('member', 'compute', 'reader', 'other') and op in (
                'force_detach', 'reset_status', 'type_create',
                'type_delete', 'host_fence', 'host_unfence',
                'vol_force_delete', 'vol_migrate',
                'group_type_create') + QUOTA_ADMIN:
            return 'admin only'
        return None

    def _action(self, step, name, body):
        vid = self.volume(step.args)
        return Call(step.op, step.caller, 'POST',
                    '/volumes/%s/action' % vid, {name: body}, volume_id=vid)

    def type_name(self, args):
        """The type slot named, or the type of the volume a scenario
        deleted (``of``)."""
        vid = self.bound.get(args.get('of'))
        with self.model.lock:
            tid = self.model.history.get(vid, {}).get('type_id')
            name = self.model.type_names.get(tid)
        if name and self.model.kind_of_name(name) and name != DEFAULT_TYPE:
            return name
        return args['type']

    def op_type_create(self, step, args):
        name = self.type_name(args)
        return Call('', '', 'POST', '/types', {'volume_type': {
            'name': name, 'os-volume-type-access:is_public': True,
            'extra_specs': TYPE_KINDS[self.model.kind_of_name(name)]}},
            type_id=self.model.type_id(name))

    def op_type_delete(self, step, args):
        tid = self.model.type_id(self.type_name(args)) or UNKNOWN_ID
        return Call('', '', 'DELETE', '/types/%s' % tid, type_id=tid)

    def op_vol_create(self, step, args):
        body = {'size': args['size'], 'name': 'fz-vol-%d' % args['slot']}
        if args.get('type'):
            body['volume_type'] = args['type']
        call = Call('', '', 'POST', '/volumes', {'volume': body},
                    type_id=self.model.type_id(args.get('type')))
        return call

    def op_vol_delete(self, step, args):
        vid = self.volume(args)
        return Call('', '', 'DELETE', '/volumes/%s' % vid, volume_id=vid)

    def op_vol_force_delete(self, step, args):
        return self._action(step, 'os-force_delete', {})

    def op_vol_delete_cascade(self, step, args):
        vid = self.volume(args)
        return Call('', '', 'DELETE', '/volumes/%s?cascade=true' % vid,
                    volume_id=vid)

    def op_snap_create(self, step, args):
        vid = self.volume(args)
        body = {'volume_id': vid}
        if args.get('force') is not None:
            body['force'] = args['force']
        return Call('', '', 'POST', '/snapshots', {'snapshot': body},
                    volume_id=vid)

    def op_snap_delete(self, step, args):
        """The snapshot a scenario made, else one of the volume's."""
        sid = self.bound.get(args.get('snap')) if args.get('snap') else None
        if sid is None:
            sid = self.model.snapshot_of(self.volume(args),
                                         args.get('pick', 0.0))
        return Call('', '', 'DELETE', '/snapshots/%s' % (sid or UNKNOWN_ID),
                    volume_id=self.model.snapshots.get(sid))

    def op_backup_create(self, step, args):
        vid = self.volume(args)
        body = {'volume_id': vid, 'name': 'fz-backup'}
        if args.get('force'):
            body['force'] = True
        return Call('', '', 'POST', '/backups', {'backup': body},
                    volume_id=vid)

    def op_backup_delete(self, step, args):
        """The backup a scenario made, else one of the volume's."""
        bid = self.bound.get(args.get('backup')) if args.get('backup') \
            else None
        if bid is None:
            bid = self.model.backup_of(self.volume(args),
                                       args.get('pick', 0.0))
        with self.model.lock:
            vid = self.model.backups.get(bid)
        return Call('', '', 'DELETE', '/backups/%s' % (bid or UNKNOWN_ID),
                    volume_id=vid)

    def op_vol_clone(self, step, args):
        vid = self.volume(args)
        return Call('', '', 'POST', '/volumes', {'volume': {
            'source_volid': vid, 'name': 'fz-vol-%d' % args['target']}},
            volume_id=vid)

    def op_snap_wait(self, step, args):
        """Until the snapshot a scenario took is available (if its
        create was taken)."""
        sid = self.bound.get(args['snap'], UNKNOWN_ID)
        call = Call('', '', 'GET', '/snapshots/%s' % sid,
                    volume_id=self.model.snapshots.get(sid))
        if args['snap'] in self.taken:
            call.until = lambda body: body.get('snapshot', {}).get(
                'status') in ('available', 'error')
        return call

    def op_revert(self, step, args):
        """To the snapshot the scenario took (Cinder: only the latest)."""
        sid = self.bound.get(args.get('snap')) or self.model.snapshot_of(
            self.volume(args), args.get('pick', 0.0))
        call = self._action(step, 'revert', {
            'snapshot_id': sid or UNKNOWN_ID})
        if _vt(step.version) < (3, 40):
            call.must_fail = 'revert needs 3.40'
        return call

    def op_vol_migrate(self, step, args):
        vid = self.volume(args)
        with self.model.lock:
            here = self.model.volumes.get(vid, {}).get('host') or ''
            pools = [p for p in self.model.pools
                     if '@%s#' % args['backend'] in p or (
                         args['backend'] == 'other' and
                         p.split('#')[0] != here.split('#')[0])]
        return self._action(step, 'os-migrate_volume', {
            'host': pools[0] if pools else 'nowhere@%s' % args['backend'],
            'force_host_copy': bool(args.get('force_copy'))})

    def op_vol_update(self, step, args):
        vid = self.volume(args)
        return Call('', '', 'PUT', '/volumes/%s' % vid,
                    {'volume': {'description': 'x'}}, volume_id=vid)

    def op_vol_wait_gone(self, step, args):
        """Until the volume a scenario deleted is gone (if its delete was
        taken)."""
        vid = self.bound.get(args['vol'], UNKNOWN_ID)
        call = Call('', '', 'GET', '/volumes/%s' % vid, volume_id=vid)
        if args['vol'] in self.taken:
            call.poll = 404
        return call

    def op_vol_show(self, step, args):
        vid = self.volume(args)
        return Call('', '', 'GET', '/volumes/%s' % vid, volume_id=vid)

    def op_att_list(self, step, args):
        vid = self.volume(args)
        return Call('', '', 'GET', '/attachments/detail?volume_id=%s' % vid,
                    volume_id=vid)

    def op_att_create(self, step, args):
        vid = self.volume(args)
        body = {'volume_uuid': vid}
        inst = self.instance(args)
        if inst:
            body['instance_uuid'] = inst
        if 'host' in args:
            body['connector'] = self.connector(args)
        if args.get('mode'):
            body['mode'] = args['mode']
        call = Call('', '', 'POST', '/attachments', {'attachment': body},
                    volume_id=vid)
        if _vt(step.version) < (3, 27):
            call.must_fail = 'attachments need 3.27'
        elif args.get('mode') and _vt(step.version) < (3, 54):
            call.must_fail = 'mode needs 3.54'
        call.want_mode = args.get('mode') or args.get('conn_mode')
        return call

    def op_att_update(self, step, args):
        aid = self.attachment(args)
        return Call('', '', 'PUT', '/attachments/%s' % aid, {'attachment': {
            'connector': self.connector(args)}}, attachment_id=aid)

    def op_att_complete(self, step, args):
        aid = self.attachment(args)
        call = Call('', '', 'POST', '/attachments/%s/action' % aid,
                    {'os-complete': None}, attachment_id=aid)
        if _vt(step.version) < (3, 44):
            call.must_fail = 'os-complete needs 3.44'
        return call

    def op_att_takeover(self, step, args):
        aid = self.attachment(args)
        call = Call('', '', 'POST', '/attachments/%s/action' % aid,
                    {'os-takeover': {}}, attachment_id=aid)
        if _vt(step.version) < (3, 44):
            call.must_fail = 'os-takeover needs 3.44'
        return call

    def _fence(self, args, verb):
        vid = self.volume(args)
        scope = {'project_id': PROJECT} if args.get('project') else \
            {'volume_id': vid}
        return Call('', '', 'POST', '/os-host-fences/%s/action'
                    % args['host'], {verb: dict(scope, reason='fuzz')},
                    volume_id=vid)

    def op_host_fence(self, step, args):
        return self._fence(args, 'os-fence')

    def op_host_unfence(self, step, args):
        return self._fence(args, 'os-unfence')

    def op_att_delete(self, step, args):
        aid = self.attachment(args)
        return Call('', '', 'DELETE', '/attachments/%s' % aid,
                    attachment_id=aid)

    def op_reserve(self, step, args):
        return self._action(step, 'os-reserve', None)

    def op_unreserve(self, step, args):
        return self._action(step, 'os-unreserve', None)

    def op_initialize(self, step, args):
        return self._action(step, 'os-initialize_connection',
                            {'connector': self.connector(args)})

    def op_attach(self, step, args):
        return self._action(step, 'os-attach', {
            'instance_uuid': self.instance(args), 'host_name': args['host'],
            'mountpoint': '/dev/vdb', 'mode': args['mode']})

    def op_begin_detaching(self, step, args):
        return self._action(step, 'os-begin_detaching', None)

    def op_roll_detaching(self, step, args):
        return self._action(step, 'os-roll_detaching', None)

    def op_terminate(self, step, args):
        host = args.get('host') or HOSTS[0]
        if args.get('att_host'):
            # the host the scenario's attachment connected from
            host = self.bound_hosts.get(args['att_host'], host)
        return self._action(step, 'os-terminate_connection',
                            {'connector': self.connector({'host': host})})

    def _detach_like(self, step, args, name):
        body = None
        aid = None
        if args.get('with_id'):
            aid = self.attachment(args)
            body = {'attachment_id': aid}
        call = self._action(step, name, body)
        call.attachment_id = aid
        return call

    def op_detach(self, step, args):
        return self._detach_like(step, args, 'os-detach')

    def op_force_detach(self, step, args):
        return self._detach_like(step, args, 'os-force_detach')

    def op_reset_status(self, step, args):
        body = {}
        if args.get('status'):
            body['status'] = args['status']
        if args.get('attach_status'):
            body['attach_status'] = args['attach_status']
        return self._action(step, 'os-reset_status', body)

    def op_readonly(self, step, args):
        return self._action(step, 'os-update_readonly_flag',
                            {'readonly': args['readonly']})

    def op_extend(self, step, args):
        vid = self.volume(args)
        with self.model.lock:
            size = self.model.volumes.get(vid, {}).get('size', 1)
        call = self._action(step, 'os-extend',
                            {'new_size': size + args['grow']})
        return call

    def op_retype(self, step, args):
        body = {'new_type': args['type']}
        if args.get('policy'):
            body['migration_policy'] = args['policy']
        call = self._action(step, 'os-retype', body)
        call.type_id = self.model.type_id(args['type'])
        return call

    def op_malformed(self, step, args):
        """Nearly right requests: each must get a 4xx."""
        what = args['what']
        vid = self.volume(args)
        aid = self.attachment(args)
        conn = self.connector(args)
        att = {'volume_uuid': vid, 'instance_uuid': self.instance(args)}
        call = Call('', '', 'POST', '/attachments', {'attachment': att},
                    volume_id=vid, must_fail='malformed: %s' % what)
        if what == 'att_bad_mode':
            att['mode'] = 'rx'
        elif what == 'att_bad_connector':
            att['connector'] = {'host': '', 'mode': 'rw'}
        elif what == 'att_bad_ip':
            att['connector'] = dict(conn, ip='300.1.1.1')
        elif what == 'att_bad_instance':
            att['instance_uuid'] = 'not-a-uuid'
        elif what == 'att_extra_key':
            att['multiattach'] = True
        elif what == 'att_mode_too_old':
            att['mode'] = 'ro'
            step.version = '3.50'
        elif what == 'att_conn_mode':
            att['connector'] = dict(conn, mode='RW!')
        elif what == 'complete_too_old':
            call.path = '/attachments/%s/action' % aid
            call.body = {'os-complete': None}
            call.attachment_id = aid
            step.version = '3.43'
        elif what == 'update_empty_connector':
            call.method, call.path = 'PUT', '/attachments/%s' % aid
            call.body = {'attachment': {'connector': {}}}
            call.attachment_id = aid
        elif what == 'not_json':
            call.body, call.raw = None, b'{"attachment": {"volume_uuid": '
        elif what in ('action_unknown', 'action_two', 'extend_bad',
                      'attach_no_mountpoint', 'reset_bad',
                      'retype_unknown'):
            call.path = '/volumes/%s/action' % vid
            call.body = {
                'action_unknown': {'os-frobnicate': None},
                'action_two': {'os-reserve': None, 'os-unreserve': None},
                'extend_bad': {'os-extend': {'new_size': 'many'}},
                'attach_no_mountpoint': {'os-attach': {
                    'instance_uuid': self.instance(args), 'mode': 'rw'}},
                'reset_bad': {'os-reset_status': {'status': 'bogus'}},
                'retype_unknown': {'os-retype': {'new_type': 'fz-nope'}},
            }[what]
            if what == 'reset_bad':
                step.caller = 'admin'
        elif what in ('vol_bad_size', 'vol_multiattach_flag'):
            call.path = '/volumes'
            call.body = {'volume': {'size': 0, 'name': 'fz-bad'}
                         if what == 'vol_bad_size' else
                         {'size': 1, 'name': 'fz-bad', 'multiattach': True}}
        elif what == 'type_bad_mode':
            step.caller = 'admin'
            call.path = '/types'
            call.body = {'volume_type': {'name': 'fz-bad-type',
                                         'extra_specs': {'mode': 'XX'}}}
        return call
