"""``.. cli-help:: SCRIPT [ARG ...]``: what a console script of setup.cfg
prints for ``ARG ... --help``, run at build time, as a literal block, so
the CLI reference is the programs' own and cannot drift from them.

``:args:`` replaces the trailing ``--help`` (``fence_cinder_lite -o
metadata``), ``:language:`` sets the block's highlighting (default
``text``)."""
import configparser
import os
import subprocess
import sys
import tempfile

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def console_scripts():
    """{script name: (module, function)} of setup.cfg."""
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'setup.cfg'))
    scripts = {}
    for line in cfg['options.entry_points']['console_scripts'].splitlines():
        if line.strip():
            name, target = (p.strip() for p in line.split('=', 1))
            scripts[name] = tuple(target.split(':'))
    return scripts


def run_script(name, args):
    module, func = console_scripts()[name]
    code = ('import sys; sys.argv[0] = %r; from %s import %s as main; '
            'sys.exit(main())' % (name, module, func))
    env = dict(os.environ, COLUMNS='79', PYTHONPATH=ROOT)
    # (a directory of its own: no config file of the build's cwd is read)
    with tempfile.TemporaryDirectory() as cwd:
        run = subprocess.run([sys.executable, '-c', code] + args,
                             capture_output=True, text=True, timeout=120,
                             cwd=cwd, env=env)
    return run.returncode, run.stdout + run.stderr


class CliHelp(SphinxDirective):
    required_arguments = 1
    optional_arguments = 10
    option_spec = {'args': directives.unchanged,
                   'language': directives.unchanged}

    def run(self):
        name, sub = self.arguments[0], self.arguments[1:]
        if name not in console_scripts():
            raise self.error('%s is not a console script of setup.cfg'
                             % name)
        extra = self.options.get('args')
        args = sub + (extra.split() if extra is not None else ['--help'])
        code, text = run_script(name, args)
        if code != 0:
            raise self.error('%s %s exited %d:\n%s'
                             % (name, ' '.join(args), code, text))
        block = nodes.literal_block(text, text)
        block['language'] = self.options.get('language', 'text')
        self.env.note_dependency(os.path.join(ROOT, 'setup.cfg'))
        return [block]


def setup(app):
    app.add_directive('cli-help', CliHelp)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
