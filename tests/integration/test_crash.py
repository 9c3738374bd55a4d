"""Crash test: attach/detach/create/delete cycles run against the
distributed deployment while the volume service of node ``ma`` is killed
with SIGKILL at random moments, 30 times, and started again each time.
Afterwards, within the reconcile interval, every volume and attachment is
in a stable state, the exports the node holds are what the database says,
no attachment that was attached was lost, the recorded quota usage is
what the volumes say (``cinder-lite-manage quota check``), and everything
can be deleted.
"""
import itertools
import random
import threading
import time
import uuid

import requests

from tests.harness import stack
from tests.harness import cluster as cluster_mod
from tests.harness import util

CLUSTER_KINDS = ['mysql']
KILLS = 30
WORKERS = 2
RECONCILE_AFTER = 3
RECONCILE_INTERVAL = 1
# the most the storm goes on past its kills while the cycles lag (s)
STORM_EXTRA = 120
_NBD_PORTS = min(util.free_port(), 65000)
CLUSTER_OPTIONS = {
    'extra_default': {'reconcile_after': RECONCILE_AFTER,
                      'reconcile_interval': RECONCILE_INTERVAL,
                      'volume_rpc_timeout': 5},
    'node_options': {'ma': {'target_protocol': 'nbd',
                            'target_port_range': '%d-%d' % (
                                _NBD_PORTS, _NBD_PORTS + 200)}}}
# statuses only a finished (or reconciled) operation leaves; attaching,
# detaching, reserved and in-use follow from the attachments
TRANSITIONAL_VOLUME = {'creating', 'deleting', 'extending'}
DERIVED = (('attached', 'in-use'), ('attaching', 'attaching'),
           ('detaching', 'detaching'), ('reserved', 'reserved'))


class Worker(threading.Thread):
    """Cycles create -> attach -> complete -> detach -> delete, tolerating
    the failures a dying volume service causes, and records which
    attachments reached ``attached`` and which it deleted."""

    def __init__(self, cluster, n, stop):
        super().__init__(daemon=True)
        self.api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
        self.connector = {'host': 'compute-%d' % n, 'ip': '127.0.0.%d' % (
            5 + n), 'initiator': 'iqn.2026-11.org.example:compute-%d' % n}
        self.stop = stop
        # attachments that reached attached / whose delete was asked for
        self.attached, self.delete_asked = set(), set()
        self.volumes, self.errors = set(), []

    def call(self, method, path, **kw):
        try:
            return self.api.request(method, path, **kw)
        except requests.RequestException as e:
            self.errors.append(str(e))
            return None

    def retry(self, method, path, ok, **kw):
        """Repeat until the answer is in ``ok`` (or we are stopped)."""
        while True:
            resp = self.call(method, path, **kw)
            if resp is not None and resp.status_code in ok:
                return resp
            if resp is not None and resp.status_code >= 500 and \
                    resp.status_code != 503:
                self.errors.append('%s %s: %d %s' % (
                    method, path, resp.status_code, resp.text))
            if self.stop.is_set():
                return None
            time.sleep(0.2)

    def wait_status(self, volume_id, wanted, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            resp = self.call('GET', '/volumes/%s' % volume_id)
            if resp is not None and resp.status_code == 200:
                status = resp.json()['volume']['status']
                if status in wanted:
                    return status
            time.sleep(0.1)
        return None

    def run(self):
        while not self.stop.is_set():
            resp = self.retry('POST', '/volumes', (202,), json={'volume': {
                'size': 1, 'volume_type': 'on-ma'}})
            if resp is None:
                return
            vol = resp.json()['volume']['id']
            self.volumes.add(vol)
            if self.wait_status(vol, ('available',)) == 'available':
                self.attach_detach(vol)
            self.delete_volume(vol)

    def delete_volume(self, vol):
        """Detach what is left on the volume (an attach cut short by a
        crash), then delete it."""
        while not self.stop.is_set():
            self.detach_all(vol)
            resp = self.call('DELETE', '/volumes/%s' % vol)
            if resp is not None and resp.status_code in (202, 404):
                return
            time.sleep(0.2)

    def detach_all(self, vol):
        listed = self.call('GET', '/attachments?volume_id=%s' % vol)
        for att in (listed.json()['attachments'] if listed is not None
                    and listed.status_code == 200 else []):
            self.detach(att['id'])

    def attach_detach(self, vol):
        resp = self.call('POST', '/attachments', json={'attachment': {
            'volume_uuid': vol, 'instance_uuid': str(uuid.uuid4()),
            'connector': self.connector}})
        if resp is None or resp.status_code != 200:
            if resp is not None and resp.status_code >= 500 and \
                    resp.status_code != 503:
                self.errors.append('attach: %d %s' % (resp.status_code,
                                                      resp.text))
            # a failed attach may still have left a record to delete
            self.detach_all(vol)
            return
        att = resp.json()['attachment']['id']
        done = self.call('POST', '/attachments/%s/action' % att,
                         json={'os-complete': None})
        if done is not None and done.status_code == 204:
            self.attached.add(att)
        self.detach(att)

    def detach(self, att):
        self.delete_asked.add(att)
        self.retry('DELETE', '/attachments/%s' % att, (200, 404))


def _kill_and_restart(cluster, name='ma'):
    cluster.kill(name)
    cluster.start_process(name)
    cluster.wait_ready()


def _unstable(api):
    """What is transitional, or a volume status that does not follow
    from its attachments."""
    volumes = api.get('/volumes/detail?all_tenants=1').json()['volumes']
    atts = api.get('/attachments/detail?all_tenants=1').json()[
        'attachments']
    bad = ['volume %s %s' % (v['id'], v['status']) for v in volumes
           if v['status'] in TRANSITIONAL_VOLUME]
    for att in atts:
        if att['status'] == 'detaching' or (
                att['status'] == 'attaching' and not att['connection_info']):
            bad.append('attachment %s %s' % (att['id'], att['status']))
    for v in volumes:
        if v['status'] in TRANSITIONAL_VOLUME or v['status'] in (
                'error', 'error_deleting', 'error_extending'):
            continue
        present = {a['status'] for a in atts if a['volume_id'] == v['id']}
        derived = next((vs for s, vs in DERIVED if s in present),
                       'available')
        if v['status'] != derived:
            bad.append('volume %s %s, attachments say %s' % (
                v['id'], v['status'], derived))
    return bad


def test_volume_service_killed_30_times(cluster):
    _storm(cluster, ['ma'] * KILLS)


def test_api_and_scheduler_killed(cluster):
    """The same with the API (mid-request) and the scheduler (volumes
    recorded but never scheduled) killed, 15 times each."""
    _storm(cluster, ['api', 'scheduler'] * (KILLS // 2))


def _storm(cluster, victims):
    api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
    if 'on-ma' not in [t['name'] for t in
                       api.get('/types').json()['volume_types']]:
        api.create_type('on-ma', {'volume_backend_name': 'ma'})
    stop = threading.Event()
    workers = [Worker(cluster, n, stop) for n in range(WORKERS)]
    for w in workers:
        w.start()
    rnd = random.Random(20261123)
    wanted = len(victims) // 3

    def made():
        return sum(len(w.volumes) for w in workers)
    try:
        for name in victims:
            time.sleep(rnd.uniform(0.1, 1.5))
            _kill_and_restart(cluster, name)
        # on a loaded machine the cycles may lag the kills: the storm goes
        # on (same victims, in turn) until they have run, within a bound
        deadline = time.monotonic() + STORM_EXTRA
        more = itertools.cycle(victims)
        while made() < wanted and time.monotonic() < deadline:
            time.sleep(rnd.uniform(0.1, 1.5))
            _kill_and_restart(cluster, next(more))
    finally:
        stop.set()
        for w in workers:
            w.join(timeout=120)
    assert not any(w.is_alive() for w in workers)

    # within a reconcile interval (after reconcile_after) nothing is left
    # in a transitional state
    left = util.wait_for(
        lambda: not _unstable(api) or None, timeout=RECONCILE_AFTER + 30,
        what='a stable state: %s' % _unstable(api)) and []
    assert left == []
    # attachments that were attached exist unless their owner asked for
    # the delete (a delete cut short by the crash is rolled forward)
    for w in workers:
        for att in w.attached - w.delete_asked:
            assert api.get('/attachments/%s' % att).status_code == 200
    # the node's exports are what the database says
    report = cluster.command('cinder_lite.cmd.manage', 'volume',
                             'show-exports',
                             extra_conf=[cluster.node_conf('ma')])
    assert report.returncode == 0, report.stdout + report.stderr
    # the recorded quota usage is what the volumes say, kills or not
    _quota_exact(cluster)
    # and everything can be cleaned up by its owner
    for att in api.get('/attachments').json()['attachments']:
        assert api.delete('/attachments/%s' % att['id']).status_code == 200
    for vol in api.get('/volumes').json()['volumes']:
        assert api.delete('/volumes/%s' % vol['id']).status_code == 202
    util.wait_for(lambda: api.get('/volumes').json()['volumes'] == [],
                  timeout=60, what='every volume deleted')
    _quota_exact(cluster)
    usage = api.get('/os-quota-sets/%s?usage=True' % cluster_mod.PROJECT)
    assert (usage.json()['quota_set']['volumes']['in_use'],
            usage.json()['quota_set']['gigabytes']['in_use']) == (0, 0)
    errors = [e for w in workers for e in w.errors if ' 500 ' in e
              or e.startswith('attach: 5')]
    assert errors == []
    # no export daemon outlived its attachment
    util.wait_for(lambda: not _nbdkits(cluster), timeout=30,
                  what='no nbdkit left: %s' % _nbdkits(cluster))
    # the cycles really ran across the kills
    assert made() >= wanted
    assert sum(len(w.attached) for w in workers) > 0


def _quota_exact(cluster):
    check = cluster.manage('quota', 'check', check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert 'equals what the volumes say' in check.stdout


def _nbdkits(cluster):
    return util.processes('nbdkit', cluster.workdir)
