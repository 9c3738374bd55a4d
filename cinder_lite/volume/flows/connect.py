"""Manager-side connect: export the volume to the connector's host,
initialize the connection with the attachment's mode, record the
connection info.  A failure after the export removes it again (unless
another attachment of the host shares it) and leaves the attachment in
``error_attaching`` with the reason."""
import logging

from taskflow.patterns import linear_flow
from taskflow import task

from cinder_lite.common import credentials
from cinder_lite.common import exception
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.volume import flows

LOG = logging.getLogger(__name__)


def connection_info(driver_info, attachment_id, mode, qos_specs=None):
    """Cinder's flattened connection info: the driver's ``data`` keys at
    the top level with the common keys; ``access_mode`` is always the
    attachment's mode; ``qos_specs`` the front-end QoS specs of the
    volume's type (None without), which the host applies.  Its secrets
    are masked (``credentials.conceal``)."""
    info = dict(driver_info.get('data') or {})
    info.update(driver_volume_type=driver_info['driver_volume_type'],
                attachment_id=attachment_id, access_mode=mode,
                encrypted=False, cacheable=False, qos_specs=qos_specs,
                enforce_multipath=False)
    # the target's credential is made again where it is needed: what is
    # recorded and sent over the bus has it masked
    return credentials.conceal(info)


class CreateExport(task.Task):
    def execute(self, driver, volume, connector, mode, attachment_id):
        driver.create_export(volume, connector, mode, attachment_id)

    def revert(self, driver, volume, connector, attachment_id, **kwargs):
        LOG.warning('removing the export of volume %s for attachment %s '
                    'after a failed connect', volume['id'], attachment_id)
        driver.remove_export(volume, connector, attachment_id,
                             _shared(driver, volume, connector,
                                     attachment_id))


def _shared(driver, volume, connector, attachment_id):
    """Whether other attachments of the volume hold the host connection
    of ``connector`` through this service's export now (read when a
    failed connect removes its export: only then is it needed).  Taken
    as shared when the database cannot say: an export left behind is
    pruned by reconcile, one removed under another attachment is not
    given back."""
    try:
        with db_api.reader() as session:
            return bool(db_attachments.connections_on_host(
                session, volume['id'], connector.get('host'),
                exclude=attachment_id, export_host=driver.host))
    except Exception:
        LOG.exception('attachment %s: cannot tell whether the host '
                      'connection is shared; the export stays',
                      attachment_id)
        return True


class InitializeConnection(task.Task):
    default_provides = 'connection_info'

    def execute(self, driver, volume, connector, mode, attachment_id):
        info = driver.initialize_connection(volume, connector, mode,
                                            attachment_id)
        return connection_info(info, attachment_id, mode,
                               volume.get('frontend_qos_specs'))

    def revert(self, driver, volume, connector, attachment_id, result,
               **kwargs):
        if isinstance(result, dict):
            driver.terminate_connection(volume, connector, attachment_id)


class RecordConnection(task.Task):
    # what it wrote on the attachment besides its status, and the other
    # attachments sharing its host connection: the API shows the
    # attachment from it (volume RPC 1.8) instead of reading it again
    default_provides = 'answer'

    def execute(self, driver, volume, attachment_id, connector,
                connection_info):
        # (the export exists by now; only this transaction runs again
        # on a deadlock)
        def _record(session):
            # ('connected' keeps the attachment attaching: the volume's
            # status stays what the API derived when it started the
            # connect; the read takes the volume's lock)
            current, fenced, sharing = db_attachments.connecting(
                session, attachment_id, volume['id'],
                connector.get('host'), driver.host,
                lock=db_attachments.volume_lock(volume['id'],
                                                db_attachments.ATTACHABLE))
            if fenced:
                # fenced while this connect was under way: the revert
                # removes the export made for it
                raise exception.HostFenced(host=current.attached_host,
                                           volume_id=volume['id'])
            recorded = {'connection_info': connection_info,
                        # the export is on this volume service,
                        # whichever the API meant: the disconnect
                        # must come here
                        'export_host': driver.host,
                        'attach_time': db_attachments.models.utcnow()}
            db_attachments.transition(
                session, attachment_id, 'connected',
                values=recorded,
                reason='connected (%s)'
                       % connection_info['driver_volume_type'],
                current=current)
            return recorded, sharing

        recorded, sharing = db_api.run_writer(_record)
        LOG.info('attachment %s of volume %s: connected (%s, %s)',
                 attachment_id, volume['id'],
                 connection_info['driver_volume_type'],
                 connection_info['access_mode'])
        return {'recorded': dict(
                    recorded,
                    attach_time=recorded['attach_time'].isoformat()),
                'sharing': sharing}


def build():
    return linear_flow.Flow('volume_connect').add(
        CreateExport(), InitializeConnection(), RecordConnection())


def run(driver, volume, attachment_id, connector, mode):
    """Returns {'recorded': what was recorded on the attachment besides
    its status (connection_info, export_host, attach_time in ISO 8601),
    'sharing': the ids of the other attachments sharing its host
    connection then}."""
    storage = flows.run('volume_connect', build, {
        'driver': driver, 'volume': volume, 'attachment_id': attachment_id,
        'connector': connector, 'mode': mode})
    return storage.fetch('answer')
