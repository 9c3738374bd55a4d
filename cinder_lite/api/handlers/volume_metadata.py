"""Handlers for /volumes/{volume_id}/metadata and
/volumes/{volume_id}/metadata/{key} (a volume's user metadata).

Success codes, every microversion: 200 for all of them (Cinder's, delete
included).  From 3.15 the list answers with an ``ETag`` header, and the
two updates honour ``If-Match`` (412 when the metadata changed since).
"""
import webob.exc

from cinder_lite.api.schemas import volume_metadata as schema
from cinder_lite.api import validation
from cinder_lite.api import wsgi
from cinder_lite.common import exception
from cinder_lite.common import policy
from cinder_lite.volume import metadata_api

ETAGS = (3, 15)


def _service(req):
    return req.environ['cinder_lite.services'].metadata


def _if_match(req):
    """The ETags of ``If-Match`` from 3.15 (None: no condition)."""
    if req.version < ETAGS or not req.if_match:
        return None
    return list(req.if_match.etags)


@wsgi.expected_errors(403, 404)
def list_metadata(req):
    metadata = _service(req).get(req.context, req.urlvars['volume_id'])
    resp = wsgi.json_response({'metadata': metadata})
    if req.version >= ETAGS:
        resp.headers['ETag'] = metadata_api.etag(metadata)
    return resp


@wsgi.expected_errors(400, 403, 404)
def create_metadata(req):
    """Merge the given keys into the metadata."""
    body = req.json_body()
    validation.validate(schema.metadata, body)
    after = _service(req).update(req.context, req.urlvars['volume_id'],
                                 body['metadata'],
                                 rule=policy.METADATA_CREATE)
    return wsgi.json_response({'metadata': after})


@wsgi.expected_errors(400, 403, 404)
def replace_metadata(req):
    """Replace all of the metadata."""
    body = req.json_body()
    validation.validate(schema.metadata, body)
    try:
        after = _service(req).update(req.context, req.urlvars['volume_id'],
                                     body['metadata'], delete=True,
                                     if_match=_if_match(req))
    except exception.MetadataChanged:
        # as Cinder: a bare 412
        return wsgi.empty_response(412)
    return wsgi.json_response({'metadata': after})


@wsgi.expected_errors(403, 404)
def show_metadata_item(req):
    key = req.urlvars['key']
    metadata = _service(req).get(req.context, req.urlvars['volume_id'])
    if key not in metadata:
        raise exception.VolumeMetadataNotFound(
            volume_id=req.urlvars['volume_id'], key=key)
    return wsgi.json_response({'meta': {key: metadata[key]}})


@wsgi.expected_errors(400, 403, 404)
def update_metadata_item(req):
    body = req.json_body()
    validation.validate(schema.meta_item, body)
    if req.urlvars['key'] not in body['meta']:
        raise webob.exc.HTTPBadRequest(
            explanation='Request body and URI mismatch: the body sets %s, '
                        'the URI names %s.' % (
                            next(iter(body['meta'])), req.urlvars['key']))
    try:
        _service(req).update(req.context, req.urlvars['volume_id'],
                             body['meta'], if_match=_if_match(req))
    except exception.MetadataChanged:
        return wsgi.empty_response(412)
    return wsgi.json_response({'meta': body['meta']})


@wsgi.expected_errors(400, 403, 404)
def delete_metadata_item(req):
    _service(req).delete_key(req.context, req.urlvars['volume_id'],
                             req.urlvars['key'])
    return wsgi.empty_response(200)
