"""The request and response examples of the API guide
(doc/source/api/extensions.rst) are what the real app answers over HTTP:
this test plays the guide's requests against a fresh embedded stack and
compares every answer with its file in doc/source/api/samples/, after
replacing what differs from run to run (ids, times, the port, the state
directory, the build).  After a deliberate change of the API, rewrite them
with ``CINDER_LITE_WRITE_API_SAMPLES=1 .venv/bin/python -m pytest -q
tests/functional/test_api_samples.py`` and review the diff."""
import json
import os
import re

import requests

from cinder_lite import version
from tests.harness import attach as att_mod
from tests.harness import backups as bk

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, 'doc', 'source', 'api', 'samples')
GUIDE = os.path.join(ROOT, 'doc', 'source', 'api', 'extensions.rst')
WRITE = os.environ.get('CINDER_LITE_WRITE_API_SAMPLES') == '1'

UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                  r'[0-9a-f]{12}')
TIME = re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?')
# measured, so never the same twice: shown as this when it is a number
MEASURED = {'drained_ms': 4}


def _measured(doc):
    if isinstance(doc, dict):
        return {k: (MEASURED[k] if k in MEASURED and isinstance(
                    v, (int, float)) else _measured(v))
                for k, v in doc.items()}
    if isinstance(doc, list):
        return [_measured(v) for v in doc]
    return doc


class Recorder:
    """Normalises what a run answers, consistently within the run: the
    n-th distinct uuid seen becomes the n-th fixed one, so a sample still
    shows which ids are the same."""

    def __init__(self, stack):
        self.stack = stack
        self.ids = {}
        self.written = []

    def _uuid(self, match):
        n = self.ids.setdefault(match.group(0), len(self.ids) + 1)
        return '%08x-%04x-4%03x-8%03x-%012x' % (n, n, n, n, n)

    def normalise(self, doc, times=True):
        text = json.dumps(_measured(doc))
        text = text.replace(str(self.stack.state_path),
                            '/var/lib/cinder-lite')
        text = re.sub(r'http://127\.0\.0\.1:\d+', 'http://127.0.0.1:8776',
                      text)
        text = UUID.sub(self._uuid, text)
        if times:
            text = TIME.sub(lambda m: '2026-12-01T10:00:00' +
                            ('.000000' if m.group(1) else ''), text)
        return json.loads(text)

    def check(self, name, doc, times=True):
        """Compare ``doc`` (normalised) with samples/``name``.json."""
        text = json.dumps(self.normalise(doc, times), indent=2,
                          sort_keys=True) + '\n'
        path = os.path.join(SAMPLES, name + '.json')
        self.written.append(name + '.json')
        if WRITE:
            os.makedirs(SAMPLES, exist_ok=True)
            with open(path, 'w') as f:
                f.write(text)
            return
        assert os.path.exists(path), 'no sample %s: write the samples' % (
            path)
        with open(path) as f:
            assert f.read() == text, (
                '%s differs from what the API answers: %s' % (name, __doc__))

    def exchange(self, name, client, method, path, body=None, expect=200):
        """One request of the guide: its body (when it has one) and its
        answer are samples NAME-request and NAME-response."""
        if body is not None:
            self.check(name + '-request', body)
        resp = client.request(method, path, json=body)
        assert resp.status_code == expect, resp.text
        self.check(name + '-response', resp.json())
        return resp.json()


def test_the_guides_examples_are_what_the_api_answers(stack, api):
    rec = Recorder(stack)

    # the version document: Cinder's, with the build that answers
    root = requests.get(stack.url + '/', timeout=30)
    assert root.status_code == 300
    body = root.json()
    (doc,) = body['versions']
    assert doc['build'] == version.VERSION
    doc['build'] = '0.1.0'
    # (its 'updated' is a constant: kept)
    rec.check('versions-response', body, times=False)

    # a single-writer shared volume: compute-1 writes, compute-2 reads
    api.create_type('single-writer', {'multiattach': '<is> True',
                                      'mode': 'RO'})
    vol = api.create_volume(volume_type='single-writer', name='shared')
    vid = vol['id']
    writer = att_mod.attach(api, vid, att_mod.connector('compute-1'))
    reader = att_mod.attach(api, vid, att_mod.connector(
        'compute-2', ip='127.0.0.3'))
    assert (writer['attach_mode'], reader['attach_mode']) == ('rw', 'ro')

    # compute-2 takes the writer's place; compute-1 is cut off first
    took = rec.exchange('attachment-takeover', api, 'POST',
                        '/attachments/%s/action' % reader['id'],
                        {'os-takeover': {}})
    assert took['attachment']['attach_mode'] == 'rw'

    # compute-3 reads too; then it is fenced off the volume (its
    # attachment cut at the target), listed, shown, refused, unfenced
    third = att_mod.attach(api, vid, att_mod.connector(
        'compute-3', ip='127.0.0.4'))
    fenced = rec.exchange('host-fence-fence', api, 'POST',
                          '/os-host-fences/compute-3/action',
                          {'os-fence': {'volume_id': vid,
                                        'reason': 'node lost'}})
    assert fenced['host_fence']['volumes'][0]['attachments'] == [
        third['id']]
    rec.exchange('host-fences-list', api, 'GET', '/os-host-fences')
    rec.exchange('host-fence-show', api, 'GET',
                 '/os-host-fences/compute-3?volume_id=%s' % vid)
    refused = api.post('/attachments', json={'attachment': {
        'volume_uuid': vid, 'instance_uuid': third['instance'],
        'connector': att_mod.connector('compute-3', ip='127.0.0.4')}})
    assert refused.status_code == 409
    rec.check('host-fence-refused-response', refused.json())
    rec.exchange('host-fence-unfence', api, 'POST',
                 '/os-host-fences/compute-3/action',
                 {'os-unfence': {'volume_id': vid,
                                 'reason': 'node replaced'}})

    # the audit trail of compute-2's attachment
    rec.exchange('attachment-events-list', api, 'GET',
                 '/os-attachment-events?attachment_id=%s' % reader['id'])

    # a backup's progress
    plain = api.create_volume(name='plain')
    backup = bk.backup(api, plain['id'])
    rec.exchange('backup-progress', api, 'GET',
                 '/backups/%s/progress' % backup['id'])

    # every sample is this test's, and the guide shows every one
    if not WRITE:
        assert sorted(os.listdir(SAMPLES)) == sorted(rec.written)
    with open(GUIDE) as f:
        guide = f.read()
    for name in rec.written:
        assert 'samples/%s' % name in guide, name
