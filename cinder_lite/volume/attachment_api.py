"""The service layer for attachments, shared by the REST handlers, the
legacy volume actions and the RPC endpoint compute nodes call.

What a volume's attachments may be (who shares it, in which mode, who
writes) is ``rules``'s to decide; this module reads the facts the rules
ask for and acts on the answer.  Every decision is made inside the
transaction that holds the volume's row lock
(``db.attachments.lock_volume``), so it is race-free on every database.
A multiattach volume takes any number of reservations, whatever the state
of the others: nothing waits for another attach to finish.
"""
import datetime
import logging
import random
import uuid

from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import notify
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import host_fences as db_host_fences
from cinder_lite.db import models
from cinder_lite.db import services as db_services
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import rpcapi as volume_rpcapi
from cinder_lite.volume import rules

LOG = logging.getLogger(__name__)

# ``serving``'s default: the service asked about is read by the call
_UNREAD = object()

# (kept for the tests and tools that mark attachments by hand)


def volume_facts(session, volume):
    """``volume`` as the rules see it.  Its type's ``mode`` spec, which
    matters on a multiattach volume only, is read once per transaction
    (asked up to three times per request)."""
    type_mode = None
    if volume.multiattach:
        known = _type_modes(session)
        if volume.volume_type_id not in known:
            known[volume.volume_type_id] = db_types.spec(
                session, volume.volume_type_id, rules.TYPE_MODE_KEY)
        type_mode = known[volume.volume_type_id]
    return rules.Volume(id=volume.id, multiattach=bool(volume.multiattach),
                        type_mode=type_mode, readonly=bool(volume.readonly),
                        bootable=bool(volume.bootable))


def _type_modes(session):
    """Type id -> its ``mode`` spec, as this transaction read them."""
    return session.info.setdefault('cl_type_mode', {})


def writers(session, facts, exclude=None):
    """The writer of a single-writer volume other than attachment
    ``exclude``, as the attachments the mode rules decide from: one
    indexed probe, and none on other volumes, where no rule asks."""
    if not facts.single_writer:
        return []
    writer = db_attachments.live_writer(session, facts.id, exclude=exclude)
    return [rules.Attachment(id=writer, attach_mode=rules.RW)] \
        if writer else []


class AttachmentService:

    def __init__(self, conf, rpcapi=None):
        self.conf = conf
        self.volume_rpcapi = rpcapi or volume_rpcapi.VolumeAPI(conf)

    # -- helpers -------------------------------------------------------------
    def _scope(self, context):
        return None if context.is_admin else context.project_id

    def _volume(self, context, volume_id):
        with db_api.reader() as session:
            return db_volumes.get(session, volume_id, self._scope(context))

    def _authorized(self, session, context, attachment_id, action):
        """The attachment, read in ``session`` in the caller's scope, once
        ``action`` is allowed on it."""
        attachment = db_attachments.get(session, attachment_id,
                                        self._scope(context))
        policy.authorize(context, action,
                         {'project_id': attachment.project_id})
        return attachment

    def _locked_attachment(self, session, context, attachment_id, action,
                           becomes=None, to_detach=False):
        """(The attachment, its volume, the service holding its export
        when ``to_detach``, else None) read under the volume's row lock,
        in one statement, once ``action`` is allowed on it (``becomes``:
        as ``db_attachments.lock_for_attachment``'s).  The lock is
        taken through the attachment by the read (``attachment_lock``:
        one round trip on MariaDB, two statements elsewhere); where that
        finds nothing to lock, the attachment is read first and its
        volume locked the usual way, to refuse as those do: unknown
        (404), not allowed (403), a volume in a status that takes no
        change (400)."""
        try:
            attachment, volume, service = self._read_locked(
                session, context, attachment_id, to_detach,
                db_attachments.attachment_lock(attachment_id,
                                               becomes=becomes))
        except db_attachments.NotLocked:
            attachment = self._authorized(session, context, attachment_id,
                                          action)
            db_attachments.lock_volume(session, attachment.volume_id,
                                       load=False, becomes=becomes)
            attachment, volume, service = self._read_locked(
                session, context, attachment_id, to_detach)
        policy.authorize(context, action,
                         {'project_id': attachment.project_id})
        return attachment, volume, service

    def _read_locked(self, session, context, attachment_id, to_detach,
                     lock=None):
        """What ``_locked_attachment`` reads under the lock, which it
        takes first (``lock``), else the transaction holds."""
        if to_detach:
            return db_attachments.get_to_detach(
                session, attachment_id, self._scope(context),
                constants.VOLUME_BINARY, lock=lock)
        return db_attachments.get_with_volume(
            session, attachment_id, self._scope(context), lock=lock) + (
            None,)

    def get(self, context, attachment_id):
        policy.authorize(context, policy.ATTACHMENT_GET)
        with db_api.reader() as session:
            return db_attachments.get(session, attachment_id,
                                      self._scope(context))

    def shared_with(self, attachment):
        if getattr(attachment, 'sharing', None) is not None:
            return attachment.sharing      # read with the attachment
        with db_api.reader() as session:
            return db_attachments.sharing_connection(session, attachment)

    def shared_for(self, attachments):
        """``shared_with`` for a page of attachments, in one query."""
        with db_api.reader() as session:
            return db_attachments.sharing_connections(session, attachments)

    def list(self, context, filters, sort_keys, sort_dirs, limit, marker,
             all_tenants=False):
        project = policy.list_scope(context, policy.ATTACHMENT_GET_ALL,
                                    policy.ATTACHMENT_ALL_TENANTS, filters,
                                    all_tenants)
        with db_api.reader() as session:
            return db_attachments.list_attachments(
                session, project, filters, sort_keys, sort_dirs, limit,
                marker)

    def serving(self, session, volume, service_host=None, service=_UNREAD):
        """Whether ``volume``'s backend (or, given ``service_host``, that
        member of it) has a live member, read in ``session`` (``service``:
        ``service_host``'s service, as this transaction read it already,
        None when there is none)."""
        if service is not _UNREAD and service_host is not None and \
                volume.host:
            return db_services.serves(
                service, volume_rpcapi.backend_host(volume.host),
                self.conf.service_down_time)
        try:
            self._live_members(session, volume, service_host)
            return True
        except exception.Invalid:
            return False

    def check_backend(self, volume, service_host=None):
        """Fail fast when the volume's backend is down: no member of its
        cluster (or its one service) is up, or, given ``service_host``,
        that member is not."""
        with db_api.reader() as session:
            self._live_members(session, volume, service_host)

    def _live_members(self, session, volume, service_host=None,
                      members=None):
        """The services of ``volume``'s backend that are up (only
        ``service_host`` when given); ServiceUnavailable when none is.
        ``members``: all the backend's services, as this transaction read
        them already (``volume_to_attach``)."""
        if not volume.host:
            raise exception.InvalidVolume(
                reason='Volume %s has no backend.' % volume.id)
        return db_services.live_members(
            session, volume_rpcapi.backend_host(volume.host),
            constants.VOLUME_BINARY, self.conf.service_down_time,
            member=service_host, members=members)

    def _stand_in(self, session, volume, export_host):
        """``db_services.stand_in`` for a detach of what ``export_host``
        (down) exported of ``volume``."""
        if not volume.host:
            return None
        return db_services.stand_in(
            session, volume_rpcapi.backend_host(volume.host),
            constants.VOLUME_BINARY, self.conf.service_down_time,
            export_host)

    def _exports_server(self, session, volume, attachment):
        """The member to ask to remove ``attachment``'s export:
        ``db_services.exports_server``; ServiceUnavailable when none
        can."""
        backend = volume_rpcapi.backend_host(volume.host or '')
        return db_services.exports_server(
            session, backend, constants.VOLUME_BINARY,
            self.conf.service_down_time, attachment.export_host or backend)

    def _export_host(self, session, vol, connector, members=None):
        """The volume service that is to export ``vol`` to the connector's
        host: the one service of the backend, or in a cluster the member
        already exporting it to that host (one connection per host), else
        the enabled member holding the fewest exports (``members``: as
        ``_live_members``')."""
        live = self._live_members(session, vol, members=members)
        rules.check_initiator(connector, {
            (m.capabilities or {}).get('storage_protocol') for m in live})
        consumer_host = connector['host']
        if vol.persistent_reservations:
            holder = db_attachments.export_holder(session, vol.id)
            if holder is not None:
                return self._reservation_holder(live, holder)
        if len(live) == 1:
            return live[0].host
        hosts = {m.host for m in live}
        for other in db_attachments.live_on_host(session, vol.id,
                                                 consumer_host):
            # also a connect still under way: its export is being made
            if rules.holds_connection(other) and \
                    other.export_host in hosts:
                return other.export_host
        load = db_attachments.export_load(session, hosts)
        candidates = [m.host for m in live if not m.disabled] or sorted(hosts)
        return min(candidates, key=lambda h: (load.get(h, 0),
                                              random.random()))

    @staticmethod
    def _reservation_holder(live, holder):
        """A volume whose hosts share persistent reservations is exported
        by one member at a time: the reservation state lives in that
        member's target, so a writer exported by another member would not
        be fenced.  While the member is down its target keeps serving the
        hosts already attached; a new attachment waits for it."""
        if holder in {m.host for m in live}:
            return holder
        raise exception.ServiceUnavailable(
            host=holder,
            reason="it exports this volume's other attachments and keeps "
                   "their persistent reservations; attach again once it "
                   "is up")

    # -- reserve -------------------------------------------------------------
    def create(self, context, volume_id, instance_uuid=None, connector=None,
               mode=None, service_owned=False):
        """Reserve an attachment, and connect it when a connector is
        given.  Returns the attachment as it is after the call.

        With a connector, the reservation and the start of the connect are
        one transaction: a refusal (a mode the volume cannot give, a
        duplicate connection, a backend gone) leaves nothing behind."""
        if connector is None:
            volume = self._volume(context, volume_id)
            policy.authorize(context, policy.ATTACHMENT_CREATE,
                             {'project_id': volume.project_id})
            return self.get(context, self.reserve(
                context, volume, instance_uuid, mode, service_owned))
        # (the connector was checked against rules.CONNECTOR by the REST
        # schema or the RPC endpoint; _start_connect fails fast, inside
        # the transaction, when the backend is down)
        # the connector's mode counts as the top-level one (a compute
        # service passes the attach mode inside the connector)
        mode = mode or connector.get('mode')
        rules.check_mode(mode)
        asked = mode

        # (run again from its start on a deadlock: nothing in it leaves
        # the database; the connect's RPC comes after the commit)
        def _reserve_connecting(session):
            vol, others, fenced, type_qos, members = self._lock_to_attach(
                session, context, volume_id, connector['host'])
            given = dict(connector)
            # (written once the connect is decided: one INSERT of the
            # attachment as the connect leaves it)
            attachment = self._record_reservation(
                session, context, vol, instance_uuid, asked, service_owned,
                states.ATTACH_RESERVED, write=False)
            host, mode = self._start_connect(session, vol, attachment,
                                             given, written=False,
                                             fenced=fenced, members=members)
            status = db_attachments.settle_status(
                session, vol.id, others, attachment.attach_status)
            return vol, type_qos, given, attachment, host, mode, status

        vol, type_qos, connector, attachment, host, mode, status = \
            db_api.run_writer(_reserve_connecting)
        LOG.info('attachment %s of volume %s: reserved and connecting '
                 '(instance %s, host %s, mode %s)', attachment.id, vol.id,
                 instance_uuid, connector['host'], mode)
        try:
            return self._connect_on_backend(
                context, vol, attachment, host, connector, mode,
                carried=(dict(db_volumes.summary(vol), status=status),
                         type_qos))
        except (exception.ConnectFailed, exception.ConnectRefused) as e:
            # the volume service failed or refused the connect and
            # recorded it: the caller, who never saw the attachment's id,
            # must be told what is left
            raise (exception.ConnectRefused
                   if isinstance(e, exception.ConnectRefused)
                   else exception.ConnectFailed)(
                message='%s; attachment %s %s: delete it (DELETE '
                        '/attachments/%s) before attaching again' % (
                            e.message, attachment.id,
                            self._left(attachment.id), attachment.id)
            ) from None

    def reserve(self, context, volume, instance_uuid, mode,
                service_owned=False, status=states.ATTACH_RESERVED,
                operation=None):
        """``operation``: under way on the new attachment (the legacy
        os-reserve marks its reservations ``states.LEGACY_RESERVE``)."""
        def _reserve(session):
            vol, attachment = self._reserve(session, context, volume,
                                            instance_uuid, mode,
                                            service_owned, status,
                                            operation)
            return vol, attachment, db_attachments.sync_volume_status(
                session, vol.id)

        vol, attachment, volume_status = db_api.run_writer(_reserve)
        LOG.info('attachment %s of volume %s: reserved (instance %s, mode '
                 '%s); volume %s', attachment.id, vol.id, instance_uuid,
                 attachment.attach_mode or 'undecided', volume_status)
        return attachment.id

    def reserve_in(self, session, context, volume, instance_uuid, mode):
        """``reserve`` inside the caller's transaction; returns (locked
        volume, attachment)."""
        return self._reserve(session, context, volume, instance_uuid, mode,
                             False, states.ATTACH_RESERVED)

    def _reserve(self, session, context, volume, instance_uuid, mode,
                 service_owned, status, operation=None):
        """Record a new attachment of ``volume`` under its row lock;
        returns (locked volume, attachment)."""
        rules.check_mode(mode)
        vol = db_attachments.lock_volume(session, volume.id,
                                         db_attachments.ATTACHABLE)
        return vol, self._record_reservation(
            session, context, vol, instance_uuid, mode, service_owned,
            status, operation)

    def _lock_to_attach(self, session, context, volume_id, host):
        """The volume under its row lock once the caller may attach it to
        consumer ``host``: the lock first, in the caller's scope, and the
        one read after it, which also reads what the attach asks of the
        volume (its type's mode spec, for ``volume_facts``).  Returns (the
        volume, ``db_attachments.Others`` of all its live attachments,
        whether ``host`` is fenced off it, the (id, consumer) of its
        type's QoS specs or None, for the volume service, the services of
        its backend, for ``_export_host``).  A refusal
        reads the volume again to refuse as a read before the lock would:
        unknown (404), then not allowed (403), then not attachable
        (400).  The lock writes the status a connecting attachment makes
        the volume (``db_attachments.CONNECTING``): the caller adds one or
        fails."""
        scope = self._scope(context)
        try:
            vol, others, type_mode, fenced, type_qos, members = \
                db_attachments.volume_to_attach(
                    session, volume_id, host, rules.TYPE_MODE_KEY,
                    constants.VOLUME_BINARY, lock=db_attachments.volume_lock(
                        volume_id, db_attachments.ATTACHABLE,
                        project_id=scope, becomes=db_attachments.CONNECTING))
        except exception.InvalidVolume:
            volume = db_volumes.get(session, volume_id, scope)
            policy.authorize(context, policy.ATTACHMENT_CREATE,
                             {'project_id': volume.project_id})
            raise
        policy.authorize(context, policy.ATTACHMENT_CREATE,
                         {'project_id': vol.project_id})
        _type_modes(session)[vol.volume_type_id] = type_mode
        return vol, others, fenced, type_qos, members

    def _record_reservation(self, session, context, vol, instance_uuid,
                            mode, service_owned, status, operation=None,
                            write=True):
        """The new attachment of ``vol``, which the caller locked (and
        checked ``mode`` for).  ``write=False``: not written yet, for
        ``_start_connect`` to write as the connect leaves it."""
        facts = volume_facts(session, vol)
        self._check_sharing(context, session, facts, vol.project_id,
                            instance_uuid)
        mode = rules.reserve_mode(facts, mode, writers(session, facts))
        values = {
            'id': str(uuid.uuid4()),
            'volume_id': vol.id,
            'project_id': vol.project_id,
            'instance_uuid': instance_uuid,
            'attach_status': status,
            'attach_mode': mode,
            'service_owned': bool(service_owned),
            'operation': operation,
            'deleted': False,
            'created_at': models.utcnow(),
        }
        return db_attachments.create(session, values) if write \
            else db_attachments.new(values)

    def _check_sharing(self, context, session, facts, project_id,
                       instance_uuid):
        allowed = self.conf.allow_multiattach
        if not rules.sharing_matters(facts, allowed):
            return
        other = db_attachments.other_instance(session, facts.id,
                                              instance_uuid)
        if rules.check_sharing(facts, instance_uuid,
                               [other] if other else [], allowed):
            policy.authorize(context, policy.MULTIATTACH_BOOTABLE,
                             {'project_id': project_id})

    # -- connect -------------------------------------------------------------
    def update(self, context, attachment_id, connector):
        """Connect a reserved attachment (PUT /attachments/{id}); the
        connector was checked against ``rules.CONNECTOR``."""
        attachment = self.get(context, attachment_id)
        policy.authorize(context, policy.ATTACHMENT_UPDATE,
                         {'project_id': attachment.project_id})
        return self.connect(context, attachment_id, connector)

    def connect(self, context, attachment_id, connector):
        connector = dict(connector)

        def _start(session):
            attachment = db_attachments.get(session, attachment_id)
            with db_attachments.locked_volume(
                    session, attachment.volume_id,
                    db_attachments.ATTACHABLE) as held:
                vol = held.volume
                attachment = db_attachments.get(session, attachment_id)
                if attachment.attach_status in \
                        db_attachments.CONNECTED_STATUSES and \
                        not rules.completed_unconnected(attachment):
                    raise exception.InvalidInput(
                        reason='Attachment %s is already connected (%s); '
                               'delete it and create a new one to connect '
                               'again.' % (attachment_id,
                                           attachment.attach_status))
                # (_start_connect writes into a copy: a retry starts
                # from the connector as given)
                given = dict(connector)
                host, mode = self._start_connect(session, vol, attachment,
                                                 given)
            return vol, attachment, host, given, mode

        vol, attachment, host, given, mode = db_api.run_writer(_start)
        return self._connect_on_backend(context, vol, attachment, host,
                                        given, mode)

    def _start_connect(self, session, vol, attachment, connector,
                       written=True, fenced=None, members=None):
        """Decide the mode and the exporting service of a connect and mark
        the attachment ``attaching`` (inside the transaction holding the
        volume's row lock); returns (export host, mode) and sets the
        connector's mode.  ``written=False``: the attachment was reserved
        in this transaction and is written now, as the connect leaves
        it.  ``fenced``: whether the connector's host is fenced off the
        volume, and ``members``: the services of its backend, when this
        transaction read them under the lock."""
        if fenced is None:
            fenced = db_host_fences.is_fenced(session, connector['host'],
                                              vol.id)
        if fenced:
            raise exception.HostFenced(host=connector['host'],
                                       volume_id=vol.id)
        facts = volume_facts(session, vol)
        mode = rules.connect_mode(
            facts, attachment, connector.get('mode'),
            writers(session, facts, exclude=attachment.id))
        if not facts.multiattach:
            # (a plain volume has a few live attachments at most)
            rules.check_one_connection(
                facts, connector['host'],
                [a for a in db_attachments.live_on_host(
                    session, vol.id, connector['host'])
                 if a.id != attachment.id])
        connector['mode'] = mode
        host = self._export_host(session, vol, connector, members)
        values = {'attach_mode': mode, 'connector': connector,
                  'attached_host': connector['host'],
                  'mountpoint': connector.get('mountpoint'),
                  'export_host': host, 'status_reason': None,
                  'operation': None}
        if not written:
            db_attachments.create_moved(session, attachment, 'connect',
                                        values)
            return host, mode
        # one completed before it was connected moves on from attached
        db_attachments.transition(
            session, attachment.id,
            'connect_completed' if rules.completed_unconnected(attachment)
            else 'connect',
            values=values, current=attachment)
        return host, mode

    def _connect_on_backend(self, context, vol, attachment, host, connector,
                            mode, carried=None):
        """The RPC half of a connect started by ``_start_connect``.
        ``carried``: (the volume's ``summary``, the (id, consumer) of its
        type's QoS specs) as the transaction that started it read them,
        for the volume service to start from."""
        self._notify(context, 'volume.attach.start', vol, attachment,
                     attached_host=connector['host'], attach_mode=mode,
                     attach_status=states.ATTACH_ATTACHING)
        try:
            answer = self.volume_rpcapi.connect(
                context, host, attachment.id, connector, mode,
                *(carried or ()))
        except (exception.ConnectFailed, exception.ConnectRefused,
                exception.NotFound):
            raise
        except Exception as e:
            # The backend did not answer: record why, leave nothing
            # pretending to be connected.
            try:
                recorded = db_api.run_writer(db_attachments.record_failure,
                                             attachment.id, 'connect_lost',
                                             str(e))
                left = ('is left error_attaching' if recorded is not None
                        else self._left(attachment.id))
            except db_api.UNAVAILABLE as db_error:
                # the database went away under the connect (often why it
                # failed): the attachment exists, attaching, and
                # reconciliation settles it; the caller, who never saw
                # its id, must be told it
                LOG.warning('attachment %s: connect failed (%s) and the '
                            'failure could not be recorded: %s',
                            attachment.id, e, db_error)
                raise exception.ServiceUnavailable(
                    host=host, reason='the database is unavailable; '
                    'attachment %s is left attaching (its connect %s): '
                    'delete it (DELETE /attachments/%s) before attaching '
                    'again, once the database is back' % (
                        attachment.id, 'was not answered' if isinstance(
                            e, exception.ServiceUnavailable) and
                        not isinstance(e, exception.DatabaseUnavailable)
                        else 'failed', attachment.id)) from None
            if isinstance(e, exception.ServiceUnavailable):
                # the caller holds an attachment it never saw: name it,
                # as it is (reconciliation may have settled it while the
                # answer was awaited)
                raise exception.ServiceUnavailable(
                    host=e.kwargs.get('host'),
                    reason='%s; attachment %s %s: delete it (DELETE '
                           '/attachments/%s) before attaching again' % (
                               e.kwargs.get('reason'), attachment.id, left,
                               attachment.id)) from None
            raise
        if answer is not None:
            # the attachment as the volume service recorded it: as this
            # request wrote it, with the connection
            recorded = dict(answer['recorded'])
            recorded['attach_time'] = datetime.datetime.fromisoformat(
                recorded['attach_time'])
            for key, value in recorded.items():
                setattr(attachment, key, value)
            attachment.sharing = answer['sharing']
            return attachment
        # (a volume service before 1.8: the caller shows it with its
        # sharing, one read for both)
        with db_api.reader() as session:
            return db_attachments.get_with_sharing(session, attachment.id)

    @staticmethod
    def _left(attachment_id):
        """How a failed connect left attachment ``attachment_id``, in the
        words the 503 gives the caller."""
        try:
            with db_api.reader() as session:
                status = db_attachments.get(session,
                                            attachment_id).attach_status
        except exception.NotFound:
            return 'is gone'
        except db_api.UNAVAILABLE:
            return 'is left (the database could not be read to say how)'
        if status == states.ERROR_ATTACHING:
            return 'is left error_attaching'
        return 'was settled meanwhile: %s' % status

    def _notify(self, context, event_type, vol, attachment, **changed):
        """``event_type`` about ``attachment`` of ``vol`` as it is after
        the change (``changed`` overrides the row's older values).  With
        notifications off nothing is built."""
        if not notify.enabled(self.conf.host):
            return
        fields = {k: getattr(attachment, k) for k in (
            'id', 'instance_uuid', 'attached_host', 'attach_mode',
            'attach_status')}
        fields.update(changed)
        notify.info(context, self.conf.host, event_type,
                    notify.attachment_payload(vol, fields))

    # -- complete ------------------------------------------------------------
    def complete(self, context, attachment_id):
        """One transaction: read, authorize, decide; returns the
        attachment as written."""
        policy.authorize(context, policy.ATTACHMENT_GET)

        # (run again from its start on a deadlock; the notification comes
        # after the commit)
        def _complete(session):
            # (the lock writes the volume in-use: complete makes the
            # attachment attached or fails, and a failure rolls it back;
            # sync_after_attached below then has nothing left to write)
            current, vol, _ = self._locked_attachment(
                session, context, attachment_id, policy.ATTACHMENT_COMPLETE,
                becomes=db_attachments.ATTACHED)
            if current.attach_status == states.ATTACHED:
                return current, vol, False, None
            if (current.attach_status == states.ATTACH_ATTACHING
                    and not current.connection_info):
                raise exception.InvalidInput(
                    reason='Attachment %s is still being connected; '
                           'complete it once its connection info is '
                           'there.' % attachment_id)
            values = {'attach_time': current.attach_time or models.utcnow()}
            if current.attach_mode is None:
                facts = volume_facts(session, vol)
                values['attach_mode'] = rules.complete_mode(
                    facts, current, writers(session, facts,
                                            exclude=current.id))
            try:
                db_attachments.transition(
                    session, attachment_id, 'complete',
                    values=values, current=current)
            except exception.InvalidTransition as e:
                raise exception.InvalidInput(
                    reason='Attachment %s cannot be completed while it is '
                           '%s.' % (attachment_id, e.kwargs['actual']))
            status = db_attachments.sync_after_attached(
                session, current.volume_id, vol.status)
            return current, vol, True, status

        done, vol, changed, status = db_api.run_writer(_complete)
        if not changed:
            # (attached already: nothing changed)
            return done
        LOG.info('attachment %s: -> attached; volume %s %s', attachment_id,
                 done.volume_id, status)
        self._notify(context, 'volume.attach.end', vol, done,
                     attach_status=states.ATTACHED)
        return done

    # -- takeover ------------------------------------------------------------
    def takeover(self, context, attachment_id):
        """Make a read-only attachment of a single-writer volume its
        writer: cut the current writer at the target first (its export
        removed, its sessions ended, recorded detached "taken over by"),
        then re-export the caller's attachment read-write.  Returns the
        attachment with its new connection info.

        The caller's attachment is marked ``TAKING_OVER`` under the
        volume's lock and counts as the writer from then on, so no other
        read-write attachment (nor a second takeover) gets in between."""
        policy.authorize(context, policy.ATTACHMENT_GET)
        # a volume service older than RPC 1.4 cannot promote: refuse
        # before anything is marked
        self.volume_rpcapi.require('1.4', 'os-takeover')

        def _mark(session):
            # the database only: run again whole on a certification
            # failure; the old writer is cut, and ours promoted, once it
            # committed
            attachment = self._authorized(session, context, attachment_id,
                                          policy.ATTACHMENT_TAKEOVER)
            with db_attachments.locked_volume(session,
                                              attachment.volume_id) as held:
                vol = held.volume
                current = db_attachments.get(session, attachment_id)
                if db_host_fences.is_fenced(session, current.attached_host,
                                            vol.id):
                    raise exception.HostFenced(host=current.attached_host,
                                               volume_id=vol.id)
                writer = self._check_takeover(session, vol, current)
                if writer is not None and writer.service_owned and \
                        writer.instance_uuid and writer.connection_info \
                        and not (context.is_admin
                                 or policy.is_service(context)):
                    # as a delete of it would be (CVE-2023-2088)
                    raise exception.AttachmentInUse(
                        attachment_id=writer.id,
                        instance=writer.instance_uuid)
                # both services must answer: the writer's to cut it, ours
                # to re-export
                self._live_members(session, vol, current.export_host)
                cut = writer is not None and rules.holds_connection(writer)
                # (a live member stands in for a dead one where the
                # exports live in the storage)
                cut_by = self._exports_server(session, vol, writer) \
                    if cut else None
                db_attachments.update(session, current.id,
                                      {'operation': states.TAKING_OVER})
                why = 'taken over by %s' % current.id
                if writer is not None:
                    db_attachments.transition(
                        session, writer.id,
                        'start_disconnect' if cut else 'detach',
                        values={'operation': states.DISCONNECTING} if cut
                        else {'status_reason': why}, reason=why,
                        current=writer)
            return vol, current, writer, cut, cut_by, why, held.status

        vol, current, writer, cut, cut_by, why, status = db_api.run_writer(
            _mark)
        LOG.info('attachment %s of volume %s: taking over from %s',
                 attachment_id, vol.id, writer.id if writer else 'nobody')
        if writer is not None:
            try:
                self._finish_detach(
                    context, writer, vol, writer, cut, cut,
                    cut_by or writer.export_host or
                    volume_rpcapi.backend_host(vol.host), status,
                    reason=why)
            except Exception:
                # the old writer may still write: the caller stays a
                # reader
                self._unmark_takeover(current.id)
                raise
        try:
            self.volume_rpcapi.promote(
                context, current.export_host or volume_rpcapi.backend_host(
                    vol.host), current.id)
        except exception.ServiceUnavailable:
            # no answer in time: the volume service may still be making
            # the read-write export.  The mark stays (the attachment
            # counts as the writer): the promote clears it when it ends,
            # reconcile when it never does.
            raise
        except Exception:
            self._unmark_takeover(current.id)
            raise
        done = self.get(context, attachment_id)
        LOG.info('attachment %s of volume %s: took over as the writer',
                 attachment_id, vol.id)
        self._notify(context, 'volume.attach.end', vol, done)
        return done

    @staticmethod
    def _check_takeover(session, vol, current):
        """Refuse a takeover the volume or the attachment cannot have;
        returns the live writer to cut (None when there is none)."""
        rules.check_takeover(volume_facts(session, vol), current,
                             db_attachments.marked(session, vol.id,
                                                   states.TAKING_OVER))
        writer_id = db_attachments.live_writer(session, vol.id,
                                               exclude=current.id)
        if writer_id is None:
            return None
        writer = db_attachments.get(session, writer_id)
        rules.check_not_busy(writer)
        return writer

    def _unmark_takeover(self, attachment_id):
        db_api.run_writer(db_attachments.unmark, attachment_id,
                          states.TAKING_OVER)

    # -- delete --------------------------------------------------------------
    def delete(self, context, attachment_id, force=False,
               unless_attached=False):
        """Detach and delete; returns the volume's remaining attachments.
        ``force`` (admin actions) skips the compute-service guard.
        ``unless_attached``: refused (400) when the volume has an
        attachment attached, as it is under the lock (a force delete
        detaches what is not attached, and an os-complete may have come
        since it read them)."""
        policy.authorize(context, policy.ATTACHMENT_GET)

        # one transaction reads, authorizes and starts the detach (run
        # again from its start on a deadlock; the disconnect's RPC comes
        # after the commit)
        def _start(session):
            # (the lock writes the status the volume is most often left
            # in; what the transaction reads under it corrects it
            # otherwise)
            attachment, vol, service = self._locked_attachment(
                session, context, attachment_id, policy.ATTACHMENT_DELETE,
                becomes=db_attachments.STARTS_DETACHING, to_detach=True)
            guarded = not force and not (context.is_admin
                                         or policy.is_service(context))
            # the change reads the volume's other attachments after it
            # (what it answers, and what the volume's status and the
            # disconnect follow from)
            started, remaining = self._start_detach(
                session, attachment, force, guarded, volume=vol,
                export_service=service, read_others=True,
                unless_attached=unless_attached)
            _, current, _, _, export_host, _ = started
            shared = db_attachments.share_host(remaining, current,
                                               export_host)
            return attachment, started, remaining, shared

        attachment, started, remaining, shared = db_api.run_writer(_start)
        self._finish_detach(context, attachment, *started, shared=shared)
        return remaining

    def _check_not_busy(self, current, force, backend_up):
        """Refuse (409) to detach an attachment that another request is
        disconnecting or still connecting, while its backend is up: the
        two would race on the backend.  When the backend is down a
        ``force`` detach records it detached anyway (see ``detach``), and
        so does one that finds the other request's mark older than an RPC
        can wait (its request died with its API process)."""
        what = rules.busy_with(current)
        if what is None:
            return
        if not backend_up and (force or what == 'being connected'):
            return
        # a takeover waits for two calls in a row
        waits = 2 if current.operation == states.TAKING_OVER else 1
        if force and current.updated_at is not None and \
                models.utcnow() - current.updated_at > datetime.timedelta(
                    seconds=waits * self.conf.volume_rpc_timeout):
            LOG.warning('attachment %s: %s since %s, longer than an RPC '
                        'waits; forced detach goes ahead', current.id, what,
                        current.updated_at)
            return
        raise exception.AttachmentBusy(attachment_id=current.id, what=what)

    def detach(self, context, attachment, force=False):
        """Disconnect (through the backend when connected) and delete.

        ``force`` (admin actions) with the backend down records the
        attachment detached without it; the volume service removes exports
        the database does not know when it starts again."""
        started, _ = db_api.run_writer(self._start_detach, attachment,
                                       force)
        self._finish_detach(context, attachment, *started)

    def _start_detach(self, session, attachment, force, guarded=False,
                      volume=None, export_service=_UNREAD,
                      read_others=False, unless_attached=False):
        """The transaction half of a detach: decide under the volume's
        lock whether it goes through the backend, and mark it; returns
        (what ``_finish_detach`` needs, the volume's other attachments
        when ``read_others``, else None).  ``guarded``: refuse (409) to
        detach an attachment a compute service made and connected for an
        instance, as the attachment is under the lock (a connect recorded
        while the request waited for it counts).  ``volume``: this
        transaction took the lock and read ``attachment`` and its volume
        under it, and ``export_service`` (see ``serving``).
        ``read_others``: the change reads the others
        (``db_attachments.others_of``) after it, in its round trip on
        MariaDB, and the volume's status is derived from them.
        ``unless_attached``: as ``delete``'s."""
        remaining = None
        with db_attachments.locked_volume(session, attachment.volume_id,
                                          volume=volume) as held:
            vol = held.volume
            current = attachment if volume is not None else \
                db_attachments.get(session, attachment.id)
            if unless_attached:
                rules.check_not_attached(vol.id, db_attachments.
                                         live_for_volume(session, vol.id))
            if (guarded and current.service_owned and current.instance_uuid
                    and current.connection_info):
                raise exception.AttachmentInUse(attachment_id=current.id,
                                                instance=current.instance_uuid)
            connected = was_connected = rules.holds_connection(current)
            # asked once: the checks below must agree on it
            backend_up = connected and self.serving(
                session, vol, current.export_host, export_service)
            stand_in = None
            if connected and not backend_up:
                # exports kept in the storage itself: a live member
                # removes what the dead one made
                stand_in = self._stand_in(session, vol, current.export_host)
                backend_up = stand_in is not None
            if connected and not backend_up and not force and \
                    not rules.half_connected(current):
                # fail fast, naming the service that is down
                self._live_members(session, vol, current.export_host)
            self._check_not_busy(current, force, backend_up)
            # the service holding the export (rows from before 0004: the
            # backend's own)
            host = stand_in or current.export_host or \
                volume_rpcapi.backend_host(vol.host or '')
            if connected and force and not backend_up:
                LOG.warning('attachment %s: forced detach while backend %s '
                            'is down; recorded without disconnecting',
                            attachment.id, vol.host)
                connected = False
            elif connected and rules.half_connected(current) and \
                    not backend_up:
                # nothing was handed out; an export the service made
                # before it went down is removed when it starts again
                # (reconcile_exports keeps only live attachments' exports)
                LOG.warning('attachment %s: connect never finished and %s '
                            'is down; recorded detached without it',
                            attachment.id, host)
                connected = False
            values = {'operation': states.DISCONNECTING} if connected \
                else None
            left, remaining = db_attachments.transition_and_read(
                session, attachment.id,
                'start_disconnect' if connected else 'detach',
                db_attachments.others_read(current) if read_others
                else None, values=values, current=current)
            if read_others:
                held.others = db_attachments.Others.of_rows(vol.status,
                                                            remaining)
            held.leaves(left)
        status = held.status
        return (vol, current, connected, was_connected, host,
                status), remaining

    def _finish_detach(self, context, attachment, vol, current, connected,
                       was_connected, host, status, reason=None,
                       shared=None):
        """The RPC half of a detach started by ``_start_detach`` (or by a
        takeover, which gives the ``reason`` the detach is recorded
        with).  ``shared``: whether another attachment holds its host
        connection through ``host``'s export, as the transaction that
        started it read (None: the volume service reads it)."""
        if was_connected:
            self._notify(context, 'volume.detach.start', vol, current,
                         attach_status=states.ATTACH_DETACHING)
        if connected:
            try:
                self.volume_rpcapi.disconnect(
                    context, host, attachment.id, reason=reason,
                    volume=db_volumes.summary(vol),
                    connector=current.connector, shared=shared)
            except (exception.ConnectFailed, exception.ConnectRefused):
                raise
            except Exception as e:
                db_api.run_writer(db_attachments.record_failure,
                                  attachment.id, 'disconnect_lost', str(e))
                raise
        elif not was_connected:
            LOG.info('attachment %s: -> detached (never connected); volume '
                     '%s %s', attachment.id, vol.id, status)
            return
        self._notify(context, 'volume.detach.end', vol, current,
                     attach_status=states.DETACHED)
