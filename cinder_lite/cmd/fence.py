"""``fence_cinder_lite``: a fence agent for Pacemaker (``pacemaker-fenced``,
``stonith_admin``) that fences a node at the storage: it asks cinder_lite
to cut the node's host off a set of volumes at the targets (the host
fences of ``/os-host-fences``, doc/source/fencing.rst), as fabric agents
disable a switch port.

It follows the fence agent conventions (the public FenceAgentAPI of
ClusterLabs): options arrive on stdin as ``name=value`` lines (blank lines
and ``#`` comments ignored) or as ``--long-options``; ``action`` says
what to do:

========  ===============================================================
off       fence the host; succeeds (0) only once cinder_lite confirmed
          that every attachment of the host on those volumes was cut and
          drained at the target, and the targets report it cannot reach
          them
on        unfence (the automatic unfencing of ``provides=unfencing``)
status    0 when the host is not fenced, 2 when it is fenced and the
          targets confirm it, 1 on an error or when they disagree
list      the hosts attached to those volumes or fenced off them, one
          ``host,`` line each
monitor   the API answers and the credentials may fence (0), else 1
metadata  the XML Pacemaker reads
validate-all  the options are complete and consistent (0), else 1
========  ===============================================================

This is cinder_lite's own code; it shares nothing with the GPL
fence-agents but the protocol.
"""
import sys
import time
import urllib.parse
from xml.sax import saxutils

import requests

from cinder_lite import version

NAME = 'fence_cinder_lite'
EC_OK, EC_ERROR, EC_OFF = 0, 1, 2
ACTIONS = ('off', 'on', 'status', 'list', 'monitor', 'metadata',
           'validate-all')

# name, getopt spelling, required, default, type, help
OPTIONS = (
    ('action', '-o, --action=[action]', True, 'off', 'string',
     'Fencing action: off, on, status, list, monitor, metadata, '
     'validate-all'),
    ('plug', '-n, --plug=[host]', False, None, 'string',
     'The host to fence, as its connectors name it (the attachments\' '
     'host); also accepted as "port". Pacemaker passes the node name, '
     'mapped by pcmk_host_map'),
    ('host_map', '--host-map=[node:host;...]', False, None, 'string',
     'Map of node names to cinder_lite hosts, as pcmk_host_map, for '
     'when the agent is run by hand with node names'),
    ('endpoint', '--endpoint=[url]', True, None, 'string',
     'The cinder_lite volume API, e.g. http://controller:8776/v3'),
    ('volume', '--volume=[id,id...]', False, None, 'string',
     'The volumes to fence the host off (comma-separated ids)'),
    ('project', '--project=[project id]', False, None, 'string',
     'Fence the host off every volume of this project (instead of '
     '"volume")'),
    ('auth_url', '--auth-url=[url]', False, None, 'string',
     'Keystone URL; without it the API is assumed to run with '
     'auth_strategy = noauth'),
    ('username', '-l, --username=[name]', False, 'fence', 'string',
     'User name (also "login")'),
    ('password', '-p, --password=[password]', False, None, 'string',
     'Password (also "passwd")'),
    ('password_script', '-S, --password-script=[script]', False, None,
     'string', 'Script that prints the password'),
    ('user_domain_name', '--user-domain-name=[name]', False, 'Default',
     'string', 'Keystone domain of the user'),
    ('project_name', '--project-name=[name]', False, 'admin', 'string',
     'Keystone project to scope the token to'),
    ('project_domain_name', '--project-domain-name=[name]', False,
     'Default', 'string', 'Keystone domain of that project'),
    ('project_id', '--project-id=[id]', False, None, 'string',
     'noauth only: the project of the caller (its token is '
     'user:project)'),
    ('reason', '--reason=[text]', False, None, 'string',
     'Why, for the audit trail (default: the agent and the action)'),
    ('power_timeout', '--power-timeout=[seconds]', False, '60', 'second',
     'Seconds to wait for cinder_lite to fence or unfence'),
    ('delay', '--delay=[seconds]', False, '0', 'second',
     'Wait this long before the action'),
    ('verbose', '-v, --verbose', False, None, 'boolean',
     'Print what the agent does on stderr'),
)
ALIASES = {'port': 'plug', 'login': 'username', 'passwd': 'password',
           'passwd_script': 'password_script', 'option': 'action'}
# what Pacemaker and fenced may pass that this agent has no use for
IGNORED = ('nodename', 'debug', 'separator', 'retry_on', 'shell_timeout',
           'login_timeout', 'power_wait', 'method', 'plug_separator')


class AgentError(Exception):
    pass


def parse_stdin(text):
    options = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        name, sep, value = line.partition('=')
        if not sep:
            raise AgentError('not name=value: %r' % line)
        options[name.strip()] = value.strip()
    return options


def parse_argv(argv):
    by_flag = {}
    for name, getopt, _req, _default, kind, _help in OPTIONS:
        for flag in getopt.split(', '):
            by_flag[flag.split('=')[0]] = (name, kind)
    options = {}
    args = list(argv)
    while args:
        arg = args.pop(0)
        flag, sep, value = arg.partition('=')
        if flag not in by_flag:
            long_name = flag.lstrip('-').replace('-', '_')
            if long_name in ALIASES or long_name in IGNORED:
                by_flag[flag] = (ALIASES.get(long_name, long_name),
                                 'string')
            else:
                raise AgentError('unknown option %s' % flag)
        name, kind = by_flag[flag]
        if kind == 'boolean':
            options[name] = value or '1'
            continue
        if not sep:
            if not args:
                raise AgentError('%s needs a value' % flag)
            value = args.pop(0)
        options[name] = value
    return options


def normalise(options):
    """Options under their own names; unknown ones are an error (fenced
    passes only what the configuration has)."""
    known = {o[0] for o in OPTIONS}
    out = {}
    for name, value in options.items():
        name = ALIASES.get(name.replace('-', '_'), name.replace('-', '_'))
        if name in IGNORED:
            continue
        if name not in known:
            raise AgentError('unknown option %r' % name)
        out[name] = value
    for name, _getopt, _req, default, _kind, _help in OPTIONS:
        if default is not None:
            out.setdefault(name, default)
    return out


def validate(options):
    action = options['action']
    if action not in ACTIONS:
        if action == 'reboot':
            raise AgentError('reboot is not supported: a node fenced at '
                             'the storage is let back by "on" '
                             '(unfencing); Pacemaker uses off')
        raise AgentError('unknown action %r' % action)
    if action == 'metadata':
        return
    if not options.get('endpoint'):
        raise AgentError('endpoint is required')
    if not urllib.parse.urlsplit(options['endpoint']).scheme in (
            'http', 'https'):
        raise AgentError('endpoint must be an http(s) URL')
    if action in ('off', 'on', 'status', 'list', 'validate-all'):
        if bool(options.get('volume')) == bool(options.get('project')):
            raise AgentError('give exactly one of volume and project')
    if action in ('off', 'on', 'status') and not options.get('plug'):
        raise AgentError('plug (the host to fence) is required for %s'
                         % action)
    for name in ('power_timeout', 'delay'):
        try:
            if float(options[name]) < 0:
                raise ValueError
        except ValueError:
            raise AgentError('%s must be a number of seconds' % name)
    if options.get('auth_url') and not (options.get('password') or
                                        options.get('password_script')):
        raise AgentError('keystone needs password or password_script')


def host_of(options):
    """The cinder_lite host of the plug, through host_map if given."""
    plug = options['plug']
    for pair in (options.get('host_map') or '').replace(',', ';').split(
            ';'):
        node, sep, host = pair.strip().partition(':')
        if sep and node.strip() == plug:
            return host.strip()
    return plug


class Api:
    """The cinder_lite API as an admin (noauth token, or Keystone)."""

    def __init__(self, options):
        self.base = options['endpoint'].rstrip('/')
        self.timeout = float(options['power_timeout'])
        self.session = requests.Session()
        if options.get('auth_url'):
            self._keystone(options)
        else:
            project = options.get('project_id') or 'admin'
            self.session.headers.update({
                'X-Auth-Token': '%s:%s' % (options['username'], project),
                'X-Roles': 'admin'})

    def _keystone(self, options):
        from keystoneauth1.identity import v3
        from keystoneauth1 import session as ks_session
        password = options.get('password')
        if not password:
            import subprocess
            password = subprocess.run(
                options['password_script'], shell=True, check=True,
                capture_output=True, text=True).stdout.strip()
        auth = v3.Password(
            auth_url=options['auth_url'], username=options['username'],
            password=password,
            user_domain_name=options['user_domain_name'],
            project_name=options['project_name'],
            project_domain_name=options['project_domain_name'])
        sess = ks_session.Session(auth=auth)
        self.session.headers['X-Auth-Token'] = sess.get_token()

    def call(self, method, path, body=None):
        try:
            resp = self.session.request(method, self.base + path,
                                        json=body, timeout=self.timeout)
        except requests.RequestException as e:
            raise AgentError('%s %s: %s' % (method, path, e))
        if resp.status_code >= 400:
            try:
                message = next(iter(resp.json().values()))['message']
            except Exception:
                message = resp.text[:500]
            raise AgentError('%s %s: HTTP %d: %s' % (
                method, path, resp.status_code, message))
        return resp.json() if resp.content else None


def _scopes(options):
    if options.get('project'):
        return [{'project_id': options['project']}]
    return [{'volume_id': v.strip()}
            for v in options['volume'].split(',') if v.strip()]


def _path(host):
    return '/os-host-fences/%s' % urllib.parse.quote(host, safe='')


def _status(api, host, options):
    volumes = []
    for scope in _scopes(options):
        volumes += api.call('GET', '%s?%s' % (
            _path(host), urllib.parse.urlencode(scope)))['host_fence'][
                'volumes']
    return volumes


def run(options, out, err):
    action = options['action']
    if action == 'metadata':
        out.write(metadata())
        return EC_OK
    verbose = bool(options.get('verbose'))
    if action == 'validate-all':
        return EC_OK
    delay = float(options['delay'])
    if delay and action in ('off', 'on'):
        time.sleep(delay)
    api = Api(options)
    if action == 'monitor':
        api.call('GET', '/os-host-fences?host=%s' % urllib.parse.quote(
            NAME))
        return EC_OK
    if action == 'list':
        return _list(api, options, out)
    host = host_of(options)
    reason = options.get('reason') or '%s %s' % (NAME, action)
    if action in ('off', 'on'):
        verb = 'os-fence' if action == 'off' else 'os-unfence'
        for scope in _scopes(options):
            done = api.call('POST', _path(host) + '/action',
                            {verb: dict(scope, reason=reason)})
            if verbose:
                for v in done['host_fence']['volumes']:
                    err.write('%s: %s %s (attachments %s, drained %s ms)\n'
                              % (NAME, action, v['volume_id'],
                                 ','.join(v['attachments']) or '-',
                                 v.get('drained_ms')))
    volumes = _status(api, host, options)
    fenced = [v for v in volumes if v['fenced']]
    reachable = [v for v in volumes if v['reachable']]
    unknown = [v for v in volumes if v['reachable'] is None and v['errors']]
    if action == 'off':
        # the fence answered once every drain was confirmed; the targets
        # must agree
        if len(fenced) != len(volumes) or reachable or unknown:
            err.write('%s: %s is still not cut off: %s\n' % (
                NAME, host, _describe(volumes)))
            return EC_ERROR
        out.write('Success: Powered OFF\n')
        return EC_OK
    if action == 'on':
        if fenced:
            err.write('%s: %s is still fenced off %s\n' % (
                NAME, host, ', '.join(v['volume_id'] for v in fenced)))
            return EC_ERROR
        out.write('Success: Powered ON\n')
        return EC_OK
    # status
    if unknown:
        err.write('%s: the targets cannot tell: %s\n' % (
            NAME, _describe(unknown)))
        return EC_ERROR
    if not fenced:
        out.write('Status: ON\n')
        return EC_OK
    if len(fenced) == len(volumes) and not reachable:
        out.write('Status: OFF\n')
        return EC_OFF
    err.write('%s: %s is fenced off only part of the volumes, or a '
              'target still lets it in: %s\n' % (NAME, host,
                                                  _describe(volumes)))
    return EC_ERROR


def _describe(volumes):
    return '; '.join('%s fenced=%s reachable=%s%s' % (
        v['volume_id'], v['fenced'], v['reachable'],
        ' (%s)' % ', '.join(v['errors']) if v.get('errors') else '')
        for v in volumes) or 'no volumes'


def _list(api, options, out):
    hosts = set()
    for scope in _scopes(options):
        if 'volume_id' in scope:
            ids = [scope['volume_id']]
        else:
            ids = [v['id'] for v in api.call(
                'GET', '/volumes?all_tenants=1&project_id=%s'
                % urllib.parse.quote(scope['project_id']))['volumes']]
        for vid in ids:
            volume = api.call('GET', '/volumes/%s' % vid)['volume']
            hosts.update(a['host_name'] for a in volume['attachments']
                         if a.get('host_name'))
    fences = api.call('GET', '/os-host-fences')['host_fences']
    wanted = {s.get('volume_id') for s in _scopes(options)}
    hosts.update(f['host'] for f in fences
                 if f['volume_id'] in wanted or options.get('project')
                 and f['project_id'] == options['project'])
    for host in sorted(hosts):
        out.write('%s,\n' % host)
    return EC_OK


def metadata():
    q = saxutils.quoteattr
    lines = [
        '<?xml version="1.0" ?>',
        '<resource-agent name=%s shortdesc=%s>' % (
            q(NAME), q('Fence agent for cinder_lite: cuts a node off its '
                       'volumes at the storage targets')),
        '<longdesc>%s</longdesc>' % saxutils.escape(
            'fence_cinder_lite fences a node at the storage (fabric '
            'fencing): cinder_lite removes the node\'s host from every '
            'NBD and iSCSI target of the configured volumes, waits until '
            'the targets have drained what it had in flight, and refuses '
            'it new connections until it is unfenced ("on"). Configure '
            'the resource with provides=unfencing.'),
        # no project site yet: the agent's own documentation
        '<vendor-url>https://docs.openstack.org/api-ref/block-storage/'
        '</vendor-url>',
        '<parameters>']
    for name, getopt, required, default, kind, text in OPTIONS:
        lines.append('\t<parameter name=%s unique="0" required=%s>' % (
            q(name), q('1' if required else '0')))
        lines.append('\t\t<getopt mixed=%s />' % q(getopt))
        content = '\t\t<content type=%s' % q(kind)
        if default is not None:
            content += ' default=%s' % q(default)
        lines.append(content + ' />')
        lines.append('\t\t<shortdesc lang="en">%s</shortdesc>'
                     % saxutils.escape(text))
        lines.append('\t</parameter>')
    for alias, name in sorted(ALIASES.items()):
        if alias == 'option':
            continue
        lines += ['\t<parameter name=%s unique="0" required="0" '
                  'obsoletes=%s>' % (q(alias), q(name)),
                  '\t\t<content type="string" />',
                  '\t\t<shortdesc lang="en">Same as %s</shortdesc>'
                  % saxutils.escape(name),
                  '\t</parameter>']
    lines += ['</parameters>', '<actions>',
              '\t<action name="on" automatic="1" />',
              '\t<action name="off" />',
              '\t<action name="status" />',
              '\t<action name="list" />',
              '\t<action name="monitor" />',
              '\t<action name="metadata" />',
              '\t<action name="validate-all" />',
              '</actions>', '</resource-agent>', '']
    return '\n'.join(lines)


def main(argv=None, stdin=None, out=None, err=None):
    argv = sys.argv[1:] if argv is None else argv
    out, err = out or sys.stdout, err or sys.stderr
    if argv in (['-V'], ['--version']):     # as every fence agent
        out.write('%s %s\n' % (NAME, version.VERSION))
        return EC_OK
    try:
        if argv:
            options = parse_argv(argv)
        else:
            options = parse_stdin((stdin or sys.stdin).read())
        options = normalise(options)
        validate(options)
        code = run(options, out, err)
    except AgentError as e:
        err.write('%s: %s\n' % (NAME, e))
        code = EC_ERROR
    except Exception as e:       # an agent answers with an exit code
        err.write('%s: failed: %s: %s\n' % (NAME, type(e).__name__, e))
        code = EC_ERROR
    return code


def console():
    sys.exit(main())
