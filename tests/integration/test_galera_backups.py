"""Backups through three nodes of a Galera cluster at once.

The deployment of tests/integration/test_galera.py (the usual cluster on
node 1, a second API process on node 2) with a backup service writing
through node 3, keeping its backups in a POSIX store.  Galera replicates
no row lock, so the backup API's transactions on two nodes, and the
backup service's on the third, that change one row (a volume's, a
backup's, the project's usage) meet at certification, and the one that
commits second is refused as a deadlock: each of them runs in
``db_api.run_writer`` and is run again from its start.  The requests
answer as on one server, nothing is left in a transition and the
recorded quota usage stays exact.
"""
import collections
import os
import threading

import pytest
import requests

from tests.harness import backups as bk
from tests.harness import cluster as cluster_mod
from tests.integration.test_galera import api  # noqa: F401
from tests.integration.test_galera import free
from tests.integration.test_galera import race
from tests.integration.test_galera import spread
from tests.integration.test_galera import statuses
from tests.integration.test_galera import two_apis
from tests.integration.test_galera import volume_status

BACKUP_HOST = 'node-bk-g3'
MiB = 1024 ** 2
# random data, so that a backup takes some seconds
RANDOM_BYTES = 96 * MiB


@pytest.fixture(scope='module')
def deployment(galera):
    """(cluster on node 1 with a backup service on node 3, second API
    process on node 2, its port): the shape of test_galera's."""
    backup = cluster_mod.posix_backup(BACKUP_HOST)

    def through_node3(c):
        # the backup service writes through node 3
        c.process_sections = dict(backup['process_sections'])
        c.process_sections['backup']['database'] = {
            'connection': '%s/%s' % (galera.nodes[2].url, c.db_name)}
    with two_apis(galera, configure=through_node3,
                  backups=backup['backups']) as deployed:
        yield deployed


def retries(deployment):
    """Deadlock retries logged, per process (the two APIs, the backup
    service)."""
    c, api2, _port2 = deployment
    logs = {'api': c.processes['api'].read_log(), 'api2': api2.read_log(),
            'backup': c.processes['backup'].read_log()}
    return {name: text.count('database deadlock (attempt')
            for name, text in logs.items()}


def no_5xx(replies):
    assert not [r for r in replies if r.status >= 500], replies


def quota_exact(deployment):
    c, _api2, _port2 = deployment
    check = c.manage('quota', 'check', '--project', cluster_mod.PROJECT,
                     check=False)
    assert check.returncode == 0, (check.stdout, check.stderr)


def test_backup_creates_through_two_nodes(deployment, api):  # noqa: F811
    """Backups of six volumes asked at once, three through each API: each
    create locks its volume and charges the project's backup usage in its
    transaction, so the creates meet on the usage row; all answer 202,
    each backup is made once and becomes available, its volume available
    again (the backup service's records through node 3), and the usage
    is exact.  Then the six deleted at once through both: 202 each, all
    gone, the usage exact again."""
    n = 6
    before = retries(deployment)
    vols = [api.create_volume(size=1, name='g-bk-%d' % i) for i in range(n)]
    replies = spread(deployment, 'POST', [
        ('/backups', {'backup': {'volume_id': v['id'],
                                 'name': 'g-bk-%d' % i}})
        for i, v in enumerate(vols)])
    no_5xx(replies)
    assert statuses(replies) == {202: n}, replies
    ids = [r.body['backup']['id'] for r in replies]
    assert len(set(ids)) == n
    for bid in ids:
        bk.wait_backup(api, bid)
    for v in vols:
        assert volume_status(api, v['id']) == 'available'
    resp = api.get('/backups/detail')
    assert resp.status_code == 200, resp.text
    mine = collections.Counter(b['volume_id'] for b in resp.json()['backups']
                               if b['id'] in ids)
    assert mine == {v['id']: 1 for v in vols}, mine
    quota_exact(deployment)
    replies = spread(deployment, 'DELETE', [('/backups/%s' % b, None)
                                            for b in ids])
    no_5xx(replies)
    assert statuses(replies) == {202: n}, replies
    for bid in ids:
        bk.wait_gone(api, bid)
    quota_exact(deployment)
    for v in vols:
        free(api, v['id'])
    after = retries(deployment)
    print('deadlock retries logged: %r' % {
        k: after[k] - before[k] for k in after})


def test_backups_of_one_volume_through_two_nodes(deployment,
                                                 api):  # noqa: F811
    """Six backups of one available volume asked at once, three through
    each API, three times: one is taken (202), five are refused with
    Cinder's 400 for a volume that is backing-up, whichever node each
    went through; the one taken becomes available and the volume
    available again."""
    vol = api.create_volume(size=1, name='g-bk-one')
    before = retries(deployment)
    made = []
    try:
        for round_ in range(3):
            replies = spread(deployment, 'POST', [
                ('/backups', {'backup': {'volume_id': vol['id'],
                                         'name': 'g-one-%d-%d' % (round_,
                                                                  i)}})
                for i in range(6)])
            no_5xx(replies)
            assert statuses(replies) == {202: 1, 400: 5}, (round_, replies)
            for reply in replies:
                if reply.status == 400:
                    assert reply.body['badRequest']['message'] == (
                        'Invalid volume: Volume to be backed up must be '
                        'available or in-use, but the current status is '
                        '"backing-up".'), reply.body
            [won] = [r.body['backup'] for r in replies if r.status == 202]
            made.append(won['id'])
            bk.wait_backup(api, won['id'])
            assert volume_status(api, vol['id']) == 'available'
        quota_exact(deployment)
    finally:
        for bid in made:
            resp = api.delete('/backups/%s' % bid)
            assert resp.status_code == 202, resp.text
            bk.wait_gone(api, bid)
        free(api, vol['id'])
    after = retries(deployment)
    print('deadlock retries logged: %r' % {
        k: after[k] - before[k] for k in after})


def test_backup_delete_or_restore_through_two_nodes(deployment,
                                                    api):  # noqa: F811
    """A backup's delete through node 1 and its restore into a volume
    through node 2, at once, four times: one wins, the other is refused
    with 400 (a backup being restored is not deleted; a backup being
    deleted is not restored) or, when the delete was over before the
    restore was read, 404; both only when the restore was over before
    the delete was read (the restored volume available).  A restore
    that won ends with the backup and the volume available (the backup
    service's records through node 3)."""
    c, _api2, port2 = deployment
    source = api.create_volume(size=1, name='g-bk-src')
    target = api.create_volume(size=1, name='g-bk-dst')
    outcomes = collections.Counter()
    try:
        for round_ in range(4):
            bid = bk.backup(api, source['id'], name='g-dr-%d' % round_)['id']
            delete, restore = race([
                (c.port, 'DELETE', '/backups/%s' % bid, None),
                (port2, 'POST', '/backups/%s/restore' % bid,
                 {'restore': {'volume_id': target['id']}})])
            outcomes[(delete.status, restore.status)] += 1
            # (202, 404): the delete went through and the backup
            # service finished it before the restore was read, as on one
            # server when the restore comes that much later; (202, 202):
            # the restore went through and was over (the backup
            # available again) before the delete was read
            assert (delete.status, restore.status) in (
                (202, 400), (400, 202), (202, 404), (202, 202)), (
                    round_, delete, restore)
            if (delete.status, restore.status) == (202, 202):
                # one after the other: the restore ended well (a delete
                # accepted while it ran would have taken its chunks), and
                # the delete ends the backup
                assert restore.body['restore']['backup_id'] == bid
                api.wait_volume(target['id'], 'available')
            elif restore.status == 202:
                assert restore.body['restore'] == {
                    'backup_id': bid, 'volume_id': target['id'],
                    'volume_name': 'g-bk-dst'}, restore.body
                assert delete.body['badRequest']['message'] == (
                    'Invalid backup: Backup status must be available or '
                    'error'), delete.body
                bk.wait_backup(api, bid)
                api.wait_volume(target['id'], 'available')
                resp = api.delete('/backups/%s' % bid)
                assert resp.status_code == 202, resp.text
            elif restore.status == 404:
                assert restore.body['itemNotFound']['message'] == (
                    'Backup %s could not be found.' % bid), restore.body
                assert volume_status(api, target['id']) == 'available'
            else:
                assert restore.body['badRequest']['message'] == (
                    'Invalid backup: Backup status must be available'), \
                    restore.body
                assert volume_status(api, target['id']) == 'available'
            bk.wait_gone(api, bid)
        quota_exact(deployment)
    finally:
        free(api, source['id'])
        free(api, target['id'])
    print('(delete, restore) answers: %s' % dict(outcomes))


def test_backup_updates_through_two_nodes(deployment, api):  # noqa: F811
    """Eight updates of one backup's name and metadata at once, half
    through each API: each locks the backup's row (which writes it), so
    they meet at certification; all answer 200 and the backup ends with
    one of the names and its metadata as one of them set it.  The
    retries are logged."""
    vol = api.create_volume(size=1, name='g-bk-upd')
    bid = bk.backup(api, vol['id'], name='g-upd')['id']
    before = retries(deployment)
    try:
        n = 8
        replies = spread(deployment, 'PUT', [
            ('/backups/%s' % bid, {'backup': {
                'name': 'g-upd-%d' % i, 'metadata': {'writer': str(i)}}})
            for i in range(n)])
        no_5xx(replies)
        assert statuses(replies) == {200: n}, replies
        shown = bk.show(api, bid)
        i = int(shown['metadata']['writer'])
        assert shown['name'] == 'g-upd-%d' % i, shown
        assert shown['metadata'] == {'writer': str(i)}, shown
        assert shown['status'] == 'available', shown
    finally:
        resp = api.delete('/backups/%s' % bid)
        assert resp.status_code == 202, resp.text
        bk.wait_gone(api, bid)
        free(api, vol['id'])
    after = retries(deployment)
    print('deadlock retries logged: %r' % {
        k: after[k] - before[k] for k in after})
    assert after['api'] + after['api2'] > before['api'] + before['api2'], \
        (before, after)


def volume_path(cluster, vid):
    """The file of volume ``vid`` of node ma (the file driver's default
    place under the state path)."""
    return os.path.join(cluster.workdir, 'state', 'volumes', 'ma',
                        'volume-%s' % vid)


def test_backup_progress_and_updates_through_three_nodes(
        deployment, api):  # noqa: F811
    """A backup of some seconds: the backup service records its progress
    in the backup's row every second through node 3, while clients
    rename the backup through both APIs (nodes 1 and 2) all along.  The
    two meet on that row at certification and each side runs its
    transaction again: every rename answers 200, the backup ends
    available with its objects counted and one of the names, and its
    volume available."""
    c, _api2, port2 = deployment
    vtype = api.create_type('g-bk-ma', {'volume_backend_name': 'ma'})
    vol = api.create_volume(size=1, volume_type=vtype['id'])
    with open(volume_path(c, vol['id']), 'r+b') as f:
        for offset in range(0, RANDOM_BYTES, 16 * MiB):
            f.seek(offset)
            f.write(os.urandom(16 * MiB))
        os.fsync(f.fileno())
    before = retries(deployment)
    bid = bk.create(api, vol['id'], name='g-prog')['id']
    done = threading.Event()
    answers = collections.Counter()
    names = set()
    errors = []

    def rename(port, who):
        session = requests.Session()
        session.headers.update({
            'X-Auth-Token': 'admin:%s' % cluster_mod.PROJECT,
            'OpenStack-API-Version': 'volume 3.71'})
        url = 'http://127.0.0.1:%d/v3/%s/backups/%s' % (
            port, cluster_mod.PROJECT, bid)
        i = 0
        try:
            while not done.is_set():
                name = 'g-prog-%s-%d' % (who, i)
                resp = session.put(url, json={'backup': {'name': name}},
                                   timeout=60)
                answers[resp.status_code] += 1
                if resp.status_code == 200:
                    names.add(name)
                i += 1
        except Exception as e:   # reported below
            errors.append(repr(e))
        finally:
            session.close()

    threads = [threading.Thread(target=rename, args=(port, str(n)),
                                daemon=True)
               for n, port in enumerate((c.port, port2))]
    for t in threads:
        t.start()
    try:
        made = bk.wait_backup(api, bid)
    finally:
        done.set()
        for t in threads:
            t.join(90)
    assert not errors, errors
    assert set(answers) == {200}, answers
    assert made['object_count'] >= 1, made
    assert bk.show(api, bid)['name'] in names | {'g-prog'}
    assert volume_status(api, vol['id']) == 'available'
    resp = api.delete('/backups/%s' % bid)
    assert resp.status_code == 202, resp.text
    bk.wait_gone(api, bid)
    quota_exact(deployment)
    free(api, vol['id'])
    after = retries(deployment)
    print('renames: %s; deadlock retries logged: %r' % (
        dict(answers), {k: after[k] - before[k] for k in after}))
    assert sum(after.values()) > sum(before.values()), (before, after)
