"""Options of the API service ([DEFAULT])."""
from oslo_config import cfg

api_opts = [
    cfg.HostAddressOpt('osapi_volume_listen', default='127.0.0.1',
                       help='Address the API listens on.'),
    cfg.PortOpt('osapi_volume_listen_port', default=8776,
                help='Port the API listens on.'),
    cfg.IntOpt('osapi_volume_workers', default=1, min=1,
               help='Number of API worker processes sharing the port.'),
    cfg.IntOpt('osapi_volume_threads', default=16, min=1,
               help='Request threads of each API worker.'),
    cfg.StrOpt('auth_strategy', default='noauth',
               choices=[('noauth', 'X-Auth-Token: user:project, as '
                                   "Cinder's noauth"),
                        ('keystone', 'keystonemiddleware auth_token')],
               help='How the API authenticates requests. noauth trusts '
                    'X-Auth-Token and X-Roles as sent: it is for a laptop, '
                    'and serves loopback only (see '
                    'allow_noauth_off_loopback).'),
    cfg.BoolOpt('allow_noauth_off_loopback', default=False,
                help='Let auth_strategy = noauth listen on an address that '
                     'is not loopback (osapi_volume_listen). Anyone who '
                     'reaches that address then acts as any user of any '
                     'project, as admin by default: only on a network '
                     'where every host is trusted. Off, the API refuses '
                     'to start so.'),
    cfg.IntOpt('osapi_max_limit', default=1000, min=1,
               help='Most items one list request returns.'),
    cfg.StrOpt('resource_query_filters_file',
               help='JSON file naming, for each resource, the list '
                    'filters callers who are not administrators may use '
                    '(from microversion 3.31; a "key~" entry also allows '
                    'the substring match key~=value from 3.34), as '
                    "Cinder's file of the same name. Unset: Cinder's "
                    'defaults, the content of '
                    'etc/cinder-lite/resource_filters.json.'),
    cfg.BoolOpt('access_log', default=True,
                help='Log one line per API request at INFO: method, path, '
                     'status, time, request id and project.'),
    cfg.StrOpt('project_id_regex', default=r'[0-9a-f\-]+',
               help='What a project id in a URL (/v3/{project_id}/...) may '
                    'be, as Cinder: the default matches the ids Keystone '
                    'makes. A URL whose project segment does not match is '
                    'not found (404). Widen it for noauth project names '
                    'such as "demo".'),
    cfg.StrOpt('public_endpoint',
               help='Base URL put in links, e.g. when behind a proxy. '
                    'Defaults to the URL of the request.'),
]


def register_opts(conf):
    conf.register_opts(api_opts)


def list_opts():
    return [('DEFAULT', api_opts)]
