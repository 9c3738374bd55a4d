"""The service layer of the revert action (3.40): a volume written back
from its latest snapshot, on its backend.

The checks are Cinder's, in its order: the volume has snapshots, the one
named is the latest, its size is the volume's (a volume extended since
cannot go back), then the volume is ``available`` and the snapshot
``available``.  They are decided again under the volume's row lock (the
lock a snapshot create and an attachment change take), where the volume
goes ``reverting`` and the snapshot ``restoring`` in one transaction;
then the revert is cast to the volume's backend, which writes the data
and records both ``available`` again (or the volume ``error`` with a user
message).  A cast that cannot be sent gives both their status back; a
volume service that stops mid-revert leaves them to reconciliation
(``error`` with a message, the snapshot ``available``).
"""
import logging

from cinder_lite.common import exception
from cinder_lite.common import notify
from cinder_lite.common import policy
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import snapshots as db_snapshots
from cinder_lite.db import volumes as db_volumes

LOG = logging.getLogger(__name__)

# the volume RPC API version that reverts volumes to snapshots
REVERT_RPC = '1.11'


def _cannot(volume_id, snapshot_id, why):
    return ("Can't revert volume %s to its latest snapshot %s. %s"
            % (volume_id, snapshot_id, why))


def check_latest(volume, latest, snapshot_id):
    """Cinder's 400s (Invalid, worded as Cinder's handler words them):
    no snapshot, not the latest one, a size that is not the volume's."""
    if latest is None:
        raise exception.Invalid(
            "Volume %s doesn't have any snapshots." % volume.id)
    if snapshot_id is None or snapshot_id != latest.id:
        raise exception.Invalid(
            'Specified snapshot %s is None or not the latest one of '
            'volume %s.' % (snapshot_id, volume.id))
    if volume.size != latest.volume_size:
        raise exception.Invalid(_cannot(
            volume.id, snapshot_id,
            'The volume size must be equal to the snapshot size.'))


class RevertService:

    def __init__(self, conf, attachments):
        self.conf = conf
        self.attachments = attachments
        self.volume_rpcapi = attachments.volume_rpcapi

    def revert(self, context, volume_id, snapshot_id):
        """Start reverting ``volume_id`` to its latest snapshot,
        ``snapshot_id``; Invalid (400) or Conflict (409) as Cinder
        answers, nothing changed."""
        scope = None if context.is_admin else context.project_id
        with db_api.reader() as session:
            volume = db_volumes.get(session, volume_id, scope)
            policy.authorize(context, policy.REVERT,
                             {'project_id': volume.project_id})
            check_latest(volume, db_snapshots.latest_of_volume(
                session, volume.id), snapshot_id)
        self.volume_rpcapi.require(REVERT_RPC,
                                   'reverting a volume to a snapshot')
        # a backend that is down answers now, not after the statuses moved
        self.attachments.check_backend(volume)

        # (run again from its start on a certification failure: the RPC
        # comes after the commit)
        def _start(session):
            locked = db_attachments.lock_volume(session, volume.id)
            # decided again under the lock: a snapshot made since, an
            # extend, an attachment
            latest = db_snapshots.latest_of_volume(session, volume.id)
            check_latest(locked, latest, snapshot_id)
            self._check_volume(session, locked, snapshot_id)
            db_volumes.transition(session, volume.id, 'revert')
            snapshot = db_snapshots.lock(session, latest.id)
            try:
                db_snapshots.transition(session, snapshot.id, 'revert')
            except exception.InvalidTransition:
                raise exception.Conflict(_cannot(
                    volume.id, snapshot_id,
                    "Snapshot's status must be 'available'.")) from None
            volume_summary = db_volumes.summary(
                db_volumes.get(session, volume.id))
            snapshot_summary = db_snapshots.summary(
                db_snapshots.get(session, snapshot.id), locked.host)
            return locked, volume_summary, snapshot_summary
        locked, volume_summary, snapshot_summary = db_api.run_writer(_start)
        LOG.info('volume %s: available -> reverting to snapshot %s',
                 volume.id, snapshot_id)
        notify.info(context, self.conf.host, 'volume.revert.start',
                    notify.volume_payload(volume_summary))
        try:
            self.volume_rpcapi.revert_to_snapshot(
                context, locked.host, volume_summary, snapshot_summary)
        except Exception:
            LOG.warning('volume %s: the revert to snapshot %s could not be '
                        'sent; both are available again', volume.id,
                        snapshot_id)
            end_revert(volume.id, snapshot_id, 'revert_unsent')
            raise

    @staticmethod
    def _check_volume(session, volume, snapshot_id):
        """Cinder's 409 for a volume that is not ``available``; here also
        for one that still has attachments (a failed connect may hold an
        export through which a host would see its data change)."""
        if volume.status != states.AVAILABLE:
            raise exception.Conflict(_cannot(
                volume.id, snapshot_id,
                "Volume's status must be 'available'."))
        live = db_attachments.live_for_volume(session, volume.id)
        if live:
            raise exception.Conflict(_cannot(
                volume.id, snapshot_id,
                'The volume still has attachments (%s); delete them '
                'first.' % ', '.join('%s %s' % (a.id, a.attach_status)
                                     for a in live)))


def end_revert(volume_id, snapshot_id, change, also=None):
    """A revert ended (``change``: 'reverted', 'revert_unsent',
    'revert_failed' or 'revert_interrupted'): the volume moves out of
    ``reverting`` and its snapshot (``snapshot_id``; None: whichever of
    its snapshots is ``restoring``) back to ``available``, and
    ``also(session)`` runs (a user message), in one transaction.  False
    when the volume was no longer reverting (settled meanwhile)."""
    # (run again from its start on a certification failure: ``also``
    # writes to the database only)
    def _end(session):
        try:
            db_volumes.transition(session, volume_id, change)
        except (exception.InvalidTransition, exception.VolumeNotFound):
            return False
        ids = [snapshot_id] if snapshot_id else [
            s.id for s in db_snapshots.of_volume(session, volume_id)
            if s.status == states.RESTORING]
        for sid in ids:
            try:
                db_snapshots.transition(session, sid, 'revert_ended')
            except (exception.InvalidTransition,
                    exception.SnapshotNotFound):
                # reset by an operator meanwhile: theirs to say
                pass
        if also is not None:
            also(session)
        return True
    return db_api.run_writer(_end)
