"""cinder-lite-manage: database migrations and what operators inspect.

    cinder-lite-manage [--config-file F] db sync [REVISION]
    cinder-lite-manage db version
    cinder-lite-manage service list
    cinder-lite-manage backend list
    cinder-lite-manage version
"""
import json
import sys

from oslo_config import cfg

from cinder_lite.common import config
from cinder_lite.db import api as db_api
from cinder_lite.db import migration
from cinder_lite.db import services as db_services
from cinder_lite.scheduler import host_state
from cinder_lite import version


def db_sync(conf):
    db_api.configure(conf)
    migration.upgrade(conf.command.revision or 'head')
    print('database at revision %s' % migration.current_revision())


def db_version(conf):
    db_api.configure(conf)
    print(migration.current_revision())


def _table(headers, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    line = '  '.join('%-' + str(w) + 's' for w in widths)
    print(line % tuple(headers))
    for row in rows:
        print(line % tuple(str(x) for x in row))


def service_list(conf):
    db_api.configure(conf)
    with db_api.reader() as session:
        rows = db_services.list_services(session)
        _table(['Binary', 'Host', 'Zone', 'Status', 'State', 'Updated At'],
               [(r.binary, r.host, r.availability_zone,
                 'disabled' if r.disabled else 'enabled',
                 'up' if db_services.is_up(r, conf.service_down_time)
                 else 'down', r.heartbeat_at) for r in rows])


def backend_list(conf):
    db_api.configure(conf)
    with db_api.reader() as session:
        rows = db_services.list_services(session,
                                         binary=host_state.VOLUME_BINARY)
        _table(['Backend', 'State', 'Capabilities'],
               [(r.host, 'up' if db_services.is_up(
                   r, conf.service_down_time) else 'down',
                 json.dumps(r.capabilities, sort_keys=True))
                for r in rows])


def print_version(conf):
    print(version.VERSION)


def _add_parsers(subparsers):
    db = subparsers.add_parser('db', help='database schema')
    db_sub = db.add_subparsers(dest='db_action')
    sync = db_sub.add_parser('sync', help='migrate to the newest schema')
    sync.add_argument('revision', nargs='?', default=None)
    sync.set_defaults(func=db_sync)
    db_sub.add_parser('version', help='current schema revision') \
        .set_defaults(func=db_version)
    svc = subparsers.add_parser('service', help='services')
    svc.add_subparsers(dest='service_action').add_parser(
        'list', help='list services').set_defaults(func=service_list)
    backend = subparsers.add_parser('backend', help='volume backends')
    backend.add_subparsers(dest='backend_action').add_parser(
        'list', help='backends and their capabilities').set_defaults(
        func=backend_list)
    subparsers.add_parser('version', help='cinder_lite version') \
        .set_defaults(func=print_version)


def main(argv=None):
    conf = cfg.CONF
    conf.register_cli_opt(cfg.SubCommandOpt('command', title='Commands',
                                            handler=_add_parsers))
    config.parse_args(sys.argv[1:] if argv is None else argv, conf)
    func = getattr(conf.command, 'func', None)
    if func is None:
        print('usage: cinder-lite-manage {db sync|db version|service list|'
              'backend list|version}', file=sys.stderr)
        return 2
    func(conf)
    return 0


if __name__ == '__main__':
    sys.exit(main())
