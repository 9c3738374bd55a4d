"""Host fences (cinder_lite's own resource; admins, policy
``volume_extension:host_fence``): fence a consumer host off volumes at
the storage targets, unfence it, and ask the targets whether it can still
reach them.  doc/source/fencing.rst says what a fence guarantees.

* ``GET /os-host-fences[?host=H]``: the live fences, 200.
* ``GET /os-host-fences/{host}?volume_id=V`` or ``?project_id=P``: per
  volume, the mark and what the targets say (``reachable``, ``exports``,
  ``acl``, ``sessions``), 200.
* ``POST /os-host-fences/{host}/action`` with ``{"os-fence": {"volume_id":
  V | "project_id": P, "reason": R}}``: 200 once every attachment of the
  host on those volumes is cut and drained; ``{"os-unfence": {...}}``: 200
  once its attachments are exported again.  Both are idempotent.
"""
import uuid

import webob.exc

from cinder_lite.api.schemas import host_fences as schema
from cinder_lite.api import validation
from cinder_lite.api import wsgi
from cinder_lite.common import policy

MAX_HOST = 255


def _service(req):
    return req.environ['cinder_lite.services'].fences


def _host(req):
    host = req.urlvars['host']
    if not host.strip() or len(host) > MAX_HOST:
        raise webob.exc.HTTPBadRequest(
            explanation='host must be a non-empty name of at most %d '
                        'characters' % MAX_HOST)
    return host


def _scope(req):
    unknown = sorted(set(req.GET) - {'volume_id', 'project_id'})
    if unknown:
        raise webob.exc.HTTPBadRequest(
            explanation='Invalid filters %s; use volume_id or project_id.'
                        % ', '.join(unknown))
    volume_id, project_id = req.GET.get('volume_id'), \
        req.GET.get('project_id')
    if (volume_id is None) == (project_id is None):
        raise webob.exc.HTTPBadRequest(
            explanation='give exactly one of volume_id and project_id')
    if volume_id is not None:
        try:
            volume_id = str(uuid.UUID(volume_id))
        except ValueError:
            raise webob.exc.HTTPBadRequest(
                explanation='volume_id must be a UUID, not %r' % volume_id)
    elif not project_id.strip() or len(project_id) > 255:
        raise webob.exc.HTTPBadRequest(
            explanation='project_id must be a non-empty string of at most '
                        '255 characters')
    return {'volume_id': volume_id, 'project_id': project_id}


@wsgi.expected_errors(400, 403)
def list_fences(req):
    policy.authorize(req.context, policy.HOST_FENCE)
    unknown = sorted(set(req.GET) - {'host'})
    if unknown:
        raise webob.exc.HTTPBadRequest(
            explanation='Invalid filters %s; use host.' % ', '.join(unknown))
    return wsgi.json_response({'host_fences': _service(req).list(
        req.context, req.GET.get('host'))})


@wsgi.expected_errors(400, 403, 503)
def show_fence(req):
    policy.authorize(req.context, policy.HOST_FENCE)
    host = _host(req)
    volumes = _service(req).status(req.context, host, **_scope(req))
    return wsgi.json_response({'host_fence': {
        'host': host, 'fenced': bool(volumes) and all(
            v['fenced'] for v in volumes),
        'reachable': _reachable(volumes),
        'volumes': volumes}})


def _reachable(volumes):
    """True when the host reaches one of the volumes, False only when
    every target said it reaches none, else None (some target could not
    tell: a host nobody could check is not reported cut off)."""
    seen = [v['reachable'] for v in volumes]
    if any(seen):
        return True
    return None if None in seen else False


@wsgi.expected_errors(400, 403, 409, 503)
def fence_action(req):
    policy.authorize(req.context, policy.HOST_FENCE)
    host = _host(req)
    body = req.json_body()
    validation.validate(schema.action, body)
    name, given = next(iter(body.items()))
    given = dict(given)
    reason = given.pop('reason', None)
    service = _service(req)
    run = service.fence if name == 'os-fence' else service.unfence
    volumes = run(req.context, host, reason=reason, **given)
    return wsgi.json_response({'host_fence': {
        'host': host, 'fenced': name == 'os-fence', 'volumes': volumes}})
