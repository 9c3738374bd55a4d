"""API microversions.

The client asks with ``OpenStack-API-Version: volume 3.x`` (or the legacy
``OpenStack-Volume-microversion: 3.x``); ``latest`` means ``MAX``.  Every
version between MIN and MAX is accepted; the ones below change what the
resources served here look like or accept:

* 3.0   - the v3 API: volumes, types, extra specs, type access, services
* 3.3   - user messages (``/messages``)
* 3.7   - ``cluster`` in os-services entries
* 3.12  - ``GET /volumes/summary``
* 3.13  - ``group_id`` in the volume view
* 3.15  - ETags on volume metadata (``ETag``, ``If-Match``)
* 3.21  - ``provider_id`` in the volume view (admin)
* 3.23  - ``DELETE /volumes/{id}?force=true`` (admin)
* 3.24  - ``POST /workers/cleanup``
* 3.26  - ``cluster`` in os-services/freeze and thaw
* 3.31  - non-admin list filters follow ``resource_query_filters_file``
* 3.33  - ``GET /resource_filters``
* 3.34  - ``name~`` style like-filters on volume lists
* 3.36  - ``metadata`` in the volume summary
* 3.40  - the ``revert`` volume action (to the latest snapshot)
* 3.45  - ``with_count`` on volume lists
* 3.48  - ``shared_targets`` and ``service_uuid`` in the volume view
* 3.49  - ``backend_state`` in os-services entries of volume services
* 3.52  - ``extra_specs`` filter on type lists
* 3.53  - request bodies with unknown keys are refused
* 3.60  - ``created_at``/``updated_at`` time comparisons on volume lists
* 3.61  - ``cluster_name`` in the volume view (admin)
* 3.62  - ``/default-types``: a project's default volume type
* 3.63  - ``volume_type_id`` in the volume view
* 3.65  - ``consumes_quota`` in the volume view
* 3.68  - the ``os-reimage`` volume action
* 3.69  - ``shared_targets`` is tri-state (null when the host decides)
* 3.71  - the highest version served
"""
import re

import webob.exc

MIN = (3, 0)
MAX = (3, 71)
SERVICE_TYPE = 'volume'
HEADER = 'OpenStack-API-Version'
LEGACY_HEADER = 'OpenStack-Volume-microversion'
ENV_KEY = 'cinder_lite.microversion'

_VERSION_RE = re.compile(r'^([1-9]\d*)\.([1-9]\d*|0)$')


def to_str(version):
    return '%d.%d' % version


def parse(text):
    match = _VERSION_RE.match(text.strip())
    if not match:
        raise ValueError(text)
    return int(match.group(1)), int(match.group(2))


def _not_acceptable(message):
    return webob.exc.HTTPNotAcceptable(explanation=message)


def from_headers(headers):
    """The requested version as a tuple; MIN when none was asked for."""
    requested = None
    value = headers.get(HEADER)
    if value:
        for part in value.split(','):
            words = part.strip().split()
            if len(words) == 2 and words[0].lower() == SERVICE_TYPE:
                requested = words[1]
    if requested is None:
        requested = headers.get(LEGACY_HEADER)
    if not requested:
        return MIN
    if requested.strip().lower() == 'latest':
        return MAX
    try:
        version = parse(requested)
    except ValueError:
        raise webob.exc.HTTPBadRequest(
            explanation='API Version String %s is of invalid format. Must '
                        'be of format MajorNum.MinorNum.' % requested)
    if not MIN <= version <= MAX:
        raise _not_acceptable(
            'Version %s is not supported by the API. Minimum is %s and '
            'maximum is %s.' % (requested, to_str(MIN), to_str(MAX)))
    return version


def pick(choices, version):
    """The value whose ``(low, high)`` window holds ``version``; windows
    are inclusive, ``None`` is open."""
    for (low, high), value in choices:
        if (low is None or version >= low) and (high is None or
                                                version <= high):
            return value
    raise LookupError(version)


class MicroversionMiddleware:
    """Reads the version of each request, refuses unknown ones, and names
    the version in the response."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        from cinder_lite.api import faults
        try:
            version = from_headers(_Headers(environ))
        except webob.exc.HTTPException as e:
            return faults.render(e)(environ, start_response)
        environ[ENV_KEY] = version

        def _start(status, headers, exc_info=None):
            headers.append((HEADER, '%s %s' % (SERVICE_TYPE,
                                               to_str(version))))
            headers.append(('Vary', HEADER))
            return start_response(status, headers, exc_info)
        return self.app(environ, _start)


class _Headers:
    def __init__(self, environ):
        self.environ = environ

    def get(self, name):
        return self.environ.get('HTTP_' + name.upper().replace('-', '_'))
