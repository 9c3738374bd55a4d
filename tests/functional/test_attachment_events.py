"""The attachment audit trail: who attached a volume read-write, from
which host, and when; readable by admins through the API and the manage
CLI."""
import os
import uuid

from tests.harness import forkrun


def test_audit_trail_answers_who_attached_read_write(stack, tmp_path):
    admin = stack.client()
    admin.create_type('shared', {'multiattach': '<is> True'})
    vol = admin.create_volume(volume_type='shared')
    member = stack.client(user='alice', roles='member')
    made = []
    for host, mode in (('compute-1', 'rw'), ('compute-2', 'ro')):
        resp = member.post('/attachments', json={'attachment': {
            'volume_uuid': vol['id'], 'instance_uuid': str(uuid.uuid4()),
            'mode': mode, 'connector': {'host': host, 'ip': '127.0.0.5'}}})
        assert resp.status_code == 200, resp.text
        made.append(resp.json()['attachment']['id'])
        assert member.post('/attachments/%s/action' % made[-1], json={
            'os-complete': None}).status_code == 204
    assert member.delete('/attachments/%s' % made[0]).status_code == 200

    resp = admin.get('/os-attachment-events?volume_id=%s' % vol['id'])
    assert resp.status_code == 200, resp.text
    events = resp.json()['attachment_events']
    rw = [(e['from_status'], e['to_status']) for e in events
          if e['attachment_id'] == made[0]]
    assert rw == [(None, 'reserved'), ('reserved', 'attaching'),
                  ('attaching', 'attaching'), ('attaching', 'attached'),
                  ('attached', 'detaching'), ('detaching', 'detached')]
    assert [e['reason'] for e in events if e['attachment_id'] == made[0]
            ][2] == 'connected (local)'
    attached_rw = [e for e in events if e['to_status'] == 'attached'
                   and e['attach_mode'] == 'rw']
    assert len(attached_rw) == 1
    who = attached_rw[0]
    assert who['user_id'] == 'alice'
    assert who['attached_host'] == 'compute-1'
    assert who['request_id'].startswith('req-')
    assert who['created_at']
    assert {e['attach_mode'] for e in events
            if e['attachment_id'] == made[1] and e['from_status']} == {'ro'}
    # one attachment's events, and nothing for other volumes
    only = admin.get('/os-attachment-events?attachment_id=%s' % made[1])
    assert {e['attachment_id'] for e in only.json()['attachment_events']} \
        == {made[1]}
    # admins only, and filters are checked
    assert member.get('/os-attachment-events').status_code == 403
    assert admin.get('/os-attachment-events?volume_id=x').status_code == 400
    assert admin.get('/os-attachment-events?colour=red').status_code == 400

    def manage_events(*args):
        # (a process forked from tests/harness/forkrun.py's server)
        out = forkrun.run(
            'cinder_lite.cmd.manage',
            ['--config-file', os.path.join(stack.state_path,
                                           'cinder-lite.conf'),
             'attachment', 'events', '--volume', vol['id']] + list(args),
            timeout=60)
        return out.returncode, out.stdout.splitlines(), out.stderr

    def attached(lines):
        # Time, Attachment ID, Volume ID, From, To, Mode, Host, User, ...
        return [cols[5:8] for cols in map(str.split, lines[1:])
                if cols[4] == 'attached']
    code, lines, err = manage_events()
    assert code == 0, err
    assert lines[0].split()[:5] == ['Time', 'Attachment', 'ID', 'Volume',
                                    'ID']
    # newest first, as wanted after an incident; --reverse oldest first
    assert attached(lines) == [['ro', 'compute-2', 'alice'],
                               ['rw', 'compute-1', 'alice']]
    assert len(lines) == 1 + len(events)
    code, lines, err = manage_events('--reverse')
    assert attached(lines) == [['rw', 'compute-1', 'alice'],
                               ['ro', 'compute-2', 'alice']]
    code, lines, err = manage_events('--limit', '1')
    newest = manage_events()[1][1].split()
    assert len(lines) == 2 and lines[1].split() == newest
    code, lines, err = manage_events('--since', '2999-01-01T00:00:00')
    assert (code, lines[1:]) == (0, [])
    code, lines, err = manage_events('--since', 'yesterday')
    assert code == 2 and 'is not a time' in err
