"""The other write transactions through two nodes of a Galera cluster:
volume types and their extra specs and access, default types, QoS
specs, quota limits, transfers, volume metadata and groups.

Each is run through ``db.api.run_writer``: when another node's commit
refuses it at its own (certification failure, a deadlock), it is run
again from its start, and the request is answered as on one server.
Each race sends half of its requests to the API on node 1 and half to
the one on node 2 (``test_galera.spread``), and asserts: no 5xx, the
answers and the end state one server would give, and that the
transactions that met were run again (the deadlock retries each API
process logged, by transaction).
"""
import collections
import re
import uuid

from tests.harness import cluster as cluster_mod
from tests.harness import groups
from tests.integration import test_galera
from tests.integration.test_galera import spread
from tests.integration.test_galera import statuses

# test_galera.py's fixtures: the cluster on Galera node 1 and a second
# API process on node 2 (a deployment of this module's own)
deployment = test_galera.deployment
api = test_galera.api
RACERS = 16
ROUNDS = 3
OTHER = 'fedcba9876543210fedcba9876543210'


def retried(deployment):
    """Deadlock retries both API processes logged, by transaction (the
    ``__qualname__`` of the function given to ``run_writer``)."""
    c, api2, _port2 = deployment
    text = c.processes['api'].read_log() + api2.read_log()
    return collections.Counter(re.findall(
        r'database deadlock \(attempt \d+ of \d+\) in (\S+):', text))


def new_retries(deployment, before, *names):
    now = retried(deployment)
    return {name: now[name] - before[name] for name in names}


def fresh_project():
    return uuid.uuid4().hex


def quota_exact(deployment, project):
    c, _api2, _port2 = deployment
    check = c.manage('quota', 'check', '--project', project, check=False)
    assert check.returncode == 0, (check.stdout, check.stderr)


def test_extra_specs_and_access_of_one_type(deployment, api):
    """Extra specs set on one type 16 at a time (each request sets two
    keys to its own value): every set answers 200 and the type ends
    with both keys from one request.  Then one key unset 16 at a time:
    one 202, the others 404.  Then one project given access to a
    private type 16 at a time: one 202, the others 409."""
    before = retried(deployment)
    vtype = api.create_type('galera-specs-%s' % uuid.uuid4().hex[:6])
    path = '/types/%s/extra_specs' % vtype['id']
    for round_ in range(ROUNDS):
        replies = spread(deployment, 'POST', [
            (path, {'extra_specs': {'k1': 'v%d-%d' % (round_, i),
                                    'k2': 'v%d-%d' % (round_, i)}})
            for i in range(RACERS)])
        assert statuses(replies) == {200: RACERS}, (round_, replies)
        resp = api.get(path)
        assert resp.status_code == 200, resp.text
        specs = resp.json()['extra_specs']
        assert specs['k1'] == specs['k2'], specs
        assert specs['k1'] in {'v%d-%d' % (round_, i)
                               for i in range(RACERS)}, specs
    replies = spread(deployment, 'DELETE',
                     [(path + '/k1', None)] * RACERS)
    assert statuses(replies) == {202: 1, 404: RACERS - 1}, replies
    resp = api.get(path)
    assert set(resp.json()['extra_specs']) == {'k2'}, resp.text

    private = api.create_type('galera-private-%s' % uuid.uuid4().hex[:6],
                              is_public=False)
    project = fresh_project()
    replies = spread(deployment, 'POST', [
        ('/types/%s/action' % private['id'],
         {'addProjectAccess': {'project': project}})] * RACERS)
    assert statuses(replies) == {202: 1, 409: RACERS - 1}, replies
    resp = api.get('/types/%s/os-volume-type-access' % private['id'])
    assert resp.status_code == 200, resp.text
    assert [a['project_id'] for a in resp.json()['volume_type_access']] \
        == [project], resp.text
    for type_id in (vtype['id'], private['id']):
        assert api.delete('/types/%s' % type_id).status_code == 202
    counts = new_retries(deployment, before, 'set_extra_specs',
                         'delete_extra_spec',
                         'TypeService.add_access.<locals>._add')
    print('deadlock retries: %s' % counts)
    assert counts['set_extra_specs'] > 0, counts


def test_default_type_of_one_project(deployment, api):
    """A project's default type set 16 at a time to 16 types (the
    first round makes its row): all answer 200, and the default is one
    of them, as each reply said at its commit."""
    before = retried(deployment)
    types = [api.create_type('galera-default-%s' % uuid.uuid4().hex[:6])
             for _ in range(RACERS)]
    project = fresh_project()
    path = '/default-types/%s' % project
    for round_ in range(ROUNDS):
        replies = spread(deployment, 'PUT', [
            (path, {'default_type': {'volume_type': t['id']}})
            for t in types])
        assert statuses(replies) == {200: RACERS}, (round_, replies)
        for reply, vtype in zip(replies, types):
            assert reply.body['default_type']['volume_type_id'] == \
                vtype['id'], reply
        resp = api.get(path)
        assert resp.status_code == 200, resp.text
        assert resp.json()['default_type']['volume_type_id'] in \
            {t['id'] for t in types}, resp.text
    resp = api.delete(path)
    assert resp.status_code == 204, resp.text
    for vtype in types:
        assert api.delete('/types/%s' % vtype['id']).status_code == 202
    counts = new_retries(deployment, before,
                         'DefaultTypeService.set_default.<locals>._set')
    print('deadlock retries: %s' % counts)
    assert sum(counts.values()) > 0, counts


def test_qos_specs_keys_and_association(deployment, api):
    """Keys of one QoS specs set 16 at a time (two keys each): all 200,
    both keys end from one request.  Then 16 specs associated with one
    type at once: one 202, the others 400 (the type has other specs),
    and the type has the winner's."""
    before = retried(deployment)

    def create_specs(name, **specs):
        resp = api.post('/qos-specs', json={'qos_specs': dict(
            specs, name=name)})
        assert resp.status_code == 200, resp.text
        return resp.json()['qos_specs']['id']

    first = create_specs('galera-qos-%s' % uuid.uuid4().hex[:6],
                         consumer='back-end')
    for round_ in range(ROUNDS):
        replies = spread(deployment, 'PUT', [
            ('/qos-specs/%s' % first, {'qos_specs': {
                'read_iops_sec': '%d' % (1000 * round_ + i),
                'write_iops_sec': '%d' % (1000 * round_ + i)}})
            for i in range(RACERS)])
        assert statuses(replies) == {200: RACERS}, (round_, replies)
        resp = api.get('/qos-specs/%s' % first)
        assert resp.status_code == 200, resp.text
        specs = resp.json()['qos_specs']['specs']
        assert specs['read_iops_sec'] == specs['write_iops_sec'], specs
    ids = [first] + [create_specs('galera-qos-%s' % uuid.uuid4().hex[:6])
                     for _ in range(RACERS - 1)]
    vtype = api.create_type('galera-qos-type-%s' % uuid.uuid4().hex[:6])
    replies = spread(deployment, 'GET', [
        ('/qos-specs/%s/associate?vol_type_id=%s' % (i, vtype['id']), None)
        for i in ids])
    assert statuses(replies) == {202: 1, 400: RACERS - 1}, replies
    [winner] = [i for i, r in zip(ids, replies) if r.status == 202]
    for specs_id in ids:
        resp = api.get('/qos-specs/%s/associations' % specs_id)
        assert resp.status_code == 200, resp.text
        assert [a['id'] for a in resp.json()['qos_associations']] == (
            [vtype['id']] if specs_id == winner else []), resp.text
    resp = api.get('/types/%s' % vtype['id'])
    assert resp.json()['volume_type']['qos_specs_id'] == winner, resp.text
    resp = api.get('/qos-specs/%s/disassociate_all' % winner)
    assert resp.status_code == 202, resp.text
    assert api.delete('/types/%s' % vtype['id']).status_code == 202
    for specs_id in ids:
        assert api.delete('/qos-specs/%s' % specs_id).status_code == 202
    counts = new_retries(deployment, before, 'set_keys', 'associate')
    print('deadlock retries: %s' % counts)
    assert counts['set_keys'] > 0, counts


def test_quota_limits_of_one_project(deployment, api):
    """A project's limits set 16 at a time (three limits each, from one
    number): all 200, each reply shows its own limits, and the project
    ends with the three of one request; the same for a quota class."""
    before = retried(deployment)
    project = fresh_project()
    cls = 'galera-%s' % uuid.uuid4().hex[:8]
    for path, key in (('/os-quota-sets/%s' % project, 'quota_set'),
                      ('/os-quota-class-sets/%s' % cls, 'quota_class_set')):
        for round_ in range(ROUNDS):
            asked = [100 * round_ + i for i in range(RACERS)]
            replies = spread(deployment, 'PUT', [
                (path, {key: {'volumes': n, 'snapshots': n + 1,
                              'gigabytes': n + 2}}) for n in asked])
            assert statuses(replies) == {200: RACERS}, (path, round_,
                                                        replies)
            for reply, n in zip(replies, asked):
                shown = reply.body[key]
                assert (shown['volumes'], shown['snapshots'],
                        shown['gigabytes']) == (n, n + 1, n + 2), reply
            resp = api.get(path)
            assert resp.status_code == 200, resp.text
            shown = resp.json()[key]
            n = shown['volumes']
            assert n in asked, shown
            assert (shown['snapshots'], shown['gigabytes']) == \
                (n + 1, n + 2), shown
    resp = api.delete('/os-quota-sets/%s' % project)
    assert resp.status_code == 200, resp.text
    counts = new_retries(deployment, before,
                         'QuotaService.update.<locals>._update',
                         'QuotaService.update_class.<locals>._update')
    print('deadlock retries: %s' % counts)
    assert all(counts.values()), counts


def test_transfer_offers_and_accepts_of_one_volume(deployment, api):
    """One volume offered 16 times at once: one transfer is made (202),
    the other offers find it awaiting-transfer (400).  The transfer
    accepted 16 times at once by another project: one accept moves the
    volume (202), the others find the transfer gone (404).  The
    recorded quota usage of both projects stays exact."""
    before = retried(deployment)
    for round_ in range(ROUNDS):
        vol = api.create_volume(size=1)
        replies = spread(deployment, 'POST', [
            ('/volume-transfers', {'transfer': {
                'volume_id': vol['id'], 'name': 'galera-%d' % i}})
            for i in range(RACERS)])
        assert statuses(replies) == {202: 1, 400: RACERS - 1}, \
            (round_, replies)
        [transfer] = [r.body['transfer'] for r in replies
                      if r.status == 202]
        resp = api.get('/volume-transfers?all_tenants=1')
        assert [t['id'] for t in resp.json()['transfers']
                if t['volume_id'] == vol['id']] == [transfer['id']]
        replies = spread(deployment, 'POST', [
            ('/volume-transfers/%s/accept' % transfer['id'],
             {'accept': {'auth_key': transfer['auth_key']}})] * RACERS,
            project=OTHER)
        assert statuses(replies) == {202: 1, 404: RACERS - 1}, \
            (round_, replies)
        resp = api.get('/volumes/%s' % vol['id'])
        assert resp.status_code == 200, resp.text
        shown = resp.json()['volume']
        assert (shown['status'],
                shown['os-vol-tenant-attr:tenant_id']) == \
            ('available', OTHER), shown
        for project in (cluster_mod.PROJECT, OTHER):
            quota_exact(deployment, project)
        resp = api.delete('/volumes/%s' % vol['id'])
        assert resp.status_code == 202, resp.text
        api.wait_deleted(vol['id'])
    quota_exact(deployment, OTHER)
    counts = new_retries(deployment, before,
                         'TransferService.create.<locals>._offer',
                         'TransferService.accept.<locals>._take')
    print('deadlock retries: %s' % counts)
    assert sum(counts.values()) > 0, counts


def test_metadata_of_one_volume(deployment, api):
    """A volume's metadata set 16 at a time (two keys each): all 200,
    each reply shows its own keys, both keys end from one request."""
    before = retried(deployment)
    vol = api.create_volume(size=1)
    path = '/volumes/%s/metadata' % vol['id']
    for round_ in range(ROUNDS):
        replies = spread(deployment, 'POST', [
            (path, {'metadata': {'a': '%d-%d' % (round_, i),
                                 'b': '%d-%d' % (round_, i)}})
            for i in range(RACERS)])
        assert statuses(replies) == {200: RACERS}, (round_, replies)
        for i, reply in enumerate(replies):
            assert reply.body['metadata']['a'] == '%d-%d' % (round_, i)
        resp = api.get(path)
        meta = resp.json()['metadata']
        assert meta['a'] == meta['b'], meta
    replies = spread(deployment, 'DELETE', [(path + '/a', None)] * RACERS)
    assert statuses(replies) == {200: 1, 404: RACERS - 1}, replies
    assert set(api.get(path).json()['metadata']) == {'b'}
    resp = api.delete('/volumes/%s' % vol['id'])
    assert resp.status_code == 202, resp.text
    api.wait_deleted(vol['id'])
    counts = new_retries(deployment, before,
                         'MetadataService.update.<locals>._update',
                         'MetadataService.delete_key.<locals>._delete')
    print('deadlock retries: %s' % counts)
    assert counts['MetadataService.update.<locals>._update'] > 0, counts


def test_group_creates_and_renames(deployment, api):
    """Groups of one project created 16 at a time, twice (each charges
    the project's ``groups`` usage row): all 202, each made once and
    placed, and the usage counts them.  Then one of them renamed 16
    times at once: all 202, its name is one of them."""
    before = retried(deployment)
    project = fresh_project()
    resp = api.put('/os-quota-sets/%s' % project,
                   json={'quota_set': {'groups': -1}})
    assert resp.status_code == 200, resp.text
    vtype = api.create_type('galera-grp-%s' % uuid.uuid4().hex[:6],
                            {'volume_backend_name': 'ma'})
    gtype = groups.create_group_type(api)
    n = 2 * RACERS
    made = []
    for round_ in range(2):
        replies = spread(deployment, 'POST', [
            ('/groups', {'group': {'group_type': gtype['id'],
                                   'volume_types': [vtype['id']],
                                   'name': 'galera-%d-%d' % (round_, i)}})
            for i in range(RACERS)], project=project)
        assert statuses(replies) == {202: RACERS}, (round_, replies)
        made += [r.body['group']['id'] for r in replies]
    assert len(set(made)) == n
    for group_id in made:
        groups.wait_group(api, group_id)
    resp = api.get('/os-quota-sets/%s?usage=True' % project)
    assert resp.json()['quota_set']['groups']['in_use'] == n, resp.text
    quota_exact(deployment, project)
    names = ['renamed-%d' % i for i in range(RACERS)]
    replies = spread(deployment, 'PUT', [
        ('/groups/%s' % made[0], {'group': {'name': name}})
        for name in names], project=project)
    assert statuses(replies) == {202: RACERS}, replies
    resp = api.get('/groups/%s' % made[0])
    assert resp.json()['group']['name'] in names, resp.text
    replies = spread(deployment, 'POST', [
        ('/groups/%s/action' % g, {'delete': {'delete-volumes': False}})
        for g in made], project=project)
    assert statuses(replies) == {202: n}, replies
    for group_id in made:
        groups.wait_group_gone(api, group_id)
    quota_exact(deployment, project)
    resp = api.delete('/os-quota-sets/%s' % project)
    assert resp.status_code == 200, resp.text
    counts = new_retries(deployment, before,
                         'GroupService.create.<locals>._record',
                         'GroupService.update.<locals>._change')
    print('deadlock retries: %s' % counts)
    assert counts['GroupService.create.<locals>._record'] > 0, counts
