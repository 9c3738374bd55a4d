"""The volume manager: one per backend section, serving RPC as
``host@backend``.  Endpoints load the volume, run a flow, record the
outcome."""
import logging

from oslo_utils import importutils
import oslo_messaging as messaging

from cinder_lite.common import exception
from cinder_lite.common import states
from cinder_lite.db import api as db_api
from cinder_lite.db import messages as db_messages
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import conf as volume_conf
from cinder_lite.volume.flows import create as create_flow
from cinder_lite.volume.flows import delete as delete_flow
from cinder_lite.volume import rpcapi

LOG = logging.getLogger(__name__)

EVENT_CREATE_FAILED = 'VOLUME_VOLUME_002_002'
EVENT_DELETE_FAILED = 'VOLUME_VOLUME_003_002'


def volume_dict(volume):
    return {'id': volume.id, 'size': volume.size, 'host': volume.host,
            'project_id': volume.project_id,
            'multiattach': volume.multiattach}


class VolumeManager:

    target = messaging.Target(version=rpcapi.RPC_API_VERSION)

    def __init__(self, conf, node, section):
        self.conf = conf
        self.section = section
        self.host = '%s@%s' % (node, section)
        self.backend_conf = volume_conf.BackendConf(conf, section)
        self.backend_name = self.backend_conf.volume_backend_name or section
        driver_cls = importutils.import_class(self.backend_conf.volume_driver)
        self.driver = driver_cls(self.backend_conf, self.backend_name,
                                 self.host)
        self.service_uuid = None

    def init_host(self):
        self.driver.do_setup()
        self.driver.check_for_setup_error()

    def capabilities(self):
        return self.driver.get_volume_stats()

    # -- RPC endpoints -----------------------------------------------------
    def create_volume(self, ctxt, volume_id):
        try:
            with db_api.reader() as session:
                volume = volume_dict(db_volumes.get(session, volume_id))
        except exception.VolumeNotFound:
            LOG.warning('create of volume %s: it no longer exists',
                        volume_id)
            return
        try:
            create_flow.run(self.driver, volume, self.service_uuid,
                            self.capabilities().get('shared_targets'))
        except Exception as e:
            LOG.exception('volume %s: creating -> error', volume_id)
            self._record_failure(ctxt, volume, states.ERROR,
                                 (states.CREATING,), EVENT_CREATE_FAILED,
                                 'create volume: %s' % e)

    def delete_volume(self, ctxt, volume_id):
        try:
            with db_api.reader() as session:
                volume = volume_dict(db_volumes.get(session, volume_id))
        except exception.VolumeNotFound:
            return
        try:
            delete_flow.run(self.driver, volume)
        except Exception as e:
            LOG.exception('volume %s: deleting -> error_deleting', volume_id)
            self._record_failure(ctxt, volume, states.ERROR_DELETING,
                                 (states.DELETING,), EVENT_DELETE_FAILED,
                                 'delete volume: %s' % e)

    def get_capabilities(self, ctxt):
        caps = self.capabilities()
        caps['host'] = self.host
        return caps

    def _record_failure(self, ctxt, volume, target, expected, event, detail):
        with db_api.writer() as session:
            try:
                db_volumes.transition(session, volume['id'], target,
                                      expected=expected)
            except (exception.InvalidTransition, exception.VolumeNotFound):
                return
            db_messages.create(session, volume['project_id'], event, detail,
                               resource_type='VOLUME',
                               resource_uuid=volume['id'],
                               request_id=ctxt.request_id)
