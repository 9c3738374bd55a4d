"""The local target: a consumer on the same host opens the file.  It
has nothing between the consumer and the file that could limit I/O, so
back-end QoS specs are not applied (front-end ones are the consumer's to
apply)."""
from cinder_lite.common import qos


class LocalTarget:

    protocol = 'local'

    def __init__(self, conf, state_dir):
        self.conf = conf

    def create_export(self, path, volume_id, attachment_id, mode,
                      connector, qos_specs=None):
        qos.not_applied(qos_specs, 'local export of attachment %s'
                        % attachment_id, 'the consumer opens the file '
                        'itself')

    def remove_export(self, attachment_id):
        pass

    def connection_data(self, path, volume_id, attachment_id, mode):
        return {'device_path': path, 'access_mode': mode}

    def exports(self):
        return {}

    def ensure_export(self, path, volume_id, attachment_id, mode,
                      connection_info, connector, qos_specs=None):
        return True

    def reach(self, volume_id, attachment_ids, initiators):
        # the consumer is this host and opens the file: nothing to cut
        return {'exports': [], 'acl': [], 'sessions': 0,
                'reachable': None}

    def prune(self):
        pass

    def start(self):
        pass

    def stop(self):
        pass
