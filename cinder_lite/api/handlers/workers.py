"""Handler for POST /workers/cleanup: settle what services left in a
transition (admin).

Success code: 202 (3.24 and later; 404 before), with the services whose
cleanup was asked (``cleaning``) and those nobody can clean up now
(``unavailable``).
"""
import webob.exc

from cinder_lite.api.schemas import common as schema_common
from cinder_lite.api.schemas import workers as schema
from cinder_lite.api import validation
from cinder_lite.api import wsgi
from cinder_lite.volume import workers_api

WORKERS_CLEANUP = (3, 24)


def _view(service):
    return {'id': service.id, 'host': service.host,
            'binary': service.binary, 'cluster_name': service.cluster_name}


@wsgi.expected_errors(400, 403, 404)
def cleanup(req):
    if req.version < WORKERS_CLEANUP:
        raise webob.exc.HTTPNotFound(
            explanation='Workers cleanup is served from microversion '
                        '3.24.')
    body = req.json_body() if req.body else None
    validation.validate(schema.cleanup, body)
    filters = {k: v for k, v in (body or {}).items() if v is not None}
    for key in ('is_up', 'disabled'):
        if key in filters:
            filters[key] = schema_common.to_bool(filters[key])
    if 'service_id' in filters:
        filters['service_id'] = int(filters['service_id'])
    if 'resource_type' in filters:
        kind = filters['resource_type'].title()
        if kind not in workers_api.RESOURCE_TYPES:
            # Cinder's words
            raise webob.exc.HTTPBadRequest(
                explanation='Invalid input received: Resource type %s not '
                            'valid, must be %s' % (
                                kind, ' or '.join(
                                    workers_api.RESOURCE_TYPES)))
        filters['resource_type'] = kind
    cleaning, unavailable = req.environ['cinder_lite.services'].workers\
        .cleanup(req.context, filters)
    return wsgi.json_response({
        'cleaning': [_view(s) for s in cleaning],
        'unavailable': [_view(s) for s in unavailable]}, 202)
