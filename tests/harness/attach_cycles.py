"""Clients cycling attachments of volumes of their own, as the outage
tests run them (tests/integration/test_attach_outages.py and
test_api_node_killed.py): create with a connector, os-complete, delete,
and after any answer but a 2xx, what a careful caller does (look for the
attachments its create left, by instance, and delete them).

``Cycler(deployment, n, volume_id, stop)`` is one such client (a
thread) on ``deployment.url``; it records every answer that was not a
2xx (``failures``), the attachments it was told of, those that vanished
before it deleted them (``lost``) and instances one create made two
attachments for (``duplicated``).  ``DOCUMENTED_503`` holds the words
of the 503s a client may be answered and what they mean.
"""
import re
import threading
import time
import uuid

import requests

from tests.harness import cluster as cluster_mod
from tests.harness import stack

V354 = {'OpenStack-API-Version': 'volume 3.54'}
# the 503s a client may get, and what they mean
DOCUMENTED_503 = (
    'The database is unavailable; retry later.',
    # a transaction still refused as a deadlock after db_max_retries
    # (a hot row on a multi-writer Galera cluster)
    'The database refused the change ',
    'no answer to ',                 # the volume service did not answer
    'the message bus did not take',  # the bus refused the call
    'no volume service',             # heartbeats not in yet after a restart
    'is down: its heartbeat is older',  # ... or late after the database
    'the database is unavailable; attachment',  # the connect's record
    # the volume service answered that its database is away
    'its database is unavailable; retry later',
)
LEFT = re.compile(r'attachment ([0-9a-f-]{36}) (is left|was settled)')


class Cycler(threading.Thread):

    def __init__(self, cluster, n, volume_id, stop):
        super().__init__(daemon=True, name='cycler-%d' % n)
        self.api = stack.Client(cluster.url, project=cluster_mod.PROJECT)
        self.volume_id = volume_id
        self.stop = stop
        self.connector = {'host': 'outage-%d' % n,
                          'ip': '127.0.0.%d' % (20 + n),
                          'initiator': 'iqn.2026-12.org.example:o-%d' % n,
                          'platform': 'x86_64', 'os_type': 'linux',
                          'multipath': False}
        # (status or exception, message) of every answer not 2xx
        self.failures = []
        self.known = set()        # attachments this client was told of
        self.deleted = set()      # ... and deleted (answered 200)
        self.lost = []
        # attachments a failed create left that its answer did not name;
        # instances one create made two attachments for
        self.unnamed = 0
        self.duplicated = []
        self.cycles = 0

    def request(self, method, path, **kw):
        try:
            resp = self.api.request(method, path, headers=V354, **kw)
        except requests.RequestException as e:
            self.failures.append(('exception', str(e)))
            return None
        if resp.status_code >= 300:
            try:
                body = resp.json()
                message = next(iter(body.values()))['message']
            except (ValueError, StopIteration, KeyError, TypeError,
                    AttributeError):
                message = resp.text
            self.failures.append((resp.status_code, message))
            for found in LEFT.finditer(message):
                self.known.add(found.group(1))
        return resp

    def delete(self, attachment_id):
        """Until the delete is answered 200 (or 404 after a try whose
        answer was lost)."""
        tried = False
        while True:
            resp = self.request('DELETE', '/attachments/%s' % attachment_id)
            if resp is not None and resp.status_code == 200:
                self.deleted.add(attachment_id)
                return
            if resp is not None and resp.status_code == 404:
                if not tried:
                    self.lost.append((attachment_id, 'delete: 404'))
                self.deleted.add(attachment_id)
                return
            if resp is not None and resp.status_code < 500 and \
                    resp.status_code not in (400, 409):
                self.lost.append((attachment_id, resp.text))
                return
            # (a try not answered, or one under way, may have deleted it)
            tried = tried or resp is None or resp.status_code in (409, 503)
            time.sleep(0.2)

    def made_for(self, instance):
        """The attachments of this client's volume for ``instance`` (what
        a caller whose create was not answered looks for)."""
        while True:
            resp = self.request('GET', '/attachments?volume_id=%s&'
                                'instance_id=%s' % (self.volume_id,
                                                    instance))
            if resp is not None and resp.status_code == 200:
                return [a['id'] for a in resp.json()['attachments']]
            time.sleep(0.2)

    def run(self):
        while not self.stop.is_set():
            instance = str(uuid.uuid4())
            resp = self.request('POST', '/attachments', json={
                'attachment': {'volume_uuid': self.volume_id,
                               'instance_uuid': instance,
                               'connector': dict(self.connector)}})
            if resp is None or resp.status_code != 200:
                # what the failed create left: named in the answer, or
                # found by the instance's id
                made = self.made_for(instance)
                if len(made) > 1:
                    self.duplicated.append((instance, made))
                unnamed = set(made) - self.known
                self.unnamed += len(unnamed)
                self.known |= set(made)
                for aid in self.known - self.deleted:
                    self.delete(aid)
                time.sleep(0.2)
                continue
            aid = resp.json()['attachment']['id']
            self.known.add(aid)
            while True:
                done = self.request('POST', '/attachments/%s/action' % aid,
                                    json={'os-complete': None})
                if done is not None and done.status_code == 404:
                    self.lost.append((aid, 'os-complete: 404'))
                    break
                if done is not None and done.status_code in (204, 400):
                    break
                time.sleep(0.2)
            self.delete(aid)
            self.cycles += 1


def nothing_left(api, volumes):
    """Whether the database holds no attachment and every one of
    ``volumes`` is ``available`` again (what a test waits for once its
    clients stopped)."""
    atts = api.get('/attachments/detail?all_tenants=1',
                   headers=V354).json()['attachments']
    return atts == [] and all(
        api.get('/volumes/%s' % v).json()['volume']['status'] ==
        'available' for v in volumes)
