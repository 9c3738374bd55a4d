"""Manager-side revert of a volume to its latest snapshot (3.40).

The volume is claimed first (still ``reverting``, its ``updated_at``
moved by compare-and-swap, as reconciliation claims it): a cast that
waited in the queue while its service was down finds the volume settled
by reconciliation and leaves the storage alone.  The driver writes the
snapshot's data over the volume's while ``updated_at`` is renewed (a long
copy is not taken for an abandoned one, here or on another member of the
cluster); then the volume and the snapshot are recorded ``available``.
A driver failure leaves the volume ``error`` (what its storage holds is
then the driver's to say: doc/source/snapshots.rst) with a user message, and
the snapshot ``available``.  There is nothing to undo: the one side
effect is the write.
"""
import logging

from cinder_lite.common import notify
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import messages as db_messages
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import flows
from cinder_lite.volume import revert_api

LOG = logging.getLogger(__name__)

# cinder_lite's own event (Cinder records no message for a failed
# revert): action 101 "revert to snapshot", detail 001 "an unknown error
# occurred" (doc/source/api-history.rst)
EVENT_REVERT_FAILED = 'VOLUME_VOLUME_101_001'


def claim(volume_id):
    """True when this service may write the volume: still reverting, and
    claimed now."""
    def _claim(session):
        row = db_volumes.lock(session, volume_id)
        return row.status == states.REVERTING and db_volumes.claim_stale(
            session, volume_id, states.REVERTING, row.updated_at)
    return db_api.run_writer(_claim)


def run(driver, volume, snapshot, ctxt, host):
    """Revert ``volume`` to ``snapshot`` (the summaries the API sent);
    returns the volume's status afterwards (None when it was not this
    service's to do).  ``volume.revert.end`` (from ``host``) tells how
    it ended, as Cinder's, also after a failure."""
    status = _run(driver, volume, snapshot, ctxt)
    if status is not None:
        notify.info(ctxt, host, 'volume.revert.end',
                    notify.volume_payload(dict(volume, status=status)))
    return status


def _run(driver, volume, snapshot, ctxt):
    try:
        claimed = claim(volume['id'])
    except Exception:
        LOG.exception('volume %s: revert to snapshot %s not claimed',
                      volume['id'], snapshot['id'])
        return None
    if not claimed:
        LOG.warning('volume %s is no longer reverting; the revert to '
                    'snapshot %s is not done', volume['id'], snapshot['id'])
        return None
    try:
        with flows.kept_fresh(volume['id'], states.REVERTING):
            driver.revert_to_snapshot(volume, snapshot)
    except Exception as e:
        LOG.exception('volume %s: reverting -> error: the revert to '
                      'snapshot %s failed', volume['id'], snapshot['id'])
        detail = ('revert volume to snapshot %s: %s; the snapshot is kept'
                  % (snapshot['id'], getattr(e, 'message', None) or e))

        def message(session):
            db_messages.create(session, volume['project_id'],
                               EVENT_REVERT_FAILED, detail,
                               resource_type='VOLUME',
                               resource_uuid=volume['id'],
                               request_id=getattr(ctxt, 'request_id', None))
        revert_api.end_revert(volume['id'], snapshot['id'],
                              'revert_failed', message)
        return states.ERROR
    if not revert_api.end_revert(volume['id'], snapshot['id'], 'reverted'):
        LOG.warning('volume %s: reverted to snapshot %s on the backend, '
                    'but it was settled meanwhile', volume['id'],
                    snapshot['id'])
        return None
    LOG.info('volume %s: reverting -> available (reverted to snapshot %s)',
             volume['id'], snapshot['id'])
    return states.AVAILABLE
