"""The service layer behind ``POST /volumes/{id}/action``: Cinder's legacy
attach actions expressed on attachments, and the admin actions.

The legacy flow (os-reserve → os-initialize_connection → os-attach, then
os-begin_detaching → os-terminate_connection → os-detach) works on the
same attachment records as the attachments API, so the volume status is
derived the same way whichever API a client uses.
"""
import logging

from cinder_lite.common import capabilities
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import host_fences as db_host_fences
from cinder_lite.db import models
from cinder_lite.db import qos_specs as db_qos
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import quotas as db_quotas
from cinder_lite.db import services as db_services
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import attachment_api
from cinder_lite.volume import migrate_api
from cinder_lite.volume import rpcapi as volume_rpcapi
from cinder_lite.volume import rules
from cinder_lite.volume import types as volume_types

LOG = logging.getLogger(__name__)

# Cinder's refusal of a retype its conditions do not allow (a volume in a
# group among them)
RETYPE_IN_GROUP = ('Retype needs volume to be in available or in-use '
                   'state, not be part of an active migration or a '
                   'consistency group, requested type has to be different '
                   'that the one from the volume, and for in-use volumes '
                   'front-end qos specs cannot change.')


class VolumeActions:

    def __init__(self, conf, attachments, volumes):
        self.conf = conf
        self.attachments = attachments
        self.volumes = volumes
        self.volume_rpcapi = attachments.volume_rpcapi
        self.migrations = migrate_api.MigrationService(conf,
                                                       self.volume_rpcapi)

    def _volume(self, context, volume_id, rule):
        scope = None if context.is_admin else context.project_id
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id, scope)
        policy.authorize(context, rule, {'project_id': volume.project_id})
        return volume

    def _live(self, volume_id):
        with db_api.reader() as session:
            return db_attachments.live_for_volume(session, volume_id)

    # -- attach ---------------------------------------------------------------
    def reserve(self, context, volume_id):
        """A reservation for an attach to come; the volume shows
        ``attaching`` meanwhile, as Cinder's os-reserve."""
        volume = self._volume(context, volume_id, policy.ATTACH_ACTIONS)
        self.attachments.reserve(context, volume, None, None,
                                 operation=states.LEGACY_RESERVE)

    def unreserve(self, context, volume_id):
        """Drop the newest reservation that os-reserve made (no instance,
        never connected); nothing to do when there is none.  Chosen under
        the volume's lock: one os-initialize_connection connected since
        a read before it is no longer spare (dropping it would remove the
        export its host was handed)."""
        volume = self._volume(context, volume_id, policy.ATTACH_ACTIONS)

        # (run again from its start on a deadlock, as the transactions
        # below: they touch only the database)
        def _drop(session):
            with db_attachments.locked_volume(session, volume.id, load=False):
                spare = [a for a in db_attachments.live_for_volume(
                    session, volume.id)
                    if a.attach_status == states.ATTACH_RESERVED
                    and a.instance_uuid is None and not a.connector]
                if spare:
                    # never connected: nothing for the backend to undo
                    db_attachments.transition(session, spare[-1].id,
                                              'detach')
                    return spare[-1].id
            return None
        dropped = db_api.run_writer(_drop)
        if dropped:
            LOG.info('volume %s: os-unreserve dropped reservation %s '
                     '(never connected)', volume.id, dropped)

    def initialize_connection(self, context, volume_id, connector):
        """Connection info for ``connector``'s host: the existing
        connection of that host, a pending reservation connected now, or
        a new attachment.  (The REST schema checked the connector against
        ``rules.CONNECTOR``.)"""
        volume = self._volume(context, volume_id, policy.ATTACH_ACTIONS)
        with db_api.reader() as session:
            if db_host_fences.is_fenced(session, connector['host'],
                                        volume.id):
                raise exception.HostFenced(host=connector['host'],
                                           volume_id=volume.id)
        live = self._live(volume.id)
        for att in live:
            if att.attached_host == connector['host'] and \
                    rules.exported(att):
                return att.connection_info
        # only reservations os-reserve made: never one of an instance or
        # of a compute service
        pending = [a for a in live
                   if a.attach_status in (states.ATTACH_RESERVED,
                                          states.ERROR_ATTACHING)
                   and not a.connection_info and a.instance_uuid is None
                   and not a.service_owned]
        self.attachments.check_backend(volume)
        if pending:
            return self.attachments.connect(context, pending[0].id,
                                            connector).connection_info
        att_id = self.attachments.reserve(context, volume, None, None)
        try:
            return self.attachments.connect(context, att_id,
                                            connector).connection_info
        except Exception:
            # refused before the connect began (a connector the backend
            # cannot take, a duplicate connection): the reservation made
            # for this request goes with it
            with db_api.reader() as session:
                att = db_attachments.get(session, att_id)
            if att.attach_status == states.ATTACH_RESERVED:
                self.attachments.detach(context, att)
            raise

    def attach(self, context, volume_id, instance_uuid, host_name,
               mountpoint, mode):
        volume = self._volume(context, volume_id, policy.ATTACH_ACTIONS)
        rules.check_mode(mode)
        live = self._live(volume.id)
        candidates = [a for a in live
                      if a.attach_status in (states.ATTACH_RESERVED,
                                             states.ATTACH_ATTACHING)
                      and a.instance_uuid in (None, instance_uuid)]
        preferred = [a for a in candidates if host_name and
                     a.attached_host == host_name]
        # a connection os-initialize_connection made and reconcile
        # completed before this os-attach came
        completed = [a for a in live
                     if a.attach_status == states.ATTACHED
                     and a.instance_uuid is None and a.connection_info
                     and not a.service_owned]
        chosen = (preferred or candidates or completed or [None])[0]
        db_api.run_writer(self._attach, context, volume, chosen,
                          instance_uuid, host_name, mountpoint, mode)

    def _attach(self, session, context, volume, chosen, instance_uuid,
                host_name, mountpoint, mode):
        """os-attach's transaction (``attach``)."""
        if chosen is None:
            # reserved in this transaction: a refusal below leaves
            # nothing behind
            vol, att = self.attachments.reserve_in(
                session, context, volume, instance_uuid, mode)
        else:
            vol = db_attachments.lock_volume(session, volume.id)
            att = db_attachments.get(session, chosen.id)
        # what was chosen from the read before the lock may have
        # changed since: decide again on what is there now
        facts = attachment_api.volume_facts(session, vol)
        self._check_attach(session, facts, att, instance_uuid,
                           host_name)
        rules.attach_mode(facts, att, mode, attachment_api.writers(
            session, facts, exclude=att.id))
        db_attachments.transition(
            session, att.id, 'legacy_attach',
            values={'instance_uuid': instance_uuid,
                    'attached_host': att.attached_host or host_name,
                    'mountpoint': mountpoint, 'attach_mode': mode,
                    'attach_time': att.attach_time or models.utcnow()})
        db_attachments.sync_volume_status(session, vol.id)

    @staticmethod
    def _check_attach(session, facts, att, instance_uuid, host_name):
        """os-attach of ``att`` for ``instance_uuid`` on ``host_name``,
        under the volume's row lock: the attachment is not another
        instance's, and a plain volume keeps one instance and one
        connection per host."""
        rules.check_owner(att, facts.id, instance_uuid)
        if facts.multiattach:
            return
        # (a plain volume has a few live attachments at most)
        others = [a for a in db_attachments.live_for_volume(session,
                                                            facts.id)
                  if a.id != att.id]
        rules.check_one_instance(facts, instance_uuid, others)
        rules.check_one_connection(facts, att.attached_host or host_name,
                                   others)

    # -- detach ---------------------------------------------------------------
    def _one_attachment(self, volume, attachment_id, ambiguous=None):
        """The live attachment ``attachment_id`` names or, named none, the
        volume's only one; with several, ``ambiguous`` (an exception class
        taking volume_id and count) or 400."""
        live = self._live(volume.id)
        if attachment_id:
            for att in live:
                if att.id == attachment_id:
                    return att
            raise exception.AttachmentNotFound(attachment_id=attachment_id)
        if len(live) > 1 and ambiguous is not None:
            raise ambiguous(volume_id=volume.id, count=len(live))
        if len(live) > 1:
            raise exception.InvalidVolume(
                reason='Volume %s has %d attachments; name the one to '
                       'detach with attachment_id.' % (volume.id,
                                                       len(live)))
        return live[0] if live else None

    def begin_detaching(self, context, volume_id):
        """Decided under the volume's lock, on the attachments there now:
        a detach that ended while this request waited for the lock may
        have left one attachment where a read before it saw several."""
        volume = self._volume(context, volume_id, policy.ATTACH_ACTIONS)

        def _mark(session):
            vol = db_attachments.lock_volume(session, volume.id)
            attached = [a for a in db_attachments.live_for_volume(
                session, volume.id) if a.attach_status == states.ATTACHED]
            if vol.status != states.IN_USE or not attached:
                raise exception.InvalidVolume(
                    reason='Volume %s status must be in-use to begin '
                           'detaching, but it is %s.' % (volume.id,
                                                         vol.status))
            if len(attached) > 1:
                # Nova sends this (no attachment named) before it deletes
                # its own attachment of a multiattach volume, and waits for
                # the volume to leave ``detaching`` to know the detach is
                # done (so does Tempest).  Which attachment is going is
                # known only when the detach names it: no attachment is
                # marked (the other hosts' stay attached, and a takeover or
                # a detach of another is not blocked); the volume is, as
                # Cinder marks it, until the detach or os-roll_detaching
                # derives its status from the attachments again.
                db_volumes.transition(session, volume.id, 'begin_detaching')
                return len(attached)
            (att,) = attached
            # (409 while a takeover in flight re-exports it)
            rules.check_not_busy(att)
            db_attachments.transition(session, att.id, 'begin_detaching')
            db_attachments.sync_volume_status(session, volume.id)
            return 1
        # (run again from its start on a deadlock)
        attached = db_api.run_writer(_mark)
        if attached > 1:
            LOG.info('volume %s: os-begin_detaching with %d attachments: '
                     'volume detaching, the detach names its attachment',
                     volume.id, attached)

    def roll_detaching(self, context, volume_id):
        """Back to attached what os-begin_detaching marked, decided under
        the volume lock: an attachment a detach has started disconnecting
        meanwhile is left to it (rolling that one back would leave it
        attached with its export gone and its disconnect mark on)."""
        volume = self._volume(context, volume_id, policy.ATTACH_ACTIONS)

        def _roll(session):
            with db_attachments.locked_volume(session, volume.id, load=False):
                for att in db_attachments.live_for_volume(session, volume.id):
                    if att.attach_status == states.ATTACH_DETACHING and \
                            att.operation != states.DISCONNECTING:
                        db_attachments.transition(session, att.id,
                                                  'roll_detaching')
        db_api.run_writer(_roll)

    def detach(self, context, volume_id, attachment_id=None):
        volume = self._volume(context, volume_id, policy.ATTACH_ACTIONS)
        att = self._one_attachment(volume, attachment_id,
                                   ambiguous=exception.DetachNeedsAttachment)
        if att is not None:
            self.attachments.delete(context, att.id)

    def terminate_connection(self, context, volume_id, connector):
        """(The REST schema checked the connector against
        ``rules.CONNECTOR``.)"""
        volume = self._volume(context, volume_id, policy.ATTACH_ACTIONS)
        on_host = [a for a in self._live(volume.id)
                   if a.attached_host == connector['host']]
        if len(on_host) > 1:
            raise exception.InvalidVolume(
                reason='Volume %s has %d attachments on host %s; delete '
                       'them through the attachments API.' % (
                           volume.id, len(on_host), connector['host']))
        if on_host:
            self.attachments.delete(context, on_host[0].id)

    def force_detach(self, context, volume_id, attachment_id=None):
        """Admin: detach exactly one attachment, whoever made it."""
        volume = self._volume(context, volume_id, policy.FORCE_DETACH)
        att = self._one_attachment(volume, attachment_id)
        if att is None:
            raise exception.InvalidVolume(
                reason='Volume %s has no attachment.' % volume.id)
        self.attachments.delete(context, att.id, force=True)

        # as Cinder: a volume an operator reset to error is what its
        # remaining attachments make it once one is force-detached
        def _settle(session):
            vol = db_attachments.lock_volume(session, volume.id,
                                             db_attachments.ANY_LIVE)
            if vol.status != states.ERROR:
                return None
            derived = states.derive_volume_status(
                db_attachments.live_statuses(session, vol.id))
            db_volumes.transition(session, vol.id, 'force_detached',
                                  derived)
            return derived
        derived = db_api.run_writer(_settle)
        if derived is not None:
            LOG.info('volume %s: error -> %s after a forced detach',
                     volume.id, derived)

    # -- admin and type actions -----------------------------------------------
    def reset_status(self, context, volume_id, status=None,
                     attach_status=None, migration_status=None):
        volume = self._volume(context, volume_id, policy.RESET_STATUS)
        if migration_status is not None:
            # Cinder's values ('none' clears it); a migration under way
            # notices at its next step and gives up, its temporary volume
            # deleted
            wanted = migration_status.lower()
            allowed = sorted(s for s in states.MIGRATION_STATUSES if s) + [
                'none']
            if wanted not in allowed:
                raise exception.InvalidInput(
                    reason='migration_status must be one of %s' %
                    ', '.join(allowed))
        if attach_status is not None and attach_status not in (
                states.ATTACHED, states.DETACHED):
            raise exception.InvalidInput(
                reason="attach_status must be 'attached' or 'detached'")
        if status is not None and status not in \
                states.VOLUME_RESET_STATUSES:
            raise exception.InvalidInput(
                reason='status must be one of %s' % ', '.join(
                    sorted(states.VOLUME_RESET_STATUSES)))
        if attach_status == states.DETACHED:
            # Detach for real, through the backend: a reset never leaves
            # an export behind.
            for att in self._live(volume.id):
                self.attachments.delete(context, att.id, force=True)
        if migration_status is not None:
            db_api.run_writer(db_volumes.update, volume.id, {
                'migration_status': None if wanted == 'none' else wanted})
            LOG.warning('volume %s: migration_status %s -> %s by '
                        'os-reset_status', volume.id,
                        volume.migration_status, wanted)
        if status is None:
            return

        def _reset(session):
            change = 'reset_status'
            # read in this transaction: a volume read earlier may have had
            # no host yet
            current = db_volumes.get(session, volume.id)
            if not current.host or self.attachments.serving(session,
                                                            current):
                # the scheduler or the volume service finishes (or
                # reconciles) a create, delete or extend under way; a reset
                # now would leave a volume without storage, or storage
                # without a volume
                change = 'reset_status_served'
            live = db_attachments.live_for_volume(session, volume.id)
            if status == states.IN_USE and not any(
                    a.attach_status == states.ATTACHED for a in live):
                raise exception.InvalidVolume(
                    reason='Volume %s has no attachment; it cannot be '
                           'in-use.' % volume.id)
            try:
                db_volumes.transition(session, volume.id, change, status)
            except exception.InvalidTransition as e:
                raise exception.InvalidVolume(
                    reason='Volume %s is %s and its volume service is up: '
                           'it finishes that itself (or reconciles it if '
                           'it is stuck); reset its status when it has.'
                           % (volume.id, e.kwargs['actual']))
        db_api.run_writer(_reset)
        LOG.warning('volume %s: %s -> %s by os-reset_status', volume.id,
                    volume.status, status)

    def update_readonly_flag(self, context, volume_id, readonly):
        """Cinder's read-only flag: attachments made while it is set are
        read-only (the target refuses writes), and a read-write one is
        refused.  As in Cinder it changes only on an ``available``
        volume; here also only without any live attachment (a failed
        detach may still hold a read-write export), so no read-write
        attachment outlives the flag."""
        volume = self._volume(context, volume_id, policy.READONLY_FLAG)

        def _set_flag(session):
            try:
                db_attachments.lock_volume(session, volume.id,
                                           allowed=(states.AVAILABLE,),
                                           load=False)
            except exception.InvalidVolume:
                raise exception.InvalidVolume(
                    reason='Volume %s status must be available to update '
                           'readonly flag, but current status is: %s.' % (
                               volume.id, db_volumes.get(
                                   session, volume.id).status))
            live = db_attachments.live_for_volume(session, volume.id)
            if live:
                raise exception.InvalidVolume(
                    reason='Volume %s still has attachments (%s); the '
                           'readonly flag changes only without any.' % (
                               volume.id, ', '.join(
                                   '%s %s' % (a.id, a.attach_status)
                                   for a in live)))
            db_volumes.update(session, volume.id, {'readonly': readonly})
        db_api.run_writer(_set_flag)
        LOG.info('volume %s: readonly flag %s', volume.id, readonly)

    def force_delete(self, context, volume_id, rule=policy.FORCE_DELETE,
                     cascade=False):
        """os-force_delete (and ``DELETE ?force=true``, ``rule``
        ``volume:force_delete``): delete whatever the status, as Cinder,
        but not an attached volume (400, as Cinder; one os-begin_detaching
        marked counts: ``rules.in_use_by_host``).  Attachments that are
        not (reserved, connecting, failed) are detached first, through
        the backend where they hold an export, so none outlives the
        volume."""
        volume = self._volume(context, volume_id, rule)
        self.volumes.check_not_frozen(volume)
        live = self._live(volume.id)
        if not any(rules.in_use_by_host(a) for a in live):
            for att in live:
                LOG.warning('volume %s: force delete detaches attachment '
                            '%s (%s)', volume.id, att.id,
                            att.attach_status)
                # decided again under the volume's lock: one of them
                # completed since the read above refuses the delete
                # instead of losing its export
                try:
                    self.attachments.delete(context, att.id, force=True,
                                            unless_attached=True)
                except exception.AttachmentNotFound:
                    # detached by another request meanwhile: done
                    continue
        # refuses a volume attached meanwhile, or a frozen backend
        self.volumes.delete(context, volume.id, force=True,
                            cascade=cascade)

    def set_bootable(self, context, volume_id, bootable):
        """Mark a volume as one a server may boot from (Nova refuses a
        boot from a volume that is not).  Like Cinder, any status."""
        volume = self._volume(context, volume_id, policy.VOLUME_UPDATE)

        def _set_bootable(session):
            vol = db_attachments.lock_volume(session, volume.id)
            # what a reservation asks of a bootable shared volume, for one
            # already shared: becoming bootable must not get round the
            # rule
            if bootable and vol.multiattach and rules.bootable_sharing(
                    attachment_api.volume_facts(session, vol),
                    db_attachments.live_for_volume(session, vol.id)):
                policy.authorize(context, policy.MULTIATTACH_BOOTABLE,
                                 {'project_id': vol.project_id})
            db_volumes.update(session, volume.id, {'bootable': bootable})
        db_api.run_writer(_set_bootable)

    def retype(self, context, volume_id, new_type, migration_policy):
        volume = self._volume(context, volume_id, policy.RETYPE)
        if volume.group_id:
            raise exception.InvalidVolume(reason=RETYPE_IN_GROUP)
        scope = None if context.is_admin else context.project_id
        with db_api.reader() as session:
            target = db_types.get_by_name_or_id(session, new_type, scope)
            current = db_types.get(session, volume.volume_type_id)

        def not_already(type_id):
            if type_id == target['id']:
                raise exception.InvalidInput(
                    reason='Volume %s is already of type %s.' % (
                        volume.id, target['name']))
        not_already(current['id'])
        if volume.status not in db_attachments.ATTACHABLE or not volume.host:
            # Cinder's words; said before the backends are compared, as a
            # volume that never reached one has none to compare
            raise exception.InvalidVolume(
                reason='Unable to update type due to incorrect status: %s '
                       'on volume: %s.' % (volume.status, volume.id))
        multiattach = volume_types.is_multiattach(target)
        if multiattach:
            policy.authorize(context, policy.MULTIATTACH,
                             {'project_id': volume.project_id})
            if not self.conf.allow_multiattach:
                raise exception.InvalidVolumeType(
                    reason='multi-attach is turned off in this cloud')
        dest = self._check_backend_holds(volume, target, migration_policy)

        def changes_sharing_from(vol, vol_type):
            # The volume's own flag is the truth after create, not the
            # old type's specs (an operator may have edited them since).
            return rules.changes_sharing(
                vol, multiattach,
                vol_type['extra_specs'].get(rules.TYPE_MODE_KEY),
                target['extra_specs'].get(rules.TYPE_MODE_KEY))
        changes_sharing = changes_sharing_from(volume, current)
        refusal = exception.InvalidVolume(
            reason='retypes affecting multiattach are only allowed on '
                   'available volumes without attachments; volume %s is '
                   'not' % volume.id)

        # (run again from its start on a certification failure)
        def move(session):
            try:
                vol = db_attachments.lock_volume(
                    session, volume.id,
                    allowed=(states.AVAILABLE,) if changes_sharing
                    else db_attachments.ATTACHABLE)
            except exception.InvalidVolume:
                if changes_sharing:
                    raise refusal
                raise
            if vol.group_id:
                # as Cinder: a group's volumes keep the types it holds
                raise exception.InvalidVolume(reason=RETYPE_IN_GROUP)
            sharing = changes_sharing
            if vol.volume_type_id != current['id']:
                # retyped since the read above: decided again on the
                # type and the flag it has now
                not_already(vol.volume_type_id)
                sharing = changes_sharing_from(
                    vol, db_types.get(session, vol.volume_type_id))
            if sharing and (vol.status != states.AVAILABLE or
                            db_attachments.live_statuses(session,
                                                         vol.id)):
                raise refusal
            if vol.status != states.AVAILABLE and \
                    db_qos.changes_front_end(session, vol.volume_type_id,
                                             target['id']):
                # as Cinder: the hosts would keep applying the old
                # specs
                raise exception.InvalidVolume(
                    reason='for in-use volumes front-end qos specs '
                           'cannot change: the types of volume %s '
                           'have different QoS specs consumed by the '
                           'front end' % vol.id)
            db_types.lock_live(session, target['id'])
            # the per-type quota moves with it
            db_volumes.retype(session, vol.id, target['id'],
                              {'multiattach': multiattach},
                              quota.Checker(self.conf, session))
        if dest is not None:
            # the type's backend differs: the volume migrates there and
            # takes the type when it has moved (Cinder's retype with
            # migration)
            if changes_sharing and volume.status != states.AVAILABLE:
                raise refusal
            self.migrations.check_movable(volume, dest, dest.host)
            self.migrations.start(context, volume, dest,
                                  lock_event='retype_migrate',
                                  new_type_id=target['id'])
            return
        quota.ensuring_rows(lambda: db_api.run_writer(move))
        LOG.info('volume %s retyped %s -> %s', volume.id, current['name'],
                 target['name'])

    def _backend_caps(self, volume):
        """The capabilities the volume's backend reported last (the
        service, or the freshest report of the members of its
        cluster)."""
        with db_api.reader() as session:
            members = [m for m in db_services.backend_members(
                session, volume_rpcapi.backend_host(volume.host or ''),
                constants.VOLUME_BINARY) if m.capabilities]
            return db_services.freshest(members).capabilities \
                if members else {}

    def _check_capacity(self, volume, new_size):
        """What create refuses at once, extend refuses too: a size the
        volume's backend could never hold (its size, times the
        over-subscription ratio when it is thin)."""
        caps = self._backend_caps(volume)
        if not caps:
            return
        limit = capabilities.capacity_limit(caps)
        if new_size > limit:
            raise exception.InvalidInput(
                reason='New size %d GiB exceeds the capacity of the '
                       "volume's backend %s (%.0f GiB)." % (
                           new_size, volume_rpcapi.backend_host(
                               volume.host), limit))

    def _check_backend_holds(self, volume, target, migration_policy):
        """None when the volume's backend can hold ``target``; the
        backend it migrates to (``on-demand``) when another can."""
        caps = self._backend_caps(volume)
        if not capabilities.satisfies(caps, target['extra_specs']):
            if migration_policy == 'on-demand':
                with db_api.reader() as session:
                    dest = self.migrations.destination_for_type(
                        session, volume, target['extra_specs'])
                if dest is not None:
                    return dest
                reason = ('its backend %s cannot hold type %s and no '
                          'other backend that can is up' % (
                              volume.host, target['name']))
            else:
                reason = ('its backend %s cannot hold type %s and the '
                          'migration policy is never' % (volume.host,
                                                         target['name']))
            raise exception.InvalidVolume(
                reason='Volume %s cannot be retyped: %s.' % (
                    volume.id, reason))

    def extend(self, context, volume_id, new_size, version):
        volume = self._volume(context, volume_id, policy.EXTEND)
        if new_size <= volume.size:
            raise exception.InvalidInput(
                reason='New size for extend must be greater than current '
                       'size. (current: %d, extended: %d).' % (
                           volume.size, new_size))
        grow = new_size - volume.size
        with db_api.reader() as session:
            quota.Checker(self.conf, session).now(
                volume.project_id,
                {db_quotas.GIGABYTES: (grow, 0),
                 db_quotas.type_key(db_quotas.GIGABYTES,
                                    volume.volume_type_id): (grow, 0)},
                size=new_size)
        self._check_capacity(volume, new_size)
        if volume.status == states.IN_USE and version >= (3, 42):
            self.attachments.check_backend(volume)
            # the volume service charges the quota when it moves the size
            self.volume_rpcapi.extend_attached_volume(
                context, volume.host, volume.id, volume.size, new_size)
            return
        self.attachments.check_backend(volume)

        # (run again from its start on a certification failure: the
        # cast comes after the commit)
        def start(session):
            try:
                db_volumes.transition(
                    session, volume.id, 'extend',
                    values={'pending_size': new_size},
                    check=quota.Checker(self.conf, session,
                                        size=new_size))
            except exception.InvalidTransition as e:
                raise exception.InvalidVolume(
                    reason='Volume status must be available to extend, '
                           'but it is %s.' % e.kwargs['actual'])
        quota.ensuring_rows(lambda: db_api.run_writer(start))
        self.volume_rpcapi.extend_volume(context, volume.host, volume.id,
                                         new_size)
