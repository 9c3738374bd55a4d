"""The dashboard: static pages served at ``/dashboard/`` by the API
process, a client of the public v3 API only (what it shows, a script can
get with the same token).  No build step: the files in ``static/`` are
served as they are."""
import mimetypes
import os

import webob

PREFIX = '/dashboard'
STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'static')
TYPES = {'.html': 'text/html', '.js': 'text/javascript',
         '.css': 'text/css', '.svg': 'image/svg+xml'}


def _files():
    """name -> (bytes, content type) of every static file, read once."""
    found = {}
    for name in sorted(os.listdir(STATIC)):
        ext = os.path.splitext(name)[1]
        with open(os.path.join(STATIC, name), 'rb') as f:
            found[name] = (f.read(), TYPES.get(
                ext, mimetypes.guess_type(name)[0] or
                'application/octet-stream'))
    return found


class Dispatch:
    """``/dashboard`` -> ``/dashboard/``; ``/dashboard/`` is index.html;
    ``/dashboard/<file>`` a static file; anything else goes on."""

    def __init__(self, app):
        self.app = app
        self.files = _files()

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO') or '/'
        if path != PREFIX and not path.startswith(PREFIX + '/'):
            return self.app(environ, start_response)
        if environ.get('REQUEST_METHOD') not in ('GET', 'HEAD'):
            resp = webob.Response(status=405, content_type='text/plain',
                                  charset='utf-8', body=b'GET only\n')
            resp.headers['Allow'] = 'GET, HEAD'
            return resp(environ, start_response)
        if path == PREFIX:
            resp = webob.Response(status=301)
            resp.location = PREFIX + '/'
            return resp(environ, start_response)
        name = path[len(PREFIX) + 1:] or 'index.html'
        if name not in self.files:
            resp = webob.Response(status=404, content_type='text/plain',
                                  charset='utf-8',
                                  body=b'No such dashboard file.\n')
            return resp(environ, start_response)
        body, content_type = self.files[name]
        resp = webob.Response(body=body, content_type=content_type,
                              charset='utf-8')
        resp.headers['Cache-Control'] = 'no-cache'
        resp.headers['X-Content-Type-Options'] = 'nosniff'
        resp.headers['Content-Security-Policy'] = (
            "default-src 'self'; img-src 'self' data:; "
            "style-src 'self'; script-src 'self'; frame-ancestors 'none'")
        resp.headers['X-Frame-Options'] = 'DENY'
        return resp(environ, start_response)
