"""Resource links as Cinder builds them."""


def base_url(req, conf):
    return (conf.public_endpoint or req.host_url).rstrip('/')


def resource_links(req, conf, collection, resource_id, project_id):
    base = base_url(req, conf)
    return [
        {'rel': 'self', 'href': '%s/v3/%s/%s/%s' % (base, project_id,
                                                     collection,
                                                     resource_id)},
        {'rel': 'bookmark', 'href': '%s/%s/%s/%s' % (base, project_id,
                                                      collection,
                                                      resource_id)},
    ]


def page(req, conf, collection, rows, items, limit):
    """A list body: ``{collection: items}`` plus ``<collection>_links``
    with the ``rel: next`` link when the page is full."""
    body = {collection: items}
    if limit is not None and rows and len(rows) >= limit:
        params = dict(req.GET)
        params['marker'] = rows[-1].id
        query = '&'.join('%s=%s' % (k, v) for k, v in params.items())
        body[collection + '_links'] = [{
            'rel': 'next', 'href': '%s%s?%s' % (
                base_url(req, conf), req.path.rstrip('/'), query)}]
    return body
