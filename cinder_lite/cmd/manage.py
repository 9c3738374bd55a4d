"""cinder-lite-manage: database migrations and what operators inspect or
clean up.

    cinder-lite-manage [--config-file F] db sync [REVISION]
    cinder-lite-manage db version
    cinder-lite-manage service list
    cinder-lite-manage service remove BINARY HOST
    cinder-lite-manage backend list
    cinder-lite-manage attachment list [--volume VOLUME_ID]
    cinder-lite-manage volume show-exports [--host HOST]
    cinder-lite-manage quota check [--project PROJECT_ID]
    cinder-lite-manage quota sync [--project PROJECT_ID]
    cinder-lite-manage version

Exit codes: 0 done; 1 refused or, for ``volume show-exports``, problems
found (the message says which; nothing was changed), for ``quota check``
a recorded usage that differs from the volumes; 2 not found or bad
usage.  Upgrade checks are ``cinder-lite-status upgrade check``
(``cinder_lite.cmd.status``).
"""
import datetime
import json
import sys

from oslo_config import cfg

from cinder_lite.cmd import config
from cinder_lite.cmd import exports_report
from cinder_lite.common import constants
from cinder_lite.common import exception
from cinder_lite.db import api as db_api
from cinder_lite.db import attachments as db_attachments
from cinder_lite.db import migration
from cinder_lite.db import quota_limits as quota
from cinder_lite.db import services as db_services
from cinder_lite.db import volumes as db_volumes
from cinder_lite.volume import quota_api
from cinder_lite import version

OK = 0
REFUSED = 1
NOT_FOUND = 2

USAGE = ('usage: cinder-lite-manage {db sync|db version|service list|'
         'service remove|backend list|attachment list|attachment events|'
         'attachment reconcile|'
         'volume show-exports|quota check|quota sync|version}')


def _error(message):
    print(message, file=sys.stderr)


def _cell(value):
    if value is None:
        return '-'
    if isinstance(value, datetime.datetime):
        return value.isoformat(timespec='seconds')
    return str(value)


def table(headers, rows):
    """Print ``rows`` under ``headers`` in left-aligned columns two spaces
    apart; None is shown as ``-`` and times without fractions."""
    rows = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(x) for x in col) for col in zip(headers, *rows)]
    for row in [headers] + rows:
        print('  '.join(cell.ljust(w) for cell, w in zip(row, widths))
              .rstrip())


# -- db ----------------------------------------------------------------------
def db_sync(conf):
    db_api.configure(conf)
    migration.upgrade(conf.command.revision or 'head')
    print('database at revision %s' % migration.current_revision())


def db_version(conf):
    db_api.configure(conf)
    print(migration.current_revision())


# -- services and backends ---------------------------------------------------
def _state(row, conf):
    up = db_services.is_up(row.heartbeat_at, conf.service_down_time)
    return 'up' if up else 'down'


def service_list(conf):
    db_api.configure(conf)
    with db_api.reader() as session:
        rows = db_services.list_services(session)
        table(['Binary', 'Host', 'Zone', 'Status', 'State', 'Updated At',
               'Cluster'],
              [(r.binary, r.host, r.availability_zone,
                'disabled' if r.disabled else 'enabled', _state(r, conf),
                r.heartbeat_at, r.cluster_name) for r in rows])


def _live_volumes_on(session, backend_host):
    """Volumes not deleted whose host is ``backend_host``
    (``node@backend``), whatever their pool."""
    rows = db_volumes.list_volumes(session,
                                   filters={'host~': backend_host})
    return [v for v in rows if v.host == backend_host
            or v.host.startswith(backend_host + '#')]


def _holds(session, row):
    """(what, advice) when volume service ``row`` still holds exports of
    live attachments (they could never be disconnected once it is gone),
    else None."""
    held = db_attachments.held_by(session, row.host)
    if not held:
        return None
    return ('still holds the exports of %d attachment(s) (e.g. %s)'
            % (len(held), ', '.join(a.id for a in held[:3])),
            'Detach them first; with the service down, an admin\'s '
            'os-force_detach records them detached.')


def _remove_if_down(session, conf, binary, host, what):
    """Remove the service in ``session``: (OK, None), or (the exit code,
    why it is refused)."""
    try:
        row = db_services.get_by_host(session, host, binary)
    except exception.ServiceNotFound:
        return NOT_FOUND, '%s not found; nothing removed.' % what
    if db_services.is_up(row.heartbeat_at, conf.service_down_time):
        return REFUSED, (
            '%s is up (last heartbeat %s, within service_down_time = %d '
            's); not removed. Stop the service and wait until "service '
            'list" shows it down.'
            % (what, _cell(row.heartbeat_at), conf.service_down_time))
    if binary == constants.VOLUME_BINARY:
        volumes = _live_volumes_on(session, host)
        if row.cluster_name and len(db_services.backend_members(
                session, row.cluster_name, binary)) == 1:
            # the last member: the cluster's volumes live on it
            volumes += _live_volumes_on(session, row.cluster_name)
        if volumes:
            return REFUSED, (
                '%s still has %d volume(s) that are not deleted; not '
                'removed. Delete or move them first (e.g. %s).'
                % (what, len(volumes), ', '.join(v.id for v in volumes[:3])))
        refusal = _holds(session, row)
        if refusal:
            return REFUSED, '%s %s; not removed. %s' % (what, *refusal)
    if not db_services.remove_if_down(session, row.id,
                                      conf.service_down_time):
        return REFUSED, '%s sent a heartbeat just now; not removed.' % what
    return OK, None


def service_remove(conf):
    """Remove a service that is down, as ``cinder-manage service remove``
    does; a volume service only once no volume lives on it."""
    binary, host = conf.command.binary, conf.command.service_host
    what = 'Service %s on host %s' % (binary, host)
    db_api.configure(conf)
    # (run again from its start on a deadlock: it returns why it refused,
    # printed once it committed)
    code, why = db_api.run_writer(_remove_if_down, conf, binary, host, what)
    if why:
        _error(why)
        return code
    print('%s removed.' % what)
    return OK


def _gib(value):
    return '-' if value is None else '%.1f' % float(value)


def backend_list(conf):
    """Volume services with what they reported; ``--format json``: every
    capability as reported."""
    db_api.configure(conf)
    with db_api.reader() as session:
        rows = db_services.list_services(session,
                                         binary=constants.VOLUME_BINARY)
        if conf.command.format == 'json':
            print(json.dumps([{'backend': r.host, 'state': _state(r, conf),
                               'capabilities': r.capabilities}
                              for r in rows], indent=2, sort_keys=True))
            return OK
        table(['Backend', 'State', 'Protocol', 'Multiattach', 'Total GiB',
               'Free GiB', 'Provisioned GiB', 'Cluster'],
              [(r.host, _state(r, conf),
                (r.capabilities or {}).get('storage_protocol'),
                (r.capabilities or {}).get('multiattach'),
                _gib((r.capabilities or {}).get('total_capacity_gb')),
                _gib((r.capabilities or {}).get('free_capacity_gb')),
                _gib((r.capabilities or {}).get('provisioned_capacity_gb')),
                r.cluster_name)
               for r in rows])
    return OK


# -- attachments and exports -------------------------------------------------
def attachment_list(conf):
    """Live attachments (not detached), oldest first."""
    volume_id = conf.command.volume_id
    db_api.configure(conf)
    with db_api.reader() as session:
        filters = {}
        if volume_id:
            try:
                db_volumes.get(session, volume_id)
            except exception.VolumeNotFound:
                _error('Volume %s not found (or deleted).' % volume_id)
                return NOT_FOUND
            filters['volume_id'] = volume_id
        rows = db_attachments.list_attachments(
            session, filters=filters, sort_keys=('created_at',),
            sort_dirs=('asc',))
        table(['ID', 'Volume ID', 'Status', 'Mode', 'Attached Host',
               'Instance', 'Attach Time'],
              [(a.id, a.volume_id, a.attach_status,
                a.attach_mode or exports_report.DEFAULT_MODE,
                a.attached_host, a.instance_uuid, a.attach_time)
               for a in rows])
    return OK


def attachment_events(conf):
    """The attachment audit trail: the newest events, newest first
    (``--reverse``: the same events oldest first)."""
    since = None
    if conf.command.since:
        try:
            since = datetime.datetime.fromisoformat(conf.command.since)
        except ValueError:
            _error('--since %s is not a time such as 2026-11-24T17:00:00 '
                   '(UTC).' % conf.command.since)
            return NOT_FOUND
        if since.tzinfo is not None:
            since = since.astimezone(datetime.timezone.utc).replace(
                tzinfo=None)
    db_api.configure(conf)
    with db_api.reader() as session:
        rows = db_attachments.events(
            session, volume_id=conf.command.volume_id,
            attachment_id=conf.command.attachment_id,
            limit=conf.command.limit, newest_first=True, since=since)
        if conf.command.reverse:
            rows = list(reversed(rows))
        table(['Time', 'Attachment ID', 'Volume ID', 'From', 'To', 'Mode',
               'Host', 'User', 'Request', 'Reason'],
              [(e.created_at, e.attachment_id, e.volume_id, e.from_status,
                e.to_status, e.attach_mode or exports_report.DEFAULT_MODE,
                e.attached_host, e.user_id, e.request_id, e.reason)
               for e in rows])
    return OK


def attachment_reconcile(conf):
    """Ask every volume service that is up (or the one of ``--host``) to
    reconcile now (cinder_lite.volume.reconcile) and print what each
    changed.  Exit 1 when a service did not answer."""
    from cinder_lite.common import context as cl_context
    from cinder_lite.common import rpc
    from cinder_lite.volume import rpcapi as volume_rpcapi
    if config.embedded(conf):
        _error('attachment reconcile asks the volume services over the '
               'message bus, and this configuration names none another '
               'process can reach: the embedded cinder-lite-all runs its '
               'bus inside its own process. There the volume service '
               'reconciles by itself at start and every '
               'reconcile_interval seconds; restart cinder-lite-all to '
               'reconcile now. For the distributed services, pass their '
               '--config-file (with transport_url).')
        return REFUSED
    db_api.configure(conf)
    with db_api.reader() as session:
        hosts = [s.host for s in db_services.list_services(
            session, binary=constants.VOLUME_BINARY)
            if db_services.is_up(s.heartbeat_at, conf.service_down_time)
            and conf.command.reconcile_host in (None, s.host)]
    if not hosts:
        _error('No volume service%s is up.' % (
            ' %s' % conf.command.reconcile_host
            if conf.command.reconcile_host else ''))
        return NOT_FOUND
    api = volume_rpcapi.VolumeAPI(conf)
    context = cl_context.get_admin_context()
    rows, failed = [], False
    try:
        for host in hosts:
            try:
                result = api.reconcile(context, host,
                                       max_age=conf.command.older_than)
            except exception.CinderLiteError as e:
                _error('%s: %s' % (host, e))
                failed = True
                continue
            rows += [(host, change) for change in result['changes']] or [
                (host, 'nothing to change')]
    finally:
        rpc.cleanup()
    table(['Backend', 'Change'], rows)
    return REFUSED if failed else OK


def volume_show_exports(conf):
    """Exports the targets of this node's backends hold next to what the
    database says; exit 1 when they disagree."""
    try:
        backends = exports_report.backends(conf, conf.command.export_host)
    except exception.InvalidInput as e:
        _error(str(e))
        return NOT_FOUND
    db_api.configure(conf)
    rows = exports_report.compare(conf, backends)
    if rows:
        table(exports_report.HEADERS, [r.cells() for r in rows])
    missing = [r for r in rows if r.missing]
    problems = [r for r in rows if r.problems]
    print('%s: %d export(s), %d missing, %d row(s) with problems.'
          % (', '.join(b.host for b in backends), len(rows) - len(missing),
             len(missing), len(problems)))
    for host, count in exports_report.local_connections(backends):
        print('%s: %d live attachment(s) through the local target, which '
              'needs no export.' % (host, count))
    return REFUSED if problems else OK


# -- quota usage ---------------------------------------------------------------
def _quota_audit(conf, repair):
    db_api.configure(conf)
    project_id = conf.command.project_id
    found = quota_api.audit(project_id, repair=repair)
    with db_api.reader() as session:
        catalogue = quota.Catalogue(session)
    if found:
        table(['Project', 'Resource', 'Recorded in use',
               'Recorded reserved', 'Volumes say in use',
               'Volumes say reserved'],
              [(project, catalogue.api_name(key), before[0], before[1],
                after[0], after[1])
               for project, key, before, after in found])
    scope = 'project %s' % project_id if project_id else 'every project'
    if not found:
        print('Recorded quota usage of %s equals what the volumes say.'
              % scope)
        return OK
    if repair:
        print('%d recorded usage(s) of %s set to what the volumes say.'
              % (len(found), scope))
        return OK
    print('%d recorded usage(s) of %s differ from what the volumes say; '
          '"quota sync" sets them.' % (len(found), scope))
    return REFUSED


def quota_check(conf):
    """Compare recorded quota usage with the volumes; exit 1 on a
    difference."""
    return _quota_audit(conf, repair=False)


def quota_sync(conf):
    """Set recorded quota usage that differs to what the volumes
    say."""
    return _quota_audit(conf, repair=True)


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
    svc_sub = svc.add_subparsers(dest='service_action')
    svc_sub.add_parser('list', help='list services').set_defaults(
        func=service_list)
    remove = svc_sub.add_parser(
        'remove', help='remove a service that is down (a volume service '
                       'only when no volume is left on it)')
    remove.add_argument('binary', help='e.g. cinder-volume')
    # oslo.config refuses sub-command names that are options too
    # ([DEFAULT] host): hence the dest names
    remove.add_argument('service_host', metavar='host',
                        help='as "service list" shows it, e.g. '
                             'node1@backend1')
    remove.set_defaults(func=service_remove)

    backend = subparsers.add_parser('backend', help='volume backends')
    blist = backend.add_subparsers(dest='backend_action').add_parser(
        'list', help='backends and their capabilities')
    blist.add_argument('--format', choices=('table', 'json'),
                       default='table',
                       help='json: every capability as reported')
    blist.set_defaults(func=backend_list)

    attachment = subparsers.add_parser('attachment', help='attachments')
    att_sub = attachment.add_subparsers(dest='attachment_action')
    att_list = att_sub.add_parser('list',
                                  help='attachments that are not detached')
    att_list.add_argument('--volume', dest='volume_id', metavar='VOLUME_ID',
                          help='only the attachments of this volume')
    att_list.set_defaults(func=attachment_list)
    att_events = att_sub.add_parser(
        'events', help='the audit trail: every attachment status change')
    att_events.add_argument('--volume', dest='volume_id', metavar='ID',
                            default=None,
                            help='only the events of this volume')
    att_events.add_argument('--attachment', dest='attachment_id',
                            metavar='ID', default=None,
                            help='only the events of this attachment')
    att_events.add_argument('--limit', type=int, default=1000,
                            metavar='N',
                            help='the N newest events (default 1000)')
    att_events.add_argument('--since', metavar='TIME', default=None,
                            help='only events at or after TIME (ISO 8601, '
                                 'UTC unless it names its zone)')
    att_events.add_argument('--reverse', action='store_true',
                            help='oldest first (default: newest first)')
    att_events.set_defaults(func=attachment_events)
    att_rec = att_sub.add_parser(
        'reconcile', help='resolve volumes and attachments left in a '
                          'transitional state, now')
    att_rec.add_argument('--host', dest='reconcile_host', metavar='HOST',
                         default=None, help='only this volume service '
                                            '(node@backend)')
    att_rec.add_argument('--older-than', dest='older_than', type=int,
                         metavar='SECONDS', default=None,
                         help='touch only what has not changed for this '
                              'long (default: reconcile_after)')
    att_rec.set_defaults(func=attachment_reconcile)

    volume = subparsers.add_parser('volume', help='volumes')
    show = volume.add_subparsers(dest='volume_action').add_parser(
        'show-exports',
        help='exports the targets of this node hold, next to the '
             'attachments in the database; exit 1 when they disagree')
    show.add_argument('--host', dest='export_host', metavar='HOST',
                      help='a volume service (node@backend) or a node name '
                           'instead of [DEFAULT] host; the backends are '
                           'those of enabled_backends')
    show.set_defaults(func=volume_show_exports)

    quotas = subparsers.add_parser('quota', help='quota usage')
    quota_sub = quotas.add_subparsers(dest='quota_action')
    for name, func, text in (
            ('check', quota_check,
             'compare recorded usage with the volumes; exit 1 when they '
             'differ'),
            ('sync', quota_sync,
             'set recorded usage that differs to what the volumes say')):
        cmd = quota_sub.add_parser(name, help=text)
        cmd.add_argument('--project', dest='project_id', metavar='PROJECT_ID',
                         help='only this project')
        cmd.set_defaults(func=func)

    subparsers.add_parser('version', help='cinder_lite version') \
        .set_defaults(func=print_version)


def main(argv=None):
    conf = cfg.CONF
    conf.register_cli_opt(cfg.SubCommandOpt('command', title='Commands',
                                            handler=_add_parsers))
    config.parse_args(sys.argv[1:] if argv is None else argv, conf)
    func = getattr(conf.command, 'func', None)
    if func is None:
        _error(USAGE)
        return NOT_FOUND
    if func not in (db_sync, print_version):
        problem = migration.missing_schema(conf.database.connection)
        if problem:
            _error(problem)
            return REFUSED
    try:
        return func(conf) or OK
    finally:
        db_api.dispose()


if __name__ == '__main__':
    sys.exit(main())
