"""A steady create load on a cluster's API, for the outage tests."""
import threading
import time

from tests.harness import stack
from tests.harness import cluster as cluster_mod


class CreateLoad:
    """Creates 1 GiB volumes one after the other until stopped (and lists
    volumes after each when ``also_list``).  ``results`` holds (status or
    None, body head, volume id when accepted, started, ended) per
    request, times from time.monotonic()."""

    def __init__(self, cluster, also_list=False):
        self.cluster = cluster
        self.also_list = also_list
        self.results = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        client = stack.Client(self.cluster.url, project=cluster_mod.PROJECT)
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                resp = client.post('/volumes', json={'volume': {'size': 1}})
                self.results.append((
                    resp.status_code, resp.text[:300],
                    resp.json().get('volume', {}).get('id')
                    if resp.status_code == 202 else None,
                    started, time.monotonic()))
                if self.also_list:
                    client.get('/volumes')
            except Exception as e:     # a timeout on the client side
                self.results.append((None, repr(e), None, started,
                                     time.monotonic()))
            time.sleep(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=120)
        assert not self._thread.is_alive(), 'the load did not stop'
