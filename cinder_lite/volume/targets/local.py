"""The local target: a consumer on the same host opens the file."""


class LocalTarget:

    protocol = 'local'

    def __init__(self, conf, state_dir):
        self.conf = conf

    def create_export(self, path, volume_id, attachment_id, mode,
                      connector):
        pass

    def remove_export(self, attachment_id):
        pass

    def connection_data(self, path, volume_id, attachment_id, mode):
        return {'device_path': path, 'access_mode': mode}

    def exports(self):
        return {}

    def ensure_export(self, path, volume_id, attachment_id, mode,
                      connection_info, connector):
        return True

    def prune(self):
        pass

    def start(self):
        pass

    def stop(self):
        pass
