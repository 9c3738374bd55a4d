"""Where the app runs: in this process, or as a cluster of processes."""
import os
import shutil
import tempfile
import uuid


class EmbeddedTarget:
    """The whole app in this process (tests/harness/stack.py) with backends ma
    and noma (no multiattach), on SQLite or a fresh server database."""

    def __init__(self, db='sqlite', workdir=None, log_file=True):
        from tests.harness import stack as stack_mod
        self.db = db
        self.workdir = workdir or tempfile.mkdtemp(prefix='cl-stateful-')
        self._own = workdir is None
        self.db_name = None
        sections = {}
        if db != 'sqlite':
            from tests.harness import cluster as cluster_mod
            self.db_name = 'cl_sf_%s' % uuid.uuid4().hex[:12]
            sections['database'] = {'connection': cluster_mod.create_database(
                db, self.db_name)}
        # tests/harness/stack.py's short timeouts make a backend look down
        # or an RPC time out when a loaded machine is slow for a few seconds;
        # no backend stops here, so a 503 must mean a real failure
        extra = {'service_down_time': 60, 'volume_rpc_timeout': 60}
        if log_file:
            extra['log_file'] = os.path.join(self.workdir, 'api.log')
        self.stack = stack_mod.Stack(
            os.path.join(self.workdir, 'state'),
            backends={'ma': {}, 'noma': {'multiattach': 'false'}},
            extra=extra, sections=sections)

    def start(self):
        self.stack.start()
        self.url = self.stack.url
        return self

    def stop(self):
        try:
            self.stack.stop()
        finally:
            if self.db_name:
                from tests.harness import cluster as cluster_mod
                cluster_mod.drop_database(self.db, self.db_name)
            if self._own:
                shutil.rmtree(self.workdir, ignore_errors=True)


class ClusterTarget:
    """API, scheduler and volume nodes ma and noma as processes over
    RabbitMQ on a fresh database (tests/harness/cluster.py)."""

    def __init__(self, db, api_workers=1):
        from tests.harness import cluster as cluster_mod
        # with a backup service, for the backups the plans take
        self.cluster = cluster_mod.Cluster(db, api_workers=api_workers,
                                           service_down_time=30,
                                           **cluster_mod.posix_backup())

    def start(self):
        self.cluster.start()
        self.url = self.cluster.url
        return self

    def stop(self):
        self.cluster.stop()
