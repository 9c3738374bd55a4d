"""Sphinx configuration of cinder_lite's documentation.

Build it with ``tox -e docs`` or ``sphinx-build -W -b html doc/source
doc/build/html``.  The configuration and policy references are made from
the code (oslo.config's and oslo.policy's extensions), the CLI reference
from each console script's own ``--help``, the release notes from
``releasenotes/notes`` and git (reno)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ETC = os.path.join(ROOT, 'etc', 'cinder-lite')
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(HERE, '_ext'))

from cinder_lite import version as cl_version  # noqa: E402

project = 'cinder_lite'
copyright = 'cinder_lite authors'
release = cl_version.VERSION
version = release

extensions = [
    'oslo_config.sphinxext',
    'oslo_config.sphinxconfiggen',
    'oslo_policy.sphinxext',
    'oslo_policy.sphinxpolicygen',
    'reno.sphinxext',
    'cli_help',
]

# the samples, generated at every build into _static/ (not kept in git);
# show-policy reads the policy generator's file from here too
config_generator_config_file = os.path.join(
    ETC, 'cinder-lite-config-generator.conf')
sample_config_basename = '_static/cinder-lite'
policy_generator_config_file = os.path.join(
    ETC, 'cinder-lite-policy-generator.conf')
sample_policy_basename = '_static/cinder-lite'

root_doc = 'index'
exclude_patterns = ['_build']
templates_path = []
html_static_path = ['_static']
html_theme = 'alabaster'
html_title = 'cinder_lite %s' % release
html_theme_options = {
    'description': 'Cinder v3 block storage with first-class multi-attach',
    'fixed_sidebar': True,
    # room for the programs' 79-column help and the JSON examples
    'page_width': '1180px',
}
pygments_style = 'sphinx'
