"""The service layer behind ``/qos-specs``: QoS specs, their keys, and
their association with volume types.  Who applies them is in
``cinder_lite.common.qos`` (and doc/source/qos.rst)."""
import logging

from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.common import qos
from cinder_lite.db import api as db_api
from cinder_lite.db import qos_specs as db_qos

LOG = logging.getLogger(__name__)


def _check_consumer(consumer):
    if consumer not in qos.CONSUMERS:
        raise exception.InvalidQoSSpecs(
            reason='Valid consumer of QoS specs are: %s'
                   % ', '.join(qos.CONSUMERS))


def _check_specs(specs):
    """Keys are strings of 1 to 255 characters, values strings of at
    most 255 or null (Cinder's rule)."""
    for key, value in specs.items():
        if not isinstance(key, str) or not 1 <= len(key) <= 255:
            raise exception.InvalidInput(
                reason='Key "%s" must be a string of 1 to 255 characters'
                       % str(key)[:64])
        if value is not None and (not isinstance(value, str)
                                  or len(value) > 255):
            raise exception.InvalidInput(
                reason='Value for key "%s" must be a string of at most '
                       '255 characters' % key)


_ABSENT = object()


def _split_consumer(specs):
    """(the consumer given, or _ABSENT; the other keys)."""
    specs = dict(specs)
    consumer = specs.pop('consumer', _ABSENT)
    return consumer, specs


class QosSpecsService:

    def __init__(self, conf):
        self.conf = conf

    def create(self, context, name, specs):
        """``specs``: the keys, ``consumer`` among them (default
        back-end)."""
        policy.authorize(context, policy.QOS_CREATE)
        _check_specs(specs)
        consumer, specs = _split_consumer(specs)
        if consumer is _ABSENT:
            consumer = qos.DEFAULT_CONSUMER
        _check_consumer(consumer)
        created = db_api.run_writer(db_qos.create, name, consumer, specs)
        LOG.info('QoS specs %s (%s, %s) created', created['id'], name,
                 consumer)
        return created

    def get(self, context, specs_id):
        policy.authorize(context, policy.QOS_GET)
        with db_api.reader() as session:
            return db_qos.get(session, specs_id)

    def list(self, context, filters, sort_keys, sort_dirs, limit, marker):
        policy.authorize(context, policy.QOS_GET_ALL)
        with db_api.reader() as session:
            return db_qos.list_specs(session, filters, sort_keys, sort_dirs,
                                     limit, marker)

    def set_keys(self, context, specs_id, specs):
        policy.authorize(context, policy.QOS_UPDATE)
        _check_specs(specs)
        consumer, specs = _split_consumer(specs)
        if consumer is _ABSENT:
            consumer = None
        else:
            _check_consumer(consumer)
        db_api.run_writer(db_qos.set_keys, specs_id, specs, consumer)
        LOG.info('QoS specs %s: set %s', specs_id,
                 ', '.join(sorted(specs) + (['consumer'] if consumer
                                            else [])))

    def delete_keys(self, context, specs_id, keys):
        policy.authorize(context, policy.QOS_DELETE)
        db_api.run_writer(db_qos.delete_keys, specs_id, keys)
        LOG.info('QoS specs %s: unset %s', specs_id, ', '.join(keys))

    def delete(self, context, specs_id, force=False):
        policy.authorize(context, policy.QOS_DELETE)
        db_api.run_writer(db_qos.delete, specs_id, force)
        LOG.info('QoS specs %s deleted%s', specs_id,
                 ' (force)' if force else '')

    def associations(self, context, specs_id):
        policy.authorize(context, policy.QOS_GET_ALL)
        with db_api.reader() as session:
            return [{'association_type': 'volume_type', 'name': name,
                     'id': type_id}
                    for type_id, name in db_qos.associations(session,
                                                             specs_id)]

    def associate(self, context, specs_id, type_id):
        policy.authorize(context, policy.QOS_UPDATE)
        db_api.run_writer(db_qos.associate, specs_id, type_id)
        LOG.info('QoS specs %s associated with volume type %s', specs_id,
                 type_id)

    def disassociate(self, context, specs_id, type_id):
        policy.authorize(context, policy.QOS_UPDATE)
        db_api.run_writer(db_qos.disassociate, specs_id, type_id)
        LOG.info('QoS specs %s disassociated from volume type %s',
                 specs_id, type_id)

    def disassociate_all(self, context, specs_id):
        policy.authorize(context, policy.QOS_UPDATE)
        db_api.run_writer(db_qos.disassociate_all, specs_id)
        LOG.info('QoS specs %s disassociated from every volume type',
                 specs_id)
