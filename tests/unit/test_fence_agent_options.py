"""fence_cinder_lite's options: stdin and argv spellings, aliases, what
fenced passes that the agent ignores, and refusals (exit 1, nothing
sent)."""
import io

from cinder_lite.cmd import fence


def run(argv=None, stdin=''):
    out, err = io.StringIO(), io.StringIO()
    code = fence.main(argv or [], io.StringIO(stdin), out, err)
    return code, out.getvalue(), err.getvalue()


def test_stdin_and_argv_say_the_same():
    text = ('# a comment\n\naction=status\nport = host-a\n'
            'nodename=node1\nendpoint=http://h:8776/v3\nvolume=v1,v2\n'
            'login=pm\npasswd=secret\n')
    from_stdin = fence.normalise(fence.parse_stdin(text))
    from_argv = fence.normalise(fence.parse_argv([
        '-o', 'status', '--plug=host-a', '--endpoint',
        'http://h:8776/v3', '--volume=v1,v2', '-l', 'pm', '-p', 'secret',
        '--nodename=node1']))
    assert from_stdin == from_argv
    assert from_stdin['plug'] == 'host-a'
    assert from_stdin['username'] == 'pm'
    assert from_stdin['power_timeout'] == '60'
    assert 'nodename' not in from_stdin
    assert fence._scopes(from_stdin) == [{'volume_id': 'v1'},
                                         {'volume_id': 'v2'}]


def test_host_map_maps_node_names():
    options = {'plug': 'node2', 'host_map': 'node1:host-a; node2:host-b'}
    assert fence.host_of(options) == 'host-b'
    assert fence.host_of({'plug': 'host-c'}) == 'host-c'


def test_refusals_exit_1():
    base = 'endpoint=http://127.0.0.1:1/v3\nvolume=v\n'
    for stdin, text in (
            ('action=off\n' + base, 'plug (the host to fence)'),
            ('action=reboot\nport=h\n' + base, 'reboot is not supported'),
            ('action=off\nport=h\nendpoint=ftp://x\nvolume=v\n',
             'http(s) URL'),
            ('action=off\nport=h\n' + base + 'delay=soon\n',
             'delay must be'),
            ('action=off\nport=h\n' + base + 'auth_url=http://k/v3\n',
             'needs password'),
            ('no equals sign\n', 'not name=value')):
        code, out, err = run(stdin=stdin)
        assert code == 1 and out == '' and text in err, (stdin, err)
    assert run(['--bogus'])[0] == 1
    assert run(['-o', 'validate-all', '--endpoint', 'http://h/v3',
                '--project', 'p'])[0] == 0
