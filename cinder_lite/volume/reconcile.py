"""Convergence of one backend's volumes and attachments after a crash.

A volume service runs this at start and every ``reconcile_interval``
seconds; ``cinder-lite-manage attachment reconcile`` asks the running
services to run it now, and ``POST /workers/cleanup`` asks for it on the
rows a service left before the request (``clean_up``).  Only rows of
this backend that have not changed for ``reconcile_after`` seconds (or
since the cleanup's request), and that no flow of this process is
working on, are touched: of a cluster's volumes, each by the one member
that claims it first (compare-and-swap on ``updated_at``), and of its
attachments, each by the member holding its export.  Every change is
logged with its reason and returned.

Rules (``reason`` is what the row's status_reason or the user message
says):

==========================  ===============================================
found                       done
==========================  ===============================================
attachment ``attaching``,   the connect was interrupted: its export, if
no connection info          any, is removed and it becomes
                            ``error_attaching`` (the caller deletes it or
                            connects again)
attachment ``attaching``,   the connection was handed out but never
with connection info        completed (the host or its caller died, or is
                            slow): it is rolled forward to ``attached``
                            with its export kept, since the host may be
                            using it; a late complete is still accepted
                            and the owner detaches it as usual
attachment ``detaching``,   the disconnect was interrupted: it is rolled
marked disconnecting        forward (connection terminated, export
                            removed, ``detached``); one os-begin_detaching
                            marked, with no disconnect under way, is left
                            to the detach or os-roll_detaching (its host
                            may still use it)
attachment                  the disconnect is tried again; it stays
``error_detaching``         ``error_detaching`` with the new reason when
                            the backend still fails
attachment                  the connect ended here after the API had given
``error_attaching``, with   up waiting for it (and told the caller it
an export here              failed): the export is removed, the
                            attachment stays ``error_attaching``
attachment ``attached``,    a takeover (os-takeover) was interrupted:
marked taking over          its export is made again in the mode the
                            database records (read-only: the read-write
                            one is recorded only once it exists) and the
                            mark is cleared, so the volume has a writer
                            again only when someone takes over again
volume ``creating``,        the create was interrupted: it is rolled
scheduled here              forward (the file is created unless it exists)
                            and becomes ``available``, or ``error``
volume ``deleting``         the delete is rolled forward: ``deleted``, or
                            ``error_deleting``
volume ``extending``        the extend was interrupted: the recorded size
                            stands, the volume is ``available`` again and
                            the owner gets a message
volume growing in use       an extend in use (3.42) was interrupted: the
(``pending_size`` set)      recorded size stands, the status stays, the
                            owner gets a message
snapshot ``creating``       the copy is made again (a partial one is
                            removed first): ``available``, or ``error``
                            with a message
snapshot ``deleting``       the delete is rolled forward: ``deleted``, or
                            ``error_deleting``
snapshot ``restoring``,     its volume's revert ended without it (an
volume not reverting        operator reset the volume): ``available``
volume ``downloading``      the image was being written (a create from
                            an image, or os-reimage): the storage is
                            removed, the volume becomes ``error`` and the
                            owner gets a message
volume ``managing``         a manage was interrupted: it is run again on
                            the volume's own storage: ``available`` when
                            the object was adopted, else
                            ``error_managing`` with a message (the object
                            stays where it was)
volume ``unmanaging``       the unmanage is rolled forward (the record
                            ends, the storage stays)
snapshot ``managing``,      as for volumes (``available`` or ``error``)
``unmanaging``
volume ``uploading``        the copy into an image was interrupted: the
                            volume is what its attachments make it again,
                            the owner gets a message (the queued image
                            stays in Glance)
volume ``reverting``        the revert to a snapshot was interrupted:
                            what the storage holds is not known, so the
                            volume becomes ``error``, its snapshot
                            ``available`` again, and the owner gets a
                            message (a queued revert then finds it
                            settled and does nothing)
==========================  ===============================================

Migrations to another backend have rules of their own
(``cinder_lite.volume.migration.reconcile``): a temporary volume whose
migration stopped is deleted with what its backend holds of it, and the
migration becomes ``error``.

``reserved`` attachments hold nothing on the backend and stay reserved for
their owners (a volume with only reservations is ``reserved``, not in a
transition); connected attachments keep their exports (re-created by
``reconcile_exports`` when missing).  The volume status is derived from the
attachments again after each attachment change.
"""
import collections
import datetime
import logging

from cinder_lite.common import constants
from cinder_lite.common import context as cl_context
from cinder_lite.common import exception
from cinder_lite.common import notify
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import messages as db_messages
from cinder_lite.db import services as db_services
from cinder_lite.db import models
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import flows
from cinder_lite.volume.flows import promote as promote_flow
from cinder_lite.volume import image as image_mod
from cinder_lite.volume import image_api
from cinder_lite.volume import revert_api
from cinder_lite.volume import migration
from cinder_lite.volume import rules

LOG = logging.getLogger(__name__)

EVENT_EXTEND_INTERRUPTED = 'VOLUME_VOLUME_007_003'
# copy image to volume / copy volume to image, "an unknown error occurred"
EVENT_DOWNLOAD_INTERRUPTED = 'VOLUME_VOLUME_005_001'
EVENT_UPLOAD_INTERRUPTED = 'VOLUME_VOLUME_003_001'
# cinder_lite's "revert to snapshot", unknown error (flows/revert.py)
EVENT_REVERT_INTERRUPTED = 'VOLUME_VOLUME_101_001'


# What reconciliation is given of a volume service (not the service
# itself): its ``driver``, its ``host`` (``node@backend``, which holds
# exports), its ``backend_id`` (the host, or its cluster, which owns
# volumes), ``rpc_timeout`` (a takeover's request waits two of these),
# ``takeover_lock(attachment_id)`` (one promote or restore of an
# attachment at a time in the process), and ``roll_forward``: an object
# whose ``create_volume``, ``delete_volume`` (of a volume dict),
# ``create_snapshot`` and ``delete_snapshot`` (of a snapshot dict) run
# that operation of the service again, flows, failures and messages
# included; ``conversion_dir``: the service's image_conversion_dir, where
# an interrupted download or upload left its file.
Backend = collections.namedtuple('Backend', [
    'driver', 'host', 'backend_id', 'rpc_timeout', 'takeover_lock',
    'roll_forward', 'conversion_dir'])


# A cleanup asked through POST /workers/cleanup (cinder_lite.volume.
# workers_api): the rows of volume service ``host`` (this one, or a
# member of its cluster that is down) that have not changed since
# ``until`` (attachments it exports), and those of the backend since
# ``volumes_until`` (None: none of them); ``resource_id``: only that
# volume (and its attachments) or snapshot.
Cleanup = collections.namedtuple('Cleanup', [
    'host', 'until', 'volumes_until', 'resource_id'])


def _stale(session, service_host, backend, cutoff, volumes_cutoff):
    """Transitional attachments exported by ``service_host`` unchanged
    since ``cutoff`` and transitional volumes of ``backend`` (the
    service, or its cluster) unchanged since ``volumes_cutoff``."""
    volumes = [] if volumes_cutoff is None else \
        db_volumes.stale(session, backend, volumes_cutoff)
    return db_attachments.stale(session, service_host, cutoff), volumes


def run(backend, max_age, busy=(), cleanup=None):
    """Apply the rules to ``backend`` (a ``Backend``); returns what
    changed, one line each.  ``busy``: ids of attachments and volumes a
    flow of this process is working on now.  ``cleanup``: a ``Cleanup``
    instead of the rows unchanged for ``max_age`` seconds; of another
    member's attachments only what the database holds is settled (its
    exports are out of this service's reach): an interrupted connect
    becomes ``error_attaching`` (the member removes the half-made export
    when it is back), a connection handed out and never completed
    ``attached``."""
    if cleanup is None:
        cutoff = models.utcnow() - datetime.timedelta(seconds=max_age)
        export_host, volumes_cutoff, only = backend.host, cutoff, None
        never_completed = ('connected and not completed within %d s; '
                           'completed by reconcile (the host holds the '
                           'connection)' % max_age)
    else:
        cutoff, volumes_cutoff = cleanup.until, cleanup.volumes_until
        export_host, only = cleanup.host, cleanup.resource_id
        never_completed = ('connected and not completed; completed by a '
                           'workers cleanup (the host holds the '
                           'connection)')
    foreign = export_host != backend.host
    with db_api.reader() as session:
        attachments, volumes = _stale(session, export_host,
                                      backend.backend_id, cutoff,
                                      volumes_cutoff)
        attachments = [(rules.Attachment(
            id=a.id, attach_status=a.attach_status,
            connection_info=a.connection_info),
            db_volumes.summary(v)) for a, v in attachments
            if only in (None, v.id)]
        volumes = [(dict(db_volumes.summary(v),
                         pending_size=v.pending_size), v.updated_at)
                   for v in volumes if only in (None, v.id)]
    changes = []
    exports = None      # what the backend exports now (read when needed)
    for attachment, volume in attachments:
        attachment_id, status = attachment.id, attachment.attach_status
        if attachment_id in busy:
            continue
        if rules.half_connected(attachment):
            change = _connect_interrupted(backend, attachment_id, volume,
                                          remove_export=not foreign)
        elif status == states.ATTACH_ATTACHING:
            change = _never_completed(backend, attachment_id, volume,
                                      never_completed)
        elif foreign:
            # a disconnect or a takeover acts on the member's target
            continue
        elif status == states.ATTACHED:
            change = _takeover_interrupted(backend, attachment_id, volume)
        elif status in (states.ATTACH_DETACHING, states.ERROR_DETACHING):
            change = _finish_disconnect(backend, attachment_id, volume,
                                        status)
        elif status == states.ERROR_ATTACHING:
            if exports is None:
                exports = set(backend.driver.list_exports())
            if attachment_id not in exports:
                continue
            change = _failed_connect_export(backend, attachment_id, volume)
        else:
            continue
        if change:
            changes.append(change)
    for volume, updated_at in volumes:
        if volume['id'] in busy:
            continue
        # the other members of a cluster reconcile the same volumes
        if not db_api.run_writer(db_volumes.claim_stale, volume['id'],
                                 volume['status'], updated_at):
            continue
        change = _volume(backend, volume)
        if change:
            changes.append(change)
    if volumes_cutoff is not None:
        changes.extend(_snapshots(backend, volumes_cutoff, busy, only))
    if cleanup is None:
        # (volumes migrating to another backend: their own rules)
        changes.extend(migration.reconcile(backend, max_age, busy))
    return changes


def clean_up(backend, cluster_name, service_host, until, resource_id,
             busy, down_time, reconcile_after):
    """POST /workers/cleanup on this service: ``run`` for what volume
    service ``service_host`` (this one, or a member of cluster
    ``cluster_name`` that is down) left in a transition before ``until``.
    The backend's volumes and snapshots are settled up to ``until`` too
    unless another member is up, which may be working on them: then only
    those unchanged for ``reconcile_after`` seconds, as always."""
    volumes_until = until
    if cluster_name:
        with db_api.reader() as session:
            others = [m.host for m in db_services.backend_liveness(
                session, cluster_name, constants.VOLUME_BINARY)
                if m.host not in (backend.host, service_host) and
                db_services.is_up(m.heartbeat_at, down_time)]
        if others:
            volumes_until = min(until, models.utcnow() - datetime.timedelta(
                seconds=reconcile_after))
    return run(backend, None, busy, cleanup=Cleanup(
        service_host, until, volumes_until, resource_id))


def _snapshots(backend, cutoff, busy, only=None):
    """Snapshots of this backend's volumes left ``creating`` or
    ``deleting`` (unchanged since ``cutoff``): rolled forward, each by
    the member that claims it."""
    with db_api.reader() as session:
        found = [(db_snapshots.summary(s, host), s.updated_at)
                 for s, host in db_snapshots.stale(
                     session, backend.backend_id,
                     (states.CREATING, states.DELETING, states.RESTORING,
                      states.MANAGING, states.UNMANAGING), cutoff)]
    changes = []
    for snapshot, updated_at in found:
        if snapshot['id'] in busy or only not in (None, snapshot['id']):
            continue
        if not db_api.run_writer(db_snapshots.claim_stale, snapshot['id'],
                                 snapshot['status'], updated_at):
            continue
        before = snapshot['status']
        if before == states.RESTORING:
            change = _restoring_left(snapshot)
            if change:
                changes.append(change)
            continue
        if before == states.CREATING:
            backend.roll_forward.create_snapshot(snapshot)
        elif before == states.MANAGING:
            backend.roll_forward.manage_existing_snapshot(snapshot)
        elif before == states.UNMANAGING:
            backend.roll_forward.unmanage_snapshot(snapshot)
        else:
            backend.roll_forward.delete_snapshot(snapshot)
        with db_api.reader() as session:
            try:
                after = db_snapshots.get(session, snapshot['id']).status
            except exception.SnapshotNotFound:
                after = states.DELETED
        LOG.warning('reconcile: snapshot %s: %s -> %s (%s rolled forward)',
                    snapshot['id'], before, after,
                    {states.CREATING: 'create', states.MANAGING: 'manage',
                     states.UNMANAGING: 'unmanage'}.get(before, 'delete'))
        changes.append('snapshot %s: %s -> %s' % (snapshot['id'], before,
                                                  after))
    return changes


def _restoring_left(snapshot):
    """A snapshot ``restoring`` whose volume is no longer reverting (an
    operator reset the volume's status meanwhile): available again.  One
    whose volume is reverting is the volume's rule's."""
    def _end(session):
        try:
            volume = db_volumes.get(session, snapshot['volume_id'])
        except exception.VolumeNotFound:
            volume = None
        if volume is not None and volume.status == states.REVERTING:
            return False
        try:
            db_snapshots.transition(session, snapshot['id'], 'revert_ended')
        except (exception.InvalidTransition, exception.SnapshotNotFound):
            return False
        return True

    if not db_api.run_writer(_end):
        return None
    LOG.warning('reconcile: snapshot %s: restoring -> available (its volume '
                'is no longer reverting)', snapshot['id'])
    return 'snapshot %s: restoring -> available' % snapshot['id']


def _connect_interrupted(backend, attachment_id, volume,
                         remove_export=True):
    if remove_export:
        backend.driver.remove_export(volume, None, attachment_id, False)
    reason = ('connect interrupted (the volume service stopped before it '
              'finished); delete the attachment or connect again')
    settled = _settle_attaching(attachment_id, volume, False,
                                'reconcile_abandon',
                                {'status_reason': reason}, reason)
    if settled is None:
        return None
    status, _attachment = settled
    LOG.warning('reconcile: attachment %s of volume %s: attaching -> '
                'error_attaching (%s); volume %s', attachment_id,
                volume['id'], reason, status)
    return 'attachment %s: attaching -> error_attaching' % attachment_id


def _never_completed(backend, attachment_id, volume, reason):
    settled = _settle_attaching(attachment_id, volume, True,
                                'reconcile_complete',
                                {'attach_time': models.utcnow()}, reason)
    if settled is None:
        return None
    status, attachment = settled
    LOG.warning('reconcile: attachment %s of volume %s: attaching -> '
                'attached (%s); volume %s', attachment_id, volume['id'],
                reason, status)
    # what os-complete would have said (a late one finds it attached)
    notify.info(cl_context.get_admin_context(), backend.host,
                'volume.attach.end',
                notify.attachment_payload(
                    dict(volume, status=status),
                    dict(attachment, attach_status=states.ATTACHED)))
    return 'attachment %s: attaching -> attached' % attachment_id


def _failed_connect_export(backend, attachment_id, volume):
    """An ``error_attaching`` attachment whose export runs here: its
    connect finished on this service after the API had given up waiting
    for the answer (the API node lost the bus) and told the caller it
    failed, so no host has its connection.  The export is removed only
    while the attachment is still ``error_attaching``: read under the
    volume's lock, then the removal (after that commit: the transaction
    may run again), then read again.  A connect again moves the
    attachment on under that lock before it makes an export; one that
    came in between and connected through this service meanwhile (its
    export may be the one removed) has its export made again."""
    seen = db_api.run_writer(_error_attaching, volume['id'], attachment_id)
    if seen is None:
        return None
    backend.driver.remove_export(volume, None, attachment_id, False)
    _export_back_if_moved_on(backend, attachment_id, volume, seen)
    LOG.warning('reconcile: attachment %s of volume %s: error_attaching '
                'with an export here (its connect ended after the caller '
                'was told it failed); export removed', attachment_id,
                volume['id'])
    return 'attachment %s: export of error_attaching removed' % (
        attachment_id)


def _error_attaching(session, volume_id, attachment_id):
    """The attachment's ``updated_at`` when it is ``error_attaching``
    under its volume's lock (taken here), else None."""
    current = db_attachments.locked(session, volume_id, attachment_id)
    if current is None or current.attach_status != states.ERROR_ATTACHING:
        return None
    return current.updated_at


def _export_back_if_moved_on(backend, attachment_id, volume, seen):
    """After an ``error_attaching`` attachment's export was removed
    (``_failed_connect_export``): if a connect again moved it on since
    it was read (``updated_at`` ``seen``) and recorded a connection
    through this service, its export is made again."""
    with db_api.reader() as session:
        try:
            current = db_attachments.get(session, attachment_id)
        except exception.NotFound:
            return
        if current.attach_status == states.ERROR_ATTACHING and \
                current.updated_at == seen:
            return
        # (one detaching keeps no export made again under it, as in
        # ``reconcile_exports``)
        if current.export_host != backend.host or \
                not current.connection_info or \
                current.attach_status not in (states.ATTACH_ATTACHING,
                                              states.ATTACHED):
            LOG.warning('reconcile: attachment %s moved on (%s) while its '
                        'export was removed; not exported here',
                        attachment_id, current.attach_status)
            return
        remake = (flows.with_qos(session, volume), current.attach_mode,
                  dict(current.connection_info), current.connector)
    LOG.warning('reconcile: attachment %s was connected again while its '
                'export was removed; making it again', attachment_id)
    if not backend.driver.ensure_export(remake[0], attachment_id,
                                        *remake[1:]):
        LOG.error('reconcile: could not restore the export of attachment '
                  '%s of volume %s', attachment_id, volume['id'])


def _settle_attaching(attachment_id, volume, connected, change, values,
                      reason):
    """Apply ``change`` to an ``attaching`` attachment (with connection
    info or not, as ``connected`` says) under the volume's lock, which
    recording a connection also takes; returns the volume's status and
    the attachment's fields, or None when it moved on meanwhile."""
    def _settle(session):
        current = db_attachments.locked(session, volume['id'],
                                        attachment_id)
        if current is None or \
                current.attach_status != states.ATTACH_ATTACHING or \
                bool(current.connection_info) != connected:
            return None
        written = values
        if current.attach_time:
            written = dict(values, attach_time=current.attach_time)
        fields = {k: getattr(current, k) for k in (
            'id', 'instance_uuid', 'attached_host', 'attach_mode')}
        db_attachments.transition(session, attachment_id, change,
                                  values=written, reason=reason)
        return (db_attachments.sync_volume_status(session, volume['id']),
                fields)

    return db_api.run_writer(_settle)


def _takeover_interrupted(backend, attachment_id, volume):
    """A takeover's mark older than two RPC waits (the API waits for the
    cut and then for the promote) and older than ``reconcile_after``: the
    request that set it is gone."""
    cutoff = models.utcnow() - datetime.timedelta(
        seconds=2 * backend.rpc_timeout)
    with backend.takeover_lock(attachment_id):
        with db_api.reader() as session:
            try:
                attachment = db_attachments.get(session, attachment_id)
            except exception.NotFound:
                return None
            if attachment.operation != states.TAKING_OVER or \
                    (attachment.updated_at or cutoff) > cutoff:
                return None
            connector = dict(attachment.connector or {})
            shared = db_attachments.shares_host_connection(
                session, attachment, backend.host)
            volume = flows.with_qos(session, volume)
        status = promote_flow.restore_mode(
            backend.driver, volume, attachment_id, connector, shared,
            'takeover interrupted')
    LOG.warning('reconcile: attachment %s of volume %s: takeover '
                'interrupted; export made again %s (%s)', attachment_id,
                volume['id'], attachment.attach_mode, status)
    return 'attachment %s: takeover interrupted -> %s' % (
        attachment_id, status)


def _finish_disconnect(backend, attachment_id, volume, status):
    with db_api.reader() as session:
        attachment = db_attachments.get(session, attachment_id)
        connector = attachment.connector
        shared = db_attachments.shares_host_connection(
            session, attachment, backend.host)
    try:
        if connector:
            backend.driver.terminate_connection(volume, connector,
                                                attachment_id)
            backend.driver.remove_export(volume, connector, attachment_id,
                                         shared)
    except Exception as e:
        reason = 'disconnect retried by reconcile, failed: %s' % e
        if db_api.run_writer(db_attachments.record_failure, attachment_id,
                             'disconnect_retry_failed', reason,
                             volume['id']) is None:
            return None
        LOG.error('reconcile: attachment %s: %s', attachment_id, reason)
        return 'attachment %s: %s -> error_detaching (%s)' % (
            attachment_id, status, e)

    def _record(session):
        try:
            return db_attachments.apply_event(
                session, volume['id'], attachment_id, 'disconnect_retried')
        except (exception.InvalidTransition, exception.AttachmentNotFound):
            return None

    volume_status = db_api.run_writer(_record)
    if volume_status is None:
        return None
    LOG.warning('reconcile: attachment %s of volume %s: %s -> detached '
                '(disconnect rolled forward); volume %s', attachment_id,
                volume['id'], status, volume_status)
    return 'attachment %s: %s -> detached' % (attachment_id, status)


def _status(volume_id):
    with db_api.reader() as session:
        try:
            return db_volumes.get(session, volume_id).status
        except exception.VolumeNotFound:
            return None


def _volume(backend, volume):
    status = volume['status']
    if status == states.CREATING:
        before = _status(volume['id'])
        backend.roll_forward.create_volume(volume)
        after = _status(volume['id'])
        why = 'create rolled forward'
    elif status == states.DELETING:
        before = status
        backend.roll_forward.delete_volume(volume)
        after = _status(volume['id']) or states.DELETED
        why = 'delete rolled forward'
    elif status in (states.MANAGING, states.UNMANAGING):
        before = status
        if status == states.MANAGING:
            backend.roll_forward.manage_existing(volume)
        else:
            backend.roll_forward.unmanage_volume(volume)
        after = _status(volume['id']) or states.DELETED
        why = '%s rolled forward' % (
            'manage' if status == states.MANAGING else 'unmanage')
    elif status == states.DOWNLOADING:
        before = status
        after = _download_interrupted(backend, volume)
        why = 'image download interrupted; storage removed'
    elif status == states.UPLOADING:
        before = status
        after = _upload_interrupted(backend, volume)
        why = 'upload to an image interrupted'
    elif status == states.REVERTING:
        before = status
        after = _revert_interrupted(volume)
        why = ('revert to a snapshot interrupted; what the volume holds '
               'is not known')
    elif status != states.EXTENDING:
        # growing while in use (``begin_grow``): the status stays
        return _grow_interrupted(volume)
    else:
        before = status
        after = _extend_interrupted(volume)
        why = 'extend interrupted; size stays %d GiB' % volume['size']
    if after == before:
        return None
    LOG.warning('reconcile: volume %s: %s -> %s (%s)', volume['id'], before,
                after, why)
    return 'volume %s: %s -> %s (%s)' % (volume['id'], before, after, why)


def _download_interrupted(backend, volume):
    """The image was being written when the service stopped: what is in
    the storage is part of it.  The volume becomes error without
    storage (the owner deletes it and creates it again); the image
    file it was downloaded into, if any, is removed."""
    backend.driver.delete_volume(volume)
    image_mod.remove_conversion_files(backend.conversion_dir,
                                      image_mod.DOWNLOAD, volume['id'])
    return db_api.run_writer(
        _interrupted, volume, 'download_interrupted', states.DOWNLOADING,
        states.ERROR, EVENT_DOWNLOAD_INTERRUPTED,
        'create volume from image (or re-image it): interrupted by a '
        'restart of the volume service; its storage is removed: '
        'delete the volume and create it again, or re-image it')


def _interrupted(session, volume, event, before, after, event_id, detail):
    """``event`` on the volume with its user message: ``after``, or
    ``before`` when it moved on meanwhile (nothing written)."""
    try:
        db_volumes.transition(session, volume['id'], event)
    except (exception.InvalidTransition, exception.VolumeNotFound):
        return before
    db_messages.create(session, volume['project_id'], event_id, detail,
                       resource_type='VOLUME', resource_uuid=volume['id'])
    return after


def _upload_interrupted(backend, volume):
    """The copy into an image stopped with the service: the volume is
    what its attachments make it again; the image, which cannot be
    filled now, stays queued in Glance for its owner to delete; the
    file the volume was being copied into is removed."""
    image_mod.remove_conversion_files(backend.conversion_dir,
                                      image_mod.UPLOAD, volume['id'])
    after = image_api.end_upload(volume['id'])
    if after is None:
        return states.UPLOADING
    db_api.run_writer(
        db_messages.create, volume['project_id'], EVENT_UPLOAD_INTERRUPTED,
        'upload volume to image: interrupted by a restart of the '
        'volume service; the image stays queued in Glance, delete it '
        'and upload again', resource_type='VOLUME',
        resource_uuid=volume['id'])
    return after


def _revert_interrupted(volume):
    """The revert stopped with the service: the volume is ``error`` (the
    file driver's data is whole, old or new; RBD's may be a mix), its
    snapshot ``available`` again."""
    def message(session):
        db_messages.create(
            session, volume['project_id'], EVENT_REVERT_INTERRUPTED,
            'revert volume to snapshot: interrupted by a restart of the '
            'volume service; what the volume holds is not known: reset '
            'its status and revert again, or delete it',
            resource_type='VOLUME', resource_uuid=volume['id'])
    if not revert_api.end_revert(volume['id'], None, 'revert_interrupted',
                                 message):
        return states.REVERTING
    return states.ERROR


def _grow_interrupted(volume):
    """An extend in use (3.42) stopped with the service: the recorded
    size stands (the storage may be larger, as after an interrupted
    extend) and a delete is no longer refused."""
    def _end(session):
        if not db_volumes.end_grow(session, volume['id'],
                                   volume['pending_size'], False):
            return False
        db_messages.create(
            session, volume['project_id'], EVENT_EXTEND_INTERRUPTED,
            'extend volume: interrupted by a restart of the volume '
            'service; the size stays %d GiB, extend again' % volume['size'],
            resource_type='VOLUME', resource_uuid=volume['id'])
        return True

    if not db_api.run_writer(_end):
        return None
    why = ('extend in use to %d GiB interrupted; size stays %d GiB'
           % (volume['pending_size'], volume['size']))
    LOG.warning('reconcile: volume %s: %s', volume['id'], why)
    return 'volume %s: %s (%s)' % (volume['id'], volume['status'], why)


def _extend_interrupted(volume):
    return db_api.run_writer(
        _interrupted, volume, 'extend_interrupted', states.EXTENDING,
        states.AVAILABLE, EVENT_EXTEND_INTERRUPTED,
        'extend volume: interrupted by a restart of the volume '
        'service; the size stays %d GiB, extend again' % volume['size'])
