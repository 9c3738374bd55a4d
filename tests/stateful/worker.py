"""One thread of a burst: sends each step of its plan (a twin at the same
moment), has the answer judged, and teaches the model what succeeded."""
import threading
import time

import requests

from tests.stateful.calls import Resolver
from tests.stateful import groups
from tests.stateful.world import CALLERS
from tests.stateful.world import MAX_PER_SLOT


class Worker:
    """Plays one thread's plan: builds each step, sends it (with its twin
    at the same moment), checks the answer, feeds the model."""

    def __init__(self, fuzzer, thread, plan, burst):
        self.fz = fuzzer
        self.thread = thread
        self.plan = plan
        self.burst = burst
        self.resolver = Resolver(fuzzer.model, fuzzer.instances)
        self.session = requests.Session()
        self.twin_session = requests.Session()
        self.seq = 0

    def run(self):
        try:
            for step in self.plan:
                self.play(step)
        finally:
            self.session.close()
            self.twin_session.close()

    def play(self, step):
        if step.op in ('vol_create', 'vol_clone') and self.full(step):
            return
        call = self.resolver.call(step)
        if step.bind and step.op == 'vol_delete':
            self.resolver.bound[step.bind] = call.volume_id
        twin = self.resolver.call(step.twin) if step.twin else None
        if twin is None:
            self.send(self.session, call)
        else:
            gate = threading.Barrier(2)
            other = threading.Thread(target=self.send, args=(
                self.twin_session, twin, gate))
            other.start()
            self.send(self.session, call, gate)
            other.join()
        for c, s in ((call, step), (twin, step.twin)):
            if c is not None:
                self.fz.judge(c, self.burst)
                self.observe(s, c)
        if twin is not None:
            self.fz.judge_pair(call, twin, self.burst)

    def full(self, step):
        """Keep each volume slot small: the plan does not know how many
        volumes a slot holds, the run does."""
        slot = step.args['target' if step.op == 'vol_clone' else 'slot']
        return len(self.fz.model.volume_ids(slot)) >= MAX_PER_SLOT

    def send(self, session, call, gate=None):
        who = CALLERS[call.caller]
        headers = {'X-Auth-Token': '%s:%s' % (who.user, who.project),
                   'X-Roles': who.roles,
                   'OpenStack-API-Version': 'volume %s' % call.version}
        if who.service:
            headers['X-Service-Roles'] = 'service'
        kwargs = {}
        if call.raw is not None:
            headers['Content-Type'] = 'application/json'
            kwargs['data'] = call.raw
        elif call.body is not None or call.method in ('POST', 'PUT'):
            kwargs['json'] = call.body
        self.seq += 1
        call.thread, call.seq = self.thread, self.seq
        if gate is not None:
            try:
                gate.wait(5)
            except threading.BrokenBarrierError:
                pass
        call.started = time.monotonic()
        try:
            resp = session.request(call.method, self.fz.url + call.path,
                                   headers=headers, timeout=60, **kwargs)
            while not self.done(call, resp) and \
                    time.monotonic() - call.started < 5:
                time.sleep(0.05)
                resp = session.request(call.method, self.fz.url + call.path,
                                       headers=headers, timeout=60, **kwargs)
            call.status = resp.status_code
            try:
                call.answer = resp.json() if resp.content else ''
            except ValueError:
                call.answer = resp.text[:400]
        except requests.RequestException as e:
            call.status, call.answer = 599, 'no answer: %s' % e
        call.ended = time.monotonic()
        self.fz.record(self.burst, call)

    @staticmethod
    def done(call, resp):
        """Whether a polling call has what it waits for."""
        if call.poll:
            return resp.status_code == call.poll
        if call.until:
            try:
                return resp.status_code != 200 or call.until(resp.json())
            except ValueError:
                return True
        return True

    def observe(self, step, call):
        """Learn from a success."""
        model = self.fz.model
        answer = call.answer if isinstance(call.answer, dict) else {}
        if not 200 <= call.status < 300:
            if step.bind and step.op == 'att_create':
                self.resolver.bound.pop(step.bind, None)
            return
        if step.bind:
            self.resolver.taken.add(step.bind)
        if step.op == 'att_create' and 'attachment' in answer:
            model.add_attachment(answer['attachment'])
            if step.bind:
                self.resolver.bound[step.bind] = answer['attachment']['id']
                self.resolver.bound_hosts[step.bind] = step.args.get('host')
        elif step.op == 'att_delete':
            model.drop_attachment(call.attachment_id)
        elif step.op == 'vol_create' and 'volume' in answer:
            model.add_volume(answer['volume'], step.args['slot'])
        elif step.op == 'snap_create' and 'snapshot' in answer:
            model.add_snapshot(answer['snapshot'])
            if step.bind:
                self.resolver.bound[step.bind] = answer['snapshot']['id']
        elif step.op == 'vol_clone' and 'volume' in answer:
            model.add_volume(answer['volume'], step.args['target'])
        elif step.op == 'backup_create' and 'backup' in answer:
            model.add_backup(dict(answer['backup'],
                                  volume_id=call.volume_id))
            if step.bind:
                self.resolver.bound[step.bind] = answer['backup']['id']
        elif step.op == 'backup_delete':
            model.drop_backup(call.path.rsplit('/', 1)[1])
        elif step.op == 'snap_delete':
            model.drop_snapshot(call.path.rsplit('/', 1)[1])
        elif step.op == 'type_create' and 'volume_type' in answer:
            vt = answer['volume_type']
            with model.lock:
                model.types[vt['name']] = vt['id']
                model.type_kind[vt['id']] = model.kind_of_name(vt['name'])
                model.type_names[vt['id']] = vt['name']
        elif step.op == 'type_delete':
            with model.lock:
                for name, tid in list(model.types.items()):
                    if tid == call.type_id:
                        del model.types[name]
        groups.observe(self.resolver, step, answer)
        if step.op == 'retype':
            model.note(call.volume_id, retyped=True)
        if step.op == 'reset_status' and step.args.get('status'):
            model.note(call.volume_id, reset=True, ever_reset=True)
