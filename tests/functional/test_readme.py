"""The README's walk-through (curl, then cinderclient, then the openstack
CLI) runs as a user pastes it, in order, in one shell, against a fresh
``cinder-lite-all``: every command succeeds and nothing prints an error.
The shell runs in a directory with the install's ``.venv`` (this
interpreter's virtualenv), with a PATH that does not have its ``bin``:
the blocks must find the clients themselves.  Only the address differs
(``EP``, a free port instead of 8776)."""
import os
import re
import subprocess
import sys

from tests.harness import stack as stack_mod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SECTION = ('A walk-through with curl', 'Distributed mode')


def shell_blocks():
    """The literal blocks of the walk-through section, in order."""
    text = open(os.path.join(ROOT, 'README.rst')).read()
    section = text[text.index(SECTION[0]):text.index(SECTION[1])]
    blocks, current, inside = [], [], False
    for line in section.splitlines():
        if inside:
            if line.startswith('    ') or not line.strip():
                current.append(line[4:])
                continue
            blocks.append('\n'.join(current).strip() + '\n')
            current, inside = [], False
        if line.rstrip().endswith('::'):
            inside = True
    if current:
        blocks.append('\n'.join(current).strip() + '\n')
    return blocks


def test_the_blocks_are_the_three_clients():
    blocks = shell_blocks()
    assert len(blocks) == 3
    assert 'curl' in blocks[0] and 'cinder type-create' in blocks[1] and \
        'openstack volume create' in blocks[2]


def test_walk_through_runs_as_written(tmp_path):
    server, port, log = stack_mod.start_all(tmp_path)
    try:
        script = '\n'.join(shell_blocks())
        endpoint = 'EP=http://127.0.0.1:8776\n'
        assert script.count('127.0.0.1:8776') == 1 and endpoint in script
        script = script.replace(endpoint,
                                'EP=http://127.0.0.1:%d\n' % port)
        (tmp_path / 'walk.sh').write_text(script)
        # the directory a user installed into: its .venv is the one that
        # runs these tests
        home = tmp_path / 'checkout'
        home.mkdir()
        (home / '.venv').symlink_to(os.path.dirname(os.path.dirname(
            os.path.abspath(sys.executable))))
        bindir = os.path.dirname(os.path.abspath(sys.executable))
        path = os.pathsep.join(
            p for p in os.environ.get('PATH', '').split(os.pathsep)
            if p and os.path.abspath(p) != bindir)
        env = {k: v for k, v in os.environ.items()
               if k not in ('VIRTUAL_ENV', 'PYTHONHOME')}
        env.update(HOME=str(tmp_path), PATH=path)
        run = subprocess.run(['bash', '-euo', 'pipefail', '-x',
                              str(tmp_path / 'walk.sh')],
                             capture_output=True, text=True, timeout=300,
                             env=env, cwd=str(home))
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    printed = run.stdout
    # what the comments promise
    assert printed.startswith('{"versions"')
    assert re.search(r'^[0-9a-f-]{36} available$', printed, re.M)
    assert re.search(r'^[0-9a-f-]{36} in-use$', printed, re.M)
    assert '"multiattach": "<is> True"' in printed
    assert 'data-cli' in printed and 'data-osc' in printed
    for bad in ('ERROR', 'Traceback', 'badRequest', 'itemNotFound',
                'computeFault', 'Multiple volume matches'):
        assert bad not in out, out[-4000:]
