"""Manager-side promote of a takeover (os-takeover, RPC 1.4): replace the
export of a read-only attachment marked ``taking_over`` by a read-write
one, then record it -- only while the mark is there.

Each step has its revert: when the read-write export cannot be made, or
the attachment was settled by another request (reconcile, a forced
detach) before it could be recorded, ``ExportReadWrite`` makes the
export again in the mode the database records and ends the mark
(``restore_mode``; ``error_attaching`` if even that export fails).
"""
import logging

from taskflow.patterns import linear_flow
from taskflow import task
from taskflow.types import failure

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.volume import flows
from cinder_lite.volume.flows import connect as connect_flow
from cinder_lite.volume import rules

LOG = logging.getLogger(__name__)


class Settled(Exception):
    """The attachment stopped taking over before the promote was
    recorded (the manager answers InvalidInput)."""


def reexport(driver, volume, attachment_id, connector, shared, mode):
    """Replace the attachment's export by one of ``mode``; returns the
    connection info.  ``volume``: with its QoS specs (the manager's
    ``with_qos``)."""
    connector = dict(connector, mode=mode)
    driver.terminate_connection(volume, connector, attachment_id)
    driver.remove_export(volume, connector, attachment_id, shared)
    driver.create_export(volume, connector, mode, attachment_id)
    return connect_flow.connection_info(
        driver.initialize_connection(volume, connector, mode,
                                     attachment_id),
        attachment_id, mode, volume['frontend_qos_specs'])


def restore_mode(driver, volume, attachment_id, connector, shared, error):
    """After a takeover that did not finish (``error`` says why): make the
    attachment's export again in the mode its connector records (the one
    in the database), unless it still has that mode, and end the takeover;
    returns the attachment's status, or None when it is gone or
    detaching (the export made again is then removed).  If even that
    export fails, the attachment becomes ``error_attaching`` recorded
    read-write: a read-write export may be left, so it keeps counting as
    the writer until it is detached."""
    mode = rules.mode_to_restore(connector)
    remade = True
    try:
        if driver.export_mode(attachment_id) == mode:
            # the takeover stopped before touching the export: the host
            # keeps its sessions and its connection info
            values = {'operation': None}
            remade = False
        else:
            values = {'connection_info': reexport(
                driver, volume, attachment_id, connector, shared, mode),
                'operation': None}
        change, target = 'takeover_undone', states.ATTACHED
    except Exception as e:
        LOG.exception('attachment %s: the %s export could not be made '
                      'again', attachment_id, mode)
        values = {'attach_mode': rules.RW,
                  'status_reason': ('takeover failed (%s), and the %s '
                                    'export too: %s' % (
                                        error, mode, e))[:1024]}
        change, target = 'takeover_failed', states.ERROR_ATTACHING

    def _record(session):
        """None once recorded, else (why not, whether the export made
        again must go)."""
        try:
            db_attachments.apply_event(session, volume['id'],
                                       attachment_id, change, values=values)
        except exception.AttachmentNotFound:
            return 'detached meanwhile', True
        except exception.InvalidTransition:
            # detaching meanwhile: the detach removes the export, but its
            # removal may have run before the export above was made again
            # (a forced detach of a takeover that hung), and the host it
            # cut off would have a way back in (or a read-write export a
            # failed one left): removed here too (removing an export that
            # is gone does nothing)
            return 'being detached while its export was made again', remade
        return None

    # (the export is made by now: only the record runs again on a
    # deadlock, and the removal follows its commit)
    refused = db_api.run_writer(_record)
    if refused is None:
        return target
    why, remove = refused
    if not remove:
        return None
    LOG.warning('attachment %s: %s; removing the export made for it',
                attachment_id, why)
    driver.remove_export(volume, connector, attachment_id, shared)
    return None


class ExportReadWrite(task.Task):
    default_provides = 'connection_info'

    def execute(self, driver, volume, attachment_id, connector, shared):
        return reexport(driver, volume, attachment_id, connector, shared,
                        rules.TAKEOVER_MODE)

    def revert(self, driver, volume, attachment_id, connector, shared,
               result, flow_failures, **kwargs):
        if isinstance(result, failure.Failure):
            LOG.error('attachment %s: read-write export for the takeover '
                      'failed: %s', attachment_id, result.exception)
            error = result.exception
        else:
            LOG.warning('attachment %s: no longer taking over; its '
                        'read-write export is undone', attachment_id)
            error = 'settled by another request'
        restore_mode(driver, volume, attachment_id, connector, shared,
                     error)


class RecordPromotion(task.Task):
    """The read-write export, recorded if the attachment is still
    attached and taking over; Settled otherwise."""

    def execute(self, volume, attachment_id, connection_info, connector):
        # (the export is made by now; only this transaction runs again
        # on a deadlock, and Settled ends it as itself)
        def _record(session):
            current = db_attachments.locked(session, volume['id'],
                                            attachment_id)
            if current is None or \
                    current.attach_status != states.ATTACHED or \
                    current.operation != states.TAKING_OVER:
                raise Settled('attachment %s stopped taking over '
                              'meanwhile' % attachment_id)
            db_attachments.transition(
                session, attachment_id, 'promote',
                values={'attach_mode': rules.TAKEOVER_MODE,
                        'connection_info': connection_info,
                        'connector': dict(connector,
                                          mode=rules.TAKEOVER_MODE),
                        'operation': None},
                reason='took over as the writer', current=current)

        db_api.run_writer(_record)


def build():
    return linear_flow.Flow('volume_promote').add(
        ExportReadWrite(), RecordPromotion())


def run(driver, volume, attachment_id, connector, shared):
    """Promote; returns the read-write connection info.  Raises Settled,
    or what the export raised, after the reverts."""
    storage = flows.run('volume_promote', build, {
        'driver': driver, 'volume': volume, 'attachment_id': attachment_id,
        'connector': connector, 'shared': shared})
    return storage.fetch('connection_info')
