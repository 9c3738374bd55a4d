"""What a volume type means for its volumes."""
from cinder_lite.common import capabilities

MULTIATTACH_KEY = 'multiattach'


def is_multiattach(volume_type):
    """A type is shareable when its ``multiattach`` extra spec says
    ``<is> True``; the volume copies this at create."""
    spec = (volume_type.get('extra_specs') or {}).get(MULTIATTACH_KEY)
    return spec is not None and capabilities.match(True, spec) and \
        str(spec).split()[0] == '<is>'
