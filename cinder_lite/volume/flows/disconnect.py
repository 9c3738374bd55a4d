"""Manager-side disconnect: terminate the connection, remove the host's
export unless another attachment of that host still shares it, record the
attachment detached."""
import logging

from taskflow.patterns import linear_flow
from taskflow import task

from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.volume import flows

LOG = logging.getLogger(__name__)


class TerminateConnection(task.Task):
    def execute(self, driver, volume, connector, attachment_id):
        if connector:
            driver.terminate_connection(volume, connector, attachment_id)


class RemoveExport(task.Task):
    """Cut the host off at the target and wait for the drain (the
    driver's ``remove_export``): a failure leaves the attachment
    ``error_detaching``, never detached while its writes may land."""

    def execute(self, driver, volume, connector, shared, attachment_id):
        if not connector:
            return
        drained = driver.remove_export(volume, connector, attachment_id,
                                       shared)
        if drained is not None:
            LOG.info('attachment %s of volume %s: cut off at the target, '
                     'drained in %.1f ms', attachment_id, volume['id'],
                     drained * 1000)


class RecordDetached(task.Task):
    def execute(self, volume, attachment_id, reason):
        # (the export is gone by now; only this transaction runs again on
        # a deadlock.  The lock writes the status the volume is most often
        # left in; the attachments read under it correct it otherwise)
        status = db_api.run_writer(
            db_attachments.apply_event, volume['id'], attachment_id,
            'disconnected',
            values={'status_reason': reason} if reason else None,
            becomes=db_attachments.DISCONNECTED)
        LOG.info('attachment %s of volume %s: detaching -> detached '
                 '(volume %s)', attachment_id, volume['id'], status)


def build():
    return linear_flow.Flow('volume_disconnect').add(
        TerminateConnection(), RemoveExport(), RecordDetached())


def run(driver, volume, attachment_id, connector, shared, reason=None):
    """``reason``: why the attachment ends (recorded with it), when
    someone other than its holder ended it."""
    flows.run('volume_disconnect', build, {
        'driver': driver, 'volume': volume, 'attachment_id': attachment_id,
        'connector': connector, 'shared': shared, 'reason': reason})
