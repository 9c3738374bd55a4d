"""The version of cinder_lite, from the installed distribution."""
from importlib import metadata

try:
    VERSION = metadata.version('cinder-lite')
except metadata.PackageNotFoundError:  # running from a source tree
    VERSION = '0.0.0'
