"""Version discovery: ``GET /`` (300) and ``GET /v3`` or ``/v3/`` (200),
served without a token in every auth mode because keystoneauth discovers
versions unauthenticated.

The document is Cinder's, plus ``build``: the version of cinder_lite that
answers (from its git tag), which clients and Tempest's schema ignore."""
from cinder_lite.api import microversion
from cinder_lite.api.views import links
from cinder_lite.api import wsgi
from cinder_lite import version

UPDATED = '2026-11-22T00:00:00Z'


def version_doc(req, conf):
    return {
        'id': 'v3.0',
        'status': 'CURRENT',
        'version': microversion.to_str(microversion.MAX),
        'min_version': microversion.to_str(microversion.MIN),
        'updated': UPDATED,
        'build': version.VERSION,
        'links': [{'rel': 'self',
                   'href': links.base_url(req, conf) + '/v3/'}],
        'media-types': [{
            'base': 'application/json',
            'type': 'application/vnd.openstack.volume+json;version=3'}],
    }


def root(req):
    return wsgi.json_response(
        {'versions': [version_doc(req, req.environ['cinder_lite.conf'])]},
        300)


def v3(req):
    return wsgi.json_response(
        {'versions': [version_doc(req, req.environ['cinder_lite.conf'])]})
