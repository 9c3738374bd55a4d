"""The service layer for attachments, shared by the REST handlers, the
legacy volume actions and the RPC endpoint compute nodes call.

Reservation rules (DESIGN §4):
* a plain volume has at most one live attachment, except that the same
  instance may hold a second (live migration);
* a multiattach volume takes any number of reservations, whatever the
  state of the others: nothing waits for another attach to finish;
* a single-writer type (extra spec ``mode = RO`` next to multiattach)
  lets one live attachment be read-write and makes the others read-only;
* a read-only volume (os-update_readonly_flag) gives read-only attachments.

Every decision is made inside the transaction that holds the volume's row
lock (``db.attachments.lock_volume``), so it is race-free on every database.
"""
import datetime
import ipaddress
import logging
import random
import uuid

from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.common import iscsi_name
from cinder_lite.common import notify
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import models
from cinder_lite.db import services as db_services
from cinder_lite.db import volume_types as db_types
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import rpcapi as volume_rpcapi

LOG = logging.getLogger(__name__)

MODES = ('rw', 'ro')
DEFAULT_MODE = 'rw'
CONNECTED = db_attachments.CONNECTED_STATUSES
# status_reason of an attachment whose disconnect is under way
DISCONNECTING = 'disconnecting'
TAKING_OVER = db_attachments.TAKING_OVER


def holds_connection(attachment):
    """Whether detaching must go through the backend.  error_attaching
    normally holds nothing (the connect flow reverted its export), unless
    the backend recorded the connection after the API gave up on it."""
    if attachment.attach_status in CONNECTED:
        return True
    return (attachment.attach_status == states.ERROR_ATTACHING
            and bool(attachment.connection_info))


def completed_unconnected(attachment):
    """``attached`` without ever being connected: Nova completes the
    attachment of a volume to a shelved-offloaded server at once and
    connects it when the server is unshelved (PUT, then os-complete
    again), as Cinder allows."""
    return (attachment.attach_status == states.ATTACHED
            and not attachment.connector
            and not attachment.connection_info)


def half_connected(attachment):
    """``attaching`` without connection info: the connect has not
    finished (or its volume service went down before it did)."""
    return (attachment.attach_status == states.ATTACH_ATTACHING
            and not attachment.connection_info)


def single_writer(session, volume):
    """True for volumes of a type with ``mode = RO`` and multiattach."""
    if not volume.multiattach:
        return False
    # asked up to three times per request: once per transaction
    known = session.info.setdefault('cl_single_writer', {})
    if volume.volume_type_id not in known:
        mode = db_types.spec(session, volume.volume_type_id, 'mode')
        known[volume.volume_type_id] = \
            str(mode or '').strip().upper() == 'RO'
    return known[volume.volume_type_id]


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

    def get(self, context, attachment_id):
        policy.authorize(context, policy.ATTACHMENT_GET)
        with db_api.reader() as session:
            return db_attachments.get(session, attachment_id,
                                      self._scope(context))

    def shared_with(self, attachment):
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

    def _backend_up(self, volume, service_host=None):
        with db_api.reader() as session:
            return self._serving(session, volume, service_host)

    def _serving(self, session, volume, service_host=None):
        """Whether ``_live_members`` finds a live member."""
        try:
            self._live_members(session, volume, service_host)
            return True
        except exception.Invalid:
            return False

    def _check_backend(self, volume, service_host=None):
        """Fail fast when the volume's backend is down: no member of its
        cluster (or its one service) is up, or, given ``service_host``,
        that member is not."""
        with db_api.reader() as session:
            self._live_members(session, volume, service_host)

    def _live_members(self, session, volume, service_host=None):
        """The services of ``volume``'s backend that are up (only
        ``service_host`` when given); ServiceUnavailable when none is."""
        if not volume.host:
            raise exception.InvalidVolume(
                reason='Volume %s has no backend.' % volume.id)
        backend = volume_rpcapi.backend_host(volume.host)
        members = db_services.backend_members(session, backend,
                                              constants.VOLUME_BINARY)
        if service_host is not None:
            members = [m for m in members if m.host == service_host]
        who = service_host or backend
        if not members:
            raise exception.ServiceUnavailable(
                host=who, reason='no such volume service')
        live = [m for m in members
                if db_services.is_up(m.heartbeat_at,
                                     self.conf.service_down_time)]
        if not live:
            raise exception.ServiceUnavailable(
                host=who, reason='%s heartbeat is older than %d s' % (
                    'its' if len(members) == 1 else 'every member\'s',
                    self.conf.service_down_time))
        return live

    def _export_host(self, session, vol, connector):
        """The volume service that is to export ``vol`` to the connector's
        host: the one service of the backend, or in a cluster the member
        already exporting it to that host (one connection per host), else
        the enabled member holding the fewest exports."""
        live = self._live_members(session, vol)
        check_initiator(live, connector)
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
            if holds_connection(other) and other.export_host in hosts:
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
        # (_start_connect fails fast, inside the transaction, when the
        # backend is down)
        # the connector's mode counts as the top-level one (a compute
        # service passes the attach mode inside the connector)
        with db_api.writer() as session:
            volume = db_volumes.get(session, volume_id, self._scope(context))
            policy.authorize(context, policy.ATTACHMENT_CREATE,
                             {'project_id': volume.project_id})
            validate_connector(connector)
            connector = dict(connector)
            vol, attachment = self._reserve(
                session, context, volume, instance_uuid,
                mode or connector.get('mode'), service_owned,
                states.ATTACH_RESERVED)
            host, mode = self._start_connect(session, vol, attachment,
                                             connector)
            db_attachments.sync_volume_status(session, vol.id)
        LOG.info('attachment %s of volume %s: reserved and connecting '
                 '(instance %s, host %s, mode %s)', attachment.id, vol.id,
                 instance_uuid, connector['host'], mode)
        return self._connect_on_backend(context, vol, attachment, host,
                                        connector, mode)

    def reserve(self, context, volume, instance_uuid, mode,
                service_owned=False, status=states.ATTACH_RESERVED,
                reason=None):
        """``reason``: the attachment's status_reason (the legacy
        os-reserve marks its reservations)."""
        with db_api.writer() as session:
            vol, attachment = self._reserve(session, context, volume,
                                            instance_uuid, mode,
                                            service_owned, status, reason)
            volume_status = db_attachments.sync_volume_status(session,
                                                              vol.id)
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
                 service_owned, status, reason=None):
        """Record a new attachment of ``volume`` under its row lock;
        returns (locked volume, attachment)."""
        if mode is not None and mode not in MODES:
            raise exception.InvalidAttachMode(
                reason="mode must be 'rw' or 'ro', not %r" % mode)
        vol = db_attachments.lock_volume(session, volume.id,
                                         db_attachments.ATTACHABLE)
        self._check_sharing(context, session, vol, instance_uuid)
        mode = self._reserve_mode(session, vol, mode)
        attachment = db_attachments.create(session, {
            'id': str(uuid.uuid4()),
            'volume_id': vol.id,
            'project_id': vol.project_id,
            'instance_uuid': instance_uuid,
            'attach_status': status,
            'attach_mode': mode,
            'service_owned': bool(service_owned),
            'status_reason': reason,
            'deleted': False,
            'created_at': models.utcnow(),
        })
        return vol, attachment

    def _check_sharing(self, context, session, vol, instance_uuid):
        if not vol.multiattach:
            # a plain volume has a few live attachments at most
            live = db_attachments.live_for_volume(session, vol.id)
            same = instance_uuid is not None and all(
                a.instance_uuid == instance_uuid for a in live)
            if live and not same:
                raise exception.AttachmentRefused(
                    reason='Volume %s is not multiattach and already has '
                           'an attachment (%s, %s); only the same '
                           'instance may attach it again.' % (
                               vol.id, live[0].id, live[0].attach_status))
            return
        if self.conf.allow_multiattach and not vol.bootable:
            return
        others = db_attachments.other_instance(session, vol.id,
                                               instance_uuid)
        if others and not self.conf.allow_multiattach:
            raise exception.AttachmentRefused(
                reason='Multi-attach is turned off in this cloud.')
        if others and vol.bootable:
            policy.authorize(context, policy.MULTIATTACH_BOOTABLE,
                             {'project_id': vol.project_id})

    def _reserve_mode(self, session, vol, mode):
        if vol.readonly:
            if mode == 'rw':
                raise exception.InvalidAttachMode(
                    reason='volume %s is read-only; attach it with mode '
                           'ro' % vol.id)
            return 'ro'
        if mode == 'rw' and single_writer(session, vol):
            writer = db_attachments.live_writer(session, vol.id)
            if writer:
                raise exception.InvalidAttachMode(
                    reason='volume %s takes one writer and attachment %s '
                           'is it; attach read-only or wait until it '
                           'detaches' % (vol.id, writer))
        # None stays undecided: the connector's mode (or the volume's
        # default) decides it when the attachment connects
        return mode

    def _default_mode(self, session, vol, attachment):
        """The mode of an attachment that nobody chose one for: rw, or on
        a single-writer volume ro once another attachment is the
        writer."""
        if single_writer(session, vol) and db_attachments.live_writer(
                session, vol.id, exclude=attachment.id):
            return 'ro'
        return DEFAULT_MODE

    # -- connect -------------------------------------------------------------
    def update(self, context, attachment_id, connector):
        """Connect a reserved attachment (PUT /attachments/{id})."""
        validate_connector(connector)
        attachment = self.get(context, attachment_id)
        policy.authorize(context, policy.ATTACHMENT_UPDATE,
                         {'project_id': attachment.project_id})
        return self.connect(context, attachment_id, connector)

    def connect(self, context, attachment_id, connector):
        connector = dict(connector)
        with db_api.writer() as session:
            attachment = db_attachments.get(session, attachment_id)
            vol = db_attachments.lock_volume(session, attachment.volume_id,
                                             db_attachments.ATTACHABLE)
            attachment = db_attachments.get(session, attachment_id)
            if attachment.attach_status in CONNECTED and \
                    not completed_unconnected(attachment):
                raise exception.InvalidInput(
                    reason='Attachment %s is already connected (%s); '
                           'delete it and create a new one to connect '
                           'again.' % (attachment_id,
                                       attachment.attach_status))
            host, mode = self._start_connect(session, vol, attachment,
                                             connector)
            db_attachments.sync_volume_status(session, vol.id)
        return self._connect_on_backend(context, vol, attachment, host,
                                        connector, mode)

    def _start_connect(self, session, vol, attachment, connector):
        """Decide the mode and the exporting service of a connect and mark
        the attachment ``attaching`` (inside the transaction holding the
        volume's row lock); returns (export host, mode) and sets the
        connector's mode."""
        mode = self._connect_mode(session, vol, attachment, connector)
        if not vol.multiattach:
            self._check_one_connection(session, vol, attachment,
                                       connector['host'])
        connector['mode'] = mode
        host = self._export_host(session, vol, connector)
        # one completed before it was connected moves on from attached
        sources = ((states.ATTACHED,) if completed_unconnected(attachment)
                   else None)
        db_attachments.transition(
            session, attachment.id, states.ATTACH_ATTACHING,
            expected=sources,
            values={'attach_mode': mode, 'connector': connector,
                    'attached_host': connector['host'],
                    'mountpoint': connector.get('mountpoint'),
                    'export_host': host, 'status_reason': None},
            current=attachment)
        return host, mode

    def _check_one_connection(self, session, vol, attachment, host):
        """A plain volume is connected once per host: a second attachment
        (the same instance, live migrating) connects from another host."""
        for other in db_attachments.live_on_host(session, vol.id, host):
            if other.id != attachment.id and holds_connection(other):
                raise exception.DuplicateConnector(volume_id=vol.id)

    def _connect_on_backend(self, context, vol, attachment, host, connector,
                            mode):
        """The RPC half of a connect started by ``_start_connect``."""
        self._notify(context, 'volume.attach.start', vol, attachment,
                     attached_host=connector['host'], attach_mode=mode,
                     attach_status=states.ATTACH_ATTACHING)
        try:
            self.volume_rpcapi.connect(context, host, attachment.id,
                                       connector, mode)
        except (exception.ConnectFailed, exception.ConnectRefused,
                exception.NotFound):
            raise
        except Exception as e:
            # The backend did not answer: record why, leave nothing
            # pretending to be connected.
            self._mark_failed(attachment.id, states.ERROR_ATTACHING,
                              (states.ATTACH_ATTACHING,), str(e))
            if isinstance(e, exception.ServiceUnavailable):
                # the caller holds an attachment it never saw: name it
                raise exception.ServiceUnavailable(
                    host=e.kwargs.get('host'),
                    reason='%s; attachment %s is left error_attaching: '
                           'delete it (DELETE /attachments/%s) before '
                           'attaching again' % (
                               e.kwargs.get('reason'), attachment.id,
                               attachment.id)) from None
            raise
        return self.get(context, attachment.id)

    def _connect_mode(self, session, vol, attachment, connector):
        """As Cinder: the mode given when the attachment was made, else
        the connector's, else the default."""
        wanted = connector.get('mode')
        if wanted is not None and wanted not in MODES:
            raise exception.InvalidAttachMode(
                reason="connector mode must be 'rw' or 'ro', not %r"
                       % wanted)
        mode = (attachment.attach_mode or wanted
                or self._default_mode(session, vol, attachment))
        if vol.readonly and mode == 'rw':
            raise exception.InvalidAttachMode(
                reason='volume %s is read-only' % vol.id)
        if mode == 'rw' and single_writer(session, vol):
            writer = db_attachments.live_writer(session, vol.id,
                                                exclude=attachment.id)
            if writer:
                raise exception.InvalidAttachMode(
                    reason='volume %s takes one writer and attachment %s '
                           'is it' % (vol.id, writer))
        return mode

    def _notify(self, context, event_type, vol, attachment, **changed):
        """``event_type`` about ``attachment`` of ``vol`` as it is after
        the change (``changed`` overrides the row's older values)."""
        fields = {k: getattr(attachment, k) for k in (
            'id', 'instance_uuid', 'attached_host', 'attach_mode',
            'attach_status')}
        fields.update(changed)
        notify.info(context, self.conf.host, event_type,
                    notify.attachment_payload(vol, fields))

    def _mark_failed(self, attachment_id, target, expected, reason):
        with db_api.writer() as session:
            try:
                attachment = db_attachments.get(session, attachment_id)
                db_attachments.lock_volume(session, attachment.volume_id,
                                           load=False)
                db_attachments.transition(
                    session, attachment_id, target, expected=expected,
                    values={'status_reason': reason[:1024]})
                db_attachments.sync_volume_status(session,
                                                  attachment.volume_id)
            except (exception.NotFound, exception.InvalidTransition,
                    exception.InvalidVolume):
                pass

    # -- complete ------------------------------------------------------------
    def complete(self, context, attachment_id):
        """One transaction: read, authorize, decide; returns the
        attachment as written."""
        policy.authorize(context, policy.ATTACHMENT_GET)
        with db_api.writer() as session:
            attachment = self._authorized(session, context, attachment_id,
                                          policy.ATTACHMENT_COMPLETE)
            vol = db_attachments.lock_volume(session, attachment.volume_id)
            current = db_attachments.get(session, attachment_id)
            if current.attach_status == states.ATTACHED:
                return current
            if (current.attach_status == states.ATTACH_ATTACHING
                    and not current.connection_info):
                raise exception.InvalidInput(
                    reason='Attachment %s is still being connected; '
                           'complete it once its connection info is '
                           'there.' % attachment_id)
            values = {'attach_time': current.attach_time or models.utcnow()}
            if current.attach_mode is None:
                # completed without a connect: decide the mode now, so a
                # single-writer volume never shows two writers
                values['attach_mode'] = self._default_mode(session, vol,
                                                           current)
            try:
                db_attachments.transition(
                    session, attachment_id, states.ATTACHED,
                    expected=(states.ATTACH_RESERVED,
                              states.ATTACH_ATTACHING),
                    values=values, current=current)
            except exception.InvalidTransition as e:
                raise exception.InvalidInput(
                    reason='Attachment %s cannot be completed while it is '
                           '%s.' % (attachment_id, e.kwargs['actual']))
            status = db_attachments.sync_volume_status(session, vol.id)
            done = current
        LOG.info('attachment %s: -> attached; volume %s %s', attachment_id,
                 vol.id, status)
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
        with db_api.writer() as session:
            attachment = self._authorized(session, context, attachment_id,
                                          policy.ATTACHMENT_TAKEOVER)
            vol = db_attachments.lock_volume(session, attachment.volume_id)
            current = db_attachments.get(session, attachment_id)
            writer = self._check_takeover(session, vol, current)
            if writer is not None and writer.service_owned and \
                    writer.instance_uuid and writer.connection_info and \
                    not (context.is_admin or policy.is_service(context)):
                # as a delete of it would be (CVE-2023-2088)
                raise exception.AttachmentInUse(
                    attachment_id=writer.id, instance=writer.instance_uuid)
            # both services must answer: the writer's to cut it, ours to
            # re-export
            self._live_members(session, vol, current.export_host)
            cut = writer is not None and holds_connection(writer)
            if cut:
                self._live_members(session, vol, writer.export_host)
            db_attachments.update(session, current.id,
                                  {'status_reason': TAKING_OVER})
            why = 'taken over by %s' % current.id
            if writer is not None:
                db_attachments.transition(
                    session, writer.id,
                    states.ATTACH_DETACHING if cut else states.DETACHED,
                    values={'status_reason': DISCONNECTING if cut
                            else why}, reason=why, current=writer)
            status = db_attachments.sync_volume_status(session, vol.id)
        LOG.info('attachment %s of volume %s: taking over from %s',
                 attachment_id, vol.id, writer.id if writer else 'nobody')
        if writer is not None:
            try:
                self._finish_detach(
                    context, writer, vol, writer, cut, cut,
                    writer.export_host or volume_rpcapi.backend_host(
                        vol.host), status, reason=why)
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

    def _check_takeover(self, session, vol, current):
        """Refuse a takeover the volume or the attachment cannot have;
        returns the live writer to cut (None when there is none)."""
        if not single_writer(session, vol):
            raise exception.InvalidInput(
                reason='volume %s is not a single-writer volume (a type '
                       'with multiattach and mode = RO); its attachments '
                       'are read-write already or read-only by choice'
                       % vol.id)
        if current.attach_mode == 'rw':
            raise exception.TakeoverRefused(
                attachment_id=current.id,
                reason='it is the writer of volume %s already' % vol.id)
        if vol.readonly:
            raise exception.InvalidInput(
                reason='volume %s is read-only: nobody may write it'
                       % vol.id)
        self._check_not_busy(current, False, True)
        if current.attach_status != states.ATTACHED or \
                not current.connection_info:
            raise exception.InvalidInput(
                reason='attachment %s is %s; only a connected attachment '
                       '(attached) can take over' % (
                           current.id, current.attach_status))
        busy = db_attachments.marked(session, vol.id, TAKING_OVER)
        if busy is not None:
            raise exception.TakeoverRefused(
                attachment_id=current.id,
                reason='attachment %s of volume %s is taking over' % (
                    busy, vol.id))
        writer_id = db_attachments.live_writer(session, vol.id,
                                               exclude=current.id)
        if writer_id is None:
            return None
        writer = db_attachments.get(session, writer_id)
        self._check_not_busy(writer, False, True)
        return writer

    def _unmark_takeover(self, attachment_id):
        with db_api.writer() as session:
            db_attachments.unmark(session, attachment_id, TAKING_OVER)

    # -- delete --------------------------------------------------------------
    def delete(self, context, attachment_id, force=False):
        """Detach and delete; returns the volume's remaining attachments.
        ``force`` (admin actions) skips the compute-service guard."""
        policy.authorize(context, policy.ATTACHMENT_GET)
        # one transaction reads, authorizes and starts the detach
        with db_api.writer() as session:
            attachment = self._authorized(session, context, attachment_id,
                                          policy.ATTACHMENT_DELETE)
            guarded = not force and not (context.is_admin
                                         or policy.is_service(context))
            started = self._start_detach(session, attachment, force,
                                         guarded)
        self._finish_detach(context, attachment, *started)
        with db_api.reader() as session:
            return db_attachments.live_summaries(session,
                                                 attachment.volume_id)

    def _check_not_busy(self, current, force, backend_up):
        """Refuse (409) to detach an attachment that another request is
        disconnecting or still connecting, while its backend is up: the
        two would race on the backend.  When the backend is down a
        ``force`` detach records it detached anyway (see ``detach``), and
        so does one that finds the other request's mark older than an RPC
        can wait (its request died with its API process)."""
        if current.status_reason == DISCONNECTING:
            what = 'being disconnected'
        elif current.status_reason == TAKING_OVER:
            what = 'taking over as the writer'
        elif half_connected(current):
            what = 'being connected'
        else:
            return
        if not backend_up and (force or what == 'being connected'):
            return
        # a takeover waits for two calls in a row
        waits = 2 if current.status_reason == TAKING_OVER else 1
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
        with db_api.writer() as session:
            started = self._start_detach(session, attachment, force)
        self._finish_detach(context, attachment, *started)

    def _start_detach(self, session, attachment, force, guarded=False):
        """The transaction half of a detach: decide under the volume's
        lock whether it goes through the backend, and mark it; returns
        what ``_finish_detach`` needs.  ``guarded``: refuse (409) to
        detach an attachment a compute service made and connected for an
        instance, as the attachment is under the lock (a connect recorded
        while the request waited for it counts)."""
        vol = db_attachments.lock_volume(session, attachment.volume_id)
        current = db_attachments.get(session, attachment.id)
        if (guarded and current.service_owned and current.instance_uuid
                and current.connection_info):
            raise exception.AttachmentInUse(attachment_id=current.id,
                                            instance=current.instance_uuid)
        connected = was_connected = holds_connection(current)
        # asked once: the checks below must agree on it
        backend_up = connected and self._serving(
            session, vol, current.export_host)
        if connected and not backend_up and not force and \
                not half_connected(current):
            # fail fast, naming the service that is down
            self._live_members(session, vol, current.export_host)
        self._check_not_busy(current, force, backend_up)
        # the service holding the export (rows from before 0004: the
        # backend's own)
        host = current.export_host or volume_rpcapi.backend_host(
            vol.host or '')
        if connected and force and not backend_up:
            LOG.warning('attachment %s: forced detach while backend %s '
                        'is down; recorded without disconnecting',
                        attachment.id, vol.host)
            connected = False
        elif connected and half_connected(current) and \
                not backend_up:
            # nothing was handed out; an export the service made
            # before it went down is removed when it starts again
            # (reconcile_exports keeps only live attachments' exports)
            LOG.warning('attachment %s: connect never finished and %s '
                        'is down; recorded detached without it',
                        attachment.id, host)
            connected = False
        target = (states.ATTACH_DETACHING if connected
                  else states.DETACHED)
        db_attachments.transition(
            session, attachment.id, target,
            values={'status_reason': DISCONNECTING} if connected
            else None, current=current)
        status = db_attachments.sync_volume_status(session, vol.id)
        return vol, current, connected, was_connected, host, status

    def _finish_detach(self, context, attachment, vol, current, connected,
                       was_connected, host, status, reason=None):
        """The RPC half of a detach started by ``_start_detach`` (or by a
        takeover, which gives the ``reason`` the detach is recorded
        with)."""
        if was_connected:
            self._notify(context, 'volume.detach.start', vol, current,
                         attach_status=states.ATTACH_DETACHING)
        if connected:
            try:
                self.volume_rpcapi.disconnect(context, host, attachment.id,
                                              reason=reason)
            except (exception.ConnectFailed, exception.ConnectRefused):
                raise
            except Exception as e:
                self._mark_failed(attachment.id, states.ERROR_DETACHING,
                                  (states.ATTACH_DETACHING,), str(e))
                raise
        elif not was_connected:
            LOG.info('attachment %s: -> detached (never connected); volume '
                     '%s %s', attachment.id, vol.id, status)
            return
        self._notify(context, 'volume.detach.end', vol, current,
                     attach_status=states.DETACHED)


def check_initiator(members, connector):
    """An iSCSI backend puts the connector's initiator into an ACL: a name
    that is not an iSCSI name is refused before anything is recorded.  NBD
    and local exports never read it (Nova's fake compute driver sends
    ``'fake'``).  ``members``: the backend's services, with the
    capabilities they reported."""
    initiator = connector.get('initiator')
    if initiator is None or iscsi_name.valid(initiator):
        return
    if any((m.capabilities or {}).get('storage_protocol') == 'iscsi'
           for m in members):
        raise exception.InvalidConnector(
            reason="'initiator' must be an iSCSI name (iqn.YYYY-MM.domain"
                   "[:name], eui.<16 hex> or naa.<16 or 32 hex>) for an "
                   "iSCSI backend, not %r" % initiator)


def validate_connector(connector):
    """The keys cinder_lite needs in a connector, with their types.

    The form of ``initiator`` matters to iSCSI backends only
    (``check_initiator``)."""
    if not isinstance(connector, dict):
        raise exception.InvalidConnector(reason='it must be an object')
    host = connector.get('host')
    if not isinstance(host, str) or not host.strip() or len(host) > 255:
        raise exception.InvalidConnector(
            reason="'host' must be a non-empty string of at most 255 "
                   "characters")
    for key in ('initiator', 'ip', 'mountpoint', 'platform', 'os_type'):
        value = connector.get(key)
        if value is not None and (not isinstance(value, str)
                                  or len(value) > 255):
            raise exception.InvalidConnector(
                reason="'%s' must be a string of at most 255 characters"
                       % key)
    ip = connector.get('ip')
    if ip is not None:
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            raise exception.InvalidConnector(
                reason="'ip' must be an IPv4 or IPv6 address, not %r" % ip)
    if connector.get('mode') not in (None,) + MODES:
        raise exception.InvalidAttachMode(
            reason="connector mode must be 'rw' or 'ro'")
