"""Which list filters callers who are not administrators may use
(Cinder's ``resource_query_filters_file``), and the checks list handlers
share.

From 3.31 a non-admin's list filter must be enabled for its resource in
the file; from 3.34 a filter ``key`` may also be given as ``key~`` (a
substring match) when the file lists ``key~``.  Administrators may use
every filter cinder_lite serves.  Whatever the file enables, a handler
still refuses a key it cannot serve: the file narrows, never widens.
"""
import copy
import json
import logging

import webob.exc

from cinder_lite.common import exception

LOG = logging.getLogger(__name__)

RESOURCE_FILTER = (3, 31)
LIKE_FILTER = (3, 34)

# Cinder's shipped etc/cinder/resource_filters.json, the file cinder_lite
# ships as etc/cinder-lite/resource_filters.json (a test keeps the two
# equal): what a cloud gets without a file of its own.
DEFAULTS = {
    'volume': ['name', 'status', 'metadata', 'bootable', 'migration_status',
               'availability_zone', 'group_id', 'size', 'created_at',
               'updated_at'],
    'backup': ['name', 'status', 'volume_id'],
    'snapshot': ['name', 'status', 'volume_id', 'metadata',
                 'availability_zone'],
    'group': ['name'],
    'group_snapshot': ['name', 'status', 'group_id'],
    'attachment': ['volume_id', 'status', 'instance_id', 'attach_status'],
    'message': ['resource_uuid', 'resource_type', 'event_id', 'request_id',
                'message_level'],
    'pool': ['name', 'volume_type'],
    'volume_type': ['is_public', 'extra_specs'],
}


def load(path):
    """The filters of each resource: the file at ``path``, or DEFAULTS
    when no file is configured.  A file that cannot be read or is not an
    object of string lists stops the service at start, with the reason,
    instead of refusing every filter later (Cinder's silent outcome)."""
    if not path:
        return copy.deepcopy(DEFAULTS)
    try:
        with open(path) as f:
            filters = json.load(f)
    except (OSError, ValueError) as e:
        raise exception.InvalidInput(
            reason='resource_query_filters_file %s cannot be read as '
                   'JSON: %s' % (path, e))
    if not isinstance(filters, dict) or not all(
            isinstance(keys, list) and all(isinstance(k, str) for k in keys)
            for keys in filters.values()):
        raise exception.InvalidInput(
            reason='resource_query_filters_file %s must map each resource '
                   'to a list of filter names' % path)
    LOG.info('list filters of non-admin callers read from %s', path)
    return filters


def _invalid(keys):
    # Cinder's words
    return webob.exc.HTTPBadRequest(
        explanation='Invalid filters %s are found in query options.'
                    % ','.join(keys))


def check(req, resource, keys, admins_too=False):
    """Refuse (400) the filter ``keys`` of a list of ``resource`` that
    the caller may not use: keys that are not ASCII, a ``~`` key before
    3.34, and from 3.31 a non-admin's key the filters file does not
    enable (``admins_too``: an administrator's too, as Cinder checks the
    filters of the admin-only pool list)."""
    keys = list(keys)
    for key in keys:
        if not key.isascii():
            raise webob.exc.HTTPBadRequest(
                explanation='Filter keys can only contain ASCII '
                            'characters.')
    if req.version < LIKE_FILTER:
        like = [k for k in keys if k.endswith('~')]
        if like:
            raise _invalid(like)
    if req.version < RESOURCE_FILTER or (req.context.is_admin
                                         and not admins_too):
        return
    enabled = set(req.environ['cinder_lite.services'].resource_filters
                  .get(resource, ()))
    refused = []
    for key in keys:
        if req.version >= LIKE_FILTER:
            if key not in enabled and key + '~' not in enabled:
                refused.append(key)
        elif key not in enabled:
            refused.append(key)
    if refused:
        raise _invalid(refused)
