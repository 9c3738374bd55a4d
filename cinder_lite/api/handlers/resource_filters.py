"""Handler for /resource_filters: the list filters callers who are not
administrators may use, per resource (3.33 and later; 404 before).

Success code: 200.  ``?resource=volume`` narrows the answer to one
resource (an unknown one: an empty list, as Cinder).
"""
import webob.exc

from cinder_lite.api import wsgi

RESOURCE_FILTER_CONFIG = (3, 33)


@wsgi.expected_errors(404)
def list_resource_filters(req):
    if req.version < RESOURCE_FILTER_CONFIG:
        raise webob.exc.HTTPNotFound(
            explanation='Resource filters are served from microversion '
                        '3.33.')
    filters = req.environ['cinder_lite.services'].resource_filters
    wanted = req.GET.get('resource')
    return wsgi.json_response({'resource_filters': [
        {'resource': resource, 'filters': list(keys)}
        for resource, keys in sorted(filters.items())
        if wanted is None or resource == wanted]})
