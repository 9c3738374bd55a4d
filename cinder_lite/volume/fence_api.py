"""Host fences: cut a consumer host off volumes at the storage targets
(fabric fencing), and let it back.

Fencing host H off a volume, under the volume's row lock: the durable
mark (``db.host_fences``) is written and every attachment of H on the
volume gets an audit event; then, outside the lock, each volume service
exporting one of them removes its exports and waits for the drain
(``cut_host``).  The fence is reported done only once every drain is
confirmed; when a volume service cannot confirm it, the request fails
(the mark stays: H remains refused, and fencing again retries the cut).
A volume service recorded down is not asked at all: the request fails
at once for it (503) instead of waiting ``volume_rpc_timeout`` for an
answer that cannot come, after the live ones have cut their exports;
unless its backend keeps the exports in the storage (``cluster_exports``,
RBD): then a live member of its cluster cuts and restores them for it,
and an unfence records the exports it makes again as that member's.

From the mark on, nothing exports the volume to H: a connect is refused
(409 "host H is fenced ..."), also one already under way (its connection
is recorded under the same lock, after a check of the mark), and the
exports a volume service restores after a restart, a tgtd restart or on
the other member of a cluster are only those of unfenced hosts.

Unfencing ends the mark and asks the volume services to export H's
connected attachments again, with the connection info and mode they
had; it is idempotent.  The status of a fence is read from the targets
themselves (``host_reach``: running exports, ACL entries, sessions, and
the logins with the host's credentials that got in).
"""
import logging

from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import notify
from cinder_lite.common import policy
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import host_fences as db_host_fences
from cinder_lite.db import services as db_services
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import rpcapi as volume_rpcapi
from cinder_lite.volume import rules

LOG = logging.getLogger(__name__)


def _export_host(attachment, volume):
    return attachment.export_host or volume_rpcapi.backend_host(
        volume.host or '')


def _by_export_host(attachments, volume):
    groups = {}
    for a in attachments:
        if rules.may_be_exported(a):
            groups.setdefault(_export_host(a, volume), []).append(a.id)
    return groups


class FenceService:

    def __init__(self, conf, rpcapi=None):
        self.conf = conf
        self.volume_rpcapi = rpcapi or volume_rpcapi.VolumeAPI(conf)

    def _down(self, session, service_hosts):
        """Of the volume services ``service_hosts`` (members or clusters),
        those recorded down: {host: ServiceUnavailable}.  Asking one would
        only wait ``volume_rpc_timeout`` for no answer."""
        down = {}
        for service_host in service_hosts:
            try:
                db_services.live_members(session, service_host,
                                         constants.VOLUME_BINARY,
                                         self.conf.service_down_time)
            except exception.ServiceUnavailable as e:
                down[service_host] = e
        return down

    def _route(self, session, groups, volume):
        """``groups`` ({export host: attachment ids}) keyed by the
        volume service to ask instead: the export host, or a live member
        standing in for it (``db_services.exports_server``); and those
        nobody can act on: {export host: ServiceUnavailable}.  Also
        {stand-in: the export host it stands in for}."""
        backend = volume_rpcapi.backend_host(volume.host or '')
        routed, down, stands_for = {}, {}, {}
        for export_host, ids in groups.items():
            try:
                service_host = db_services.exports_server(
                    session, backend, constants.VOLUME_BINARY,
                    self.conf.service_down_time, export_host)
            except exception.ServiceUnavailable as e:
                down[export_host] = e
                continue
            if service_host != export_host:
                LOG.info('volume %s: %s is down; %s stands in for it '
                         '(attachments %s)', volume.id, export_host,
                         service_host, ', '.join(ids))
                stands_for.setdefault(service_host, []).append(export_host)
            routed.setdefault(service_host, []).extend(ids)
        return routed, down, stands_for

    @staticmethod
    def _raise_first(down):
        if down:
            raise down[min(down)]

    def _volume_ids(self, volume_id=None, project_id=None):
        with db_api.reader() as session:
            if volume_id is not None:
                return [db_volumes.get(session, volume_id).id]
            return list(db_volumes.ids_of_project(session, project_id))

    # -- fence ---------------------------------------------------------------
    def fence(self, context, host, volume_id=None, project_id=None,
              reason=None):
        """Fence ``host`` off one volume or every volume of a project;
        returns one result per volume, once every drain is confirmed."""
        policy.authorize(context, policy.HOST_FENCE)
        self.volume_rpcapi.require('1.6', 'a host fence')
        results = [self._fence_volume(context, host, vid, reason)
                   for vid in self._volume_ids(volume_id, project_id)]
        return results

    def _fence_volume(self, context, host, volume_id, reason):
        why = 'host %s fenced%s' % (host, ': %s' % reason if reason else '')

        def _mark(session):
            # the database only: run again whole on a certification
            # failure; the cuts are asked for once it committed
            vol = db_attachments.lock_volume(session, volume_id)
            mark, created = db_host_fences.fence(session, host, vol, reason)
            attachments = db_attachments.of_host(session, volume_id, host)
            for a in attachments:
                db_attachments.record_event(session, a, why)
            groups, down, _ = self._route(
                session, _by_export_host(attachments, vol), vol)
            return vol, created, attachments, groups, down, mark.created_at

        vol, created, attachments, groups, down, since = db_api.run_writer(
            _mark)
        LOG.info('volume %s: %s (%s); cutting attachments %s', volume_id,
                 why, 'new mark' if created else 'marked already',
                 ', '.join(a.id for a in attachments) or 'none')
        notify.info(context, self.conf.host, 'host_fence.fence.start',
                    dict(notify.volume_payload(vol), host=host,
                         reason=reason))
        drained = {}
        for service_host, ids in sorted(groups.items()):
            drained.update(self.volume_rpcapi.cut_host(
                context, service_host, volume_id, ids))
        # the live services cut theirs; nobody can cut these
        self._raise_first(down)
        times = [d for d in drained.values() if d is not None]
        result = {'volume_id': volume_id, 'host': host, 'fenced': True,
                  'fenced_at': _at(since),
                  'attachments': sorted(drained),
                  'drained_ms': round(max(times) * 1000, 3)
                  if times else None}
        notify.info(context, self.conf.host, 'host_fence.fence.end',
                    dict(notify.volume_payload(vol), host=host,
                         reason=reason, attachments=result['attachments']))
        return result

    # -- unfence -------------------------------------------------------------
    def unfence(self, context, host, volume_id=None, project_id=None,
                reason=None):
        """Let ``host`` back on one volume or every volume of a project:
        its connected attachments are exported again as they were."""
        policy.authorize(context, policy.HOST_FENCE)
        self.volume_rpcapi.require('1.6', 'a host fence')
        return [self._unfence_volume(context, host, vid, reason)
                for vid in self._volume_ids(volume_id, project_id)]

    def _unfence_volume(self, context, host, volume_id, reason):
        why = 'host %s unfenced%s' % (host,
                                      ': %s' % reason if reason else '')

        def _unmark(session):
            # the database only (see _fence_volume): the exports are
            # made again once it committed
            vol = db_attachments.lock_volume(session, volume_id)
            ended = db_host_fences.unfence(session, host, volume_id, reason)
            attachments = [a for a in db_attachments.of_host(
                session, volume_id, host) if rules.exported(a)]
            if ended:
                for a in attachments:
                    db_attachments.record_event(session, a, why)
            groups, down, stands_for = self._route(
                session, _by_export_host(attachments, vol), vol)
            for service_host, dead in stands_for.items():
                # the stand-in makes the exports again, so they are its
                # own from now on: it restores them at its start and
                # a detach goes to it
                for export_host in dead:
                    db_attachments.move_exports(
                        session, groups[service_host], export_host,
                        service_host)
            return vol, ended, attachments, groups, down

        vol, ended, attachments, groups, down = db_api.run_writer(_unmark)
        if ended:
            LOG.info('volume %s: %s; exporting attachments %s again',
                     volume_id, why,
                     ', '.join(a.id for a in attachments) or 'none')
        restored = []
        for service_host, ids in sorted(groups.items()):
            restored += self.volume_rpcapi.restore_host(
                context, service_host, volume_id, ids)
        self._raise_first(down)
        if ended:
            notify.info(context, self.conf.host, 'host_fence.unfence',
                        dict(notify.volume_payload(vol), host=host,
                             reason=reason, attachments=sorted(restored)))
        return {'volume_id': volume_id, 'host': host, 'fenced': False,
                'attachments': sorted(restored)}

    # -- status --------------------------------------------------------------
    def status(self, context, host, volume_id=None, project_id=None):
        """Per volume: the mark in the database and what the targets say
        of ``host`` (``reachable``: True / False, None when a target
        cannot tell or its service does not answer)."""
        policy.authorize(context, policy.HOST_FENCE)
        self.volume_rpcapi.require('1.6', 'a host fence')
        out = []
        for vid in self._volume_ids(volume_id, project_id):
            with db_api.reader() as session:
                vol = db_volumes.get(session, vid)
                fenced = db_host_fences.is_fenced(session, host, vid)
                attachments = db_attachments.of_host(session, vid, host)
                ids = [a.id for a in attachments]
                initiators = sorted({(a.connector or {}).get('initiator')
                                     for a in attachments
                                     if (a.connector or {}).get(
                                         'initiator')})
                services = sorted({_export_host(a, vol)
                                   for a in attachments} or
                                  ({volume_rpcapi.backend_host(vol.host)}
                                   if vol.host else set()))
                down = self._down(session, services)
            entry = {'volume_id': vid, 'host': host, 'fenced': fenced,
                     'attachments': ids, 'exports': [], 'acl': [],
                     'sessions': 0, 'logins': [],
                     'reachable': False if services else None,
                     'errors': []}
            for service_host in services:
                if service_host in down:
                    entry['errors'].append('%s: %s' % (service_host,
                                                       down[service_host]))
                    entry['reachable'] = None
                    continue
                try:
                    seen = self.volume_rpcapi.host_reach(
                        context, service_host, vid, ids, initiators)
                except Exception as e:
                    entry['errors'].append('%s: %s' % (service_host, e))
                    entry['reachable'] = None
                    continue
                entry['exports'] += seen['exports']
                entry['acl'] += seen['acl']
                entry['sessions'] += seen['sessions']
                # (the logins a target tried and that got in)
                entry['logins'] += seen.get('logins', [])
                if seen['reachable'] is None:
                    if entry['reachable'] is False:
                        entry['reachable'] = None
                elif seen['reachable']:
                    entry['reachable'] = True
            out.append(entry)
        return out

    def list(self, context, host=None):
        """Live marks (of ``host``)."""
        policy.authorize(context, policy.HOST_FENCE)
        with db_api.reader() as session:
            return [_mark_view(m) for m in db_host_fences.live(session,
                                                               host)]

    def history(self, context, host, volume_id):
        policy.authorize(context, policy.HOST_FENCE)
        with db_api.reader() as session:
            db_volumes.get(session, volume_id)
            return [_mark_view(m) for m in db_host_fences.history(
                session, host, volume_id)]


def _mark_view(mark):
    return {'host': mark.host, 'volume_id': mark.volume_id,
            'project_id': mark.project_id, 'reason': mark.reason,
            'fenced_by': mark.fenced_by, 'request_id': mark.request_id,
            'fenced_at': _at(mark.created_at),
            'unfenced_by': mark.unfenced_by,
            'unfence_reason': mark.unfence_reason,
            'unfenced_at': _at(mark.deleted_at)}


def _at(when):
    return when.isoformat(timespec='microseconds') if when else None


def check_not_fenced(session, host, volume_id):
    """HostFenced (409) when consumer ``host`` is fenced off the
    volume."""
    if db_host_fences.is_fenced(session, host, volume_id):
        raise exception.HostFenced(host=host, volume_id=volume_id)
