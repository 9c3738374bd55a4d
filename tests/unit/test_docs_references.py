"""The documentation's generated references are complete: the pages of
doc/source/configuration/ rendered with the site's own conf.py (Sphinx's
text builder, in a directory of their own so the rest of the site need
not be built) list exactly the options of ``list_opts()``, section by
section, and the rules of the policy registry; and the CLI reference has
a page for every console script of setup.cfg."""
import configparser
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from cinder_lite.common import policy
from cinder_lite.conf import opts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, 'doc', 'source')
PAGES = ('config-reference', 'policy-reference')


@pytest.fixture(scope='module')
def rendered(tmp_path_factory):
    work = tmp_path_factory.mktemp('docs')
    src = work / 'src'
    (src / 'configuration').mkdir(parents=True)
    for page in PAGES:
        shutil.copy(os.path.join(SOURCE, 'configuration', page + '.rst'),
                    src / 'configuration')
    (src / 'index.rst').write_text(
        'References\n==========\n\n.. toctree::\n\n' +
        ''.join('   configuration/%s\n' % p for p in PAGES))
    run = subprocess.run(
        [sys.executable, '-m', 'sphinx', '-q', '-b', 'text', '-c', SOURCE,
         str(src), str(work / 'out')], capture_output=True, text=True,
        timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    return {p: (work / 'out' / 'configuration' / (p + '.txt')).read_text()
            for p in PAGES}


def headed(text):
    """{heading: [unindented lines under it]} of a text-builder page."""
    lines = text.splitlines()
    sections, current = {}, None
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and re.fullmatch(r'=+', lines[i + 1]) \
                and len(lines[i + 1]) == len(line):
            current = sections.setdefault(line, [])
        elif current is not None and line and not line[0].isspace() \
                and not re.fullmatch(r'[=*]+', line):
            current.append(line)
    return sections


def test_every_option_is_in_the_configuration_reference(rendered):
    shown = {group: set(names) for group, names in
             headed(rendered['config-reference']).items()}
    expected = {}
    for group, options in opts.list_opts():
        name = getattr(group, 'name', group) or 'DEFAULT'
        # (keystoneauth's options are shown as their dest: collect_timing)
        expected.setdefault(name, set()).update(
            o.name.replace('-', '_') for o in options)
    assert shown == expected


def test_every_rule_is_in_the_policy_reference(rendered):
    (names,) = headed(rendered['policy-reference']).values()
    shown = {n.strip('"') for n in names}
    assert shown == {rule.name for rule in policy.list_rules()}


def test_the_reference_reads_the_generators_namespaces():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'etc', 'cinder-lite',
                          'cinder-lite-config-generator.conf'))
    namespaces = cfg['DEFAULT']['namespace'].split()
    with open(os.path.join(SOURCE, 'configuration',
                           'config-reference.rst')) as f:
        page = f.read()
    directive = page[page.index('.. show-options::'):]
    assert directive.split()[2:] == namespaces


def test_every_console_script_has_its_cli_help():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'setup.cfg'))
    scripts = {line.split('=')[0].strip() for line in
               cfg['options.entry_points']['console_scripts'].splitlines()
               if line.strip()}
    documented = set()
    for path in glob.glob(os.path.join(SOURCE, 'cli', '*.rst')):
        with open(path) as f:
            documented |= set(re.findall(r'^\.\. cli-help:: (\S+)',
                                         f.read(), re.M))
    assert documented == scripts
