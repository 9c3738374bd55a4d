"""After a burst: wait for a quiet period, then check the invariants on the
server's state and on the audit trail (``GET /os-attachment-events``)."""
import collections
import time

import requests

from tests.stateful.findings import Finding
from tests.stateful import groups
from tests.stateful.world import CALLERS
from tests.stateful.world import CONNECTED
from tests.stateful.world import MULTI_KINDS
from tests.stateful.world import PROJECT
from tests.stateful.world import SETTLED
from tests.stateful.world import SUSPECT_VOLUME
from tests.stateful.world import TRANSIENT_BACKUP
from tests.stateful.world import TRANSIENT_MIGRATION
from tests.stateful.world import TRANSIENT_VOLUME
from tests.stateful.world import UNKNOWN_ID
from tests.stateful.world import access_mode
from tests.stateful.world import derive
from tests.stateful.world import shown_status
from tests.stateful.world import status_consistent

QUIET_TIMEOUT = 30.0


class Checker:
    """The invariants on the server's state after a quiet period."""

    def __init__(self, fuzzer):
        self.fz = fuzzer
        self.session = requests.Session()
        who = CALLERS['admin']
        self.headers = {'X-Auth-Token': '%s:%s' % (who.user, who.project),
                        'X-Roles': who.roles,
                        'OpenStack-API-Version': 'volume 3.71'}

    def get(self, path):
        resp = self.session.get(self.fz.url + '/v3/%s%s' % (PROJECT, path),
                                headers=self.headers, timeout=60)
        if resp.status_code != 200:
            raise RuntimeError('checker: GET %s -> %d %s' % (
                path, resp.status_code, resp.text[:300]))
        return resp.json()

    def listing(self, path, key, links=None):
        """Every page of a list (``links``: its links' key, when not
        ``<key>_links``)."""
        items, url = [], path
        while url:
            page = self.get(url)
            items += page[key]
            nxt = [ln['href'] for ln in page.get(links or '%s_links' % key,
                                                 [])
                   if ln.get('rel') == 'next']
            url = nxt[0].split('/v3/%s' % PROJECT, 1)[1] if nxt else None
        return items

    def snapshot(self):
        volumes = self.listing('/volumes/detail?all_tenants=1', 'volumes')
        atts = self.listing('/attachments/detail?all_tenants=1',
                            'attachments')
        types = self.get('/types?is_public=none')['volume_types']
        snapshots = self.listing('/snapshots/detail?all_tenants=1',
                                 'snapshots')
        backups = self.listing('/backups/detail?all_tenants=1', 'backups')
        group_list = self.listing('/groups/detail?all_tenants=1', 'groups',
                                  'group_links')
        group_snaps = self.listing('/group_snapshots/detail?all_tenants=1',
                                   'group_snapshots')
        return {'volumes': {v['id']: v for v in volumes},
                'attachments': {a['id']: a for a in atts},
                'types': {t['id']: t for t in types},
                'snapshots': {s['id']: s for s in snapshots},
                'backups': {b['id']: b for b in backups},
                'groups': {g['id']: g for g in group_list},
                'group_snapshots': {g['id']: g for g in group_snaps}}

    def busy(self, snap):
        """What is still moving: volumes in a transient status,
        attachments half connected or being disconnected."""
        moving = []
        for v in snap['volumes'].values():
            if v['status'] in TRANSIENT_VOLUME and not self.reset(v['id']):
                moving.append(('volume', v['id'], v['status']))
            elif v.get('migration_status') in TRANSIENT_MIGRATION:
                moving.append(('volume', v['id'], 'migration %s'
                               % v['migration_status']))
        for a in snap['attachments'].values():
            if (a['status'] == 'attaching' and not a['connection_info']) or \
                    a.get('status_reason') == 'disconnecting':
                moving.append(('attachment', a['id'], a['status']))
        for sn in snap['snapshots'].values():
            if sn['status'] in ('creating', 'deleting'):
                moving.append(('snapshot', sn['id'], sn['status']))
        for b in snap['backups'].values():
            if b['status'] in TRANSIENT_BACKUP:
                moving.append(('backup', b['id'], b['status']))
        return moving + groups.busy(snap)

    def reset(self, volume_id):
        return self.fz.model.history.get(volume_id, {}).get('reset')

    def forget_resets(self, snap):
        """An operator's os-reset_status owns a volume's status until the
        status is one its attachments imply again."""
        atts = collections.defaultdict(list)
        for a in snap['attachments'].values():
            atts[a['volume_id']].append(shown_status(a))
        for vid, v in snap['volumes'].items():
            if self.reset(vid) and v['status'] == derive(atts[vid]):
                self.fz.model.note(vid, reset=False)

    @staticmethod
    def _shape(snap):
        return ({k: (v['status'], v['size'], v.get('migration_status'))
                 for k, v in snap['volumes'].items()},
                {k: (a['status'], bool(a['connection_info'])) for k, a in
                 snap['attachments'].items()},
                {k: sn['status'] for k, sn in snap['snapshots'].items()},
                {k: b['status'] for k, b in snap['backups'].items()},
                {k: g['status'] for k, g in snap['groups'].items()},
                {k: g['status'] for k, g in
                 snap['group_snapshots'].items()})

    def quiet(self, burst):
        """Wait until nothing moves and two snapshots in a row agree;
        returns the snapshot and findings for what never settled."""
        deadline = time.monotonic() + QUIET_TIMEOUT
        previous = None
        while True:
            snap = self.snapshot()
            moving = self.busy(snap)
            if not moving and previous is not None and \
                    self._shape(previous) == self._shape(snap):
                return snap, []
            if time.monotonic() > deadline:
                return snap, [Finding(
                    'stuck', '%s %s still %s %.0f s after the burst' % (
                        what, ident, status, QUIET_TIMEOUT), burst,
                    volume_id=ident if what == 'volume' else
                    snap['attachments'][ident]['volume_id']
                    if what == 'attachment' else
                    snap['snapshots'][ident]['volume_id']
                    if what == 'snapshot' else
                    snap['backups'][ident]['volume_id']
                    if what == 'backup' else None,
                    attachment_id=ident if what == 'attachment' else None)
                    for what, ident, status in moving]
            previous = None if moving else snap
            time.sleep(0.05 if not moving else 0.1)

    # -- state invariants -----------------------------------------------------
    def check_state(self, snap, burst):
        found = []
        for sid, sn in snap['snapshots'].items():
            # a volume is deleted only with its snapshots (cascade)
            if sn['volume_id'] not in snap['volumes']:
                found.append(Finding(
                    'orphan-snapshot', 'snapshot %s (%s) of volume %s, '
                    'which is gone' % (sid, sn['status'], sn['volume_id']),
                    burst, volume_id=sn['volume_id']))
            if sn['status'].startswith('error'):
                found.append(Finding(
                    'snapshot-error', 'snapshot %s of volume %s is %s'
                    % (sid, sn['volume_id'], sn['status']), burst,
                    volume_id=sn['volume_id']))
        found += groups.check(self, snap, burst)
        for bid, b in snap['backups'].items():
            # a backup either is taken or its create is refused: an error
            # is work the API accepted and a service could not do, unless
            # an admin force-deleted its volume before it was begun
            gone = b['volume_id'] not in snap['volumes'] and \
                b.get('fail_reason') == (
                    'the volume %s was deleted before the backup was made'
                    % b['volume_id'])
            if b['status'].startswith('error') and not gone:
                found.append(Finding(
                    'backup-error', 'backup %s of volume %s is %s (%s)'
                    % (bid, b['volume_id'], b['status'],
                       b.get('fail_reason')), burst,
                    volume_id=b['volume_id']))
        by_volume = collections.defaultdict(list)
        for a in snap['attachments'].values():
            by_volume[a['volume_id']].append(a)
        for aid, a in snap['attachments'].items():
            if a['volume_id'] not in snap['volumes']:
                found.append(Finding(
                    'orphan-attachment', 'attachment %s (%s) of volume %s, '
                    'which is gone' % (aid, a['status'], a['volume_id']),
                    burst, volume_id=a['volume_id'], attachment_id=aid))
            mode = access_mode(a['connection_info'])
            if a['connection_info'] and mode != a['attach_mode']:
                found.append(Finding(
                    'access-mode', 'attachment %s is %s but its '
                    'connection_info says access_mode %r' % (
                        aid, a['attach_mode'], mode), burst,
                    volume_id=a['volume_id'], attachment_id=aid))
        for vid, v in snap['volumes'].items():
            found += self.check_volume(v, by_volume.get(vid, []), burst)
        return found

    def check_volume(self, v, atts, burst):
        found = []
        vid = v['id']

        def add(kind, detail, **kw):
            found.append(Finding(kind, 'volume %s: %s' % (vid, detail),
                                 burst, volume_id=vid, **kw))
        reset = self.reset(vid)
        statuses = sorted(shown_status(a) for a in atts)
        if v['status'] in SETTLED and not reset and \
                not status_consistent(v['status'], statuses):
            add('status-not-derived', 'status %s but its attachments are '
                '%s (implying %s)' % (v['status'], statuses or 'none',
                                      derive(statuses)))
        if v['status'] in SUSPECT_VOLUME and not reset:
            add('suspect-status', 'status %s' % v['status'])
        kind = self.fz.model.type_kind.get(v.get('volume_type_id'))
        # a volume that had attachments was created: its error is an
        # operator's os-reset_status, not a failed create
        if v['status'] == 'error' and not reset and kind != 'multi-noma' \
                and not self.fz.model.history.get(vid, {}).get('ever_reset') \
                and not self.get('/os-attachment-events?volume_id=%s&limit=1'
                                 % vid)['attachment_events']:
            add('create-error', 'status error (type %s, kind %s)' % (
                v.get('volume_type'), kind))
        if not v['multiattach']:
            instances = {a['instance'] for a in atts}
            if len(atts) > 1 and (None in instances or len(instances) > 1):
                add('plain-two-instances', 'not multiattach, live '
                    'attachments %s' % [(a['id'], a['instance'],
                                         a['status']) for a in atts])
            connected = {a['id'] for a in atts if a['connection_info']}
            for kind_, entries in (
                    ('duplicate-connection', [e for e in v['attachments']
                                              if e['attachment_id'] in
                                              connected]),
                    ('duplicate-host-attach', v['attachments'])):
                # an attachment completed without a connect has no host:
                # it holds no connection to count twice
                hosts = [e['host_name'] for e in entries if e['host_name']]
                if len(hosts) != len(set(hosts)):
                    add(kind_, 'not multiattach, attached twice from one '
                        'host: %s' % [(e['attachment_id'], e['host_name'],
                                       e['server_id']) for e in entries])
                    break
        if kind is not None and v['multiattach'] != (kind in MULTI_KINDS):
            add('multiattach-flag', 'multiattach=%s but its type %s is %s'
                % (v['multiattach'], v.get('volume_type'), kind))
        host = v.get('os-vol-host-attr:host') or ''
        if host and kind in ('pin-ma', 'pin-noma') and \
                '@%s#' % kind[4:] not in host:
            add('misplaced', 'type %s pins it, but it is on %s' % (kind,
                                                                   host))
        if host and kind in MULTI_KINDS and '@noma#' in host:
            add('misplaced', 'multiattach type but on %s' % host)
        if 'migration_status' not in v:
            add('view-field', 'admin view lacks migration_status')
        if self.single_writer(v):
            # a reservation's mode may be undecided, which the view shows
            # as rw; it is decided when it connects or completes
            writers = [a['id'] for a in atts if a['attach_mode'] == 'rw'
                       and a['status'] not in ('reserved',
                                               'error_attaching')]
            if len(writers) > 1:
                add('two-writers', 'single-writer type, writers %s'
                    % writers)
        in_view = {e['attachment_id']: e for e in v['attachments']}
        attached = {a['id']: a for a in atts if a['status'] == 'attached'}
        if set(in_view) != set(attached):
            add('views-disagree', 'volume view lists attachments %s, the '
                'attachments API has attached %s' % (sorted(in_view),
                                                     sorted(attached)))
        for aid in set(in_view) & set(attached):
            e, a = in_view[aid], attached[aid]
            # (the volume view has Cinder's keys only: no mode)
            if e['server_id'] != a['instance']:
                add('views-disagree', 'attachment %s: volume view server '
                    '%s, attachments API %s' % (
                        aid, e['server_id'], a['instance']),
                    attachment_id=aid)
        return found

    def single_writer(self, v):
        return self.fz.model.type_kind.get(v.get('volume_type_id')) == \
            'single' and v['multiattach']

    def add_evidence(self, found):
        """The audit trail of each finding's volume, to read with the
        requests."""
        for f in found:
            if f.evidence is None and f.volume_id and \
                    f.volume_id != UNKNOWN_ID:
                f.evidence = trail(self.get(
                    '/os-attachment-events?volume_id=%s' % f.volume_id)[
                        'attachment_events'])

    # -- the audit trail ------------------------------------------------------
    def events(self, volume_id, attachment_ids):
        limit = 1000
        rows = self.get('/os-attachment-events?volume_id=%s&limit=%d' % (
            volume_id, limit))['attachment_events']
        if len(rows) < limit:
            return rows, False
        rows = []
        for aid in sorted(attachment_ids):
            rows += self.get('/os-attachment-events?attachment_id=%s'
                             % aid)['attachment_events']
        return sorted(rows, key=lambda e: e['id']), True

    def check_fences(self, burst):
        """No host gets a connection to a volume it is fenced off: no
        attachment of a fenced host on that volume was connected after
        its live mark was made."""
        found = []
        for mark in self.get('/os-host-fences')['host_fences']:
            rows = self.get('/os-attachment-events?volume_id=%s&limit=1000'
                            % mark['volume_id'])['attachment_events']
            for e in rows:
                if e['attached_host'] == mark['host'] and \
                        (e['reason'] or '').startswith('connected') and \
                        e['created_at'] > mark['fenced_at']:
                    found.append(Finding(
                        'fenced-host-connected', 'attachment %s of volume '
                        '%s was connected from %s at %s, which is fenced '
                        'off it since %s' % (
                            e['attachment_id'], mark['volume_id'],
                            mark['host'], e['created_at'],
                            mark['fenced_at']), burst,
                        volume_id=mark['volume_id'],
                        attachment_id=e['attachment_id']))
        return found

    def check_audit(self, snap, volume_ids, burst):
        found = self.check_fences(burst)
        live = collections.defaultdict(dict)
        for a in snap['attachments'].values():
            live[a['volume_id']][a['id']] = a
        for vid in sorted(volume_ids):
            if vid == UNKNOWN_ID:
                continue
            rows, partial = self.events(vid, live[vid])
            found += self.check_chains(vid, rows, live[vid], partial, burst)
            found += self.replay(vid, rows, snap, partial, burst)
        return found

    def check_chains(self, vid, rows, live, partial, burst):
        found = []
        chains = collections.defaultdict(list)
        for e in rows:
            chains[e['attachment_id']].append(e)

        def add(kind, aid, detail):
            found.append(Finding(kind, 'attachment %s of volume %s: %s' % (
                aid, vid, detail), burst, volume_id=vid, attachment_id=aid))
        for aid, chain in chains.items():
            if chain[0]['from_status'] is not None and not partial:
                add('audit-gap', aid, 'first event is %s -> %s, not its '
                    'creation' % (chain[0]['from_status'],
                                  chain[0]['to_status']))
            for before, after in zip(chain, chain[1:]):
                if after['from_status'] != before['to_status']:
                    add('audit-gap', aid, 'event %d goes %s -> %s, but the '
                        'one before ended in %s' % (
                            after['id'], after['from_status'],
                            after['to_status'], before['to_status']))
            last = chain[-1]['to_status']
            if aid in live and live[aid]['status'] != last:
                add('audit-last', aid, 'is %s, its last event says %s' % (
                    live[aid]['status'], last))
            if aid not in live and last != 'detached':
                add('audit-unfinished', aid, 'is gone, its last event says '
                    '%s' % last)
        for aid, a in live.items():
            if aid not in chains:
                add('audit-missing', aid, 'is %s and has no event' %
                    a['status'])
        return found

    def replay(self, vid, rows, snap, partial, burst):
        """Walk the trail: at no moment may a plain volume hold two
        instances or two connections from one host, nor a single-writer
        volume two writers.  Only since the volume last had no
        attachment, if it was ever retyped (a retype that changes sharing
        needs an idle volume)."""
        v = snap['volumes'].get(vid)
        history = self.fz.model.history.get(vid, {})
        multiattach = v['multiattach'] if v else history.get('multiattach')
        if multiattach is None or partial:
            return []
        single = v is not None and self.single_writer(v)
        if multiattach and not single:
            return []
        final_instance = {}
        for e in rows:
            if e['instance_uuid']:
                final_instance[e['attachment_id']] = e['instance_uuid']
        for a in snap['attachments'].values():
            if a['volume_id'] == vid and a['instance']:
                final_instance[a['id']] = a['instance']
        state, problems, connecting = {}, [], set()
        for e in rows:
            if e['to_status'] == 'attaching':
                connecting.add(e['attachment_id'])
            if e['to_status'] == 'detached':
                state.pop(e['attachment_id'], None)
            else:
                state[e['attachment_id']] = e
            if not state and history.get('retyped'):
                problems = []
            problems += self.moment(vid, e, state, final_instance,
                                    connecting, multiattach, single, burst)
        for f in problems[:1]:
            f.evidence = trail(rows)
        return problems[:1]

    def moment(self, vid, event, state, final_instance, connecting,
               multiattach, single, burst):
        found = []
        when = 'after event %d (%s %s -> %s)' % (
            event['id'], event['attachment_id'], event['from_status'],
            event['to_status'])
        if not multiattach and len(state) > 1:
            instances = {final_instance.get(a) for a in state}
            if None in instances or len(instances) > 1:
                found.append(Finding(
                    'plain-two-instances', 'volume %s (not multiattach) '
                    'held %s at once %s' % (vid, {
                        a: final_instance.get(a) for a in state}, when),
                    burst, volume_id=vid))
            # connected through a connect (os-attach alone connects
            # nothing)
            hosts = [e['attached_host'] for a, e in state.items()
                     if e['to_status'] in CONNECTED and e['attached_host']
                     and a in connecting]
            if len(hosts) != len(set(hosts)):
                found.append(Finding(
                    'duplicate-connection', 'volume %s (not multiattach) '
                    'was connected twice from one host (%s) %s' % (
                        vid, sorted(hosts), when), burst, volume_id=vid))
        if single:
            writers = [a for a, e in state.items()
                       if e['attach_mode'] == 'rw'
                       and e['to_status'] != 'error_attaching']
            if len(writers) > 1:
                found.append(Finding(
                    'two-writers', 'single-writer volume %s had writers %s '
                    '%s' % (vid, writers, when), burst, volume_id=vid))
        return found


def trail(rows, limit=40):
    """Audit events as short lines."""
    lines = ['  event %d %s %s -> %s mode=%s host=%s instance=%s by %s%s' % (
        e['id'], e['attachment_id'][:8], e['from_status'], e['to_status'],
        e['attach_mode'], e['attached_host'],
        (e['instance_uuid'] or '-')[:8], e['user_id'],
        ' (%s)' % e['reason'] if e['reason'] else '') for e in rows]
    if len(lines) > limit:
        lines = ['  ... %d earlier events' % (len(lines) - limit)] + \
            lines[-limit:]
    return '\n'.join(lines)
