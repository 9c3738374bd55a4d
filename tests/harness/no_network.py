"""The network service of a cloud that has no networks, for the Nova test
deployment (tests/harness/openstack.py).

Nova 34 cannot run without a ``network`` endpoint in the catalog, even
for servers booted with ``"networks": "none"``: showing a server looks up
its ports to list its security groups, and deleting one asks which ports
to unbind.  Installing and migrating neutron-server for answers that are
always "nothing" would cost minutes of every CI run, so this process
answers Neutron's read-only collection queries (``GET /v2.0/ports`` and
the like) with empty lists.  Below compute API 2.37 a server booted
without ``networks`` makes Nova check the project's port quota first
(``GET /v2.0/quotas/{project}``): the answer is "no limit" (-1), which
is true of a cloud that makes no ports.  Anything else -- a write,
another item, an unknown collection -- gets 501, so a Nova code path
that needs a real network fails loudly instead of being told it worked.
Every request is logged.

    python -m tests.harness.no_network --port N
"""
import argparse
import http.server
import json
import sys
import urllib.parse

# collection in the URL -> key of the list in the answer
COLLECTIONS = {
    'ports': 'ports',
    'networks': 'networks',
    'subnets': 'subnets',
    'security-groups': 'security_groups',
    'floatingips': 'floatingips',
    'extensions': 'extensions',
}
# resources of Neutron's quota API; -1: no limit
QUOTA_RESOURCES = ('network', 'subnet', 'port', 'router', 'floatingip',
                   'security_group', 'security_group_rule')


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path.rstrip('/')
        if path == '':
            return self._answer(200, {'versions': [{
                'id': 'v2.0', 'status': 'CURRENT',
                'links': [{'rel': 'self', 'href': '/v2.0/'}]}]})
        parts = path.split('/')
        if len(parts) == 3 and parts[1] == 'v2.0':
            name = parts[2]
            if name.endswith('.json'):
                name = name[:-len('.json')]
            if name in COLLECTIONS:
                return self._answer(200, {COLLECTIONS[name]: []})
        if len(parts) == 4 and parts[1:3] == ['v2.0', 'quotas'] and parts[3]:
            return self._answer(200, {'quota': {
                name: -1 for name in QUOTA_RESOURCES}})
        self._refuse()

    def _refuse(self):
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)
        self._answer(501, {'NeutronError': {
            'type': 'NotImplemented', 'detail': '',
            'message': 'This cloud has no network service: %s %s is not '
                       'served.' % (self.command, self.path)}})

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

    def log_message(self, fmt, *args):
        sys.stdout.write('%s %s\n' % (self.log_date_time_string(),
                                      fmt % args))
        sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, required=True)
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    print('no-network service on %s:%d' % (args.host, args.port), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    main()
