"""Every write transaction of cinder_lite runs through
``db.api.run_writer``, which runs it again from its start when the
database refuses it as a deadlock (a certification failure of a
multi-writer Galera cluster, issue 52).  A ``with db_api.writer()``
block elsewhere would fail its request on such a refusal instead: this
test names each one it finds in the package's source."""
import ast
import os

import cinder_lite

PACKAGE = os.path.dirname(cinder_lite.__file__)
# where writer() itself lives and is used by run_writer
OWN = {os.path.join('db', 'api.py')}


def _writer_blocks(path):
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.With, ast.AsyncWith)):
            continue
        for item in node.items:
            call = item.context_expr
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else \
                getattr(func, 'id', None)
            if name == 'writer':
                yield node.lineno


def test_every_write_transaction_is_run_again_on_a_deadlock():
    found = []
    for top, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(top, name)
            rel = os.path.relpath(path, PACKAGE)
            if rel in OWN:
                continue
            found.extend('cinder_lite/%s:%d' % (rel, line)
                         for line in _writer_blocks(path))
    assert not found, (
        'write transactions not run through db.api.run_writer (refused '
        'by a deadlock, they fail instead of running again):\n  %s'
        % '\n  '.join(sorted(found)))


def test_the_walk_finds_a_writer_block(tmp_path):
    path = tmp_path / 'sample.py'
    path.write_text('def f():\n    with db_api.writer() as session:\n'
                    '        pass\n    with db_api.reader() as s:\n'
                    '        pass\n')
    assert list(_writer_blocks(str(path))) == [2]
