"""A compute node of a namespace deployment (tests/harness/netns_cluster.py):
this process runs inside the node's network namespace, attaches volumes
through the API with cinder_lite's connector (over REST, from the node's
address) and reads and writes them over NBD, as an instance would.

The test drives it through its stdin and stdout, one JSON object a line
each way (no network between the test and the node):

* ``{"op": "attach", "volume_id": ...}`` -> ``{"attachment": {...}}``
  (reserve, connect, complete, open the device);
* ``{"op": "write", "attachment_id": ..., "blocks": N}`` starts a writer:
  block 0, 1, … N-1, 0, … of ``BLOCK`` bytes each, every one flushed, a
  new pattern each round; ``{"op": "progress"}`` -> for each writer
  ``{"writes": completed writes, "error": the error that stopped it or
  null}``; ``{"op": "stop", "attachment_id": ...}`` stops it;
* ``{"op": "verify", "attachment_id": ...}`` reads every block written
  back -> ``{"bad": [blocks whose bytes differ]}``;
* ``{"op": "detach", "attachment_id": ...}`` closes the device and
  deletes the attachment -> ``{"attachments": [...]}``.

A failed command answers ``{"error": "..."}``.  EOF on stdin detaches
nothing and exits (the test detaches what it means to)."""
import argparse
import json
import sys
import threading
import traceback
import uuid

from cinder_lite.connector import client
from cinder_lite.connector import host as host_connector
from tests.harness import util

BLOCK = 64 * 1024


class Writer:

    def __init__(self, attachment_id, device, blocks):
        self.attachment_id = attachment_id
        self.device = device
        self.blocks = blocks
        self.writes = 0
        self.error = None
        # block -> the seed of what it holds now (when its write returned)
        self.written = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name='writer-%s' % attachment_id)

    def start(self):
        self._thread.start()
        return self

    def _loop(self):
        n = 0
        try:
            while not self._stop.is_set():
                block = n % self.blocks
                seed = b'%s-%d' % (self.attachment_id.encode(), n)
                self.device.write(block * BLOCK, util.pattern(BLOCK, seed))
                self.device.flush()
                self.written[block] = seed
                self.writes = n = n + 1
        except Exception as e:
            self.error = '%s: %s' % (type(e).__name__, e)

    def stop(self):
        self._stop.set()
        self._thread.join(120)

    def verify(self):
        return [block for block, seed in sorted(self.written.items())
                if self.device.read(block * BLOCK, BLOCK)
                != util.pattern(BLOCK, seed)]


class Host:

    def __init__(self, endpoint, project, host, ip):
        transport = client.RestTransport(endpoint, project, timeout=120)
        transport.session.trust_env = False
        self.client = client.AttachClient(
            transport, host_connector.get_connector(host=host, ip=ip))
        self.devices = {}
        self.writers = {}

    def attach(self, volume_id, mode=None):
        attachment, device = self.client.attach_device(
            volume_id, str(uuid.uuid4()), mode=mode)
        self.devices[attachment['id']] = device
        return {'attachment': attachment}

    def write(self, attachment_id, blocks):
        self.writers[attachment_id] = Writer(
            attachment_id, self.devices[attachment_id], blocks).start()
        return {}

    def progress(self):
        return {'writers': {a: {'writes': w.writes, 'error': w.error}
                            for a, w in self.writers.items()}}

    def stop(self, attachment_id):
        self.writers[attachment_id].stop()
        return self.progress()

    def verify(self, attachment_id):
        return {'bad': self.writers[attachment_id].verify()}

    def detach(self, attachment_id):
        writer = self.writers.pop(attachment_id, None)
        if writer is not None:
            writer.stop()
        device = self.devices.pop(attachment_id)
        return {'attachments': self.client.detach(attachment_id, device)}


def serve(host, lines, out):
    for line in lines:
        request = json.loads(line)
        op = request.pop('op')
        try:
            reply = getattr(host, op)(**request)
        except Exception as e:
            reply = {'error': '%s: %s' % (type(e).__name__, e),
                     'trace': traceback.format_exc()}
        out.write(json.dumps(reply) + '\n')
        out.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--endpoint', required=True)
    parser.add_argument('--project', required=True)
    parser.add_argument('--host', required=True)
    parser.add_argument('--ip', required=True)
    args = parser.parse_args(argv)
    serve(Host(args.endpoint, args.project, args.host, args.ip),
          sys.stdin, sys.stdout)


if __name__ == '__main__':
    main()
