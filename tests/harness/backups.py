"""Backup steps over the API, as the functional tests take them."""
from tests.harness import util


def create(api, volume_id, expect=202, **extra):
    body = {'backup': dict(volume_id=volume_id, **extra)}
    resp = api.post('/backups', json=body)
    assert resp.status_code == expect, resp.text
    return resp.json().get('backup', resp.json())


def show(api, bid):
    resp = api.get('/backups/%s' % bid)
    assert resp.status_code == 200, resp.text
    return resp.json()['backup']


# a 1 GiB volume is read whole (holes too) on a loaded 2-core machine
TIMEOUT = 120


def wait_backup(api, bid, status='available'):
    def check():
        backup = show(api, bid)
        if backup['status'] == status:
            return backup
        assert backup['status'] != 'error' or status == 'error', backup
        return None
    return util.wait_for(check, timeout=TIMEOUT,
                         what='backup %s %s' % (bid, status))


def backup(api, volume_id, **extra):
    """A backup of ``volume_id``, once it is available."""
    return wait_backup(api, create(api, volume_id, **extra)['id'])


def wait_gone(api, bid):
    util.wait_for(lambda: api.get('/backups/%s' % bid).status_code == 404,
                  timeout=TIMEOUT, what='backup %s deleted' % bid)


def restore(api, bid, expect=202, **body):
    resp = api.post('/backups/%s/restore' % bid, json={'restore': body})
    assert resp.status_code == expect, resp.text
    return resp.json().get('restore', resp.json())


def restored(api, bid, **body):
    """Restore and wait until the backup and the volume are available;
    the volume."""
    answer = restore(api, bid, **body)
    wait_backup(api, bid)
    return util.wait_for(
        lambda: _volume_if(api, answer['volume_id'], 'available'),
        timeout=TIMEOUT, what='volume %s restored' % answer['volume_id'])


def _volume_if(api, vid, status):
    volume = api.get('/volumes/%s' % vid).json()['volume']
    assert volume['status'] not in ('error', 'error_restoring'), volume
    return volume if volume['status'] == status else None
