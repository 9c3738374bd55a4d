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


def next_link(req, conf, collection, items, limit, marker_of):
    """The ``rel: next`` link when the page is full."""
    if limit is None or len(items) < limit or not items:
        return None
    params = dict(req.GET)
    params['marker'] = marker_of(items[-1])
    query = '&'.join('%s=%s' % (k, v) for k, v in params.items())
    path = req.path.rstrip('/')
    return [{'rel': 'next', 'href': '%s%s?%s' % (base_url(req, conf), path,
                                                  query)}]
