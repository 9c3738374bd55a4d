"""The options of cinder_lite: one module per group of options, each with
``register_opts(conf)`` and ``list_opts()``.  Nothing here parses a
command line or reads a file: the entry points (``cinder_lite.cmd``) do,
after ``register_opts`` put every option on the ConfigOpts they use.
``opts`` gathers the lists for oslo-config-generator."""
from cinder_lite.conf import api
from cinder_lite.conf import backup
from cinder_lite.conf import core
from cinder_lite.conf import dashboard
from cinder_lite.conf import image
from cinder_lite.conf import nova
from cinder_lite.conf import quota
from cinder_lite.conf import upgrade_levels
from cinder_lite.conf import volume

# in the order their options appear in the sample config
MODULES = (core, api, dashboard, volume, image, backup, quota,
           upgrade_levels, nova)


# No global config here: the caller passes the ConfigOpts to fill, so a
# test or an embedding process can keep its configuration to itself.
def register_opts(conf):
    for module in MODULES:
        module.register_opts(conf)
